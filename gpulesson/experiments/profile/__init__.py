"""Where a training step's time goes (episode 9): the lesson's CNN profiled with ``jax.profiler``
on each device, the trace read into the host's and the device's parts of a step, and the
achieved TFLOP/s beside the card's published peak. Importing it imports no framework."""

from gpulesson.experiments.profile.figures import FILE, figures
from gpulesson.experiments.profile.page import substitutions
from gpulesson.experiments.profile.records import EXPERIMENT, RESULTS_FILE, peak, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "figures", "peak", "reference_run",
           "substitutions"]
