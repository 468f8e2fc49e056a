"""Draw the profile's figure from its results file:

    python fig/09-feeding-the-gpu/profile.py [RESULTS]   ->  profile-step.svg

RESULTS defaults to results/profile.jsonl. The run drawn is the newest one with CPU and GPU
records, else the newest with GPU records, else the newest run
(gpulesson.experiments.profile.reference_run); record one with
``KERAS_BACKEND=jax python -m gpulesson.experiments.profile``. Without a run, the script says so,
draws nothing and exits with status 0.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import profile
from gpulesson.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
_draw = drawer(profile, (profile.FILE,), HERE,
               command="KERAS_BACKEND=jax python -m gpulesson.experiments.profile")


def draw(results=profile.RESULTS_FILE, folder=HERE) -> list[Path]:
    # Until a profile is recorded the episode shows no figure: nothing to draw, and no error
    # (every script in fig/ runs when the figures are redrawn).
    if not profile.reference_run(results):
        print(f"{results} holds no profile yet: nothing drawn")
        return []
    return _draw(results, folder)


if __name__ == "__main__":
    main(draw)
