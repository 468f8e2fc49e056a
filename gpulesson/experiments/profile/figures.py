"""The profile's figure: where a step's time goes, one panel per device (their steps differ
many times), two stacked bars each: the host's timeline (input, dispatch, the rest of ``fit``)
and the device's (kernels, copies, idle). Its alt text is made from what it draws."""

from __future__ import annotations

from gpulesson.experiments.profile.records import find, profiled
from gpulesson.results import duration, hardware

FILE = "profile-step.svg"
DEVICES = ("cpu", "gpu")
COLOURS = {"input": "#dd8452", "dispatch": "#c44e52", "other": "#8c8c8c",
           "kernels": "#4c72b0", "copies": "#55a868", "idle": "#e5e5e5"}
LABELS = {"other": "rest of fit"}


def _drawn(records):
    return [(d, r) for d in DEVICES if profiled(r := find(records, d))]


def alt_text(records) -> str:
    """What the figure shows, in words, from the records it draws."""
    drawn = _drawn(records)
    if not drawn:
        return "No profile is recorded yet."
    said = []
    for device, record in drawn:
        found = record["profile"]
        parts = [f"{LABELS.get(k, k)} {duration(v)}" for line in ("host", "device")
                 for k, v in found[line].items()]
        said.append(f"{device.upper()}: a step of {duration(found['step'])}, {', '.join(parts)}")
    return ("Two stacked horizontal bars per device, one panel per device: the host's time per "
            "step (input, dispatch, the rest of fit) and the device's (kernels, copies, idle). "
            + "; ".join(said) + ".")


def figures(records):
    """One figure, a panel per device with a record."""
    import matplotlib.pyplot as plt

    drawn = _drawn(records)
    if not drawn:
        raise ValueError("no records to plot: run python -m gpulesson.experiments.profile")
    fig, axes = plt.subplots(len(drawn), 1, figsize=(8, 1.2 + 1.5 * len(drawn)), squeeze=False)
    for ax, (device, record) in zip(axes[:, 0], drawn, strict=True):
        found = record["profile"]
        for row, line in enumerate(("device", "host")):
            left = 0.0
            for part, seconds in found[line].items():
                ms = seconds * 1e3
                ax.barh(row, ms, left=left, color=COLOURS[part], height=0.6,
                        label=LABELS.get(part, part))
                if ms > 0.08 * found["step"] * 1e3:
                    ax.text(left + ms / 2, row, LABELS.get(part, part), ha="center",
                            va="center", fontsize=8)
                left += ms
        ax.set_yticks([0, 1], ["device", "host"])
        ax.set_title(f"{device.upper()}: {hardware([record]).get(device.upper(), '')}, run "
                     f"{record['run_id']}, {found['steps']} steps profiled", fontsize=9, loc="left")
        ax.set_xlabel("milliseconds per training step")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), loc="lower center", ncol=6, fontsize=8,
               frameon=False)
    fig.suptitle("Where a training step of the lesson's CNN goes (jax.profiler)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return (fig,)
