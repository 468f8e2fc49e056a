"""Draw the reference run's figures from the results file:

    python fig/05-cpu-vs-gpu/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest one in results/cnn-cpu-vs-gpu.jsonl with a GPU record (see
gpulesson.reference.reference_run); record a new one with ``python -m gpulesson.reference_run``.
A test checks that the committed figures are the ones this script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson import reference
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = ("reference-epoch-times.svg", "reference-time-bars.svg")


def draw(results=reference.RESULTS_FILE, folder=HERE) -> list[Path]:
    return save_figures(reference.reference_run(results), reference.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.reference_run")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
