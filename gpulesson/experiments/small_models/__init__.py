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
from gpulesson.experiments.small_models.measure import GRID, QUICK_GRID, sweep, time_cell
from gpulesson.experiments.small_models.page import substitutions
from gpulesson.experiments.small_models.records import (
    EXPERIMENT,
    RESULTS_FILE,
    comparison_record,
    describe_comparison,
    epoch_summary,
    reference_run,
    sweep_complete,
    sweep_table,
)
from gpulesson.records.results import duration as short_time

__all__ = ["EXPERIMENT", "GRID", "QUICK_GRID", "RESULTS_FILE", "comparison_alt", "comparison_figure",
           "comparison_record", "describe_comparison", "epoch_summary", "reference_run", "short_time",
           "substitutions", "sweep", "sweep_alt", "sweep_complete", "sweep_figure", "sweep_table",
           "time_cell"]
