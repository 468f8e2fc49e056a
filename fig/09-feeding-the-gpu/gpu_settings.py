"""Draw the settings' figure from its results file:

    python fig/09-feeding-the-gpu/gpu_settings.py [RESULTS]   ->  gpu-settings.svg

RESULTS defaults to results/gpu-settings.jsonl. The run drawn is the newest one with CPU and GPU
records, else the newest with GPU records, else the newest run
(gpulesson.experiments.gpu_settings.reference_run); record one with
``KERAS_BACKEND=jax python -m gpulesson.experiments.gpu_settings``. Without a run, the script says so,
draws nothing and exits with status 0.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import gpu_settings
from gpulesson.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
# Until a run is recorded the episode shows no figure: nothing to draw, and no error.
draw = drawer(gpu_settings, (gpu_settings.FILE,), HERE, until_recorded="settings",
              command="KERAS_BACKEND=jax python -m gpulesson.experiments.gpu_settings")


if __name__ == "__main__":
    main(draw)
