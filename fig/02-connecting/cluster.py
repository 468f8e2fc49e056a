"""Draw how a cluster is reached and used: python fig/02-connecting/cluster.py -> cluster.svg."""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from gpulesson.records.figure_scripts import FILL, GPU_FILL, GPU_INK, INK, MUTED, finish, schematic


def box(ax, x, y, w, h, head, text, fill=FILL, ink=INK):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05",
                                facecolor=fill, edgecolor=ink, linewidth=1.5))
    ax.text(x + w / 2, y + h - 0.25, head, ha="center", va="center", fontsize=11, weight="bold")
    ax.text(x + w / 2, y + (h - 0.45) / 2, text, ha="center", va="center", fontsize=9)


def arrow(ax, start, end, label="", style="-|>", color=INK, dashed=False, offset=(0, 0.14)):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=14, color=color,
                                 linewidth=1.3, linestyle="--" if dashed else "-"))
    if label:
        mx, my = (start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, label, ha="center", va="bottom", fontsize=8.5, color=color)


def draw(path: Path) -> None:
    fig, ax = schematic((11, 5))

    # Internet, reachable from the login node only.
    ax.text(3.9, 5.55, "Internet", ha="center", va="center", fontsize=10, color=MUTED, style="italic")
    arrow(ax, (3.9, 5.35), (3.9, 4.65), style="<|-|>", color=MUTED, dashed=True)
    ax.text(10.35, 5.55, "compute nodes: often\nno internet access", ha="center", va="center",
            fontsize=8.5, color=MUTED, style="italic")

    # The learner's computer.
    box(ax, 0, 2.35, 1.8, 1.5, "Your laptop", "terminal\nor web browser")

    # Ways in: login node (SSH) and the Open OnDemand portal (HTTPS).
    box(ax, 2.9, 3.3, 2.0, 1.3, "Login node", "edit, install,\ndownload, submit")
    box(ax, 2.9, 1.4, 2.0, 1.3, "Open OnDemand", "web portal:\nfiles, shell, apps")
    arrow(ax, (1.9, 3.45), (2.85, 3.95), "SSH", offset=(-0.15, 0.1))
    arrow(ax, (1.9, 2.75), (2.85, 2.05), "HTTPS", offset=(-0.1, -0.5))

    # The scheduler, fed by both ways in.
    box(ax, 6.3, 1.4, 1.9, 3.2, "Slurm", "queue,\npriorities,\nlimits")
    arrow(ax, (4.95, 3.95), (6.25, 3.95), "sbatch, srun")
    arrow(ax, (4.95, 2.05), (6.25, 2.05), "the form's job")

    # Compute nodes, in two partitions.
    box(ax, 9.3, 3.3, 2.1, 1.3, "CPU nodes", "CPU partition")
    box(ax, 9.3, 1.4, 2.1, 1.3, "GPU nodes", "GPU partition\n\n", fill=GPU_FILL, ink=GPU_INK)
    for i in range(4):
        ax.add_patch(Rectangle((9.65 + i * 0.37, 1.55), 0.27, 0.22, facecolor=GPU_INK, edgecolor="none"))
    arrow(ax, (8.25, 3.95), (9.25, 3.95), "starts jobs")
    arrow(ax, (8.25, 2.05), (9.25, 2.05), "starts jobs")

    # The shared filesystem under everything but the laptop.
    ax.add_patch(FancyBboxPatch((2.9, 0.0), 8.5, 0.75, boxstyle="round,pad=0.05",
                                facecolor="#eeeeee", edgecolor=MUTED, linewidth=1.2))
    ax.text(7.15, 0.375, "Shared filesystem: home, project and scratch directories, the same on every node",
            ha="center", va="center", fontsize=9.5)
    for x in (3.9, 10.35):
        arrow(ax, (x, 0.82), (x, 1.35), style="<|-|>", color=MUTED, dashed=True)

    finish(ax, fig, (-0.15, 11.55), (-0.15, 5.85), path)


if __name__ == "__main__":
    draw(Path(__file__).with_name("cluster.svg"))
