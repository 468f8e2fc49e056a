"""Grain's worker processes (episode 9, "The same blocks through a library"): when do they pay?
The ceiling's do-nothing model trained from the lesson's stored blocks, as they are and
augmented, by 0 to N worker processes. Importing it imports no deep-learning framework."""

from gpulesson.experiments.workers.page import EXPERIMENT, FILE, RESULTS_FILE, figures, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "figures", "reference_run"]
