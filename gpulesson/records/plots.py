"""Small plotting helpers for the notebooks (headless-safe)."""

import math

from gpulesson.records import figkit


def image_grid(count, n, ncols, *, cell=(1.4, 1.6), extra_height=0.4, what="show_images"):
    """``(fig, flat axes, n)``: a grid for the first ``min(n, count)`` images; spare cells are the caller's"""
    n = min(n, count)
    if n < 1:
        raise ValueError(f"{what} needs at least one image")
    ncols = max(1, min(ncols, n))
    size = (cell[0] * ncols, cell[1] * math.ceil(n / ncols) + extra_height)
    return (*figkit.panels(n, size, columns=ncols), n)


def show_images(x, y, class_names, *, n=16, ncols=8, title=None, label=None):
    """A grid of the first ``n`` images with class names, the data's ``label`` in the title."""
    fig, axes, n = image_grid(len(x), n, ncols)
    for i, ax in enumerate(axes):
        ax.axis("off")
        if i < n:
            ax.imshow(x[i])
            ax.set_title(str(class_names[int(y[i])]), fontsize=8)
    figkit.title(fig, title, label, fontsize="large")
    fig.tight_layout()
    return fig
