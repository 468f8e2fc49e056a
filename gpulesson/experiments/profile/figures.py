"""The profile's figure and its alt text: where a step's time goes, a panel per device."""

from __future__ import annotations

from gpulesson.experiments.figkit import need, panels
from gpulesson.experiments.profile.records import find, overhead, profiled
from gpulesson.records.results import duration, hardware

FILE = "profile-step.svg"
DEVICES = ("cpu", "gpu")
COLOURS = {"input": "#dd8452", "dispatch": "#c44e52", "other": "#8c8c8c",
           "kernels": "#4c72b0", "copies": "#55a868", "idle": "#e5e5e5"}
LABELS = {"other": "rest of fit"}


def _drawn(records):
    return [(d, r) for d in DEVICES if profiled(r := find(records, d))]


def _host(record: dict) -> tuple[str, int | None]:
    return record.get("cpu_model") or "?", record.get("cores_usable")


def machine(device: str, record: dict, records) -> str:
    """A panel's machine; a CPU profiled on another host than the GPU's record says so (the GPU
    node's CPU has other cores)."""
    name = hardware([record]).get(device.upper(), "")
    gpu = find(records, "gpu")
    if device == "cpu" and gpu and _host(gpu) != _host(record):
        model, cores = _host(gpu)
        node = f"{cores} cores" if model == _host(record)[0] else f"{model}, {cores} cores"
        name += f" (another machine: the GPU's node has {node})"
    return name


def alt_text(records) -> str:
    """What the figure shows, in words, from the records it draws."""
    drawn = _drawn(records)
    if not drawn:
        return "No profile is recorded yet."
    said = []
    for device, record in drawn:
        parts = [f"{LABELS.get(k, k)} {duration(v)}" for line in ("host", "device")
                 for k, v in record["profile"][line].items()]
        said.append(f"{device.upper()} ({machine(device, record, records)}): a step of "
                    f"{duration(record['profile']['step'])}, {', '.join(parts)}"
                    + (f"; a line marks the step timed without the profiler, "
                       f"{duration(extra['timed'])}" if (extra := overhead(record)) else ""))
    return ("Two stacked horizontal bars per device, one panel per device: the host's time per "
            "step (input, dispatch, the rest of fit) and the device's (kernels, copies, idle). "
            + "; ".join(said) + ".")


def figures(records):
    """One figure, a panel per profiled device (their steps differ many times): the host's and
    the device's timelines as stacked bars, and the step timed without the profiler."""
    drawn = _drawn(records)
    need(drawn, "run python -m gpulesson.experiments.profile")
    fig, axes = panels(len(drawn), (8, 1.2 + 1.9 * len(drawn)))
    for ax, (device, record) in zip(axes, drawn, strict=True):
        found = record["profile"]
        for row, line in enumerate(("device", "host")):
            left = 0.0
            for part, seconds in found[line].items():
                width = seconds * 1e3
                ax.barh(row, width, left=left, color=COLOURS[part], height=0.6,
                        label=LABELS.get(part, part))
                if width > 0.08 * found["step"] * 1e3:  # a part too thin for its words: legend
                    ax.text(left + width / 2, row, f"{LABELS.get(part, part)}\n{duration(seconds)}",
                            ha="center", va="center", fontsize=8)
                left += width
        extra = overhead(record)
        if extra:
            ax.axvline(extra["timed"] * 1e3, color="black", linestyle="--", linewidth=1)
            ax.annotate(f"step without the profiler: {duration(extra['timed'])}",
                        (extra["timed"] * 1e3, 1.5), xytext=(3, 1), textcoords="offset points",
                        ha="left", va="bottom", fontsize=8)
            ax.set_ylim(-0.5, 1.95)
        ax.set_yticks([0, 1], ["device", "host"])
        ax.set_title(f"{device.upper()}: {machine(device, record, records)}\nrun "
                     f"{record['run_id']}, {found['steps']} steps profiled", fontsize=9, loc="left")
        ax.set_xlabel("milliseconds per training step")
    handles, labels = axes[0].get_legend_handles_labels()
    unique = dict(zip(labels, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), loc="lower center", ncol=6, fontsize=8,
               frameon=False)
    fig.suptitle("Where a training step of the lesson's CNN goes (jax.profiler)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return (fig,)
