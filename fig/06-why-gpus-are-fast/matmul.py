"""Draw the matrix-multiplication benchmark's figures from the results file:

    python fig/06-why-gpus-are-fast/matmul.py   ->  matmul-gflops.svg, matmul-sync.svg

The run is the newest one in results/matmul.jsonl with a GPU sweep, else the newest run (see
gpulesson.experiments.matmul.reference_run); record one with
``python -m gpulesson.experiments.matmul``. A test checks that the committed figures are the ones
this script draws from the committed file.
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from gpulesson.experiments import matmul
from gpulesson.plots import save_figures

HERE = Path(__file__).resolve().parent
FIGURES = ("matmul-gflops.svg", "matmul-sync.svg")


def draw(results=matmul.RESULTS_FILE, folder=HERE) -> list[Path]:
    return save_figures(matmul.reference_run(results), matmul.figures, FIGURES, folder,
                        results=results, command="python -m gpulesson.experiments.matmul")


if __name__ == "__main__":
    for written in draw(*sys.argv[1:2]):
        print(written)
