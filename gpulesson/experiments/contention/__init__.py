"""The lesson's CNN on a CPU shared with other work: k trainings at once.

Episode 5: each number of copies started together, each copy a process that starts as many
threads as there are cores, then again with each ``--cpu-threads`` per copy where the Keras
backend has a per-process thread setting (on JAX they are skipped, with a note kept in the
records). Each condition is appended as soon as it finishes; ``--run-id`` goes on with the
conditions a run lacks. Measure on an otherwise quiet machine: other programs would count as
one more copy. Importing it imports no deep-learning framework; only the workers do.
"""

from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.records.recordset import RecordSet
from gpulesson.records.summaries import default_epochs

# A condition: copies and threads. The file also keeps the records of a former part, "watched"
# (one training shown in a browser or not, its mode in ``watched``); new records keep ``part``
# "copies" and ``watched`` None, so that the page, the figure and a run that goes on read only
# the copies'. Speed does not depend on the pixels, so the data is the synthetic stand-in.
RECORDS = RecordSet("contention", ("copies", "threads", "watched"))
# The measurement rule: every copy trains a warm-up epoch and the rule's timed ones.
N_IMAGES, EPOCHS, BATCH_SIZE = 10_000, default_epochs(False), 256
QUICK_N_IMAGES, QUICK_EPOCHS, QUICK_BATCH_SIZE = 256, default_epochs(True), 64
COPIES = (1, 2, 3)
TIMEOUT = 1800.0  # seconds one condition may take, all copies together

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
    at_least_one=("n_images", "epochs", "batch_size"))
