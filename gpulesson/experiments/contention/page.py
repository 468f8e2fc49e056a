"""Episode 5's ``ref_cont_*`` values, the run as a table and its figure, from the newest run of
k copies at once; the figure and its alt text read one :func:`drawn`, so that the alt text
never describes what is not drawn."""

from collections import namedtuple

from gpulesson.experiments.contention import RECORDS
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import listed, run_values
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software
from gpulesson.records.summaries import SUMMARY_KEY, draw_spread, summary_text

FIGURES, FIGURE_FOLDER = ("contention.svg",), "fig/05-cpu-vs-gpu"
# Line style and marker, not only colour, tell the series apart.
_STYLE = {None: {"marker": "o", "linestyle": "-", "color": "tab:blue"},
          1: {"marker": "s", "linestyle": "--", "color": "tab:orange", "fillstyle": "none"}}
_OTHER = {"marker": "D", "linestyle": "-.", "color": "tab:green"}  # any other thread count
# Words for the alt texts, for the markers and line styles above.
_MARKERS = {"o": "round", "s": "open square", "D": "diamond"}
_LINES = {"-": "solid", "--": "dashed", "-.": "dash-dotted"}
# What the left panel draws at each point.
SPREAD_NOTE_LINES = ("points: median; whiskers: fastest to slowest epoch; dots: the epochs "
                     "(after each copy's warm-up)")
_LINE = {"linewidth": 1.6, "markersize": 7}


def reference_run(path=None) -> list[dict]:
    """The newest run of k copies at once (not of the former watched part) whose records keep
    their summaries; a run made before they were kept is not drawn."""
    run = RECORDS.newest_run(path, part="copies", complete=lambda run: all(SUMMARY_KEY in r for r in run))
    return [r for r in run if SUMMARY_KEY in r]


def threads_text(threads: int | None) -> str:
    return "framework default" if threads is None else f"{threads} thread{'s' * (threads > 1)}"


def substitutions(path=RECORDS.results_file) -> dict[str, str]:
    """Episode 5's ``ref_cont_*`` values; NOT_RECORDED for everything the run lacks."""
    records = reference_run(path)
    alone = RECORDS.find(records, copies=1, threads=None)
    summary = alone and alone.get(SUMMARY_KEY)
    return {
        **run_values("ref_cont", records, "date", "cpu"),
        "ref_cont_data": records[0].get("data_label", NOT_RECORDED) if records else NOT_RECORDED,
        # One copy alone, by its median epoch.
        "ref_cont_alone_rate": (f"{alone['n_images'] / summary['median']:,.0f} images/s"
                                if summary else NOT_RECORDED),
        "ref_cont_fig_alt": alt_text(records) if records else NOT_RECORDED,
    }


def describe(records) -> str:
    """One run as a table: per condition its epochs, images/s, slowdown and load average."""
    records = [r for r in records if r.get("part", "copies") == "copies"]
    if not records:
        return "No run recorded."
    first = records[0]
    lines = [f"Run {first['run_id']}: {first.get('cpu_model', 'CPU')}, "
             f"{first.get('cpu_cores_available', '?')} cores usable; {first['n_images']:,} images, "
             f"batch {first['batch_size']}, {first['epochs']} epoch(s) per copy",
             f"{'copies':>6} {'threads':>18} {'epoch s':>8} {'img/s each':>11} "
             f"{'img/s total':>12} {'slowdown':>9} {'load max':>9} {'1st fastest':>12}"]
    for r in records:
        slowdown = f"{r['slowdown']:.2f}x" if r.get("slowdown") else "-"
        load = f"{r['load_max']:.2f}" if r.get("load_max") is not None else "-"
        fastest = f"{r['first_epoch_fastest']} of {r['copies']}" if r["epochs"] > 1 else "-"
        lines.append(f"{r['copies']:>6} {threads_text(r['threads']):>18} {r['mean_epoch_seconds']:>8.1f} "
                     f"{r['images_per_second']:>11,.0f} {r['images_per_second_total']:>12,.0f} "
                     f"{slowdown:>9} {load:>9} {fastest:>12}")
    lines += [f"Note: {note}" for note in dict.fromkeys(
        n for r in records for n in r.get("skipped_conditions") or ())]
    return "\n".join(lines)


# A condition drawn: its copies' summary, and the images/s of all of them by the median epoch.
Point = namedtuple("Point", "copies summary total_rate load_max")


def _threads_words(threads: int | None) -> str:
    return "the framework's default threads" if threads is None else f"{threads_text(threads)} per training"


def drawn(records) -> tuple[list[tuple[int | None, dict, list[Point]]], dict | None]:
    """``(series, alone)``: ``(threads, style, points)`` per thread setting, the framework's
    default first, and the summary of one copy alone (the fair-share line; None if missing)."""
    need(records, "run python -m gpulesson.experiments.contention")
    series = []
    for threads in sorted({r["threads"] for r in records}, key=lambda t: t or 0):
        chosen = sorted((r for r in records if r["threads"] == threads), key=lambda r: r["copies"])
        points = [Point(r["copies"], s, r["copies"] * r["n_images"] / s["median"],
                        r.get("load_max")) for r in chosen if (s := r.get(SUMMARY_KEY))]
        if points:
            series.append((threads, _STYLE.get(threads, _OTHER), points))
    alone = RECORDS.find(records, copies=1, threads=None)
    return series, alone and alone.get(SUMMARY_KEY)


def alt_text(records) -> str:
    series, alone = drawn(records)
    first = records[0]
    parts = [f"a {_LINES[style['linestyle']]} line with {_MARKERS.get(style['marker'], '')} markers "
             f"for {_threads_words(threads)} ("
             + "; ".join(f"{p.copies} at once: {summary_text(p.summary, duration, what='epochs')}"
                         + (f", load {p.load_max:.1f}" if p.load_max is not None else "")
                         for p in points) + ")"
             for threads, style, points in series]
    copies = sorted({p.copies for _, _, points in series for p in points})
    text = (f"Two line charts against the number of trainings running at once on one CPU "
            f"({listed(copies)}). Left, the seconds per epoch of {first['n_images']:,} images of each "
            "training: at each point the median of the epochs after each copy's warm-up, with a whisker "
            "from the fastest to the slowest and each epoch as a dot, labelled with the highest load "
            "average seen; " + "; ".join(parts) + ".")
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
    and a fair share of the machine; right, the images/s of all copies together."""
    series, alone = drawn(records)
    fig, (left, right) = panels(2, (10, 4.8), across=True)
    copies = sorted({p.copies for _, _, points in series for p in points})
    for i, (threads, style, points) in enumerate(series):
        k = [p.copies + (i - (len(series) - 1) / 2) * 0.08 for p in points]  # side by side
        label = f"each copy: {threads_text(threads)}"
        left.plot(k, [p.summary["median"] for p in points], **_LINE, label=label, **style)
        draw_spread(left, k, [p.summary for p in points], color=style["color"])
        right.plot([p.copies for p in points], [p.total_rate for p in points],
                   **_LINE, label=label, **style)
        for x, p in zip(k, points, strict=True):
            if p.load_max is not None:
                left.annotate(f"load {p.load_max:.1f}", (x, p.summary["median"]), fontsize=8,
                              xytext=(6, 5 if threads is None else -12), textcoords="offset points")
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
        ax.set_xlabel("trainings running at once (k)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left" if ax is left else "lower right")
    title(fig, "The lesson's CNN, k trainings at once on one CPU", records,
          f"{hardware(records).get('CPU', 'CPU')} | batch {first['batch_size']} | "
          f"{software(first)} | run {first['run_id']}", f"left: {SPREAD_NOTE_LINES}")
    fig.tight_layout()
    fig.alt_text = alt_text(records)
    return (fig,)
