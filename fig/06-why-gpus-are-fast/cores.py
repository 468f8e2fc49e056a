"""Draw a CPU and a GPU side by side: python fig/06-why-gpus-are-fast/cores.py -> cores.svg.

A schematic, not to scale: a CPU spends its chip on a few large cores (control logic, caches),
a GPU on many small lanes grouped in streaming multiprocessors, with tensor cores, and its own
high-bandwidth memory; the two are joined by PCIe (or NVLink).
"""

import sys
from pathlib import Path

# The lesson's package from this checkout, installed or not (a cluster node's own Python).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from matplotlib.patches import FancyArrowPatch, Rectangle

from gpulesson.records.figure_scripts import GPU_INK, INK, finish, schematic

HERE = Path(__file__).resolve().parent
CONTROL = "#c9d7ee"
ALU = "#4f7cba"
CACHE = "#eeeeee"
LANE = "#e08a2c"
TENSOR = "#b5651d"
MEMORY = "#d9d2e9"


def rect(ax, x, y, w, h, fill, ink=INK, hatch=None, lw=1.0, text=None, size=8, color="black"):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=fill, edgecolor=ink, hatch=hatch, linewidth=lw))
    if text:
        # Hatched boxes get a plain background behind their text, so that it stays readable.
        box = {"facecolor": "white", "edgecolor": "none", "pad": 1.0} if hatch else None
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, color=color,
                bbox=box)


def cpu(ax):
    rect(ax, 0, 1.6, 4.6, 4.45, "white", lw=1.8)
    ax.text(2.3, 6.3, "CPU: a few large cores", ha="center", fontsize=11, weight="bold")
    for x, y in [(0.2, 3.75), (2.4, 3.75), (0.2, 2.5), (2.4, 2.5)]:
        rect(ax, x, y, 2.0, 1.15, "white", lw=1.2)
        rect(ax, x + 0.08, y + 0.55, 1.0, 0.52, CONTROL, text="control,\nprediction", size=6.5)
        rect(ax, x + 1.15, y + 0.55, 0.77, 0.52, ALU, text="ALU\n(SIMD)", size=6.5, color="white")
        rect(ax, x + 0.08, y + 0.08, 1.84, 0.4, CACHE, hatch="//", text="L1 + L2 cache", size=6.5)
    rect(ax, 0.2, 1.8, 4.2, 0.55, CACHE, hatch="//", text="large shared L3 cache", size=8)
    ax.text(2.3, 5.5, "each core: fast on one thread,\nout-of-order, branch prediction",
            ha="center", va="center", fontsize=7.5, style="italic")
    rect(ax, 0.4, 0.0, 3.8, 0.75, MEMORY, hatch="..", text="DDR main memory (large, slower)",
         size=8)
    ax.add_patch(FancyArrowPatch((2.3, 0.8), (2.3, 1.55), arrowstyle="<|-|>", mutation_scale=12,
                                 color=INK))


def gpu(ax):
    x0 = 6.6
    rect(ax, x0, 1.6, 6.0, 4.45, "white", ink=GPU_INK, lw=1.8)
    ax.text(x0 + 3.0, 6.3, "GPU: many small lanes", ha="center", fontsize=11, weight="bold")
    for row in range(3):
        for col in range(4):
            sx, sy = x0 + 0.15 + col * 1.45, 2.55 + row * 0.98
            rect(ax, sx, sy, 1.35, 0.88, "white", ink=GPU_INK, lw=0.8)
            for lane_row in range(3):
                for lane in range(8):
                    rect(ax, sx + 0.06 + lane * 0.125, sy + 0.36 + lane_row * 0.16, 0.1, 0.12,
                         LANE, ink="none")
            rect(ax, sx + 1.07, sy + 0.36, 0.22, 0.44, TENSOR, ink=GPU_INK, hatch="xxx", lw=0.5)
            rect(ax, sx + 0.06, sy + 0.06, 1.23, 0.24, CACHE, ink=GPU_INK, hatch="//", lw=0.5)
    ax.text(x0 + 3.0, 5.72, "streaming multiprocessors: thousands of threads each;\n"
            "while some wait for memory, others compute",
            ha="center", va="center", fontsize=7.5, style="italic")
    rect(ax, x0 + 0.15, 1.8, 5.7, 0.55, CACHE, ink=GPU_INK, hatch="//", text="L2 cache", size=8)
    for x in (x0 + 0.2, x0 + 3.1):
        rect(ax, x, 0.0, 2.7, 0.75, MEMORY, ink=GPU_INK, hatch="..",
             text="HBM on the package\n(fast, smaller)", size=7.5)
        ax.add_patch(FancyArrowPatch((x + 1.35, 0.8), (x + 1.35, 1.55), arrowstyle="<|-|>",
                                     mutation_scale=12, color=GPU_INK, linewidth=2.2))


def legend(ax):
    items = [(CONTROL, None, INK, "control logic"), (ALU, None, INK, "arithmetic (CPU core)"),
             (LANE, None, "none", "GPU lane (simple arithmetic)"),
             (TENSOR, "xxx", GPU_INK, "tensor core (matrix tiles)"),
             (CACHE, "//", INK, "cache"), (MEMORY, "..", INK, "memory")]
    for i, (fill, hatch, ink, text) in enumerate(items):
        x = -0.1 + (i % 3) * 4.4
        y = -0.75 - (i // 3) * 0.42
        rect(ax, x, y, 0.35, 0.25, fill, ink=ink, hatch=hatch, lw=0.8)
        ax.text(x + 0.5, y + 0.125, text, va="center", fontsize=8)


def draw(path: Path = HERE / "cores.svg") -> Path:
    fig, ax = schematic((11, 5.6))
    cpu(ax)
    gpu(ax)
    ax.add_patch(FancyArrowPatch((4.65, 3.7), (6.55, 3.7), arrowstyle="<|-|>", mutation_scale=14,
                                 color="black", linewidth=1.5, linestyle="--"))
    ax.text(5.6, 3.85, "PCIe\n(or NVLink)", ha="center", va="bottom", fontsize=8.5)
    ax.text(5.6, 3.55, "copies between\nthe two memories", ha="center", va="top", fontsize=7.5,
            style="italic")
    legend(ax)
    return finish(ax, fig, (-0.2, 12.8), (-1.35, 6.6), path, equal=True)


if __name__ == "__main__":
    print(draw())
