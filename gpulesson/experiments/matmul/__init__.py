"""Matrix multiplication on the CPU and on the GPU: GFLOP/s against matrix size.

The benchmark of the episode "Why GPUs are fast". It multiplies two random n x n matrices with
``keras.ops.matmul`` (any Keras backend), on a device chosen with ``keras.device``, with the
inputs created on that device, and times every call only once its result is there
(:func:`~gpulesson.experiments.matmul.measure.wait`).

Every size is timed by the lesson's measurement rule (:mod:`gpulesson.experiments.common`):
a recorded warm-up call, then the timed repeats, all kept with their ``summary``; the page's
values show medians with their ranges, and its comparisons (precisions, the crossover) say
"no measurable difference" where the ranges overlap.

A *sweep* is one device and one precision (float32, bfloat16, float16) over the sizes; each
sweep is one record in the results file, and the sweeps of one command share a ``run_id``.
float32 sweeps also time the same calls without waiting (the classic mistake), and GPU sweeps
time copying the inputs from the host's memory to the GPU. From the CPU and GPU sweeps of one
run, :func:`crossover` finds the size from which the GPU is faster.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.matmul.measure`: the sizes and precisions, timing one size,
  :func:`sweep`;
- :mod:`~gpulesson.experiments.matmul.records`: the records, the reference run, the crossover;
- :mod:`~gpulesson.experiments.matmul.page`: the episode's ``ref_mm_*`` values;
- :mod:`~gpulesson.experiments.matmul.figures`: the figures
  (``fig/06-why-gpus-are-fast/matmul.py``) and their alt texts;
- :mod:`~gpulesson.experiments.matmul.__main__`: the command line,
  ``python -m gpulesson.experiments.matmul``.

Needs only keras, numpy and a Keras backend (matplotlib for the figures), imported when used:
importing the package imports no deep-learning framework, and it never imports TensorFlow.
"""

from gpulesson.experiments.matmul.figures import alt_texts, figures
from gpulesson.experiments.matmul.measure import (
    DTYPES,
    MAX_SECONDS,
    QUICK_REPEATS,
    QUICK_SIZES,
    REPEATS,
    SIZES,
    check_device,
    check_dtype,
    check_sizes,
    gflops,
    make_inputs,
    sweep,
    time_matmul,
    wait,
)
from gpulesson.experiments.matmul.page import substitutions
from gpulesson.experiments.matmul.records import (
    BUSY,
    DATA,
    EXPERIMENT,
    RESULTS_FILE,
    crossover,
    crossover_text,
    describe,
    find,
    point_summary,
    rate_summary,
    reference_run,
    runs,
    software,
    sweep_record,
)
from gpulesson.results import NOT_RECORDED
from gpulesson.timing import load_average

__all__ = [
    "BUSY", "DATA", "DTYPES", "EXPERIMENT", "MAX_SECONDS", "NOT_RECORDED", "QUICK_REPEATS",
    "QUICK_SIZES", "REPEATS", "RESULTS_FILE", "SIZES", "alt_texts", "check_device",
    "check_dtype", "check_sizes", "crossover", "crossover_text", "describe", "figures", "find",
    "gflops", "load_average", "make_inputs", "point_summary", "rate_summary", "reference_run",
    "runs", "software", "substitutions", "sweep", "sweep_record", "time_matmul", "wait",
]
