"""Draw the PyTorch reference run's figures from the results file:

    python fig/08-pytorch/reference.py   ->  reference-epoch-times.svg, reference-time-bars.svg

The run is the newest one in results/pytorch-cpu-vs-gpu.jsonl with a GPU record, else the newest
(see gpulesson.experiments.torch_reference.reference_run); record a new one with
``python -m gpulesson.experiments.torch_reference``. A test checks that the committed figures are the ones
this script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import torch_reference
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = ("reference-epoch-times.svg", "reference-time-bars.svg")


def draw(results=torch_reference.RESULTS_FILE, folder=HERE) -> list[Path]:
    return save_figures(torch_reference.reference_run(results), torch_reference.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.experiments.torch_reference")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
