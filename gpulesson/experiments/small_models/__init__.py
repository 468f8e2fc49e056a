"""A small MLP on the CPU and on the GPU, and a sweep of batch size x layer width.

Two measurements of the episode "Small models: when the GPU does not help", both with the
episode's own code (:func:`gpulesson.lesson.build_mlp` and :func:`gpulesson.lesson.train_mlp`):

``comparison``
    The episode's multilayer perceptron (30 -> 16 -> 8 -> 2) trained on the Wisconsin
    breast-cancer data (``gpulesson.lesson.sklearn``, needs scikit-learn) from the same initial
    weights on every device, for a fixed number of epochs; one record per device.
``sweep``
    The same kind of MLP with hidden layers ``(width, width // 2)``, trained on random numbers
    of the same 30 features (``data: "random"``: enough rows to time, nothing to learn) for
    every batch size and width; one record per device and cell, with the time per sample.

Both follow the lesson's measurement rule (:mod:`gpulesson.experiments.common`): the first
epoch of each training is the recorded warm-up, the later ones the timed repeats, kept with
their ``summary``; the page shows medians with their ranges, and says "no measurable
difference" where the ranges of the CPU and the GPU overlap.

All records of one call share a ``run_id``, and are appended to ``--out`` (default: the
lesson's results file :data:`RESULTS_FILE`). The episode's numbers and figures are drawn from
the newest run with CPU and GPU records (else with GPU records, else the newest run),
separately for each part. The speed-up of a cell is the CPU's time divided by the GPU's, from
records of the same run: one machine's CPU against its own GPU. Any Keras backend works
(``KERAS_BACKEND``); the sweep needs no scikit-learn.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.small_models.measure`: the settings and their checks, training
  on each device (:func:`sweep`, :func:`run_comparison`);
- :mod:`~gpulesson.experiments.small_models.records`: the records, the reference runs, the
  speed-ups, a run in words or as a table;
- :mod:`~gpulesson.experiments.small_models.page`: the episode's ``ref_mlp_*`` values;
- :mod:`~gpulesson.experiments.small_models.figures`: the figures
  (``fig/07-small-models/figures.py``);
- :mod:`~gpulesson.experiments.small_models.__main__`: the command line,
  ``python -m gpulesson.experiments.small_models``.

Importing the package imports no deep-learning framework (the page's values are computed while
the site builds); training imports Keras when used.
"""

from gpulesson.experiments.small_models.figures import (
    comparison_alt,
    comparison_figure,
    sweep_alt,
    sweep_figure,
)
from gpulesson.experiments.small_models.measure import (
    COMPARISON,
    GRID,
    MIN_BATCHES,
    MIN_EPOCHS,
    QUICK_COMPARISON,
    QUICK_GRID,
    check_devices,
    check_grid,
    hidden_widths,
    rows_for,
    sweep,
    time_cell,
)
from gpulesson.experiments.small_models.page import substitutions, sweep_dates
from gpulesson.experiments.small_models.records import (
    EPISODE_WIDTHS,
    EXPERIMENT,
    PARTS,
    RESULTS_FILE,
    SmallModelsError,
    comparison_record,
    describe_comparison,
    epoch_summary,
    reference_run,
    sample_summary,
    sweep_complete,
    sweep_table,
)
from gpulesson.results import duration as short_time
from gpulesson.results import is_gpu

__all__ = ["COMPARISON", "EPISODE_WIDTHS", "EXPERIMENT", "GRID", "MIN_BATCHES", "MIN_EPOCHS",
           "PARTS", "QUICK_COMPARISON", "QUICK_GRID", "RESULTS_FILE", "SmallModelsError",
           "check_devices", "check_grid", "comparison_alt", "comparison_figure",
           "comparison_record", "describe_comparison", "epoch_summary", "hidden_widths", "is_gpu",
           "reference_run", "rows_for", "sample_summary", "short_time",
           "substitutions", "sweep", "sweep_alt", "sweep_complete", "sweep_dates", "sweep_figure",
           "sweep_table", "time_cell"]
