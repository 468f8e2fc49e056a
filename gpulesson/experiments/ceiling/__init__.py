"""The ceiling of ``fit`` (episode 9, "What limits fit"): how many images per second each
backend's training loop takes with a model that does almost nothing, fed from memory and from
the lesson's generator. Importing it imports no deep-learning framework."""

from gpulesson.experiments.ceiling.page import FILE, figures, substitutions, table
from gpulesson.experiments.ceiling.records import EXPERIMENT, PIPELINES, RESULTS_FILE, ceiling, reference_run

__all__ = ["EXPERIMENT", "FILE", "PIPELINES", "RESULTS_FILE", "ceiling", "figures",
           "reference_run", "substitutions", "table"]
