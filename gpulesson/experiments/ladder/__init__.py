"""The speed ladder: the lesson's CNN on the lesson's HDF5 file, from the lesson's default to
what the card can do with this model, each rung removing one named cost.

The experiment of episode 9's section "From the default to the card's limit". Each rung
records, in each of two process starts, its epochs (the first compiles), the clock at each
epoch's end (compiling included, the test evaluations left out), the test accuracy after every
epoch, NVML's busy %, watts and joules. The page adds two rows computed from other records: the
profile's kernels alone, and the FLOP floor at the card's published peak.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.ladder.records`: the rungs, the records, the goals;
- :mod:`~gpulesson.experiments.ladder.measure`: Keras's rungs and the epochs' watch;
- :mod:`~gpulesson.experiments.ladder.limit`: the plain-JAX limit, one compiled call an epoch;
- :mod:`~gpulesson.experiments.ladder.start`: one process start;
- :mod:`~gpulesson.experiments.ladder.page`: the episode's ``ref_ladder_*`` values;
- :mod:`~gpulesson.experiments.ladder.figures`: the figure (``fig/09-feeding-the-gpu/ladder.py``);
- :mod:`~gpulesson.experiments.ladder.__main__`: the command line,
  ``KERAS_BACKEND=jax python -m gpulesson.experiments.ladder``.

Importing the package imports no deep-learning framework.
"""

from gpulesson.experiments.ladder.figures import FILE, alt_text, figures
from gpulesson.experiments.ladder.page import substitutions
from gpulesson.experiments.ladder.records import EXPERIMENT, RESULTS_FILE, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "alt_text", "figures", "reference_run",
           "substitutions"]
