"""Matrix multiplication on the CPU and on the GPU (episode 6): latency and GFLOP/s against
matrix size, per device and precision, with the crossover from which the GPU is faster.
Importing it imports no deep-learning framework, and it never imports TensorFlow."""

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
