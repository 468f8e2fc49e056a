"""Accessibility of the lesson's measured figures: colour is never the only thing that tells two
series apart. Each figure function is drawn from the committed results with a GPU twin of every
CPU record added (so that both devices appear), and every axes is checked: lines of different
colours also differ in marker or line style, and bars of different colours also differ in hatch
or carry text labels (values or names written on or beside them)."""

import copy

import matplotlib
import pytest
from matplotlib.container import BarContainer
from matplotlib.lines import Line2D

matplotlib.use("Agg")

from gpulesson.experiments import (  # noqa: E402
    cnn,
    feeding,
    matmul,
    small_models,
    torch_reference,
)
from gpulesson.experiments.calibration import page as calibration
from gpulesson.experiments.contention import page as contention


def with_gpu_twins(records):
    """``records`` plus, for every CPU record, a copy that claims to be from a GPU."""
    twins = []
    for record in records:
        if record.get("device_kind") != "gpu":
            twin = copy.deepcopy(record)
            twin.update(device_kind="gpu", device="Test GPU")
            twins.append(twin)
    return records + twins


def _colour(artist):
    return matplotlib.colors.to_hex(artist.get_color() if isinstance(artist, Line2D) else artist.get_facecolor())


def problems(fig) -> list[str]:
    found = []
    for ax in fig.axes:
        lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 1 and not ln.get_label().startswith("_")]
        by_colour = {}
        for line in lines:
            by_colour.setdefault(_colour(line), set()).add((line.get_marker(), line.get_linestyle()))
        if len(by_colour) > 1:
            shapes = [frozenset(s) for s in by_colour.values()]
            if len(set(shapes)) < len(shapes):
                found.append(f"{ax.get_title()!r}: lines differ only by colour {sorted(by_colour)}")
        bars = [patch for c in ax.containers if isinstance(c, BarContainer) for patch in c]
        colours = {_colour(b) for b in bars}
        if len(colours) > 1:
            hatches = {(_colour(b), b.get_hatch()) for b in bars}
            hatch_per_colour = {}
            for colour, hatch in hatches:
                hatch_per_colour.setdefault(colour, set()).add(hatch)
            distinct_hatches = len({frozenset(h) for h in hatch_per_colour.values()}) == len(hatch_per_colour)
            labelled = len(ax.texts) >= len(bars)
            if not (distinct_hatches or labelled):
                found.append(f"{ax.get_title()!r}: bars differ only by colour {sorted(colours)}")
    return found


FIGURES = {
    "cnn (episode 5)": lambda: cnn.figures(with_gpu_twins(cnn.reference_run())),
    "matmul (episode 6)": lambda: matmul.figures(with_gpu_twins(matmul.reference_run()),
                                                 with_gpu_twins(matmul.latency_run())),
    "small models comparison (episode 7)": lambda: [small_models.page.comparison_figure(
        with_gpu_twins(small_models.reference_run("comparison")))],
    "small models sweep (episode 7)": lambda: [small_models.sweep_figure(
        with_gpu_twins(small_models.reference_run("sweep")))],
    "pytorch (episode 8)": lambda: torch_reference.figures(with_gpu_twins(torch_reference.reference_run())),
    "feeding (episode 9)": lambda: feeding.figures(with_gpu_twins(feeding.reference_run())),
    "stand-in calibration (episode 5)": lambda: calibration.figures(calibration.reference_run()),
    "contention (episode 5)": lambda: contention.figures(contention.reference_run()),
}


@pytest.mark.parametrize("name", FIGURES)
def test_colour_is_never_the_only_difference(name):
    import matplotlib.pyplot as plt

    figures = FIGURES[name]()
    try:
        found = [p for fig in figures for p in problems(fig)]
    finally:
        for fig in figures:
            plt.close(fig)
    assert not found, found


def test_the_checker_catches_colour_only_series():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2], color="red", label="CPU")
    ax.plot([1, 2], [2, 3], color="blue", label="GPU")
    ax.bar([1, 2], [1, 2], color=["red", "blue"])
    try:
        assert len(problems(fig)) == 2
    finally:
        plt.close(fig)
