"""Draw the profile's figure from its results file:

    python fig/09-feeding-the-gpu/profile.py [RESULTS]   ->  profile-step.svg

RESULTS defaults to results/profile.jsonl. Each device's panel is drawn from the newest run
that profiled it (gpulesson.experiments.profile.page.reference_run); record one with
``KERAS_BACKEND=jax python -m gpulesson.experiments.profile``. Without a run, the script says so,
draws nothing and exits with status 0.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments.registry import experiment
from gpulesson.records.figure_scripts import drawer, main

profile = experiment("gpulesson.experiments.profile")
# Until a run is recorded the episode shows no figure: nothing to draw, and no error.
draw = drawer(profile, profile.FIGURES, Path(__file__).resolve().parent, until_recorded="profile",
              command=f"KERAS_BACKEND=jax python -m {profile.__name__}")


if __name__ == "__main__":
    main(draw)
