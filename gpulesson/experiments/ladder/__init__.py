"""The speed ladder (episode 9, "From the default to the card's limit"): the lesson's CNN on the
lesson's HDF5 file, from the lesson's default to what the card can do with this model, each rung
removing one named cost. Importing it imports no deep-learning framework."""

from gpulesson.experiments.ladder.figures import FILE, alt_text, figures
from gpulesson.experiments.ladder.page import substitutions
from gpulesson.experiments.ladder.records import EXPERIMENT, RESULTS_FILE, reference_run

__all__ = ["EXPERIMENT", "FILE", "RESULTS_FILE", "alt_text", "figures", "reference_run",
           "substitutions"]
