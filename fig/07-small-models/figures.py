"""Draw the small-model figures from the results file:

    python fig/07-small-models/figures.py   ->  comparison-epoch-times.svg, sweep.svg

Each comes from the reference run of its part in results/mlp-cpu-vs-gpu.jsonl (the newest run
with CPU and GPU records, else the newest; see gpulesson.experiments.small_models.reference_run). Without GPU
records the sweep figure shows the CPU's time per sample and says that the GPU sweep is not
recorded yet. Record runs with ``python -m gpulesson.experiments.small_models``. A test checks that the
committed figures are the ones this script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import small_models
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = {
    "comparison-epoch-times.svg": ("comparison", small_models.comparison_figure),
    "sweep.svg": ("sweep", small_models.sweep_figure),
}


def draw(results=small_models.RESULTS_FILE, folder=HERE) -> list[Path]:
    paths = []
    for name, (part, figure) in FIGURES.items():
        command = f"python -m gpulesson.experiments.small_models --parts {part}"
        paths += save_figures(small_models.reference_run(part, results), lambda r, figure=figure: [figure(r)],
                              [name], folder, results=results, command=command)
    return paths


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
