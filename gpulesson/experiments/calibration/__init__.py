"""How the lesson's CNN learns the synthetic stand-in: accuracy per epoch, overfitting, confusions.

Episode 5's instructor notes: the stand-in should behave as CIFAR-10 does with the CNN (a test
accuracy within TARGET_ACCURACY after the workshop's epochs, overfitting within 30 epochs, mistakes
mostly within look-alike pairs). A record keeps a fingerprint of the generator, so that a changed
stand-in shows that it is stale. Imports no deep-learning framework."""

from gpulesson.experiments import cli
from gpulesson.records.recordset import RecordSet

RECORDS = RecordSet("standin-calibration", ("run_id",))  # one record a run; the page reads the newest
EXPERIMENT, RESULTS_FILE = RECORDS.experiment, RECORDS.results_file
WORKSHOP_EPOCHS = 3  # the episode trains this many epochs
TARGET_ACCURACY = (0.45, 0.70)  # test accuracy after WORKSHOP_EPOCHS, like CIFAR-10's
FULL = {"n_train": 50_000, "n_test": 10_000, "epochs": 30, "batch_size": 256}
QUICK = {"n_train": 2_000, "n_test": 500, "epochs": 2, "batch_size": 64}

COMMAND = cli.Command(
    __name__, __doc__,
    cli.quick("a tiny run for tests (also with LESSON_QUICK=1)"),
    cli.option("--epochs", type=int, default=None,
               help=f"epochs (default {FULL['epochs']}; quick {QUICK['epochs']})"),
    cli.option("--n-train", type=int, default=None,
               help=f"training and validation images (default {FULL['n_train']:,})"),
    cli.option("--n-test", type=int, default=None, help=f"test images (default {FULL['n_test']:,})"),
    cli.option("--batch-size", type=int, default=None,
               help=f"images per batch (default {FULL['batch_size']})"),
    cli.option("--device", choices=("cpu", "gpu"), default="cpu",
               help="where to train (default cpu; the accuracies do not depend on it)"),
    cli.out(RESULTS_FILE), cli.SEED)  # no --run-id: a run is one record, always a new one
