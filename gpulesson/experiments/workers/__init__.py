"""Grain's worker processes: when do they pay?

The benchmark of episode 9's section "The same blocks through a library". The ceiling's model
that does almost nothing (:func:`~gpulesson.experiments.ceiling.measure.tiny_model`) is trained
with ``model.fit`` from the stored blocks of the lesson's HDF5 file through the lesson's
``grain_blocks``, as they are and with the lesson's augmentation (``flip_crop``, Python code
run on each image), by no worker process (Grain's reading threads in the training process) and
by 1, 2, 4 ... worker processes, up to the cores there are; JAX and PyTorch, one process each.
Every condition follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`).

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.workers.measure`: the feeding and the timing;
- :mod:`~gpulesson.experiments.workers.records`: the records, each compared with no worker;
- :mod:`~gpulesson.experiments.workers.page`: the episode's ``ref_workers_*`` values, the table;
- :mod:`~gpulesson.experiments.workers.figures`: the figure (``fig/09-feeding-the-gpu/figures.py``);
- :mod:`~gpulesson.experiments.workers.__main__`: the command line,
  ``python -m gpulesson.experiments.workers``.

Importing the package imports no deep-learning framework.
"""

from gpulesson.experiments.workers.figures import FILE, alt_text, figures
from gpulesson.experiments.workers.page import substitutions
from gpulesson.experiments.workers.records import EXPERIMENT, RESULTS_FILE, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "alt_text", "figures", "reference_run",
           "substitutions"]
