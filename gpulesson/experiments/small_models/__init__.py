"""Episode 7's small MLP on the CPU and on the GPU (``comparison``, on the breast-cancer data)
and its sweep of batch size x layer width (``sweep``, on random rows), with the episode's own
code; each part's page values and figures come from its own reference run. Importing the
package imports no deep-learning framework: the page's values are computed while the site
builds."""

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

__all__ = ["COMPARISON", "EXPERIMENT", "GRID", "MIN_BATCHES", "MIN_EPOCHS", "PARTS",
           "QUICK_COMPARISON", "QUICK_GRID", "RESULTS_FILE", "SmallModelsError", "check_devices",
           "check_grid", "comparison_alt", "comparison_figure", "comparison_record",
           "describe_comparison", "epoch_summary", "hidden_widths", "is_gpu", "reference_run",
           "rows_for", "sample_summary", "short_time", "substitutions", "sweep", "sweep_alt",
           "sweep_complete", "sweep_dates", "sweep_figure", "sweep_table", "time_cell"]
