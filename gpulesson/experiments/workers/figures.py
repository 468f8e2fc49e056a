"""The workers' figure: images per second of ``fit`` by number of Grain worker processes, a
bar for each per-item work, one panel a backend and device, with each condition's range."""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.figkit import need, panels, run_title
from gpulesson.experiments.recordset import rate_summary
from gpulesson.experiments.workers import records as wr

FILE = "feeding-workers.svg"
COLOURS = {"none": "#4c72b0", "augment": "#dd8452"}
SHORT = {"none": "blocks as stored", "augment": "flip_crop on each image"}


def alt_text(records) -> str:
    if not records:
        return "No measurement of Grain's worker processes is recorded yet."
    said = []
    for backend, device in wr.groups(records):
        drawn = wr.conditions(records, backend, device)
        bars = "; ".join(
            f"{SHORT[work]}: " + ", ".join(f"{n} {'worker' if n == 1 else 'workers'} "
                                           f"{r['images_per_second']:,.0f}"
                                           for w, n, r in drawn if w == work)
            for work in wr.WORK if any(w == work for w, _, _ in drawn))
        said.append(f"{wr.NAMES.get(backend, backend)} on the {device.upper()}: {bars}")
    return ("Bars of the median images per second that fit reaches through Grain with a model "
            "that does almost nothing, against the number of worker processes, blue for the "
            "stored blocks as they are and orange with the lesson's augmentation, one panel per "
            "backend and device, each on its own scale and titled with its run and machine, "
            "with whiskers from the slowest to the fastest epoch. Medians: "
            f"{'. '.join(said)}.")


def figures(records):
    """A panel per backend and device (each on its own scale: the devices may be different
    machines), bars by number of workers, side by side only where a panel has both works."""
    need(records, "run python -m gpulesson.experiments.workers")
    pairs = wr.groups(records)
    fig, axes = panels(len(pairs), (4.2 * len(pairs) + 1, 3.9), across=True)
    for ax, (backend, device) in zip(axes, pairs, strict=True):
        bars = wr.conditions(records, backend, device)
        counts = sorted({n for _, n, _ in bars})
        works = [work for work in wr.WORK if any(w == work for w, _, _ in bars)]
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
        run_title(ax, f"{wr.NAMES.get(backend, backend)}, {device.upper()}", [r for _, _, r in bars],
                  between="\n", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("images per second through fit\n(higher is better)")
    fig.suptitle("Grain's worker processes with a model that does almost nothing; each panel on "
                 f"its own scale\n{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)
