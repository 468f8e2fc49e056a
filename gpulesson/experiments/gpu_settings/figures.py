"""The settings' figure: the epoch of each setting on the GPU (the CPU where there is no GPU),
its median as a bar and its range as a whisker, the default's median as a dashed line. Its alt
text is made from what it draws."""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread
from gpulesson.experiments.gpu_settings.records import SETTINGS, TARGETS, find
from gpulesson.results import hardware

FILE = "gpu-settings.svg"


def _drawn(records):
    device = "gpu" if any(r["device_kind"] == "gpu" for r in records) else "cpu"
    return device, [(n, r) for n in [*SETTINGS, *TARGETS] if (r := find(records, device, n))]


def _logarithmic(drawn) -> bool:
    """Whether the epochs span more than 5 times: then a target many times faster than the
    default would be a sliver on a linear axis, so the figure draws a logarithmic one."""
    medians = [r["median_epoch_seconds"] for _, r in drawn]
    return max(medians) > 5 * min(medians)


def alt_text(records) -> str:
    device, drawn = _drawn(records)
    if not drawn:
        return "No settings are recorded yet."
    said = ", ".join(f"{name} {r['median_epoch_seconds']:.3g} s" for name, r in drawn)
    axis = ", on a logarithmic axis" if _logarithmic(drawn) else ""
    return (f"Horizontal bars of the median epoch of each setting on the {device.upper()}{axis}, "
            f"with whiskers from the fastest to the slowest epoch and a dashed line at the "
            f"default's median: {said}.")


def figures(records):
    """One figure: a bar per setting."""
    import matplotlib.pyplot as plt

    device, drawn = _drawn(records)
    if not drawn:
        raise ValueError("no records to plot: run python -m gpulesson.experiments.gpu_settings")
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.35 * len(drawn)))
    positions = list(range(len(drawn)))[::-1]
    summaries = [r["summary"] for _, r in drawn]
    ax.barh(positions, [s["median"] for s in summaries], color="#4c72b0", height=0.6)
    draw_spread(ax, positions, summaries, horizontal=True)
    ax.set_yticks(positions, [name for name, _ in drawn])
    base = find(records, device, "default")
    if base:
        ax.axvline(base["median_epoch_seconds"], color="black", linestyle="--", linewidth=1)
    wide = _logarithmic(drawn)
    if wide:
        ax.set_xscale("log")
    ax.set_xlabel("seconds per epoch (lower is better)" + (", logarithmic axis" if wide else ""))
    machine = "; ".join(f"{k}: {v}" for k, v in hardware([r for _, r in drawn]).items())
    fig.suptitle(f"One setting at a time from the lesson's default (dashed). {machine}\n"
                 f"{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)
