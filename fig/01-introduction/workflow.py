"""Draw the lesson's workflow diagram: python fig/01-introduction/workflow.py -> workflow.svg."""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from gpulesson.records.figure_scripts import FILL, INK, finish, schematic

STEPS = [
    ("Images", "CIFAR-10\nor synthetic\nstand-in"),
    ("HDF5 file", "written once,\nchunked by batch"),
    ("PyDataset", "reads shuffled\nbatches of bytes,\nas stored"),
    ("CNN training", "same weights,\nCPU then GPU"),
    ("Compare", "epoch times,\naccuracy, speed-up"),
]


def draw(path: Path) -> None:
    fig, ax = schematic((10, 2.2))
    width, gap = 1.6, 0.45
    for i, (head, text) in enumerate(STEPS):
        x = i * (width + gap)
        ax.add_patch(FancyBboxPatch((x, 0), width, 1.4, boxstyle="round,pad=0.05",
                                    facecolor=FILL, edgecolor=INK, linewidth=1.5))
        ax.text(x + width / 2, 1.08, head, ha="center", va="center", fontsize=11, weight="bold")
        ax.text(x + width / 2, 0.5, text, ha="center", va="center", fontsize=9)
        if i:
            ax.add_patch(FancyArrowPatch((x - gap + 0.04, 0.7), (x - 0.04, 0.7),
                                         arrowstyle="-|>", mutation_scale=14, color=INK))
    finish(ax, fig, (-0.1, len(STEPS) * (width + gap) - gap + 0.1), (-0.15, 1.55), path)


if __name__ == "__main__":
    draw(Path(__file__).with_name("workflow.svg"))
