"""Trainings sharing a CPU: the lesson's CNN trained by 1, 2, 3 processes at once, or shown
live in a browser on the same machine.

The measurement behind the episode "Training a CNN on the CPU and on the GPU"'s section on how
long a CPU epoch should take. Each framework process starts as many threads as there are
cores, so k trainings at once on the same cores take turns on them; how much each loses is
what the benchmark measures. It starts k
identical trainings together, each a process of its own running the lesson's code
(:func:`gpulesson.lesson.build_cnn`, ``HDF5Batches``, ``EpochTimer``) on a subset of the
synthetic stand-in, records every copy's epoch times and the load average seen meanwhile, and
optionally repeats it with one framework thread per copy (TensorFlow and PyTorch: Keras on JAX
has no such setting). The trainings see no GPU, so that on a GPU node too they measure the
CPU; each condition is recorded as soon as it finishes. Its second part runs one training
of the episode's size in a JupyterLab notebook open in headless Chromium, with Keras' progress
bar and with one line an epoch, and once with no browser
(:mod:`~gpulesson.experiments.contention.watched`), where Chromium, Playwright and JupyterLab
are installed; each part is a run of its own.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.contention.measure`: the conditions, :func:`run_benchmark`
  (the trainings themselves: :mod:`~gpulesson.experiments.contention.worker`), and
  :mod:`~gpulesson.experiments.contention.watched` for the browser;
- :mod:`~gpulesson.experiments.contention.records`: the records, the reference run, a table;
- :mod:`~gpulesson.experiments.contention.page`: the episode's ``ref_cont_*`` values;
- :mod:`~gpulesson.experiments.contention.figures`: the figure
  (``fig/05-cpu-vs-gpu/contention.py``);
- :mod:`~gpulesson.experiments.contention.__main__`: the command line,
  ``python -m gpulesson.experiments.contention``.

Importing the package imports no deep-learning framework; only the workers do.
"""

from gpulesson.experiments.contention.figures import figures, watched_figures
from gpulesson.experiments.contention.measure import WorkerError, run_condition
from gpulesson.experiments.contention.page import substitutions
from gpulesson.experiments.contention.records import (
    EXPERIMENT,
    RESULTS_FILE,
    describe,
    make_records,
    reference_run,
)

__all__ = ["EXPERIMENT", "RESULTS_FILE", "WorkerError", "describe", "figures", "make_records",
           "reference_run", "run_condition", "substitutions", "watched_figures"]
