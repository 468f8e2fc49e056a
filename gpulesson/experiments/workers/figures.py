"""The workers' figure: images per second of ``fit`` against the number of Grain worker
processes, a bar for each per-item work, one panel a backend and device, with the range and the
repeats of every condition. Its alt text is made from what it draws (:func:`alt_text`)."""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.figkit import need, panels, run_title
from gpulesson.experiments.workers.records import (
    NAMES,
    WORK,
    conditions,
    groups,
    rate_summary,
)

FILE = "feeding-workers.svg"
COLOURS = {"none": "#4c72b0", "augment": "#dd8452"}
SHORT = {"none": "blocks as stored", "augment": "flip_crop on each image"}


def alt_text(records) -> str:
    """What the figure shows, in words, from the records it draws."""
    if not records:
        return "No measurement of Grain's worker processes is recorded yet."
    parts = []
    for backend, device in groups(records):
        drawn = conditions(records, backend, device)
        said = "; ".join(
            f"{SHORT[work]}: " + ", ".join(f"{n} {_workers(n)} {r['images_per_second']:,.0f}"
                                           for w, n, r in drawn if w == work)
            for work in WORK if any(w == work for w, _, _ in drawn))
        parts.append(f"{NAMES.get(backend, backend)} on the {device.upper()}: {said}")
    return ("Bars of the median images per second that fit reaches through Grain with a model "
            "that does almost nothing, against the number of worker processes, blue for the "
            "stored blocks as they are and orange with the lesson's augmentation, one panel per "
            "backend and device, each on its own scale and titled with its run and machine, "
            "with whiskers from the slowest to the fastest epoch. Medians: "
            f"{'. '.join(parts)}.")


def _workers(n: int) -> str:
    return "worker" if n == 1 else "workers"


def figures(records):
    """One figure: a panel per backend and device, bars by number of workers and work, each
    bar on its tick (side by side only where a panel has both works), each panel on its own
    scale (the devices may be different machines), titled with its run and machine."""
    need(records, "run python -m gpulesson.experiments.workers")
    pairs = groups(records)
    fig, axes = panels(len(pairs), (4.2 * len(pairs) + 1, 3.9), across=True)
    for ax, (backend, device) in zip(axes, pairs, strict=True):
        bars = conditions(records, backend, device)
        counts = sorted({n for _, n, _ in bars})
        works = [work for work in WORK if any(w == work for w, _, _ in bars)]
        width = 0.8 / len(works)
        for offset, work in enumerate(works):
            drawn = [(counts.index(n) + (offset - (len(works) - 1) / 2) * width, rate_summary(r))
                     for w, n, r in bars if w == work]
            positions = [p for p, _ in drawn]
            ax.bar(positions, [s["median"] for _, s in drawn], width=width * 0.95,
                   color=COLOURS[work], label=SHORT[work])
            draw_spread(ax, positions, [s for _, s in drawn])
        ax.set_xticks(range(len(counts)), [str(n) for n in counts])
        ax.set_xlabel("Grain worker processes (0: none)")
        run_title(ax, f"{NAMES.get(backend, backend)}, {device.upper()}", [r for _, _, r in bars],
                  between="\n", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("images per second through fit\n(higher is better)")
    fig.suptitle("Grain's worker processes with a model that does almost nothing; each panel on "
                 f"its own scale\n{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)
