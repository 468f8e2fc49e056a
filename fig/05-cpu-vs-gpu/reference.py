"""Draw the reference run's figures from the results file:

    python fig/05-cpu-vs-gpu/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest one in results/cnn-cpu-vs-gpu.jsonl with a GPU record (see
gpulesson.experiments.cnn.reference_run); record a new one with ``python -m gpulesson.experiments.cnn``.
A test checks that the committed figures are the ones this script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import cnn
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = ("reference-epoch-times.svg", "reference-time-bars.svg")


def draw(results=cnn.RESULTS_FILE, folder=HERE) -> list[Path]:
    return save_figures(cnn.reference_run(results), cnn.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.experiments.cnn")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
