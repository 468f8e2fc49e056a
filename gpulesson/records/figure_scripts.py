"""The skeleton of the figures: a measured one read from its run and drawn (``drawer``), a
schematic in ``fig/`` drawn by its script; saved as SVG with matplotlib's headless backend."""

from pathlib import Path

import matplotlib

from gpulesson.records.figkit import panels

matplotlib.use("Agg")
# The schematics' colours: the lesson's (and the CPU's) ink and fill, the GPU's, and muted grey.
INK, FILL, MUTED = "#1f3b63", "#e8eef7", "#6b6b6b"
GPU_INK, GPU_FILL = "#8a4b08", "#f6e3c8"


def drawer(experiment, names, folder: Path, *, run=None, figures=None, until_recorded: str | None = None):
    """A ``draw(results, folder)`` that saves ``names`` of the experiment's reference run;
    without a run it stops naming its command, or, ``until_recorded``, draws nothing."""
    run = run or experiment.reference_run
    figures = figures or experiment.figures

    def draw(results=experiment.RESULTS_FILE, folder=folder) -> list[Path]:
        records = run(results)
        if until_recorded and not records:
            print(f"{results} holds no {until_recorded} yet: nothing drawn")
            return []
        if not records:
            raise SystemExit(f"{results} holds no run: record one with 'python -m {experiment.__name__}'")
        Path(folder).mkdir(parents=True, exist_ok=True)
        paths = [Path(folder) / name for name in names]
        for fig, path in zip(figures(records), paths, strict=True):
            save_svg(fig, path)
        return paths

    return draw


def save_svg(fig, path) -> None:
    """Save ``fig`` as a reproducible SVG (fixed salt, no date), then close it."""
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "lesson"}):
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


def schematic(figsize: tuple[float, float]):
    """The figure and axes of a schematic."""
    fig, (ax,) = panels(1, figsize)
    return fig, ax


def finish(ax, fig, xlim, ylim, path, equal: bool = False) -> Path:
    """A schematic's limits (``equal``: one scale on both axes), no axes, saved as SVG."""
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    if equal:
        ax.set_aspect("equal")
    ax.axis("off")
    save_svg(fig, path)
    return Path(path)

