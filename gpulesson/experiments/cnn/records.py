"""The names episode 5's records had here, now in the package's measure and page modules."""

from gpulesson.experiments.cnn.measure import EXPERIMENT, RECORDS, run_record  # noqa: F401
from gpulesson.experiments.cnn.page import (  # noqa: F401
    RESULTS_FILE,
    epoch_summary,
    reference_run,
    speedup_text,
)
