"""Small plotting helpers for the notebooks (headless-safe)."""

from __future__ import annotations

import math

from gpulesson.datasets.settings import NO_LABEL


def image_grid(count, n, ncols, *, cell=(1.4, 1.6), extra_height=0.4, what="show_images"):
    """A figure with a grid of image axes for the first ``min(n, count)`` images.

    Returns ``(fig, axes, n)``: ``axes`` is flat, one per grid cell (cells past ``n`` are there
    too, for the caller to switch off), ``n`` the number of images that fit.
    """
    import matplotlib.pyplot as plt  # lazy; pyplot picks a headless backend when there is no display

    n = min(n, count)
    if n < 1:
        raise ValueError(f"{what} needs at least one image")
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(cell[0] * ncols, cell[1] * nrows + extra_height),
                             squeeze=False)
    return fig, list(axes.flat), n


def show_images(x, y, class_names, *, n=16, ncols=8, title=None, label=None):
    """A grid of the first ``n`` images of ``x`` with their class names; returns the Figure.

    ``label`` (e.g. ``settings.label``) names the data source and always goes into the title,
    so a figure of the synthetic stand-in can never pass for CIFAR-10.
    """
    fig, axes, n = image_grid(len(x), n, ncols)
    for i, ax in enumerate(axes):
        ax.axis("off")
        if i < n:
            ax.imshow(x[i])
            ax.set_title(str(class_names[int(y[i])]), fontsize=8)
    parts = [p for p in (title, label or NO_LABEL) if p]
    fig.suptitle(" | ".join(parts))
    fig.tight_layout()
    return fig


def save_svg(fig, path) -> None:
    """Save ``fig`` as an SVG file that depends only on the figure, then close it.

    A fixed hash salt and no date make the file byte-for-byte reproducible, so that a figure
    committed to the lesson can be checked against the script that draws it.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"svg.hashsalt": "lesson"}):
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)


def save_figures(records, figures, names, folder, *, results, command: str) -> list:
    """Draw ``figures(records)`` and save them as ``folder/<name>`` SVGs (:func:`save_svg`).

    For the figure scripts in fig/: ``records`` is a reference run read from the results file
    ``results``; with none, the script stops and names the ``command`` that records one.
    Returns the paths written.
    """
    from pathlib import Path

    if not records:
        raise SystemExit(f"{results} holds no run: record one with '{command}'")
    paths = []
    for fig, name in zip(figures(records), names, strict=True):
        path = Path(folder) / name
        save_svg(fig, path)
        paths.append(path)
    return paths
