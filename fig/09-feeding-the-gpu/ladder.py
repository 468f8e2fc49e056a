"""Draw the ladder's figure from its results file:

    python fig/09-feeding-the-gpu/ladder.py [RESULTS]   ->  ladder.svg

RESULTS defaults to results/ladder.jsonl. The run drawn is the newest one with GPU records, else
the newest run (gpulesson.experiments.ladder.page.reference_run); record one with
``KERAS_BACKEND=jax python -m gpulesson.experiments.ladder``. Without a run, the script says so,
draws nothing and exits with status 0.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments.registry import experiment
from gpulesson.records.figure_scripts import drawer, main

ladder = experiment("gpulesson.experiments.ladder")
# Until a run is recorded the episode shows no figure: nothing to draw, and no error.
draw = drawer(ladder, ladder.FIGURES, Path(__file__).resolve().parent, until_recorded="ladder",
              command=f"KERAS_BACKEND=jax python -m {ladder.__name__}")


if __name__ == "__main__":
    main(draw)
