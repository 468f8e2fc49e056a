"""The feeding benchmark's figure, images/s per pipeline, and its alt text.

What is drawn is decided once (:func:`pipeline_panels`), so that the alt text names only what
is drawn: only devices with shown records get a panel, and a note names the pipelines left out
because they delivered wrong data.
"""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.feeding import records as fr
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.parts import machine
from gpulesson.records.results import NOT_RECORDED, hardware, software

BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
_DEVICE_COLOUR = {"cpu": "tab:blue", "gpu": "tab:orange"}
_MODE_STYLE = {"train": {"hatch": "", "alpha": 1.0},
               "loader": {"hatch": "//", "alpha": 0.45}}
_MODE_WORDS = {"train": "training (model.fit)", "loader": "loader alone (no model)"}


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def _left_out(records) -> list[str]:
    return sorted({r["pipeline"] for r in records if fr.delivered_wrong_data(r)},
                  key=list(fr.PIPELINES).index)


def _repeats_words(counts) -> str:
    counts = sorted(set(counts))
    if not counts:
        return "no"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def _median(record) -> str:
    return fr.rate_text(fr.rate_summary(record)["median"])


def pipeline_panels(records) -> tuple[list[str], list[str], dict]:
    """``(devices, pipelines in row order, {(device, pipeline, mode): record})`` to draw."""
    valid = fr.shown(records)
    devices = [d for d in _DEVICE_COLOUR if any(r["device_kind"] == d for r in valid)]
    bars = {(device, pipeline, mode): record for device in devices for pipeline in fr.PIPELINES
            for mode in ("train", "loader")
            if (record := fr.find(valid, device, pipeline, mode)) is not None}
    order = [p for p in fr.PIPELINES if any(key[1] == p for key in bars)]
    return devices, order, bars


def _pipeline_panel(ax, bars, device, order) -> None:
    for offset, mode in ((-0.2, "train"), (0.2, "loader")):
        label = _MODE_WORDS[mode]
        for i, pipeline in enumerate(order):
            record = bars.get((device, pipeline, mode))
            if record is None:
                continue
            rate = fr.rate_summary(record)
            ax.barh(i + offset, rate["median"], height=0.38, color=_DEVICE_COLOUR[device],
                    edgecolor="black", label=label, **_MODE_STYLE[mode])
            draw_spread(ax, [i + offset], [rate], horizontal=True)
            label = None
            text = (f"{_median(record)}/s"
                    + (f" ({record['steps']} steps)" if record["partial_epoch"] else "")
                    + (" *" if _busy(record) else ""))
            ax.annotate(f"{'train' if mode == 'train' else 'loader'} {text}",
                        (rate["max"], i + offset), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_title(f"{device.upper()}", fontsize=10)
    ax.set_xscale("log")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    counts = [fr.rate_summary(r)["n"] for (d, _, _), r in bars.items() if d == device]
    ax.set_xlabel(f"images per second (log scale)\n{SPREAD_NOTE}\n"
                  f"timed epochs per bar: {_repeats_words(counts)}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.margins(x=0.35)


def pipelines_figure(records):
    """One panel per device, one row per pipeline: training solid, the loader alone hatched."""
    import numpy as np

    devices, order, bars = pipeline_panels(records)
    need(devices, "every record delivered wrong data")
    fig, axes = panels(len(devices), (9 if len(devices) == 1 else 13, 6.4), across=True,
                       sharey=True)
    for ax, device in zip(axes, devices, strict=True):
        _pipeline_panel(ax, bars, device, order)
    axes[0].set_yticks(np.arange(len(order)),
                       [fr.PIPELINES[p].replace(", ", ",\n", 1) for p in order], fontsize=8)
    axes[0].invert_yaxis()
    base = next((r for r in records if r.get("group") == "pipelines"), records[0])
    drawn = []
    for device in devices:  # the devices may come from different runs
        part = [r for r in records if r["device_kind"] == device and r.get("part") is None]
        part = [r for r in part if r["run_id"] == part[0]["run_id"]]
        drawn.append(f"{device.upper()}: {machine(part)}, {software(part)}, run {part[0]['run_id']}")
    title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
               f" {base['n_images']:,} images)", records, *drawn)
    fig.tight_layout()
    if any(_busy(r) for r in bars.values()):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")
    left_out = _left_out(records)
    if left_out:
        fig.text(0.01, -0.03, f"Left out: {', '.join(left_out)} (Keras worker processes on "
                 f"the {records[0]['backend']} backend delivered batches of earlier epochs; "
                 "the records stay in the results file)", fontsize=8, style="italic",
                 va="bottom")
    return fig


def figures(records):
    need(records, "run the benchmark first")
    return (pipelines_figure(records),)


def pipelines_alt(records) -> str:
    """The alt text of the pipelines figure, from what :func:`pipelines_figure` draws."""
    devices, order, bars = pipeline_panels(records)
    if not devices:
        return "Chart without bars: every record of the run delivered wrong data."
    names = hardware(records)
    panels = " and ".join(f"the {d.upper()} ({names.get(d.upper(), NOT_RECORDED)})"
                          for d in devices)
    counts = {mode: [fr.rate_summary(r)["n"] for k, r in bars.items() if k[2] == mode]
              for mode in ("train", "loader")}
    parts = [f"Horizontal bars on a logarithmic axis of images per second, "
             f"{'one panel' if len(devices) == 1 else 'one panel each'} for {panels}, one row "
             f"per input pipeline: {', '.join(order)}. Each row has a solid bar for training "
             "with model.fit and a paler hatched bar for the loader alone, each at the median of "
             f"its timed epochs ({_repeats_words(counts['train'])} for training, "
             f"{_repeats_words(counts['loader'])} for the loader alone), with whiskers from the "
             "slowest to the fastest epoch and a dot for each epoch, and labelled with its "
             "median."]
    for device in devices:
        train = {p: bars[(device, p, "train")] for p in order if (device, p, "train") in bars}
        if not train:
            continue
        low = min(train, key=lambda p: fr.rate_summary(train[p])["median"])
        high = max(train, key=lambda p: fr.rate_summary(train[p])["median"])
        # The page's one ranking: the table and the reading exercise name the same pipelines.
        best = fr.fastest_text(records, device, quote=str)
        parts.append(f"{device.upper()} training medians: from {_median(train[low])} images/s "
                     f"({low}) to {_median(train[high])} images/s ({high}); fastest by the "
                     f"lesson's rule: {best}.")
    partial = sorted({r["steps"] for r in bars.values() if r["partial_epoch"]})
    if partial:
        parts.append(f"Only the first {' or '.join(map(str, partial))} batches of each epoch "
                     "were timed where a bar says so.")
    left_out = _left_out(records)
    if left_out:
        parts.append(f"A note under the bars names the pipelines left out because they "
                     f"delivered wrong data: {', '.join(left_out)}.")
    return " ".join(parts)


def alt_texts(records) -> tuple[str]:
    return (pipelines_alt(records),)
