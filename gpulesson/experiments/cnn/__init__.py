"""Record a CPU-vs-GPU run of the lesson's CNN, with the episode's own code, in a results file.

Episode 5's CNN: each device trains, then predicts (the training's records and the prediction's,
in one file); the page shows the reference run, the newest with a GPU record.
"""

from gpulesson.experiments import cli
from gpulesson.experiments.cnn.measure import EXPERIMENT, PARTS, RECORDS, run_record  # noqa: F401
from gpulesson.experiments.cnn.page import RESULTS_FILE, describe, figures, reference_run  # noqa: F401

COMMAND = cli.Command(
    "cnn", __doc__,
    cli.devices("devices to train on, in this order (default: cpu, then gpu if one is visible)"),
    cli.option("--parts", nargs="+", choices=PARTS, default=list(PARTS),
               help="what to measure on each device (default: both): the training, and the "
                    "prediction (throughput and latency)"),
    cli.EPOCHS,
    cli.option("--batch-size", type=int, default=256,
               help="images per batch (default 256; quick mode: at most 64)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID,
    cli.option("--cpu-threads", type=int, default=None,
               help="CPU threads of TensorFlow or PyTorch (default: the cores this process may "
                    "use); recorded with the run, like XLA and the load average"),
    at_least_one=("batch_size", "cpu_threads"))
