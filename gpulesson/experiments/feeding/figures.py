"""The feeding benchmark's figures, drawn from one run's records (``fig/09-feeding-the-gpu/
figures.py`` saves them): images/s per pipeline, and the settings on the fastest pipeline, and
their alt texts.

Only what was measured gets a panel: a device without records, or a kind of setting that was
not varied, is not drawn, and the titles name the hardware of the devices drawn only. Records of
a pipeline that delivered wrong data (:func:`gpulesson.experiments.feeding.records.delivered_wrong_data`)
are left out, and a note under the figure says so. Every bar is a median with its range and its
epochs (:func:`~gpulesson.experiments.common.draw_spread`).

What a figure draws is decided once (:func:`pipeline_panels`, :func:`settings_panels`); the
drawing code and the alt texts (:func:`alt_texts`, the episode's ``ref_feed_fig_*_alt``
values) both read it, so that an alt text names only what is drawn and takes its numbers from
the drawn data.
"""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.feeding.measure import SWEEPS
from gpulesson.experiments.feeding.reading import fastest_text
from gpulesson.experiments.feeding.records import (
    PIPELINES,
    delivered_wrong_data,
    find,
    rate_summary,
    rate_text,
    shown,
    sweep_device,
)
from gpulesson.experiments.parts import machine
from gpulesson.results import NOT_RECORDED, data_label, hardware, software

BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
_DEVICE_COLOUR = {"cpu": "tab:blue", "gpu": "tab:orange"}
_MODE_STYLE = {"train": {"hatch": "", "alpha": 1.0},
               "loader": {"hatch": "//", "alpha": 0.45}}
_MODE_WORDS = {"train": "training (model.fit)", "loader": "loader alone (no model)"}
_SWEEP_NAMES = {"precision": "precision", "jit": "XLA compilation",
                "spe": "steps per execution", "batch": "batch size"}


def _title(fig, what: str, records, devices) -> None:
    """The figure's title: what it shows, the data, and for each device drawn its machine,
    software and run (the devices may come from different runs)."""
    drawn = []
    for device in devices:
        part = [r for r in records if r["device_kind"] == device and r.get("part") is None]
        part = [r for r in part if r["run_id"] == part[0]["run_id"]]
        drawn.append(f"{device.upper()}: {machine(part)}, {software(part)}, run {part[0]['run_id']}")
    fig.suptitle(f"{what} | {data_label(records)}\n" + "\n".join(drawn), fontsize=9)


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


def settings_panels(records) -> tuple[str, str | None, dict | None, dict[str, list[dict]]]:
    """What the settings figure draws: ``(device, pipeline, base record, {kind of setting: its
    records, the base first (batch sizes in order)})``, for each kind varied on the device."""
    swept = [r for r in shown(records) if r.get("group") in SWEEPS]
    device = sweep_device(records)
    swept = [r for r in swept if r["device_kind"] == device]
    pipeline = swept[0]["pipeline"] if swept else None
    base = find(records, device, pipeline, run_id=swept[0]["run_id"]) if pipeline else None
    panels = {}
    for group in SWEEPS:
        rows = ([base] if base else []) + [r for r in swept if r["group"] == group]
        if len(rows) >= 2:
            panels[group] = sorted(rows, key=lambda r: r["batch_size"]) if group == "batch" \
                else rows
    return device, pipeline, base, panels


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
    import matplotlib.pyplot as plt
    import numpy as np

    devices, order, bars = pipeline_panels(records)
    if not devices:
        raise ValueError("no records to plot: every record delivered wrong data")
    fig, axes = plt.subplots(1, len(devices), figsize=(9 if len(devices) == 1 else 13, 6.4),
                             sharey=True, squeeze=False)
    axes = axes[0]
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


def _sweep_label(record, group) -> str:
    return {"precision": record["precision"].replace("mixed_", "mixed\n"),
            "jit": "jit on" if record["jit_compile"] else "jit off",
            "spe": str(record["steps_per_execution"]),
            "batch": str(record["batch_size"])}[group]


def settings_figure(records):
    """Training images/s on the swept pipeline for each setting varied from the base
    (float32, jit, 1 step per execution, base batch size), one panel per kind of setting
    that was varied, the base bar marked "base"; each bar at its median with the range and the
    epochs drawn."""
    import matplotlib.pyplot as plt

    device, pipeline, base, panels = settings_panels(records)
    sweeps, axes = plt.subplots(1, max(1, len(panels)), figsize=(13, 4.8), squeeze=False)
    axes = axes[0]
    for ax, (group, rows) in zip(axes, panels.items(), strict=False):
        ax.set_title(_SWEEP_NAMES[group], fontsize=10)
        rates = [rate_summary(r) for r in rows]
        for i, (r, rate) in enumerate(zip(rows, rates, strict=True)):
            is_base = r is base
            ax.bar(i, rate["median"], color=_DEVICE_COLOUR[device], edgecolor="black",
                   hatch="" if is_base else "..")
            ax.text(i, rate["median"] / 2,
                    rate_text(rate["median"]) + (" *" if _busy(r) else "")
                    + ("\n(base)" if is_base else ""), ha="center", va="center", fontsize=7.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
        draw_spread(ax, list(range(len(rows))), rates)
        ax.set_xticks(range(len(rows)), [_sweep_label(r, group) for r in rows], fontsize=8)
        ax.margins(y=0.2)
        ax.grid(axis="y", alpha=0.3)
    missing = [_SWEEP_NAMES[g] for g in SWEEPS if g not in panels]
    if not panels:
        axes[0].text(0.5, 0.5, "No setting was varied in this run.", transform=axes[0].transAxes,
                     ha="center", va="center", style="italic")
        axes[0].set_axis_off()
    else:
        axes[0].set_ylabel("training images per second")
        counts = [rate_summary(r)["n"] for rows in panels.values() for r in rows]
        sweeps.text(0.5, 0.005, f"{SPREAD_NOTE}; timed epochs per bar: {_repeats_words(counts)}",
                    ha="center", va="bottom", fontsize=8)
    what = (f"{device.upper()}, pipeline '{pipeline}': one setting changed at a time "
            "(base: float32, jit on, 1 step/execution)" if panels
            else "Settings: no run has varied them yet")
    if missing and panels:
        what += f" | not varied: {', '.join(missing)}"
    drawn = [r for rows in panels.values() for r in rows]
    _title(sweeps, what, drawn or records, [device] if panels else [])
    sweeps.tight_layout(rect=(0, 0.03, 1, 1))
    _busy_note(sweeps, drawn)
    return sweeps


def figures(records):
    """Two figures of one run: ``(images/s per pipeline, settings on the best pipeline)``
    (:func:`pipelines_figure`, :func:`settings_figure`)."""
    if not records:
        raise ValueError("no records to plot: run the benchmark first")
    return pipelines_figure(records), settings_figure(records)


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


def settings_alt(records) -> str:
    """The alt text of the settings figure, from what :func:`settings_figure` draws."""
    device, pipeline, base, panels = settings_panels(records)
    if not panels:
        return "Empty chart: no recorded run has varied a setting yet."
    names = hardware(records)
    parts = [f"Bar charts of training images per second on the {device.upper()} "
             f"({names.get(device.upper(), NOT_RECORDED)}) from the pipeline {pipeline}, one "
             "panel per kind of setting varied one at a time from the base (float32, XLA on, "
             "1 step per execution), the base bar plain and marked base, the others dotted; "
             "each bar at the median of its timed epochs with whiskers from the slowest to the "
             "fastest and a dot for each epoch, and labelled with its median."]
    for group, rows in panels.items():
        values = ", ".join(f"{_sweep_label(r, group).replace(chr(10), ' ')} "
                           f"{_rate_words(r)}" + (" (base)" if r is base else "")
                           for r in rows)
        parts.append(f"{_SWEEP_NAMES[group].capitalize()}: {values}.")
    counts = [rate_summary(r)["n"] for rows in panels.values() for r in rows]
    parts.append(f"Timed epochs per bar: {_repeats_words(counts)}.")
    return " ".join(parts)


def alt_texts(records) -> tuple[str, str]:
    """``(alt text of the pipelines figure, alt text of the settings figure)``."""
    return pipelines_alt(records), settings_alt(records)
