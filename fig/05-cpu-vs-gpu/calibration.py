"""Draw the stand-in's calibration figures from the results file:

    python fig/05-cpu-vs-gpu/calibration.py   ->  calibration-learning-curves.svg,
                                                  calibration-confusion.svg

The record is the newest one in results/standin-calibration.jsonl; record a new one with
``python -m gpulesson.experiments.calibration``. A test checks that the committed figures are the ones this
script draws from the committed file.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import calibration
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent


def _newest(results) -> list[dict]:
    record = calibration.reference_record(results)
    return [record] if record else []


draw = drawer(calibration, calibration.FIGURES, HERE, run=_newest)


if __name__ == "__main__":
    main(draw)
