"""The two parts' figures (``fig/05-cpu-vs-gpu/contention.py``) and their alt texts.

What a figure shows is decided once (:func:`drawn`, :func:`watched_drawn`) and both the drawing
and the alt text read it, so that an alt text never describes what the figure does not show.
"""

from __future__ import annotations

from typing import NamedTuple

from gpulesson.experiments.common import draw_spread, summary_text
from gpulesson.experiments.contention.records import condition_summary, find_in, threads_text
from gpulesson.experiments.figkit import need, title
from gpulesson.experiments.pagewords import listed
from gpulesson.records.results import data_label, duration, hardware, software

# Line style and marker, not only colour, tell the series apart.
_STYLE = {None: {"marker": "o", "linestyle": "-", "color": "tab:blue"},
          1: {"marker": "s", "linestyle": "--", "color": "tab:orange", "fillstyle": "none"}}
_OTHER = {"marker": "D", "linestyle": "-.", "color": "tab:green"}  # any other thread count
# Words for the alt texts, for the markers and line styles above.
_MARKERS = {"o": "round", "s": "open square", "D": "diamond", "^": "triangular"}
_LINES = {"-": "solid", "--": "dashed", "-.": "dash-dotted", ":": "dotted"}
# What the left panel draws at each point (common.SPREAD_NOTE speaks of bars; these are points).
SPREAD_NOTE_LINES = ("points: median; whiskers: fastest to slowest epoch; dots: the epochs "
                     "(after each copy's warm-up)")
_LINE = {"linewidth": 1.6, "markersize": 7}


def _line_words(style: dict) -> str:
    return f"a {_LINES[style['linestyle']]} line with {_MARKERS.get(style['marker'], '')} markers"


class Point(NamedTuple):
    copies: int
    summary: dict  # the copies' epochs after the warm-up
    total_rate: float  # images/s of all copies together, by the median epoch
    load_max: float | None


def _threads_words(threads: int | None) -> str:
    return ("the framework's default threads" if threads is None
            else f"{threads_text(threads)} per training")


def drawn(records) -> tuple[list[tuple[int | None, dict, list[Point]]], dict | None]:
    """``(series, alone)``: ``(threads, style, points)`` per thread setting, the framework's
    default first, and the summary of one copy alone (the fair-share line; None if missing)."""
    need(records, "run python -m gpulesson.experiments.contention")
    series = []
    for threads in sorted({r["threads"] for r in records}, key=lambda t: t or 0):
        chosen = sorted((r for r in records if r["threads"] == threads), key=lambda r: r["copies"])
        points = [Point(r["copies"], s, r["copies"] * r["n_images"] / s["median"],
                        r.get("load_max")) for r in chosen if (s := condition_summary(r))]
        if points:
            series.append((threads, _STYLE.get(threads, _OTHER), points))
    return series, condition_summary(find_in(records, 1, None))


def _finish(ax, xlabel: str, legend: str) -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc=legend)


def alt_text(records) -> str:
    series, alone = drawn(records)
    first = records[0]
    parts = [f"{_line_words(style)} for {_threads_words(threads)} ("
             + "; ".join(f"{p.copies} at once: {summary_text(p.summary, duration, what='epochs')}"
                         + (f", load {p.load_max:.1f}" if p.load_max is not None else "")
                         for p in points) + ")"
             for threads, style, points in series]
    copies = sorted({p.copies for _, _, points in series for p in points})
    text = (f"Two line charts against the number of trainings running at once on one CPU "
            f"({listed(copies)}). "
            f"Left, the seconds per epoch of {first['n_images']:,} images of each training: at "
            f"each point the median of the epochs after each copy's warm-up, with a whisker from "
            f"the fastest to the slowest and each epoch as a dot, labelled with the highest load "
            f"average seen; " + "; ".join(parts) + ".")
    if alone:
        text += (" A dotted grey line with triangles shows a fair share of the machine, k times "
                 f"the median epoch of one training alone ({duration(alone['median'])}).")
    rates = "; ".join(f"{_threads_words(threads)}: "
                      + ", ".join(f"{p.copies} at once {p.total_rate:,.0f}" for p in points)
                      for threads, _, points in series)
    text += (" Right, the images per second of all trainings together, by the median epochs, "
             f"with the same line styles ({rates})")
    if alone:
        text += ", and a dotted grey line at one training alone"
    return text + "."


def figures(records):
    """``(fig,)`` with its ``alt_text``: left, each copy's epochs against the number of copies,
    with a fair share of the machine (k times one copy alone); right, the images/s of all
    copies together."""
    import matplotlib.pyplot as plt

    series, alone = drawn(records)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.8))
    copies = sorted({p.copies for _, _, points in series for p in points})
    for i, (threads, style, points) in enumerate(series):
        k = [p.copies + (i - (len(series) - 1) / 2) * 0.08 for p in points]  # side by side
        label = f"each copy: {threads_text(threads)}"
        left.plot(k, [p.summary["median"] for p in points], **_LINE, label=label, **style)
        draw_spread(left, k, [p.summary for p in points], color=style["color"])
        right.plot([p.copies for p in points], [p.total_rate for p in points], **_LINE,
                   label=label, **style)
        for x, p in zip(k, points, strict=True):
            if p.load_max is not None:
                left.annotate(f"load {p.load_max:.1f}", (x, p.summary["median"]),
                              xytext=(6, 5 if threads is None else -12),
                              textcoords="offset points", fontsize=8)
    if alone:
        left.plot(copies, [k * alone["median"] for k in copies], color="gray", linestyle=":",
                  marker="^", markersize=5, label="fair share: k × one copy alone (median)")
        right.axhline(records[0]["n_images"] / alone["median"], color="gray", linestyle=":",
                      label="one copy alone")
    first = records[0]
    left.set_ylabel(f"seconds per epoch of {first['n_images']:,} images (per copy)")
    right.set_ylabel("images/s, all copies together (median epochs)")
    for ax in (left, right):
        ax.set_xticks(copies, [str(k) for k in copies])
        ax.set_xlim(min(copies) - 0.3, max(copies) + 0.5)
        _finish(ax, "trainings running at once (k)", "upper left" if ax is left else "lower right")
    title(fig, "The lesson's CNN, k trainings at once on one CPU", records,
          f"{hardware(records).get('CPU', 'CPU')} | batch {first['batch_size']} | "
          f"{software(first)} | run {first['run_id']}", f"left: {SPREAD_NOTE_LINES}")
    fig.tight_layout()
    fig.alt_text = alt_text(records)
    return (fig,)


# Per mode of the watched part: line style and marker as well as colour.
_WATCHED_STYLE = {
    "no browser": {"marker": "o", "linestyle": "-", "color": "tab:blue"},
    "browser, bar per step": {"marker": "s", "linestyle": "--", "color": "tab:red",
                              "fillstyle": "none"},
    "browser, line per epoch": {"marker": "^", "linestyle": ":", "color": "tab:green"},
}
_WATCHED_WORDS = {"no browser": "with its output going to a file, no browser",
                  "browser, bar per step": "in JupyterLab in a browser with Keras' progress bar",
                  "browser, line per epoch": "in JupyterLab in a browser with one line an epoch"}


def watched_drawn(records) -> list[tuple[dict, list, dict | None]]:
    """Per record ``(style, epochs, summary)``: every epoch, the first the warm-up, and the
    summary of those after it."""
    need(records, "run python -m gpulesson.experiments.contention --parts watched")
    return [(_WATCHED_STYLE.get(r["watched"], _OTHER), r["per_copy"][0]["epoch_seconds"],
             condition_summary(r)) for r in records]


def watched_alt_text(records) -> str:
    lines = []
    for record, (style, epochs, summary) in zip(records, watched_drawn(records), strict=True):
        mode = _WATCHED_WORDS.get(record["watched"], record["watched"])
        lines.append(f"{_line_words(style)} for the training {mode}: "
                     + ", ".join(duration(t) for t in epochs)
                     + (f" (after the warm-up {summary_text(summary, duration, what='epochs')})"
                        if summary and len(epochs) > 1 else ""))
    longest = max(len(e) for _, e, _ in watched_drawn(records))
    return (f"A line chart of the seconds of each epoch of one training of the lesson's CNN, "
            f"epochs 1 to {longest} on the horizontal axis, the first epoch being the warm-up: "
            + "; ".join(lines) + ".")


def watched_figures(records):
    """``(fig,)`` with its ``alt_text``: each epoch of one training, a line for each way its
    output was shown."""
    import matplotlib.pyplot as plt

    shown = watched_drawn(records)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for record, (style, epochs, _) in zip(records, shown, strict=True):
        ax.plot(range(1, len(epochs) + 1), epochs, **_LINE, label=record["watched"], **style)
    longest = max(len(e) for _, e, _ in shown)
    ax.set_xticks(range(1, longest + 1),
                  ["1\n(warm-up)", *(str(e) for e in range(2, longest + 1))])
    first = records[0]
    ax.set_ylabel(f"seconds for {first['n_images']:,} images")
    _finish(ax, "epoch", "lower right")
    cpu = hardware(records).get("CPU", "CPU")
    ax.set_title(f"One training of the lesson's CNN, its output shown live or not\n"
                 f"{data_label(records)} | {cpu} | batch {first['batch_size']}\n"
                 f"{software(first)} | run {first['run_id']}", fontsize=9)
    fig.tight_layout()
    fig.alt_text = watched_alt_text(records)
    return (fig,)
