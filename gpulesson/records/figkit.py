"""The frame every figure shares: no records, no figure (:func:`need`), the panels, the titles
naming the data, machines and runs, and values at the ends of bars.
"""

import math

from gpulesson.datasets.settings import NO_LABEL
from gpulesson.records.parts import machine
from gpulesson.records.results import data_label


def need(records, how: str) -> None:
    """A ValueError saying ``how`` to record a run when there are no ``records`` to draw."""
    if not records:
        raise ValueError(f"no records to plot: {how}")


def panels(count: int, figsize: tuple[float, float], *, across: bool = False, columns: int = 1,
           **options):
    """A figure of ``count`` panels, one under another (``across``: side by side; else in rows of
    ``columns``, the last row filled with spare panels), and their axes, row after row."""
    import matplotlib.pyplot as plt  # lazy; pyplot picks a headless backend without a display

    columns = count if across else columns
    fig, axes = plt.subplots(math.ceil(count / columns), columns, figsize=figsize, squeeze=False,
                             **options)
    return fig, list(axes.flat)


def run_title(ax, label: str, part: list[dict], *, between: str = "; ",
              fontsize: float = 8.5) -> None:
    """A panel's title: ``label``, the machine and the run of ``part``: "JAX, GPU: ...; run R"."""
    ax.set_title(f"{label}: {machine(part)}{between}run {part[0]['run_id']}", fontsize=fontsize,
                 loc="left")


def title(fig, what: str | None, data, *lines: str | None, fontsize: float | str = 9) -> None:
    """The figure's title: ``what`` it shows (if anything) and the data (its records, or their
    label; None: not given), then the ``lines`` that are not empty, one a line."""
    label = data if data is None or isinstance(data, str) else data_label(data)
    first = " | ".join(filter(None, (what, label or NO_LABEL)))
    fig.suptitle("\n".join([first, *filter(None, lines)]), fontsize=fontsize)


def label_bars(ax, positions, values, fmt: str = ".3g", fontsize: float = 7.5) -> None:
    """Each horizontal bar's value written just past its end."""
    for y, value in zip(positions, values, strict=True):
        ax.text(value, y, f" {value:{fmt}}", va="center", fontsize=fontsize)
