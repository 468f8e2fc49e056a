"""The ceiling of ``fit``: how many images per second each backend's training loop can take,
and how close the lesson's generator comes to it.

The benchmark of episode 9's section "What limits fit". A model that does almost nothing
(:func:`~gpulesson.experiments.ceiling.measure.tiny_model`) is trained with ``model.fit`` from
arrays in memory (the ceiling: the best of Keras' array path, a slicing ``PyDataset``, on
TensorFlow a ``tf.data`` pipeline and, on a GPU, arrays resident there) and from the lesson's
HDF5 generator, mixing a window of stored batches or not (``window=1``), with TensorFlow, JAX
and PyTorch, one process each. Every condition
follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`).

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.ceiling.measure`: the model and the timing;
- :mod:`~gpulesson.experiments.ceiling.records`: the records, the ceiling, a share of it;
- :mod:`~gpulesson.experiments.ceiling.page`: the episode's ``ref_ceil_*`` values, the table;
- :mod:`~gpulesson.experiments.ceiling.figures`: the figure (``fig/09-feeding-the-gpu/figures.py``);
- :mod:`~gpulesson.experiments.ceiling.__main__`: the command line,
  ``python -m gpulesson.experiments.ceiling``.

Importing the package imports no deep-learning framework.
"""

from gpulesson.experiments.ceiling.figures import FILE, alt_text, figures
from gpulesson.experiments.ceiling.page import substitutions, table
from gpulesson.experiments.ceiling.records import EXPERIMENT, PIPELINES, RESULTS_FILE, ceiling, reference_run

__all__ = ["EXPERIMENT", "FILE", "PIPELINES", "RESULTS_FILE", "alt_text", "ceiling", "figures",
           "reference_run", "substitutions", "table"]
