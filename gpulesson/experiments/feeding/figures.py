"""The feeding benchmark's figures, drawn from one run's records (``fig/09-feeding-the-gpu/
figures.py`` saves them): images/s per pipeline, and the settings on the fastest pipeline.

Only what was measured gets a panel: a device without records, or a kind of setting that was
not varied, is named in the title instead of drawn as an empty panel. Records of a pipeline that
delivered wrong data (:func:`gpulesson.experiments.feeding.records.delivered_wrong_data`) are left out, and
a note under the figure says so.
"""

from __future__ import annotations

from gpulesson.experiments.feeding.measure import SWEEPS
from gpulesson.experiments.feeding.page import rate_text, software
from gpulesson.experiments.feeding.records import PIPELINES, delivered_wrong_data, find, shown
from gpulesson.results import NOT_RECORDED, data_label, hardware

BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
_DEVICE_COLOUR = {"cpu": "tab:blue", "gpu": "tab:orange"}
_MODE_STYLE = {"train": {"hatch": "", "alpha": 1.0},
               "loader": {"hatch": "//", "alpha": 0.45}}
_SWEEP_NAMES = {"precision": "precision", "jit": "XLA compilation",
                "spe": "steps per execution", "batch": "batch size"}
def _title(fig, what: str, records) -> None:
    names = hardware(records)
    devices = " | ".join(f"{k}: {names.get(k, NOT_RECORDED)}" for k in ("CPU", "GPU"))
    fig.suptitle(f"{what} | {data_label(records)}\n{devices}\n"
                 f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def _bar_text(record) -> str:
    text = f"{rate_text(record['images_per_second'])}/s"
    if record["partial_epoch"]:
        text += f" ({record['steps']} steps)"
    return text + (" *" if _busy(record) else "")


def _busy_note(fig, records) -> None:
    if any(_busy(r) for r in records):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")



def _wrong_data_note(fig, records) -> None:
    left_out = sorted({r["pipeline"] for r in records if delivered_wrong_data(r)},
                      key=list(PIPELINES).index)
    if left_out:
        fig.text(0.01, -0.03, f"Left out: {', '.join(left_out)} (Keras worker processes on "
                 f"the {records[0]['backend']} backend delivered batches of earlier epochs; "
                 "the records stay in the results file)", fontsize=8, style="italic",
                 va="bottom")


def _pipeline_panel(ax, records, device, order) -> None:
    labelled = set()
    for offset, mode in ((-0.2, "train"), (0.2, "loader")):
        for i, pipeline in enumerate(order):
            record = find(records, device, pipeline, mode)
            if record is None:
                continue
            rate = record["images_per_second"]
            err = [[rate - record["images_per_second_low"]],
                   [record["images_per_second_high"] - rate]]
            label = "training (model.fit)" if mode == "train" else "loader alone (no model)"
            ax.barh(i + offset, rate, height=0.38, xerr=err, capsize=2,
                    color=_DEVICE_COLOUR[device], edgecolor="black",
                    label=None if label in labelled else label, **_MODE_STYLE[mode])
            labelled.add(label)
            ax.annotate(f"{'train' if mode == 'train' else 'loader'} {_bar_text(record)}",
                        (rate, i + offset), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_title(f"{device.upper()}", fontsize=10)
    ax.set_xscale("log")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.set_xlabel("images per second (log scale, median; bars: fastest to slowest epoch)")
    ax.grid(axis="x", alpha=0.3)
    ax.margins(x=0.35)


def pipelines_figure(records):
    """One panel per device with shown records, one row per pipeline: a solid bar for
    training and a hatched, paler bar for the loader alone, each labelled with its value
    (error bars: fastest to slowest epoch)."""
    import matplotlib.pyplot as plt
    import numpy as np

    valid = shown(records)
    devices = [d for d in _DEVICE_COLOUR if any(r["device_kind"] == d for r in valid)]
    if not devices:
        raise ValueError("no records to plot: every record delivered wrong data")
    fig, axes = plt.subplots(1, len(devices), figsize=(9 if len(devices) == 1 else 13, 6.2), sharey=True,
                             squeeze=False)
    axes = axes[0]
    order = [p for p in PIPELINES if any(r["pipeline"] == p for r in valid)]
    for ax, device in zip(axes, devices, strict=True):
        _pipeline_panel(ax, valid, device, order)
    axes[0].set_yticks(np.arange(len(order)),
                       [PIPELINES[p].replace(", ", ",\n", 1) for p in order], fontsize=8)
    axes[0].invert_yaxis()
    base = next((r for r in records if r.get("group") == "pipelines"), records[0])
    _title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
                f" {base['n_images']:,} images)", records)
    fig.tight_layout()
    _busy_note(fig, valid)
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
    that was varied, the base bar marked "base"."""
    import matplotlib.pyplot as plt

    swept = [r for r in shown(records) if r.get("group") in SWEEPS]
    device = "gpu" if any(r["device_kind"] == "gpu" for r in swept) else "cpu"
    swept = [r for r in swept if r["device_kind"] == device]
    pipeline = swept[0]["pipeline"] if swept else None
    base = find(records, device, pipeline) if pipeline else None
    panels = {}
    for group in SWEEPS:
        rows = ([base] if base else []) + [r for r in swept if r["group"] == group]
        if len(rows) >= 2:
            panels[group] = sorted(rows, key=lambda r: r["batch_size"]) if group == "batch" \
                else rows
    sweeps, axes = plt.subplots(1, max(1, len(panels)), figsize=(13, 4.6), squeeze=False)
    axes = axes[0]
    for ax, (group, rows) in zip(axes, panels.items(), strict=False):
        ax.set_title(_SWEEP_NAMES[group], fontsize=10)
        for i, r in enumerate(rows):
            is_base = r is base
            ax.bar(i, r["images_per_second"], color=_DEVICE_COLOUR[device], edgecolor="black",
                   hatch="" if is_base else "..",
                   yerr=[[r["images_per_second"] - r["images_per_second_low"]],
                         [r["images_per_second_high"] - r["images_per_second"]]], capsize=2)
            ax.text(i, r["images_per_second"] / 2,
                    rate_text(r["images_per_second"]) + (" *" if _busy(r) else "")
                    + ("\n(base)" if is_base else ""), ha="center", va="center", fontsize=7.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
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
    what = (f"{device.upper()}, pipeline '{pipeline}': one setting changed at a time "
            "(base: float32, jit on, 1 step/execution)" if pipeline
            else f"Settings: {NOT_RECORDED}")
    if missing and panels:
        what += f" | not varied: {', '.join(missing)}"
    _title(sweeps, what, records)
    sweeps.tight_layout()
    _busy_note(sweeps, [*swept, *([base] if base else [])])
    return sweeps


def figures(records):
    """Two figures of one run: ``(images/s per pipeline, settings on the best pipeline)``
    (:func:`pipelines_figure`, :func:`settings_figure`)."""
    if not records:
        raise ValueError("no records to plot: run the benchmark first")
    return pipelines_figure(records), settings_figure(records)
