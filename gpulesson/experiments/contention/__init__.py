"""The lesson's CNN on a CPU shared with other work: k trainings at once.

Episode 5: each number of copies started together, with the framework's threads, then with each
``--cpu-threads`` per copy where the Keras backend can. Measure on an otherwise quiet machine.
"""

from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.records.recordset import RecordSet
from gpulesson.records.summaries import default_epochs

# A condition: copies and threads. The file also keeps the records of a former part, "watched";
# new records keep ``part`` "copies" and ``watched`` None, so that only the copies' are read.
RECORDS = RecordSet("contention", ("copies", "threads", "watched"))
# The measurement rule: every copy trains a warm-up epoch and the rule's timed ones.
N_IMAGES, EPOCHS, BATCH_SIZE = 10_000, default_epochs(False), 256
QUICK_N_IMAGES, QUICK_EPOCHS, QUICK_BATCH_SIZE = 256, default_epochs(True), 64
COPIES = (1, 2, 3)
TIMEOUT = 1800.0  # seconds one condition may take, all copies together


def _check(parser, args) -> None:
    """Quick mode's sizes where none is given; a usage error for what cannot be measured."""
    for name, full, quick in (("n_images", N_IMAGES, QUICK_N_IMAGES), ("epochs", EPOCHS, QUICK_EPOCHS),
                              ("batch_size", BATCH_SIZE, QUICK_BATCH_SIZE)):
        setattr(args, name, getattr(args, name) or (quick if args.quick else full))
    for name in ("copies", "cpu_threads"):
        for value in getattr(args, name):
            if value < 1:
                parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if args.batch_size > args.n_images:
        parser.error(f"--batch-size {args.batch_size} is larger than --n-images {args.n_images}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")


COMMAND = cli.Command(
    __name__, __doc__,
    cli.option("--copies", nargs="+", type=int, default=list(COPIES),
               help=f"numbers of trainings at once (default {' '.join(map(str, COPIES))})"),
    cli.option("--cpu-threads", nargs="*", type=int, default=[1],
               help="also run each number of copies with this many framework CPU "
                    "threads per copy (default 1; give none to skip)"),
    cli.quick_default("--n-images", "training images per epoch", f"{N_IMAGES:,}", QUICK_N_IMAGES),
    cli.quick_default("--epochs", "epochs per copy", EPOCHS, QUICK_EPOCHS),
    cli.quick_default("--batch-size", "images per batch", BATCH_SIZE, QUICK_BATCH_SIZE),
    cli.option("--timeout", type=float, default=TIMEOUT,
               help=f"seconds one condition may take, all copies together (default {TIMEOUT:g})"),
    cli.quick("tiny sizes (also when LESSON_QUICK=1), for tests"),
    cli.option("--data-dir", type=Path, default=None,
               help="folder for the data file (default: a temporary folder)"),
    # Still accepted: the stage rehearsal's arguments name the part.
    cli.option("--parts", nargs="+", choices=("copies",), default=["copies"],
               help="what to measure: 'copies', k trainings at once (the only part)"),
    cli.out(RECORDS.results_file), cli.RUN_ID,
    at_least_one=("n_images", "epochs", "batch_size"), check=_check)
