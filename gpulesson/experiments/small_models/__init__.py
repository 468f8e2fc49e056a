"""A small MLP on the CPU and on the GPU, and a sweep of batch size x layer width.

Episode 7's MLP on the breast-cancer data (``comparison``) and its sweep on random rows
(``sweep``), with the episode's own code. Importing the package imports no deep-learning framework."""

from gpulesson.experiments import cli
from gpulesson.experiments.small_models.measure import (
    GRID,
    MIN_BATCHES,
    PARTS,
    QUICK_GRID,
    RECORDS,
    comparison_record,
    sweep,
    time_cell,
)
from gpulesson.experiments.small_models.page import (
    describe_comparison,
    reference_run,
    sweep_figure,
    sweep_table,
)
from gpulesson.records.results import duration as short_time

RESULTS_FILE = RECORDS.results_file
COMMAND = cli.Command(
    __name__, __doc__,
    cli.option("--devices", nargs="+", default=None, metavar="DEVICE",
               help="cpu, gpu or both, in this order (default: cpu, then gpu if one is visible)"),
    cli.option("--parts", nargs="+", default=list(PARTS), metavar="PART",
               help="comparison (breast-cancer MLP; needs scikit-learn), sweep, or both (default)"),
    cli.option("--batch-sizes", nargs="+", type=int, default=None, metavar="N",
               help=f"sweep batch sizes (default {' '.join(map(str, GRID['batch_sizes']))})"),
    cli.option("--widths", nargs="+", type=int, default=None, metavar="N",
               help=f"sweep layer widths (default {' '.join(map(str, GRID['widths']))})"),
    cli.option("--rows", type=int, default=None,
               help=f"random rows per sweep epoch, at least {MIN_BATCHES} batches "
                    f"(default {GRID['n_rows']})"),
    cli.option("--epochs", type=int, default=None,
               help=f"epochs per sweep cell, the first not timed (default {GRID['epochs']})"),
    cli.quick("a tiny run for tests (also with LESSON_QUICK=1)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID)

__all__ = ["GRID", "QUICK_GRID", "RESULTS_FILE", "comparison_record", "describe_comparison", "reference_run",
           "short_time", "sweep", "sweep_figure", "sweep_table", "time_cell"]
