"""Record a CPU-vs-GPU run of the PyTorch episode's CNN, with the episode's own code, in a results file.

Episode 8's measurements: one record a device, appended as soon as it is done; ``--run-id``
goes on with an earlier run on the devices it lacks. Importing the package needs neither
PyTorch nor Keras (TensorFlow must not share a process with PyTorch's compiler).
"""

from __future__ import annotations

from gpulesson.experiments import cli
from gpulesson.experiments.torch_reference.measure import (
    DEVICES,
    FULL_BATCH_SIZE,
    RECORDS,
    SKIPPED_CELL,
    check_torch,
    run_record,
    torch_environment,
)
from gpulesson.experiments.torch_reference.page import (
    alt_texts,
    describe,
    figures,
    reference_run,
    substitutions,
)

EXPERIMENT, RESULTS_FILE = RECORDS.experiment, RECORDS.results_file
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

__all__ = ["EXPERIMENT", "RESULTS_FILE", "SKIPPED_CELL", "alt_texts", "check_torch", "describe",
           "figures", "reference_run", "run_record", "substitutions", "torch_environment"]
