"""Draw the three kinds of parallelism of episode 10:

    python fig/10-beyond-one-gpu/parallelism.py
    -> data-parallel.svg, model-parallel.svg, job-array.svg

Schematics, not measurements: what each GPU holds, what it computes and what travels between
the GPUs. Every element is labelled in words; colour only repeats what the labels say.
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from gpulesson.experiments.sweep import GRID_POINTS
from gpulesson.records.figure_scripts import GPU_FILL, GPU_INK, INK, MUTED, finish, schematic

HERE = Path(__file__).resolve().parent
DATA = "#d9e6f5"
MODEL = "#e3d9ef"
# One hatching per slice of the batch, so that the slices differ without colour.
HATCHES = ("//", "\\\\", "xx", "..")


def box(ax, x, y, w, h, fill, ink=INK, hatch=None, text=None, size=9, weight=None, lw=1.3):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.04", facecolor=fill,
                                edgecolor=ink, hatch=hatch, linewidth=lw))
    if text:
        back = {"facecolor": "white", "edgecolor": "none", "pad": 1.0} if hatch else None
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size,
                weight=weight, bbox=back)


def arrow(ax, start, end, label="", color=INK, style="-|>", dashed=False, offset=(0, 0.1),
          size=8.5, ha="center"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=13, color=color,
                                 linewidth=1.3, linestyle="--" if dashed else "-"))
    if label:
        mx = (start[0] + end[0]) / 2 + offset[0]
        my = (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, label, ha=ha, va="bottom", fontsize=size, color=color)


def data_parallel(path: Path) -> Path:
    """A batch in four slices, four GPUs with the same model, the ring all-reduce."""
    fig, ax = schematic((10, 5.6))
    ax.text(5.0, 6.25, "Data parallelism: a replica of the model per GPU, a slice of each batch",
            ha="center", fontsize=12, weight="bold")
    # The global batch, cut into four slices.
    ax.text(0.1, 5.55, "one global batch\n(e.g. 4 × 128 images)", ha="left", va="center",
            fontsize=9)
    for i in range(4):
        box(ax, 2.2 + i * 1.9, 5.3, 1.6, 0.5, DATA, hatch=HATCHES[i],
            text=f"slice {i + 1}", size=8.5)
    for i in range(4):
        x = 0.4 + i * 2.4
        arrow(ax, (3.0 + i * 1.9, 5.2), (x + 1.0, 4.45))
        # A GPU with a full copy of the weights.
        box(ax, x, 2.2, 2.0, 2.2, GPU_FILL, ink=GPU_INK, lw=1.6)
        ax.text(x + 1.0, 4.15, f"GPU {i}", ha="center", va="center", fontsize=10, weight="bold")
        box(ax, x + 0.15, 3.25, 1.7, 0.6, "white", text="same model,\nsame weights", size=8)
        box(ax, x + 0.15, 2.35, 1.7, 0.7, DATA, hatch=HATCHES[i],
            text=f"gradients of\nslice {i + 1}", size=8)
    # The all-reduce: a ring through the GPUs.
    for i in range(3):
        x = 0.4 + i * 2.4
        arrow(ax, (x + 2.05, 2.7), (x + 2.35, 2.7), color=GPU_INK)
    ax.add_patch(FancyArrowPatch((8.2, 2.15), (1.4, 2.15), connectionstyle="arc3,rad=-0.12",
                                 arrowstyle="-|>", mutation_scale=13, color=GPU_INK,
                                 linewidth=1.3))
    ax.text(4.8, 0.95, "all-reduce (a ring): each GPU sends and receives about 2 × the gradient "
            "bytes;\nafterwards every GPU holds the average of the four gradients",
            ha="center", va="center", fontsize=9, color=GPU_INK)
    ax.text(4.8, 0.2, "every GPU makes the same update: the replicas stay identical, "
            "and one step has seen the whole global batch", ha="center", va="center",
            fontsize=9, style="italic")
    return finish(ax, fig, (0, 10), (-0.1, 6.6), path)


def model_parallel(path: Path) -> Path:
    """The layers of one model split over two GPUs; activations cross between them."""
    fig, ax = schematic((10, 4.4))
    ax.text(5.0, 5.05, "Model parallelism: the layers of one model split over the GPUs",
            ha="center", fontsize=12, weight="bold")
    box(ax, 0.0, 2.15, 1.3, 0.8, DATA, hatch="//", text="the whole\nbatch", size=8.5)
    layers = ["layers\n1–4", "layers\n5–8"]
    for g, x in enumerate((1.9, 5.8)):
        box(ax, x, 1.2, 3.2, 2.9, GPU_FILL, ink=GPU_INK, lw=1.6)
        ax.text(x + 1.6, 3.8, f"GPU {g}: half of the weights", ha="center", fontsize=10,
                weight="bold")
        for k in range(2):
            box(ax, x + 0.25 + k * 1.5, 1.65, 1.2, 1.65, MODEL,
                text=layers[g].replace("1–4", ("1–2", "3–4")[k]).replace(
                    "5–8", ("5–6", "7–8")[k]), size=8.5)
        arrow(ax, (x + 1.47, 2.5), (x + 1.73, 2.5))
    arrow(ax, (1.35, 2.55), (1.85, 2.55))
    arrow(ax, (5.12, 2.75), (5.78, 2.75), "activations", color=GPU_INK, offset=(0, 0.08))
    arrow(ax, (5.78, 2.2), (5.12, 2.2), "gradients", color=GPU_INK, offset=(0, -0.42))
    arrow(ax, (9.05, 2.55), (9.45, 2.55))
    ax.text(9.55, 2.55, "output,\nloss", ha="left", va="center", fontsize=8.5)
    ax.text(5.0, 0.55, "for a model too large for one GPU's memory; each GPU waits for the "
            "other unless the batch is cut\ninto micro-batches that flow through the stages "
            "one after the other (pipeline parallelism)", ha="center", va="center",
            fontsize=9, style="italic")
    return finish(ax, fig, (-0.1, 10.3), (0, 5.4), path)


def job_array(path: Path) -> Path:
    """One sbatch, six independent tasks, one table at the end."""
    fig, ax = schematic((10, 5.2))
    ax.text(5.0, 6.05, "Hyper-parameter parallelism: independent runs in a Slurm job array",
            ha="center", fontsize=12, weight="bold")
    box(ax, 3.1, 4.9, 3.8, 0.7, "white",
        text=f"sbatch jobs/sweep-array.sbatch\n(#SBATCH --array=0-{len(GRID_POINTS) - 1})",
        size=9)
    # The grid of gpulesson.experiments.sweep, one box per array task.
    for i, point in enumerate(GRID_POINTS):
        bs, lr = point["batch_size"], f"{point['learning_rate']:g}"
        x = 0.15 + i * 1.65
        arrow(ax, (5.0, 4.85), (x + 0.7, 4.05), color=MUTED)
        box(ax, x, 1.95, 1.4, 2.05, GPU_FILL, ink=GPU_INK, lw=1.5)
        ax.text(x + 0.7, 3.7, f"task {i}", ha="center", fontsize=9.5, weight="bold")
        ax.text(x + 0.7, 3.05, f"1 GPU\nbatch {bs}\nrate {lr}", ha="center", va="center",
                fontsize=8)
        box(ax, x + 0.1, 2.05, 1.2, 0.45, "white", text=f"task-{i}/", size=7.5)
        arrow(ax, (x + 0.7, 1.9), (5.0, 1.25), color=MUTED)
    box(ax, 2.8, 0.45, 4.4, 0.75, "white",
        text="python -m gpulesson.experiments.sweep gather\none table: sweep.md, sweep.csv", size=9)
    ax.text(7.3, 0.85, "no communication between tasks:\nthey may run at the same time or "
            "one after\nthe other, on any free GPUs", ha="left", va="center", fontsize=8.5,
            style="italic")
    return finish(ax, fig, (0, 10), (0.2, 6.4), path)


def draw(folder: Path = HERE) -> list[Path]:
    folder = Path(folder)
    return [data_parallel(folder / "data-parallel.svg"),
            model_parallel(folder / "model-parallel.svg"),
            job_array(folder / "job-array.svg")]


if __name__ == "__main__":
    for written in draw():
        print(written)
