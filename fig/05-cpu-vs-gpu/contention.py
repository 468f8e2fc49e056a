"""Draw the contention figure from the results file:

    python fig/05-cpu-vs-gpu/contention.py   ->  contention.svg

The run is the newest one in results/contention.jsonl (see
gpulesson.experiments.contention.reference_run); record one on an otherwise quiet machine with
``python -m gpulesson.experiments.contention``. Without a run, the script says so and draws
nothing.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import contention
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = ("contention.svg",)


def draw(results=contention.RESULTS_FILE, folder=HERE) -> list[Path]:
    return save_figures(contention.reference_run(results), contention.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.experiments.contention")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
