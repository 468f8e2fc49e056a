"""Draw the feeding benchmark's figures from its results file:

    python fig/09-feeding-the-gpu/figures.py [FOLDER] [RESULTS]
        ->  FOLDER/feeding-pipelines.svg, FOLDER/feeding-settings.svg

FOLDER defaults to fig/09-feeding-the-gpu/ (created if missing), RESULTS to
results/feeding.jsonl. The run drawn is the newest one with CPU and GPU records, else the
newest with GPU records, else the newest run (gpulesson.experiments.feeding.reference_run); record one with
``python -m gpulesson.experiments.feeding``. A test checks that the committed figures are the ones this
script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import feeding
from gpulesson.plots import save_figures

FOLDER = Path(__file__).resolve().parent
FIGURES = ("feeding-pipelines.svg", "feeding-settings.svg")


def draw(folder=FOLDER, results=feeding.RESULTS_FILE) -> list[Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return save_figures(feeding.reference_run(results), feeding.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.experiments.feeding")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:3]):
        print(written)
