"""The feeding benchmark's figures, drawn from one run's records (``fig/09-feeding-the-gpu/
figures.py`` saves it): images/s per pipeline, and its alt text. (The settings are the speed
ladder's, :mod:`gpulesson.experiments.ladder`.)

Only what was measured gets a panel: a device without records is not drawn, and the title names
the hardware of the devices drawn only. Records of a pipeline that delivered wrong data
(:func:`gpulesson.experiments.feeding.records.delivered_wrong_data`) are left out, and a note
under the figure says so. Every bar is a median with its range and its epochs
(:func:`~gpulesson.experiments.common.draw_spread`).

What the figure draws is decided once (:func:`pipeline_panels`); the drawing code and the alt
text (:func:`alt_texts`, the episode's ``ref_feed_fig_pipelines_alt``) both read it, so that an
alt text names only what is drawn and takes its numbers from the drawn data.
"""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.feeding.reading import fastest_text
from gpulesson.experiments.feeding.records import (
    PIPELINES,
    delivered_wrong_data,
    find,
    rate_summary,
    rate_text,
    shown,
)
from gpulesson.experiments.figkit import need, panels, title
from gpulesson.experiments.parts import machine
from gpulesson.results import NOT_RECORDED, hardware, software

BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
_DEVICE_COLOUR = {"cpu": "tab:blue", "gpu": "tab:orange"}
_MODE_STYLE = {"train": {"hatch": "", "alpha": 1.0},
               "loader": {"hatch": "//", "alpha": 0.45}}
_MODE_WORDS = {"train": "training (model.fit)", "loader": "loader alone (no model)"}


def _title(fig, what: str, records, devices) -> None:
    """The figure's title: what it shows, the data, and for each device drawn its machine,
    software and run (the devices may come from different runs)."""
    drawn = []
    for device in devices:
        part = [r for r in records if r["device_kind"] == device and r.get("part") is None]
        part = [r for r in part if r["run_id"] == part[0]["run_id"]]
        drawn.append(f"{device.upper()}: {machine(part)}, {software(part)}, run {part[0]['run_id']}")
    title(fig, what, records, *drawn)


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def _bar_text(record) -> str:
    text = f"{rate_text(rate_summary(record)['median'])}/s"
    if record["partial_epoch"]:
        text += f" ({record['steps']} steps)"
    return text + (" *" if _busy(record) else "")


def _busy_note(fig, records) -> None:
    if any(_busy(r) for r in records):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")


def _left_out(records) -> list[str]:
    return sorted({r["pipeline"] for r in records if delivered_wrong_data(r)},
                  key=list(PIPELINES).index)


def _wrong_data_note(fig, records) -> None:
    left_out = _left_out(records)
    if left_out:
        fig.text(0.01, -0.03, f"Left out: {', '.join(left_out)} (Keras worker processes on "
                 f"the {records[0]['backend']} backend delivered batches of earlier epochs; "
                 "the records stay in the results file)", fontsize=8, style="italic",
                 va="bottom")


def _repeats_words(counts) -> str:
    counts = sorted(set(counts))
    if not counts:
        return "no"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


# --- what is drawn ------------------------------------------------------------------------------

def pipeline_panels(records) -> tuple[list[str], list[str], dict]:
    """What the pipelines figure draws: ``(devices, pipelines in row order, {(device, pipeline,
    mode): record})``, from the shown records of the base setting."""
    valid = shown(records)
    devices = [d for d in _DEVICE_COLOUR if any(r["device_kind"] == d for r in valid)]
    order = [p for p in PIPELINES if any(r["pipeline"] == p for r in valid)]
    bars = {}
    for device in devices:
        for pipeline in order:
            for mode in ("train", "loader"):
                record = find(valid, device, pipeline, mode)
                if record is not None:
                    bars[(device, pipeline, mode)] = record
    order = [p for p in order if any(key[1] == p for key in bars)]
    return devices, order, bars


# --- drawing ------------------------------------------------------------------------------------

def _pipeline_panel(ax, bars, device, order) -> None:
    labelled = set()
    for offset, mode in ((-0.2, "train"), (0.2, "loader")):
        for i, pipeline in enumerate(order):
            record = bars.get((device, pipeline, mode))
            if record is None:
                continue
            rate = rate_summary(record)
            label = _MODE_WORDS[mode]
            ax.barh(i + offset, rate["median"], height=0.38, color=_DEVICE_COLOUR[device],
                    edgecolor="black", label=None if label in labelled else label,
                    **_MODE_STYLE[mode])
            draw_spread(ax, [i + offset], [rate], horizontal=True)
            labelled.add(label)
            ax.annotate(f"{'train' if mode == 'train' else 'loader'} {_bar_text(record)}",
                        (rate["max"], i + offset), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_title(f"{device.upper()}", fontsize=10)
    ax.set_xscale("log")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    counts = [rate_summary(r)["n"] for (d, _, _), r in bars.items() if d == device]
    ax.set_xlabel(f"images per second (log scale)\n{SPREAD_NOTE}\n"
                  f"timed epochs per bar: {_repeats_words(counts)}", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.margins(x=0.35)


def pipelines_figure(records):
    """One panel per device with shown records, one row per pipeline: a solid bar for
    training and a hatched, paler bar for the loader alone, each at its median with the range
    and the epochs drawn, and labelled with its median."""
    import numpy as np

    devices, order, bars = pipeline_panels(records)
    need(devices, "every record delivered wrong data")
    fig, axes = panels(len(devices), (9 if len(devices) == 1 else 13, 6.4), across=True,
                       sharey=True)
    for ax, device in zip(axes, devices, strict=True):
        _pipeline_panel(ax, bars, device, order)
    axes[0].set_yticks(np.arange(len(order)),
                       [PIPELINES[p].replace(", ", ",\n", 1) for p in order], fontsize=8)
    axes[0].invert_yaxis()
    base = next((r for r in records if r.get("group") == "pipelines"), records[0])
    _title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
                f" {base['n_images']:,} images)", records, devices)
    fig.tight_layout()
    _busy_note(fig, list(bars.values()))
    _wrong_data_note(fig, records)
    return fig


def figures(records):
    """The run's figures, as a tuple: ``(images/s per pipeline,)`` (:func:`pipelines_figure`)."""
    need(records, "run the benchmark first")
    return (pipelines_figure(records),)


# --- alt texts ----------------------------------------------------------------------------------

def _rate_words(record) -> str:
    return f"{rate_text(rate_summary(record)['median'])} images/s"


def pipelines_alt(records) -> str:
    """The alt text of the pipelines figure, from what :func:`pipelines_figure` draws."""
    devices, order, bars = pipeline_panels(records)
    if not devices:
        return "Chart without bars: every record of the run delivered wrong data."
    names = hardware(records)
    panels = " and ".join(f"the {d.upper()} ({names.get(d.upper(), NOT_RECORDED)})"
                          for d in devices)
    counts = {mode: [rate_summary(r)["n"] for k, r in bars.items() if k[2] == mode]
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
        low = min(train, key=lambda p: rate_summary(train[p])["median"])
        high = max(train, key=lambda p: rate_summary(train[p])["median"])
        # The page's one ranking: the table and the reading exercise name the same pipelines.
        best = fastest_text(records, device, quote=str)
        parts.append(f"{device.upper()} training medians: from {_rate_words(train[low])} "
                     f"({low}) to {_rate_words(train[high])} ({high}); fastest by the lesson's "
                     f"rule: {best}.")
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
    """The alt texts of :func:`figures`, in its order: ``(pipelines figure's,)``."""
    return (pipelines_alt(records),)
