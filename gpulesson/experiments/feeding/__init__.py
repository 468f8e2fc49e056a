"""Feeding the GPU (episode 9): training throughput of the lesson's CNN from each input pipeline.

Importing the package imports no deep-learning framework; measuring imports Keras.
"""

from gpulesson.experiments.feeding.figures import figures
from gpulesson.experiments.feeding.measure import (
    BATCH_SIZE,
    QUICK_N_IMAGES,
    build_model,
    run_benchmark,
    time_loader,
)
from gpulesson.experiments.feeding.page import describe, substitutions
from gpulesson.experiments.feeding.records import (
    EXPERIMENT,
    N_IMAGES,
    RESULTS_FILE,
    best_pipeline,
    reference_run,
)

__all__ = ["BATCH_SIZE", "EXPERIMENT", "N_IMAGES", "QUICK_N_IMAGES", "RESULTS_FILE", "best_pipeline",
           "build_model", "describe", "figures", "reference_run", "run_benchmark", "substitutions",
           "time_loader"]
