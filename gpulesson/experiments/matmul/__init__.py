"""Matrix multiplication on the CPU and on the GPU: latency and GFLOP/s against matrix size.

The benchmark of the episode "Why GPUs are fast". It multiplies two random n x n matrices with
``keras.ops.matmul`` (any Keras backend), on a device chosen with ``keras.device``, with the
inputs created on that device, and reads the clock only once a result is there
(:func:`~gpulesson.experiments.matmul.measure.wait`). Each size gives two numbers: the latency
of one synchronised call, and the throughput over windows of many calls with one wait each,
long enough that the fixed cost of the wait is under 5 % of a window
(:func:`~gpulesson.experiments.matmul.measure.time_matmul`). A GPU sweep goes on to n = 16,384.

Every size is timed by the lesson's measurement rule (:mod:`gpulesson.experiments.common`):
a recorded warm-up call, then the timed repeats, all kept with their ``summary``; the page's
values show medians with their ranges, and its comparisons (precisions, the crossover) say
"no measurable difference" where the ranges overlap. Records of the older method (one
synchronised call each, no ``method``) count as latencies only.

A *sweep* is one device and one precision (float32, bfloat16, float16) over the sizes; each
sweep is one record in the results file, and the sweeps of one command share a ``run_id``.
float32 sweeps also time the same calls without waiting (the classic mistake), and GPU sweeps
time copying the inputs from the host's memory to the GPU. From the CPU and GPU sweeps of one
run, :func:`crossover` finds the size from which the GPU is faster.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.matmul.measure`: the sizes and precisions, timing one size,
  :func:`sweep`;
- :mod:`~gpulesson.experiments.matmul.records`: the records, the reference runs, the crossover,
  the card's published peaks (:mod:`gpulesson.gpu_peaks`);
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
    GPU_SIZES,
    MAX_OVERHEAD_SHARE,
    MAX_SECONDS,
    METHOD,
    MIN_WINDOW_SECONDS,
    QUICK_REPEATS,
    QUICK_SIZES,
    REPEATS,
    SIZES,
    calls_per_window,
    check_device,
    check_dtype,
    check_sizes,
    gflops,
    overhead,
    sizes_for,
    sweep,
    time_matmul,
    wait,
)
from gpulesson.experiments.matmul.page import substitutions
from gpulesson.experiments.matmul.records import (
    EXPERIMENT,
    RESULTS_FILE,
    amortised,
    crossover,
    crossover_line,
    crossover_text,
    describe,
    dispatch_floor,
    latency_run,
    page_runs,
    point_summary,
    precision_label,
    published_peak,
    rate_summary,
    reference_run,
    sweep_record,
)

__all__ = ["DTYPES", "EXPERIMENT", "GPU_SIZES", "MAX_OVERHEAD_SHARE", "MAX_SECONDS", "METHOD",
           "MIN_WINDOW_SECONDS", "QUICK_REPEATS", "QUICK_SIZES", "REPEATS", "RESULTS_FILE",
           "SIZES", "alt_texts", "amortised", "calls_per_window", "check_device", "check_dtype",
           "check_sizes", "crossover", "crossover_line", "crossover_text", "describe",
           "dispatch_floor", "figures", "gflops", "latency_run", "overhead", "page_runs",
           "point_summary", "precision_label", "published_peak", "rate_summary", "reference_run",
           "sizes_for", "substitutions", "sweep", "sweep_record", "time_matmul", "wait"]
