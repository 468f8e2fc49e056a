"""Helpers for the lesson "Deep learning on GPUs: CPU vs GPU", in parts, each importing only from
its own or a lower one (``tests/test_package_layout.py``):

- ``machine``: the devices, driver and Keras backends a Python sees, energy meters, timing, peak
  rates, the pinned versions;
- ``datasets``: CIFAR-10, MNIST and their labelled synthetic stand-ins, the HDF5 files the
  notebooks read, the settings that choose them (``python -m gpulesson.datasets.prepare``);
- ``records``: the results files, their summaries and the figures drawn from them;
- ``classroom``: catch-up cells, the class's shared runs, the sessions and their costs, the
  instructor's readiness check (``python -m gpulesson.classroom.check``);
- ``lesson``: the code the episodes teach, generated from their cells;
- ``experiments``: one per measuring episode.

At the top: the package's start-up and the short messages a learner sees when something goes
wrong (``errors``, ``interrupt``). Submodules import Keras/TensorFlow only when needed, so
importing this package (or ``gpulesson.datasets.settings``) is instant.
"""

import os

__version__ = "0.1.0"

# TensorFlow's C++ start-up and progress notes (INFO level: "cpu_feature_guard ... rebuild
# TensorFlow with the appropriate compiler flags", "Memory patch applied: M_TRIM_THRESHOLD")
# reach notebooks on stderr, in red boxes that look like errors; they are not. Level 1 hides
# INFO and keeps warnings and errors. It only works before TensorFlow is imported, and notebooks
# import gpulesson first (the lesson kernel also sets it, for episodes that import Keras first);
# a value someone set on purpose is kept. TensorFlow 2.21 logs the notes of its import before
# its logging is set up, past this setting: gpulesson.machine.backends leaves those out (below).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

# In a notebook, the lesson's errors and a cell the learner stopped (Kernel > Interrupt Kernel)
# are shown as a short message instead of a long traceback (gpulesson.errors installs IPython's
# handler when imported; elsewhere it does nothing). Every notebook imports gpulesson before it
# trains anything, so importing the package is what switches it on.
from gpulesson import errors as _errors  # noqa: F401

# A Keras backend that is chosen (KERAS_BACKEND=jax) but not installed: "import keras", in any
# later cell, fails with one short message saying how to install it, instead of a long traceback.
from gpulesson.machine.backends import guard_keras_import as _guard
from gpulesson.machine.backends import quiet_tensorflow_start as _quiet

_guard()
_quiet()
