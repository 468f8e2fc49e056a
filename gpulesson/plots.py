"""Small plotting helpers for the notebooks (headless-safe)."""

from __future__ import annotations

import math


def show_images(x, y, class_names, *, n=16, ncols=8, title=None, label=None):
    """A grid of the first ``n`` images of ``x`` with their class names; returns the Figure.

    ``label`` (e.g. ``settings.label``) names the data source and always goes into the title,
    so a figure of the synthetic stand-in can never pass for CIFAR-10.
    """
    import matplotlib.pyplot as plt  # lazy; pyplot picks a headless backend when there is no display

    n = min(n, len(x))
    if n < 1:
        raise ValueError("show_images needs at least one image")
    ncols = max(1, min(ncols, n))
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.4 * ncols, 1.6 * nrows + 0.4), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < n:
            ax.imshow(x[i])
            ax.set_title(str(class_names[int(y[i])]), fontsize=8)
    parts = [p for p in (title, label or "data source not given") if p]
    fig.suptitle(" | ".join(parts))
    fig.tight_layout()
    return fig
