"""Grain's worker processes (episode 9, "The same blocks through a library"): when do they pay?
The ceiling's do-nothing model trained from the lesson's stored blocks, as they are and
augmented, by 0 to N worker processes. Importing it imports no deep-learning framework."""

from gpulesson.experiments.workers.figures import FILE, alt_text, figures
from gpulesson.experiments.workers.page import substitutions
from gpulesson.experiments.workers.records import EXPERIMENT, RESULTS_FILE, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "alt_text", "figures", "reference_run",
           "substitutions"]
