"""Grain's worker processes (episode 9, "The same blocks through a library"): when do they pay?
The ceiling's do-nothing model trained from the lesson's stored blocks, as they are and
augmented, by 0 to N worker processes; one process per backend, all appending to one run
(PyTorch's with :data:`SETTINGS`). Importing it imports no deep-learning framework."""

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling.measure import SIZES  # the ceiling's epoch: the same model
from gpulesson.experiments.workers import page

RECORDS, RESULTS_FILE = page.RECORDS, page.RECORDS.results_file
# PyTorch's OpenMP threads spinning beside Grain's stalled some epochs for seconds on 2 cores.
SETTINGS = {"torch": {"OMP_WAIT_POLICY": "PASSIVE"}}


def _check(parser, args) -> None:
    if any(n < 0 for n in args.workers or ()):
        parser.error("--workers takes 0 (none) or more worker processes")


COMMAND = cli.Command(
    __name__, "Grain's worker processes, with and without per-item work: the command line.",
    cli.backends(RECORDS.backends, "Keras backends, one process each (default: JAX and PyTorch, "
                                   "those installed)"),
    cli.devices("devices the model trains on (default: cpu, then gpu if the backend sees one)"),
    cli.option("--works", nargs="+", choices=list(page.WORK), default=None,
               help="what is done to each block (default: all)"),
    cli.option("--workers", nargs="+", type=int, default=None,
               help="numbers of worker processes (default: 0, 1, 2, 4, ... up to the cores "
                    "available, at most 8)"),
    cli.sizes(SIZES), cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("n_images", "batch_size"),
    check=_check, per_backend=True, environment=SETTINGS)
