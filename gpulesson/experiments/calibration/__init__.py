"""The stand-in's calibration (episode 5's instructor notes): the lesson's CNN trained on the
synthetic stand-in, which should behave as CIFAR-10 does with it: a test accuracy within
:data:`TARGET_ACCURACY` after the workshop's epochs, overfitting within 30 epochs, and mistakes
mostly between the two classes of a look-alike pair. A record keeps a fingerprint of the
generator, so that a changed stand-in shows that it is stale. Imports no deep-learning framework.
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
           "describe", "figures", "findings", "generator_fingerprint", "reference_record",
           "substitutions"]

