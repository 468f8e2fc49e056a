"""Episode 5's CNN on the CPU and on the GPU: one record per device of a run, the reference run
(the newest with a GPU record) and the page's values and figures drawn from it."""

from gpulesson.experiments.cnn import inference
from gpulesson.experiments.cnn.figures import alt_texts, figures
from gpulesson.experiments.cnn.page import substitutions
from gpulesson.experiments.cnn.records import (
    EXPERIMENT,
    RESULTS_FILE,
    describe,
    epoch_summary,
    full_training_seconds,
    reference_run,
    run_record,
)
from gpulesson.records.results import NOT_RECORDED, duration, is_gpu, speedup

__all__ = ["EXPERIMENT", "NOT_RECORDED", "RESULTS_FILE", "alt_texts", "describe", "duration",
           "epoch_summary", "figures", "full_training_seconds", "inference", "is_gpu", "reference_run",
           "run_record", "speedup", "substitutions"]
