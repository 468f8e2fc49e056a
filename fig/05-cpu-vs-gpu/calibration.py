"""Draw the stand-in's calibration figures from the results file:

    python fig/05-cpu-vs-gpu/calibration.py   ->  calibration-learning-curves.svg,
                                                  calibration-confusion.svg

The record is the newest one in results/standin-calibration.jsonl; record a new one with
``python -m gpulesson.experiments.calibration``. A test checks that the committed figures are the ones this
script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import calibration
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent


def draw(results=calibration.RESULTS_FILE, folder=HERE) -> list[Path]:
    record = calibration.reference_record(results)
    return save_figures([record] if record else [], calibration.figures, calibration.FIGURES,
                        folder, results=results, command="python -m gpulesson.experiments.calibration")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
