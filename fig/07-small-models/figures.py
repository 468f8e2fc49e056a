"""Draw the small-model figures from the results file:

    python fig/07-small-models/figures.py   ->  comparison-epoch-times.svg, sweep.svg

Each comes from the reference run of its part in results/mlp-cpu-vs-gpu.jsonl (the newest run
with CPU and GPU records, else the newest; see gpulesson.experiments.small_models.reference_run). Without GPU
records the sweep figure shows the CPU's time per sample and says that the GPU sweep is not
recorded yet. Record runs with ``python -m gpulesson.experiments.small_models``. A test checks that the
committed figures are the ones this script draws from the committed file.

Both show the spread of the timed epochs: the comparison as whiskers and dots beside the epochs,
the sweep as the range written in each cell. Their alt texts on the page
(``ref_mlp_fig_comparison_alt``, ``ref_mlp_fig_sweep_alt``) come from the same drawing code
(gpulesson.experiments.small_models.comparison_alt and sweep_alt).
"""

import sys
from functools import partial
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from gpulesson.experiments import small_models
from gpulesson.records.figure_scripts import drawer, main

HERE = Path(__file__).resolve().parent
# Each part has its own reference run, figure and command.
PARTS = {
    "comparison": ("comparison-epoch-times.svg", small_models.comparison_figure),
    "sweep": ("sweep.svg", small_models.sweep_figure),
}
DRAWERS = [
    drawer(small_models, [name], HERE, run=partial(small_models.reference_run, part),
           figures=lambda records, figure=figure: [figure(records)],
           command=f"python -m gpulesson.experiments.small_models --parts {part}")
    for part, (name, figure) in PARTS.items()
]


def draw(results=small_models.RESULTS_FILE, folder=HERE) -> list[Path]:
    return [path for part in DRAWERS for path in part(results, folder)]


if __name__ == "__main__":
    main(draw)
