"""The CNN's CPU-vs-GPU measurements: run records, the lesson's reference run, the comparison.

One training run (the notebook of the episode "Training a CNN on the CPU and on the GPU", or
``python -m gpulesson.experiments.cnn``) gives one record per device, all with the same
``run_id``. Each device's epochs follow the lesson's measurement rule
(:mod:`gpulesson.experiments.common`): a warm-up epoch, recorded but not averaged, then the
timed epochs, kept with their summary (median and range), and the energy of each epoch where
the machine lets it be read (:mod:`gpulesson.energy`).

The lesson's *reference* result is the newest run in :data:`RESULTS_FILE` that has a GPU
record (else the newest run): the figures and the numbers the episode shows are drawn
from it by code, never typed in.

A run is what :func:`gpulesson.lesson.train_on` returns (see
:mod:`~gpulesson.experiments.cnn.records`).

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.cnn.measure`: training on each device, :func:`run_devices`;
- :mod:`~gpulesson.experiments.cnn.records`: the records, the reference run, the comparison
  in words (:func:`describe`);
- :mod:`~gpulesson.experiments.cnn.inference`: prediction on each device (throughput at a
  large batch, latency of one image), its records (experiment ``cnn-inference``, in the same
  results file and run as the training) and its ``ref_inf_*`` values;
- :mod:`~gpulesson.experiments.cnn.page`: the episode's ``ref_*`` values;
- :mod:`~gpulesson.experiments.cnn.figures`: the figures (``fig/05-cpu-vs-gpu/reference.py``)
  and their alt texts (:func:`alt_texts`);
- :mod:`~gpulesson.experiments.cnn.__main__`: the command line,
  ``python -m gpulesson.experiments.cnn``.
"""

from __future__ import annotations

from gpulesson.experiments.cnn import inference
from gpulesson.experiments.cnn.figures import alt_texts, figures
from gpulesson.experiments.cnn.page import substitutions
from gpulesson.experiments.cnn.records import (
    EXPERIMENT,
    FULL_EPOCHS,
    RESULTS_FILE,
    describe,
    epoch_summary,
    full_training_seconds,
    reference_run,
    run_record,
)
from gpulesson.results import NOT_RECORDED, duration, is_gpu, speedup

__all__ = ["EXPERIMENT", "FULL_EPOCHS", "NOT_RECORDED", "RESULTS_FILE", "alt_texts", "describe",
           "duration", "epoch_summary", "figures", "full_training_seconds", "inference", "is_gpu",
           "reference_run", "run_record", "speedup", "substitutions"]
