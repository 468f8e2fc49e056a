"""Where a training step's time goes: a profile of the lesson's CNN on each device.

The experiment of episode 9's section "Where a step's time goes". It trains the lesson's CNN
(episode 5's model and training, from the lesson's HDF5 file) by the lesson's measurement rule,
samples a GPU's utilisation through an epoch, profiles steady-state steps with
``jax.profiler`` and reads the trace into a few numbers per step: the host's input, dispatch and
the rest of ``fit``, the device's kernels, copies and idle time. With the arithmetic of a
training image it gives the achieved TFLOP/s and, on a GPU, its share of the card's published
peak (:mod:`gpulesson.gpu_peaks`).

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.profile.measure`: training, sampling, profiling;
- :mod:`~gpulesson.experiments.profile.trace`: reading the trace;
- :mod:`~gpulesson.experiments.profile.records`: the records, the arithmetic, the peak;
- :mod:`~gpulesson.experiments.profile.page`: the episode's ``ref_prof_*`` values, the table;
- :mod:`~gpulesson.experiments.profile.figures`: the figure (``fig/09-feeding-the-gpu/profile.py``);
- :mod:`~gpulesson.experiments.profile.__main__`: the command line,
  ``KERAS_BACKEND=jax python -m gpulesson.experiments.profile``.

Importing the package imports no deep-learning framework.
"""

from gpulesson.experiments.profile.figures import FILE, figures
from gpulesson.experiments.profile.page import substitutions
from gpulesson.experiments.profile.records import EXPERIMENT, RESULTS_FILE, peak, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "figures", "peak", "reference_run",
           "substitutions"]
