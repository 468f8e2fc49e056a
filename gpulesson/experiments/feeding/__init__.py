"""Feeding the GPU: training throughput of the lesson's CNN from each input pipeline.

The benchmark of the episode "Feeding the GPU". It trains the lesson's CNN
(:func:`gpulesson.lesson.build_cnn`) on 50,000 CIFAR-shaped images of the synthetic stand-in
(speed does not depend on the pixel values) from each pipeline of :data:`PIPELINES`: the
classic tutorial generator (the instructive mistake), the lesson's generator on uncompressed
and compressed batch-chunked files, with and without Keras worker processes (TensorFlow
backend only), the lesson's generator reading ahead (``read_ahead=True``), the whole data set in
RAM, and the data already on the device. (The settings, precision, steps per execution and batch
size, are the speed ladder's: :mod:`gpulesson.experiments.ladder`.) Every condition follows the
lesson's measurement rule (:mod:`gpulesson.experiments.common`): a recorded warm-up epoch and
at least :data:`~gpulesson.experiments.common.REPEATS` timed ones, every epoch and their
summary kept, medians and ranges on the page, comparison words from
:func:`~gpulesson.experiments.common.compare`.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.feeding.pipelines`: the input pipelines and their data files;
- :mod:`~gpulesson.experiments.feeding.measure`: timing ``fit`` and the loader, :func:`run_benchmark`;
- :mod:`~gpulesson.experiments.feeding.records`: the records, which of them the page may show, the goals;
- :mod:`~gpulesson.experiments.feeding.reading`: the reading exercise's verdicts, the ranking's words;
- :mod:`~gpulesson.experiments.feeding.page`: the episode's ``ref_feed_*`` values and the notebook's table;
- :mod:`~gpulesson.experiments.feeding.elsewhere`: what the page sets beside them from other episodes;
- :mod:`~gpulesson.experiments.feeding.figures`: the figures (``fig/09-feeding-the-gpu/figures.py``);
- :mod:`~gpulesson.experiments.feeding.__main__`: the command line,
  ``python -m gpulesson.experiments.feeding``.

Importing the package imports no deep-learning framework (the page's values are computed while
the site builds); the pipelines and the measurements import Keras when used.
"""

from gpulesson.experiments.feeding.figures import alt_texts, figures
from gpulesson.experiments.feeding.measure import (
    BATCH_SIZE,
    QUICK_N_IMAGES,
    build_model,
    precision_policy,
    run_benchmark,
    time_loader,
)
from gpulesson.experiments.feeding.page import describe, substitutions
from gpulesson.experiments.feeding.records import (
    EXPERIMENT,
    N_IMAGES,
    RESULTS_FILE,
    best_pipeline,
    delivered_wrong_data,
    find,
    reference_run,
    targets,
)
from gpulesson.results import NOT_RECORDED

__all__ = ["BATCH_SIZE", "EXPERIMENT", "NOT_RECORDED", "N_IMAGES", "QUICK_N_IMAGES",
           "RESULTS_FILE", "alt_texts", "best_pipeline", "build_model", "delivered_wrong_data",
           "describe", "figures", "find", "precision_policy", "reference_run", "run_benchmark",
           "substitutions", "targets", "time_loader"]
