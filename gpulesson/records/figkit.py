"""The skeleton every experiment's figures share, written once.

An experiment's ``figures.py`` draws what it measured; the frame around it is here: refusing to
draw without records (:func:`need`), one panel a device or a backend and device
(:func:`panels`), the figure's title naming the data, machines and runs (:func:`title`), a
panel's title naming the machine and the run it shows (:func:`run_title`), and values written
at the ends of bars (:func:`label_bars`). The medians' spread is drawn by
:func:`gpulesson.records.summaries.draw_spread`, a figure is saved with the lesson's settings
by :func:`gpulesson.records.plots.save_figures` (through :mod:`gpulesson.records.figure_scripts`), and its alt
text is made by its own module from what it draws. pyplot is imported only when a figure is
drawn.
"""

from __future__ import annotations

from gpulesson.records.parts import machine
from gpulesson.records.results import data_label


def need(records, how: str) -> None:
    """A ValueError that says how to record a run (``how``, e.g. "run python -m
    gpulesson.experiments.ceiling") when there are no ``records`` to draw."""
    if not records:
        raise ValueError(f"no records to plot: {how}")


def panels(count: int, figsize: tuple[float, float], *, across: bool = False, **options):
    """A figure of ``count`` panels, one under another (``across``: side by side), and the list
    of their axes; ``options`` as for ``plt.subplots`` (e.g. ``sharey``)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1 if across else count, count if across else 1, figsize=figsize,
                             squeeze=False, **options)
    return fig, list(axes.flat)


def run_title(ax, label: str, part: list[dict], *, between: str = "; ",
              fontsize: float = 8.5) -> None:
    """A panel's title: what it shows (``label``), the machine of its records (``part``: one
    device's records of one run) and their run: "JAX, GPU: NVIDIA H200 beside ...; run R"."""
    ax.set_title(f"{label}: {machine(part)}{between}run {part[0]['run_id']}", fontsize=fontsize,
                 loc="left")


def title(fig, what: str, records, *lines: str, fontsize: float = 9) -> None:
    """The figure's title: what it shows and the data it was measured on ("... | CIFAR-10,
    45,000 images"), then ``lines`` (the machines, software and runs drawn), one a line."""
    fig.suptitle("\n".join([f"{what} | {data_label(records)}", *lines]), fontsize=fontsize)


def label_bars(ax, positions, values, fmt: str = ".3g", fontsize: float = 7.5) -> None:
    """Each horizontal bar's value written just past its end."""
    for y, value in zip(positions, values, strict=True):
        ax.text(value, y, f" {value:{fmt}}", va="center", fontsize=fontsize)
