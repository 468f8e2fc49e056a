"""Trainings sharing a CPU (episode 5): the lesson's CNN trained by 1, 2, 3 processes at once,
each starting as many threads as there are cores. Importing it imports no deep-learning
framework; only the workers do."""

from gpulesson.experiments.contention.figures import figures
from gpulesson.experiments.contention.measure import WorkerError, run_condition
from gpulesson.experiments.contention.page import substitutions
from gpulesson.experiments.contention.records import (
    EXPERIMENT,
    RESULTS_FILE,
    describe,
    make_records,
    reference_run,
)

__all__ = ["EXPERIMENT", "RESULTS_FILE", "WorkerError", "describe", "figures", "make_records",
           "reference_run", "run_condition", "substitutions"]
