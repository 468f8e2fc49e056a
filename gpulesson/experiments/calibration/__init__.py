"""The stand-in's calibration: how the lesson's CNN learns the synthetic stand-in (accuracy per
epoch, overfitting, confusions), for episode 5's instructor notes.

The stand-in (:mod:`gpulesson.synthetic`) is meant to behave like CIFAR-10 with the lesson's CNN:
a test accuracy between :data:`~gpulesson.experiments.calibration.records.TARGET_ACCURACY` after
the workshop's :data:`~gpulesson.experiments.calibration.records.WORKSHOP_EPOCHS` epochs,
overfitting within 30 epochs (the validation loss turns up while the training accuracy keeps
rising), and mistakes mostly between the two classes of a look-alike pair. One run trains the
episode's own model on it and appends one record to :data:`RESULTS_FILE`, with a fingerprint of
the generator, so that a changed stand-in shows that the record is stale.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.calibration.measure`: the training, :func:`calibrate`, and the
  generator's fingerprint;
- :mod:`~gpulesson.experiments.calibration.records`: the records, the reference record, what a
  record shows (:func:`findings`) and the run in words (:func:`describe`);
- :mod:`~gpulesson.experiments.calibration.page`: the episode's ``ref_calib_*`` values;
- :mod:`~gpulesson.experiments.calibration.figures`: the figures
  (``fig/05-cpu-vs-gpu/calibration.py``);
- :mod:`~gpulesson.experiments.calibration.__main__`: the command line,
  ``python -m gpulesson.experiments.calibration``.

Importing the package imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.experiments.calibration.figures import FIGURE_COMMAND, FIGURES, figures
from gpulesson.experiments.calibration.measure import generator_fingerprint
from gpulesson.experiments.calibration.page import substitutions
from gpulesson.experiments.calibration.records import (
    EXPERIMENT,
    RESULTS_FILE,
    TARGET_ACCURACY,
    describe,
    findings,
    reference_record,
)

__all__ = ["EXPERIMENT", "FIGURES", "FIGURE_COMMAND", "RESULTS_FILE", "TARGET_ACCURACY",
           "describe", "figures", "findings", "generator_fingerprint", "main", "reference_record",
           "substitutions"]


def __getattr__(name):
    # main is imported on first use: importing __main__ with the package would make
    # ``python -m gpulesson.experiments.calibration`` warn that it was imported before it ran.
    if name == "main":
        from gpulesson.experiments.calibration.__main__ import main

        return main
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
