"""The ceiling's figure: images per second of ``fit`` for each way of feeding it, one panel a
backend and device, with each condition's range and the goal's share of the ceiling as a line."""

from __future__ import annotations

from gpulesson.experiments.ceiling import records as cr
from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.figkit import need, panels, run_title
from gpulesson.experiments.recordset import rate_summary

FILE = "feeding-ceiling.svg"
# In memory blue, the lesson's generator orange, reading ahead green, Grain's processes purple;
# without mixing (window=1) lighter.
COLOURS = {**dict.fromkeys(cr.IN_MEMORY, "#4c72b0"), "lesson-window1": "#f0b27a", "lesson": "#dd8452",
           "lesson-ahead-window1": "#8fbf8f", "lesson-ahead": "#55a868", "lesson-grain": "#8172b3"}


def _panels(records):
    for backend, device in cr.groups(records):
        drawn = [(name, r) for name in cr.PIPELINES if (r := cr.find(records, backend, device, name))]
        yield backend, device, drawn, cr.ceiling(records, backend, device)


def alt_text(records) -> str:
    if not records:
        return "No ceiling measurement is recorded yet."
    said = []
    for backend, device, drawn, top in _panels(records):
        bars = ", ".join(f"{name} {cr.rate_number(r['images_per_second'])}"
                         + ("" if r is top else f" ({cr.share_text(cr.share(r, top))})")
                         for name, r in drawn)
        said.append(f"{cr.NAMES.get(backend, backend)} on the {device.upper()}: {bars}")
    return ("Horizontal bars of the median images per second that fit reaches with a model "
            "that does almost nothing, one panel per backend and device, each on its own scale "
            "and titled with its run and machine, with whiskers from "
            f"the slowest to the fastest epoch and a dashed line at {cr.TARGET_SHARE:.0%} of the "
            "fastest in-memory bar (the ceiling). Medians, with shares of the ceiling in "
            f"brackets: {'; '.join(said)}.")


def figures(records):
    """A panel per backend and device, a bar per way of feeding ``fit``."""
    need(records, "run python -m gpulesson.experiments.ceiling")
    drawn_panels = list(_panels(records))
    bars = sum(len(drawn) for _, _, drawn, _ in drawn_panels)
    # Each panel on its own scale: the devices may be machines far apart in speed.
    fig, axes = panels(len(drawn_panels), (8, 1.4 + 0.24 * bars + 0.75 * len(drawn_panels)))
    for ax, (backend, device, drawn, top) in zip(axes, drawn_panels, strict=True):
        positions = list(range(len(drawn)))[::-1]
        rates = [rate_summary(r) for _, r in drawn]
        colours = [COLOURS.get(name, COLOURS["lesson"]) for name, _ in drawn]
        ax.barh(positions, [s["median"] for s in rates], color=colours, height=0.6)
        draw_spread(ax, positions, rates, horizontal=True)
        ax.set_yticks(positions, [name for name, _ in drawn])
        if top:
            ax.axvline(cr.TARGET_SHARE * top["images_per_second"], color="black",
                       linestyle="--", linewidth=1)
        run_title(ax, f"{cr.NAMES.get(backend, backend)}, {device.upper()}", [r for _, r in drawn])
    axes[-1].set_xlabel("images per second through fit (higher is better; each panel on "
                        "its own scale)")
    fig.suptitle(f"The ceiling of fit: blue in memory, orange the lesson's generator (light: "
                 f"window=1, not mixed);\ndashed line {cr.TARGET_SHARE:.0%} of the ceiling.\n"
                 f"{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)
