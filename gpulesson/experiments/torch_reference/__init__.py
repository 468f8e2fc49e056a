"""Record a CPU-vs-GPU run of the PyTorch episode's CNN, with the episode's own code, in a results file.

Episode 8's measurements, one record a device; importing the package needs neither PyTorch nor Keras."""

from gpulesson.experiments import cli
from gpulesson.experiments.torch_reference.measure import DEVICES, RECORDS, check_torch, run_record
from gpulesson.experiments.torch_reference.page import describe, figures, reference_run

RESULTS_FILE = RECORDS.results_file
FULL_BATCH_SIZE = 128
COMMAND = cli.Command(
    __name__, __doc__,
    cli.devices("devices to train on, in this order (default: cpu, then gpu if one is visible)",
                choices=DEVICES),
    cli.EPOCHS,
    cli.option("--batch-size", type=int, default=FULL_BATCH_SIZE,
               help=f"images per batch (default {FULL_BATCH_SIZE}; quick mode: at most 64)"),
    cli.option("--threads", type=int, default=None,
               help="CPU threads for PyTorch (default: PyTorch's choice)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID)

__all__ = ["RESULTS_FILE", "check_torch", "describe", "figures", "reference_run", "run_record"]
