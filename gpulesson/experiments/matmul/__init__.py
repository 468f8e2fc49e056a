"""Matrix multiplication on the CPU and on the GPU (episode 6): latency and GFLOP/s against
matrix size, per device and precision, with the crossover from which the GPU is faster.
Importing it imports no deep-learning framework, and it never imports TensorFlow."""

from gpulesson.experiments.matmul.figures import figures  # noqa: F401
from gpulesson.experiments.matmul.measure import (  # noqa: F401 (the episode's names)
    DTYPES,
    GPU_SIZES,
    QUICK_REPEATS,
    QUICK_SIZES,
    REPEATS,
    SIZES,
    sweep,
    time_matmul,
    wait,
)
from gpulesson.experiments.matmul.page import substitutions  # noqa: F401
from gpulesson.experiments.matmul.records import (  # noqa: F401
    EXPERIMENT,
    RESULTS_FILE,
    crossover,
    crossover_line,
    describe,
    latency_run,
    page_runs,
    reference_run,
    sweep_record,
)
