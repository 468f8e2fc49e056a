"""The way to use the card: the lesson's CNN with one setting at a time changed from the
lesson's default, and a target that combines what helped.

The experiment of episode 9's section "Mixed precision, XLA and steps per execution". Each
setting trains the lesson's CNN from the same initial weights on the lesson's HDF5 file, by the
lesson's measurement rule, and records its epochs, the achieved TFLOP/s and the test accuracy
after the same number of epochs. The target is an epoch of 45,000 images in at most 0.1 s on the
H200, at 90 % or more of the same model and settings fed from RAM.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.gpu_settings.measure`: the settings' trainings;
- :mod:`~gpulesson.experiments.gpu_settings.records`: the settings, the records, the target;
- :mod:`~gpulesson.experiments.gpu_settings.page`: the episode's ``ref_gpuset_*`` values;
- :mod:`~gpulesson.experiments.gpu_settings.figures`: the figure
  (``fig/09-feeding-the-gpu/gpu_settings.py``);
- :mod:`~gpulesson.experiments.gpu_settings.__main__`: the command line,
  ``KERAS_BACKEND=jax python -m gpulesson.experiments.gpu_settings``.

Importing the package imports no deep-learning framework.
"""

from gpulesson.experiments.gpu_settings.figures import FILE, alt_text, figures
from gpulesson.experiments.gpu_settings.page import describe, substitutions, table
from gpulesson.experiments.gpu_settings.records import (
    EXPERIMENT,
    RESULTS_FILE,
    SETTINGS,
    TARGET_SECONDS,
    TARGET_SHARE,
    find,
    reference_run,
    target,
)

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "SETTINGS", "TARGET_SECONDS", "TARGET_SHARE",
           "alt_text", "describe", "figures", "find", "reference_run", "substitutions", "table",
           "target"]
