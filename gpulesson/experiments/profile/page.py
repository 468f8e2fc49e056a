"""Episode 9's profile values (``ref_prof_*``) and the command's table.

Without a GPU record the GPU's values say NOT_RECORDED, so that the episode's
``{{ if ref_prof_gpu }}`` shows its note instead.
"""

from __future__ import annotations

from gpulesson.experiments.common import markdown_table, reordered_note, summary_text
from gpulesson.experiments.parts import run_labels
from gpulesson.experiments.profile.figures import LABELS, alt_text
from gpulesson.experiments.profile.records import (
    RESULTS_FILE,
    factors,
    find,
    largest_cut,
    overhead,
    peak,
    profiled,
    profiled_tflops,
    reference_run,
)
from gpulesson.records.results import NOT_RECORDED, data_label, hardware, software
from gpulesson.records.results import duration as ms

DEVICES = ("cpu", "gpu")
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
    return hardware([record]).get("GPU" if record["device_kind"] == "gpu" else "CPU", "?")


def _parts(record: dict, line: str):
    return record["profile"][line].items()


def summary_lines(record: dict) -> list[str]:
    """A device's profile in a few lines: the step, the host's and the device's parts, the
    achieved rate and its share of the peak, the utilisation."""
    found, used = record["profile"], record["utilisation"]
    if profiled(record):
        host, device = (", ".join(f"{k} {ms(v)}" for k, v in _parts(record, line))
                        for line in ("host", "device"))
        traced = (f"Profiled ({found['steps']} steps, {ms(found['step'])} each): host {host}; "
                  f"device {device}.")
    else:
        traced = f"Not profiled ({found['failed']})."
    top, in_profile = peak(record), profiled_tflops(record)
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
        f"A step of the timed epochs {ms(record['step_seconds'])} (batch "
        f"{record['batch_size']}; "
        f"{summary_text(record['summary'], lambda v: f'{v:.3g} s', what='epochs')} an epoch "
        f"of {record['n_images']:,} images).",
        traced,
        f"{record['achieved_tflops']:.3g} TFLOP/s over the timed epochs "
        f"({record['train_flops_per_image'] / 1e6:.0f} MFLOP a training image), {peak_words}"
        + (f"; {in_profile:.3g} TFLOP/s in the profiled steps" if in_profile else "")
        + f"; {used_words}.",
    ]


def rows(records) -> list[list[str]]:
    """One row per profiled device, all of it of the profiled step (its rate too, never the
    timed epochs' rate beside the profiled step's parts)."""
    found = []
    for device in DEVICES:
        record = find(records, device)
        if profiled(record):
            tflops = profiled_tflops(record)
            top, used = peak(record, tflops), record["utilisation"]
            found.append([f"{device.upper()} ({device_name(record)})", ms(record["profile"]["step"]),
                          *(ms(v) for line in ("host", "device") for _, v in _parts(record, line)),
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
        record = find(records, device)
        if record:
            lines += [f"{device.upper()} ({device_name(record)}):",
                      *(f"  {line}" for line in summary_lines(record))]
    return "\n".join(lines)


def cut_text(record: dict) -> str:
    """The exercise's answer for one device."""
    name, share = largest_cut(record)
    found = record["profile"]
    what = ("the arithmetic" if name == "kernels" else
            f"the host's {LABELS.get(name, name)} ({share:.0%})")
    return (f"{record['device_kind'].upper()} ({device_name(record)}): kernels "
            f"{found['device']['kernels'] / found['step']:.0%} of the step; cut {what} first: "
            f"{CPU_KERNELS if (name, record['device_kind']) == ('kernels', 'cpu') else REMEDIES[name]}.")


def factors_text(record: dict | None) -> str:
    """The two factors of a GPU's share of its peak in words, each with its numbers."""
    found = factors(record) if record else None
    if not found:
        return NOT_RECORDED
    top, step = found["peak"], record["profile"]["step"]
    return (f"While its kernels ran, the {top['card']} computed at {found['kernel_tflops']:.3g} "
            f"TFLOP/s, {found['while']:.1%} of its published dense {top['precision'].upper()} "
            f"peak ({top['tflops']:g} TFLOP/s): a batch's "
            f"{record['train_flops_per_image'] * record['batch_size'] / 1e9:.3g} GFLOP in "
            f"{ms(found['kernels'])} of kernels. The kernels ran for {found['busy_profiled']:.0%} "
            f"of the profiled step ({ms(found['kernels'])} of {ms(step)}), and for "
            f"{found['busy_timed']:.0%} of a step of the timed epochs "
            f"({ms(record['step_seconds'])}, taking the kernels' time as the same). The share "
            f"of the peak is their product: {found['while']:.1%} × {found['busy_profiled']:.0%} "
            f"= {found['overall_profiled']:.1%} in the profiled steps, {found['while']:.1%} × "
            f"{found['busy_timed']:.0%} = {found['overall_timed']:.1%} over the timed epochs "
            f"(run {record['run_id']})")


def overhead_text(record: dict | None) -> str:
    """What the profiler added to a step, and what that does to the dispatch's share."""
    found = overhead(record) if record else None
    if not found:
        return NOT_RECORDED
    return (f"The profiler costs time: a profiled step took {ms(found['profiled'])}, a step "
            f"of the timed epochs of the same run {ms(found['timed'])} (run "
            f"{record['run_id']}), {found['ratio'] - 1:.0%} longer, {ms(found['extra'])} a "
            f"step. The host's parts in the table carry that overhead, so their shares are "
            f"inflated: the dispatch's {ms(found['dispatch'])} may hold any part of it. Without "
            f"the profiler the dispatch takes at least {ms(found['dispatch_at_least'])} "
            f"({ms(found['dispatch'])} less {ms(found['extra'])}, if the profiler made no part "
            f"faster)")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of the profile (MyST substitutions ``ref_prof_*``)."""
    records = reference_run(path)
    gpu, cpu = find(records, "gpu"), find(records, "cpu")
    head = ["Device", "Step (profiled)", "Host: input", "Host: dispatch", "Host: rest of fit",
            "Device: kernels", "Device: copies", "Device: idle",
            "TFLOP/s in the profiled step (of the peak)", "Busy (NVML, an epoch)"]
    return {
        "ref_prof_table": (markdown_table(head, rows(records))
                           if any(profiled(r) for r in records) else NOT_RECORDED),
        "ref_prof_gpu": device_name(gpu) if profiled(gpu) else NOT_RECORDED,
        "ref_prof_cut": " ".join(cut_text(r) for r in (cpu, gpu) if profiled(r)) or NOT_RECORDED,
        "ref_prof_when": "; ".join(run_labels(records)) or NOT_RECORDED,
        # The data the profiled CNN trained on, named where the table is introduced.
        "ref_prof_data": data_label(records) if records else NOT_RECORDED,
        "ref_prof_alt": alt_text(records),
        "ref_prof_factors": factors_text(gpu),
        "ref_prof_overhead": overhead_text(gpu),
        "ref_prof_order": reordered_note(records, "the generator's batches"),
    }
