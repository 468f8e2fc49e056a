"""The frame every experiment's figures share: no records, no figure (:func:`need`), the
panels, the titles naming the data, machines and runs, and values at the ends of bars.
"""

from gpulesson.records.parts import machine
from gpulesson.records.results import data_label


def need(records, how: str) -> None:
    """A ValueError saying ``how`` to record a run when there are no ``records`` to draw."""
    if not records:
        raise ValueError(f"no records to plot: {how}")


def panels(count: int, figsize: tuple[float, float], *, across: bool = False, **options):
    """A figure of ``count`` panels, one under another (``across``: side by side), and their axes."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1 if across else count, count if across else 1, figsize=figsize,
                             squeeze=False, **options)
    return fig, list(axes.flat)


def run_title(ax, label: str, part: list[dict], *, between: str = "; ",
              fontsize: float = 8.5) -> None:
    """A panel's title: ``label``, the machine and the run of ``part``: "JAX, GPU: ...; run R"."""
    ax.set_title(f"{label}: {machine(part)}{between}run {part[0]['run_id']}", fontsize=fontsize,
                 loc="left")


def title(fig, what: str, records, *lines: str, fontsize: float = 9) -> None:
    """The figure's title: ``what`` it shows and the data, then ``lines``, one a line."""
    fig.suptitle("\n".join([f"{what} | {data_label(records)}", *lines]), fontsize=fontsize)


def label_bars(ax, positions, values, fmt: str = ".3g", fontsize: float = 7.5) -> None:
    """Each horizontal bar's value written just past its end."""
    for y, value in zip(positions, values, strict=True):
        ax.text(value, y, f" {value:{fmt}}", va="center", fontsize=fontsize)
