"""Matrix multiplication on the CPU and on the GPU: latency and GFLOP/s against matrix size.

Episode 6's sweeps, one record per device and precision, and the crossover from which the GPU
is faster; ``--run-id`` goes on with an earlier run, measuring what it lacks:

    python -m gpulesson.experiments.matmul                      # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.matmul --devices cpu gpu
    python -m gpulesson.experiments.matmul --quick --out my-matmul.jsonl

Importing it imports no deep-learning framework, and it never imports TensorFlow.
"""

import argparse

from gpulesson.experiments import cli
from gpulesson.experiments.matmul.measure import (
    DTYPES,
    GPU_SIZES,
    MAX_SECONDS,
    QUICK_SIZES,
    RECORDS,
    SIZES,
    crossover,
    crossover_line,
    describe,
    find,
    precision_label,
    rate_summary,
    sweep,
    sweep_record,
    time_matmul,
    wait,
)
from gpulesson.experiments.matmul.page import figures, latency_run, reference_run
from gpulesson.records.summaries import QUICK_REPEATS, REPEATS, WARMUP

RESULTS_FILE = RECORDS.results_file


def _seconds(text: str) -> float:
    """``--max-seconds``, more than 0 (0 or less would skip everything)."""
    seconds = cli.number(text, float, "a number of seconds")
    if not seconds > 0:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 seconds, not {text}: a limit of {text} would skip everything")
    return seconds


COMMAND = cli.Command(
    __name__, __doc__,
    cli.devices("devices to measure, in this order (default: cpu, then gpu if visible)"),
    cli.option("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES),
               help="precisions to measure (default: all)"),
    cli.option("--sizes", nargs="+", type=cli.positive_int, default=None,
               help=f"matrix sizes n (default on the CPU {' '.join(map(str, SIZES))}, "
                    f"on a GPU up to {GPU_SIZES[-1]}; --quick: {' '.join(map(str, QUICK_SIZES))})"),
    cli.quick_default("--repeats", f"timed calls and windows of calls per size, after {WARMUP} "
                      "recorded warm-up call", REPEATS, QUICK_REPEATS),
    cli.option("--max-seconds", type=_seconds, default=MAX_SECONDS,
               help=f"skip sizes whose one call would take longer (default {MAX_SECONDS:g})"),
    cli.quick("small sizes and few repeats (also when LESSON_QUICK=1)"),
    cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("repeats",))

__all__ = ["DTYPES", "GPU_SIZES", "QUICK_REPEATS", "QUICK_SIZES", "REPEATS",
           "RESULTS_FILE", "SIZES", "crossover", "crossover_line", "describe", "figures", "find",
           "latency_run", "precision_label", "rate_summary", "reference_run", "sweep",
           "sweep_record", "time_matmul", "wait"]
