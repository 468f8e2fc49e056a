"""Feeding the GPU (episode 9): training throughput of the lesson's CNN from each input pipeline.

Importing the package imports no deep-learning framework; measuring imports Keras.
"""

from gpulesson.experiments.feeding.figures import alt_texts, figures
from gpulesson.experiments.feeding.measure import (
    BATCH_SIZE,
    QUICK_N_IMAGES,
    build_model,
    precision_policy,
    run_benchmark,
    time_loader,
)
from gpulesson.experiments.feeding.page import describe, substitutions
from gpulesson.experiments.feeding.records import (
    EXPERIMENT,
    N_IMAGES,
    RESULTS_FILE,
    best_pipeline,
    delivered_wrong_data,
    find,
    reference_run,
    targets,
)
from gpulesson.records.results import NOT_RECORDED

__all__ = ["BATCH_SIZE", "EXPERIMENT", "NOT_RECORDED", "N_IMAGES", "QUICK_N_IMAGES",
           "RESULTS_FILE", "alt_texts", "best_pipeline", "build_model", "delivered_wrong_data",
           "describe", "figures", "find", "precision_policy", "reference_run", "run_benchmark",
           "substitutions", "targets", "time_loader"]
