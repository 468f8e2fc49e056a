"""Episode 9's profile values (``ref_prof_*``), figure and the command's table: where a step's
time goes on each device, and a GPU's achieved rate beside its card's published dense peak in the
precision in force. Without a GPU record the GPU's values are NOT_RECORDED (the episode's note)."""

from gpulesson.experiments.profile import RECORDS
from gpulesson.machine.gpu_peaks import float32_key, peaks_for
from gpulesson.records.figkit import need, panels
from gpulesson.records.pagewords import markdown_table, reordered_note
from gpulesson.records.parts import DEVICES, part_runs, run_labels
from gpulesson.records.results import NOT_RECORDED, data_label, hardware, software
from gpulesson.records.results import duration as ms
from gpulesson.records.summaries import summary_text

RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.reference_run
FIGURES, FIGURE_FOLDER = ("profile-step.svg",), "fig/09-feeding-the-gpu"
COLOURS = {"input": "#dd8452", "dispatch": "#c44e52", "other": "#8c8c8c",
           "kernels": "#4c72b0", "copies": "#55a868", "idle": "#e5e5e5"}
LABELS = {"other": "rest of fit"}


def gpu_name(record: dict) -> str | None:
    return (record.get("gpu") or {}).get("name")


def peak(record: dict, tflops: float | None = None) -> dict | None:
    """A GPU record's published peak and the share of it of ``tflops`` (default the timed
    epochs' ``achieved_tflops``); None where the lesson has no table for the card."""
    peaks, key = peaks_for(gpu_name(record)), float32_key(record)
    if not peaks:
        return None
    achieved = record["achieved_tflops"] if tflops is None else tflops
    return {"precision": key, "tflops": peaks[key], "card": gpu_name(record),
            "share": achieved / peaks[key]}


def profiled(record: dict | None) -> bool:
    """Whether ``record`` holds a profile (its trace was read; else ``profile["failed"]``)."""
    return bool(record) and "failed" not in record["profile"]


def batch_tflops(record: dict, seconds: float) -> float:
    """A batch's training arithmetic over ``seconds``, in TFLOP/s."""
    return record["train_flops_per_image"] * record["batch_size"] / seconds / 1e12


def overhead(record: dict) -> dict | None:
    """What profiling added to a step, and the least the dispatch takes without it (if the
    profiler made no part faster); None where the profiled step was not longer."""
    if not profiled(record) or record["profile"]["step"] <= record["step_seconds"]:
        return None
    found, timed = record["profile"], record["step_seconds"]
    extra, dispatch = found["step"] - timed, found["host"].get("dispatch", 0.0)
    return {"profiled": found["step"], "timed": timed, "extra": extra, "ratio": found["step"] / timed,
            "dispatch": dispatch, "dispatch_at_least": max(0.0, dispatch - extra)}


# What cutting each part takes (the exercise's answer follows the largest part).
REMEDIES = {
    "input": "data in memory or on the device (DeviceBatches)",
    "dispatch": "fewer, larger steps, or several in one compiled call",
    "other": "fewer, larger steps (a larger batch)",
    "kernels": "cheaper arithmetic (mixed bfloat16, a smaller model)",
}
# On a CPU, cheaper arithmetic depends on the chip: bfloat16 helps only where its units compute
# the hot operations (episode 9's exercise on mixed precision, from the records).
CPU_KERNELS = "less arithmetic (a smaller model), or hardware built for it"


def device_name(record: dict) -> str:
    return hardware([record])[record["device_kind"].upper()]


def summary_lines(record: dict) -> list[str]:
    """A device's profile in a few lines: the step, the host's and the device's parts, the
    achieved rate and its share of the peak, the utilisation."""
    found, used, in_profile = record["profile"], record["utilisation"], None
    if profiled(record):
        in_profile = batch_tflops(record, found["step"])  # the profiled step's own rate
        host, device = (", ".join(f"{k} {ms(v)}" for k, v in found[line].items())
                        for line in ("host", "device"))
        traced = (f"Profiled ({found['steps']} steps, {ms(found['step'])} each): host {host}; "
                  f"device {device}.")
    else:
        traced = f"Not profiled ({found['failed']})."
    top = peak(record)
    if top:
        peak_words = (f"{top['share']:.1%} of the {top['card']}'s published dense "
                      f"{top['precision'].upper()} peak ({top['tflops']:g} TFLOP/s)")
    elif record["device_kind"] == "gpu":
        peak_words = "no published peak for this card in the lesson's table"
    else:
        peak_words = "the lesson has no published peak for CPUs"
    used_words = (f"utilisation not sampled ({used['skipped']})" if "skipped" in used else
                  f"NVML utilisation {used['mean']:.0f} % on average through an epoch "
                  f"({used['min']:.0f}-{used['max']:.0f} %, {used['n']} samples)")
    return [
        f"A step of the timed epochs {ms(record['step_seconds'])} (batch {record['batch_size']}; "
        f"{summary_text(record['summary'], lambda v: f'{v:.3g} s', what='epochs')} an epoch "
        f"of {record['n_images']:,} images).",
        traced,
        f"{record['achieved_tflops']:.3g} TFLOP/s over the timed epochs "
        f"({record['train_flops_per_image'] / 1e6:.0f} MFLOP a training image), {peak_words}"
        + (f"; {in_profile:.3g} TFLOP/s in the profiled steps" if in_profile else "")
        + f"; {used_words}.",
    ]


def _drawn(records):
    return [(d, r) for d in DEVICES if profiled(r := RECORDS.find(records, device_kind=d))]


def rows(records) -> list[list[str]]:
    """One row per profiled device, all of it of the profiled step (its rate too, never the
    timed epochs' rate beside the profiled step's parts)."""
    found = []
    for device, record in _drawn(records):
        tflops = batch_tflops(record, record["profile"]["step"])
        top, used = peak(record, tflops), record["utilisation"]
        found.append([f"{device.upper()} ({device_name(record)})", ms(record["profile"]["step"]),
                      *(ms(v) for line in ("host", "device") for v in record["profile"][line].values()),
                      f"{tflops:.3g}"
                      + (f" ({top['share']:.1%} of {top['precision'].upper()})" if top else ""),
                      f"{used['mean']:.0f} %" if "mean" in used else "not sampled"])
    return found


def describe(records) -> str:
    """The run as plain text (for the command line)."""
    if not records:
        return "No profile records."
    lines = [f"Profile of the lesson's CNN, run {records[0]['run_id']} ({software(records)}):"]
    for device in DEVICES:
        record = RECORDS.find(records, device_kind=device)
        if record:
            lines += [f"{device.upper()} ({device_name(record)}):",
                      *(f"  {line}" for line in summary_lines(record))]
    return "\n".join(lines)


def cut_text(record: dict) -> str:
    """The exercise's answer for one device: cut the kernels first if they take half the step,
    else the host's largest part (the device waits for the host)."""
    found, kind = record["profile"], record["device_kind"]
    name, seconds = max(found["host"].items(), key=lambda item: item[1])
    if found["device"]["kernels"] >= found["step"] / 2:
        name, what = "kernels", "the arithmetic"
    else:  # a share of the profiled step, which the profiler's overhead inflates
        what = f"the host's {LABELS.get(name, name)} ({seconds / found['step']:.0%})"
    return (f"{kind.upper()} ({device_name(record)}): of the profiled step, kernels "
            f"{found['device']['kernels'] / found['step']:.0%}; cut {what} first: "
            f"{CPU_KERNELS if (name, kind) == ('kernels', 'cpu') else REMEDIES[name]}.")


def factors_text(record: dict | None) -> str:
    """A GPU's share of its peak as two factors: the kernels' rate while they run, and their share
    of a step, profiled and timed (the same kernel time: the profiler adds host work only)."""
    kernels = profiled(record) and record["profile"]["device"].get("kernels")
    top = kernels and peak(record, batch_tflops(record, kernels))
    if not top:
        return NOT_RECORDED
    step, timed, share = record["profile"]["step"], record["step_seconds"], top["share"]
    return (f"While its kernels ran, the {top['card']} computed at {batch_tflops(record, kernels):.3g} "
            f"TFLOP/s, {share:.1%} of its published dense {top['precision'].upper()} peak "
            f"({top['tflops']:g} TFLOP/s): a batch's "
            f"{record['train_flops_per_image'] * record['batch_size'] / 1e9:.3g} GFLOP in "
            f"{ms(kernels)} of kernels. The kernels ran for {kernels / step:.0%} of the profiled step "
            f"({ms(kernels)} of {ms(step)}), and for {kernels / timed:.0%} of a step of the timed epochs "
            f"({ms(timed)}, taking the kernels' time as the same). The share of the peak is their "
            f"product: {share:.1%} × {kernels / step:.0%} = {share * (kernels / step):.1%} in the "
            f"profiled steps, {share:.1%} × {kernels / timed:.0%} = {share * (kernels / timed):.1%} "
            "over the timed epochs")


def overhead_text(record: dict | None) -> str:
    """What the profiler added to a step, and what that does to the dispatch's share."""
    found = overhead(record)
    if not found:
        return NOT_RECORDED
    return (f"The profiler costs time: a profiled step took {ms(found['profiled'])}, a step of the "
            f"timed epochs of the same run {ms(found['timed'])} (run {record['run_id']}), "
            f"{found['ratio'] - 1:.0%} longer, {ms(found['extra'])} a step. The host's parts in the "
            f"table carry that overhead, so their shares are inflated: the dispatch's "
            f"{ms(found['dispatch'])} may hold any part of it. Without the profiler the dispatch "
            f"takes at least {ms(found['dispatch_at_least'])} ({ms(found['dispatch'])} less "
            f"{ms(found['extra'])}, if the profiler made no part faster)")


def machine(device: str, record: dict, records) -> str:
    """A panel's machine; a CPU profiled on another host than the GPU's node says so."""
    name, gpu = device_name(record), RECORDS.find(records, device_kind="gpu")
    mine, theirs = ((r.get("cpu_model") or "?", r.get("cores_usable")) for r in (record, gpu or {}))
    if device == "cpu" and gpu and theirs != mine:
        node = f"{theirs[1]} cores" if theirs[0] == mine[0] else f"{theirs[0]}, {theirs[1]} cores"
        name += f" (another machine: the GPU's node has {node})"
    return name


def alt_text(records) -> str:
    """What the figure shows, in words, from the records it draws."""
    drawn = _drawn(records)
    if not drawn:
        return "No profile is recorded yet."
    said = []
    for device, record in drawn:
        parts = [f"{LABELS.get(k, k)} {ms(v)}" for line in ("host", "device")
                 for k, v in record["profile"][line].items()]
        said.append(f"{device.upper()} ({machine(device, record, records)}): a step of "
                    f"{ms(record['profile']['step'])}, {', '.join(parts)}"
                    + (f"; a line marks the step timed without the profiler, "
                       f"{ms(extra['timed'])}" if (extra := overhead(record)) else ""))
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
                    ax.text(left + width / 2, row, f"{LABELS.get(part, part)}\n{ms(seconds)}",
                            ha="center", va="center", fontsize=8)
                left += width
        extra = overhead(record)
        if extra:
            ax.axvline(extra["timed"] * 1e3, color="black", linestyle="--", linewidth=1)
            ax.annotate(f"step without the profiler: {ms(extra['timed'])}",
                        (extra["timed"] * 1e3, 1.5), xytext=(3, 1), textcoords="offset points",
                        ha="left", va="bottom", fontsize=8)
            ax.set_ylim(-0.5, 1.95)
        ax.set_yticks([0, 1], ["device", "host"])
        ax.set_title(f"{device.upper()}: {machine(device, record, records)}\nrun "
                     f"{record['run_id']}, {found['steps']} steps profiled", fontsize=9, loc="left")
        ax.set_xlabel("milliseconds per training step")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=6, fontsize=8,
               frameon=False)  # the first panel has one bar of each part
    fig.suptitle("Where a training step of the lesson's CNN goes (jax.profiler)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return (fig,)


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of the profile (MyST substitutions ``ref_prof_*``)."""
    records = reference_run(path)
    gpu, cpu = (RECORDS.find(records, device_kind=d) for d in ("gpu", "cpu"))
    table = rows(records)
    head = ["Device", "Step (profiled)", "Host: input", "Host: dispatch", "Host: rest of fit",
            "Device: kernels", "Device: copies", "Device: idle",
            "TFLOP/s in the profiled step (of the peak)", "Busy (NVML, an epoch)"]
    return {
        "ref_prof_table": markdown_table(head, table) if table else NOT_RECORDED,
        "ref_prof_gpu": device_name(gpu) if profiled(gpu) else NOT_RECORDED,
        "ref_prof_cut": " ".join(cut_text(r) for r in (cpu, gpu) if profiled(r)) or NOT_RECORDED,
        "ref_prof_when": "; ".join(
            f"{label}, {'' if RECORDS.find(records, device_kind=d).get('read_ahead') else 'not '}"
            "reading ahead" for label, d in zip(run_labels(records), part_runs(records), strict=True))
        or NOT_RECORDED,
        # The data the profiled CNN trained on, named where the table is introduced.
        "ref_prof_data": data_label(records) if records else NOT_RECORDED,
        "ref_prof_alt": alt_text(records),
        "ref_prof_factors": factors_text(gpu),
        "ref_prof_overhead": overhead_text(gpu),
        "ref_prof_order": reordered_note(records, "the generator's batches"),
    }
