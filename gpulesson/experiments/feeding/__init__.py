"""Feeding the GPU: training throughput of the lesson's CNN from each input pipeline.

Episode 9's benchmark; importing the package imports no deep-learning framework, measuring
imports Keras.
"""

from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.feeding.measure import (
    BATCH_SIZE,
    N_IMAGES,
    PIPELINES,
    QUICK_BATCH_SIZE,
    QUICK_N_IMAGES,
    RECORDS,
    REFERENCE_CPU_STEPS,
    TARGET_EPOCH_SECONDS,
    best_pipeline,
    build_model,
    run_benchmark,
    time_loader,
)
from gpulesson.experiments.feeding.page import describe, figures
from gpulesson.records.summaries import QUICK_REPEATS, REPEATS, WARMUP

RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.reference_run
STEPS = REFERENCE_CPU_STEPS
COMMAND = cli.Command(
    __name__, __doc__,
    cli.devices("devices to measure, in this order (default: cpu, then gpu if visible)"),
    cli.option("--pipelines", nargs="+", choices=list(PIPELINES), default=None,
               help="pipelines to measure (default: all that deliver the right data "
                    "on this Keras backend; the *-workers ones with TensorFlow only)"),
    cli.quick_default("--batch-size", "batch size of the pipeline comparison", BATCH_SIZE,
                      QUICK_BATCH_SIZE),
    cli.quick_default("--n-images", "training images", f"{N_IMAGES:,}", f"{QUICK_N_IMAGES:,}"),
    cli.quick_default("--repeats", "timed epochs of every condition, at least the lesson's rule",
                      f"and least {REPEATS}", QUICK_REPEATS),
    cli.option("--warmup", type=int, default=WARMUP,
               help=f"warm-up epochs, recorded but not counted (default and least {WARMUP})"),
    cli.option("--max-steps", type=int, default=None,
               help="time only the first N batches of each epoch (default: all)"),
    cli.option("--cpu-max-steps", type=int, default=None,
               help=f"--max-steps for the CPU only (default: --max-steps); the reference uses "
                    f"{STEPS}"),
    cli.option("--classic-max-steps", type=int, default=None,
               help="at most N batches an epoch for the (slow) classic pipeline; the "
                    f"reference uses {STEPS}"),
    cli.option("--workers", type=int, default=None,
               help="worker processes of the *-workers pipelines, TensorFlow backend "
                    "only (default: half the usable cores, 2 to 8)"),
    cli.option("--chunks", action="store_true",
               help="also time the lesson's generator read alone on the host with chunks of 1 "
                    "and 4 batches, and lzf chunks with h5py's default and a 64 MiB chunk cache"),
    cli.quick("tiny sizes (also when LESSON_QUICK=1), for tests"),
    cli.option("--data-dir", type=Path, default=None,
               help="folder for the data files (default: a temporary folder)"),
    cli.out(RESULTS_FILE), cli.RUN_ID,
    at_least_one=("batch_size", "n_images", "repeats", "max_steps", "cpu_max_steps",
                  "classic_max_steps", "workers"),
    epilog=f"Every condition: {WARMUP} recorded warm-up epoch and at least {REPEATS} timed ones "
           f"({QUICK_REPEATS} with --quick). The reference's CPU part times {STEPS} batches an "
           f"epoch (--cpu-max-steps {STEPS} --classic-max-steps {STEPS}): about 6 minutes on an "
           "idle 2-core machine (an extrapolation from a recorded run), several times longer on "
           "a busy one. The settings are the speed ladder's: python -m "
           "gpulesson.experiments.ladder.")

__all__ = ["BATCH_SIZE", "N_IMAGES", "QUICK_N_IMAGES", "RECORDS", "RESULTS_FILE",
           "TARGET_EPOCH_SECONDS", "best_pipeline", "build_model", "describe", "figures",
           "reference_run", "run_benchmark", "time_loader"]
