"""The profile on the page: episode 9's ``ref_prof_*`` values and the command's table.

Every value comes from each device's reference record
(:func:`~gpulesson.experiments.profile.records.reference_run`); without a GPU record, the GPU's
values say :data:`~gpulesson.results.NOT_RECORDED`, so that the episode's
``{{ if ref_prof_gpu }}`` shows its note instead. Imports no deep-learning framework.
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
    parts,
    peak,
    profiled,
    profiled_tflops,
    reference_run,
)
from gpulesson.results import NOT_RECORDED, data_label, duration, hardware, software

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


def ms(seconds: float) -> str:
    return duration(seconds)


def device_name(record: dict) -> str:
    return hardware([record]).get("GPU" if record["device_kind"] == "gpu" else "CPU", "?")


def peak_text(record: dict, tflops: float | None = None) -> str:
    found = peak(record, tflops)
    if found:
        return (f"{found['share']:.1%} of the {found['card']}'s published dense "
                f"{found['precision'].upper()} peak ({found['tflops']:g} TFLOP/s)")
    if record["device_kind"] == "gpu":
        return "no published peak for this card in the lesson's table"
    return "the lesson has no published peak for CPUs"


def utilisation_text(record: dict) -> str:
    found = record["utilisation"]
    if "skipped" in found:
        return f"utilisation not sampled ({found['skipped']})"
    return (f"NVML utilisation {found['mean']:.0f} % on average through an epoch "
            f"({found['min']:.0f}-{found['max']:.0f} %, {found['n']} samples)")


def summary_lines(record: dict) -> list[str]:
    """A device's profile in a few lines: the step, the host's parts, the device's parts, the
    achieved rate, its share of the peak, the utilisation."""
    found = record["profile"]
    if profiled(record):
        host = ", ".join(f"{k} {ms(v)}" for k, v in found["host"].items())
        device = ", ".join(f"{k} {ms(v)}" for k, v in found["device"].items())
        traced = (f"Profiled ({found['steps']} steps, {ms(found['step'])} each): host {host}; "
                  f"device {device}.")
    else:
        traced = f"Not profiled ({found['failed']})."
    in_profile = profiled_tflops(record)
    return [
        f"A step of the timed epochs {ms(record['step_seconds'])} (batch "
        f"{record['batch_size']}; "
        f"{summary_text(record['summary'], lambda v: f'{v:.3g} s', what='epochs')} an epoch "
        f"of {record['n_images']:,} images).",
        traced,
        f"{record['achieved_tflops']:.3g} TFLOP/s over the timed epochs "
        f"({record['train_flops_per_image'] / 1e6:.0f} MFLOP a training image), "
        f"{peak_text(record)}"
        + (f"; {in_profile:.3g} TFLOP/s in the profiled steps" if in_profile else "")
        + f"; {utilisation_text(record)}.",
    ]


def rows(records) -> list[list[str]]:
    """One row per profiled device, all of it of the profiled steps: the step, its parts, and
    the TFLOP/s of that step (:func:`~gpulesson.experiments.profile.records.profiled_tflops`),
    never the timed epochs' rate beside the profiled step's parts."""
    found = []
    for device in DEVICES:
        record = find(records, device)
        if profiled(record):
            each = parts(record)
            tflops = profiled_tflops(record)
            top, used = peak(record, tflops), record["utilisation"]
            found.append([f"{device.upper()} ({device_name(record)})", ms(record["profile"]["step"]),
                          *(ms(v) for v in each.values()),
                          f"{tflops:.3g}"
                          + (f" ({top['share']:.1%} of {top['precision'].upper()})" if top else ""),
                          f"{used['mean']:.0f} %" if "mean" in used else "not sampled"])
    return found


def table(records) -> str:
    head = ["Device", "Step (profiled)", "Host: input", "Host: dispatch", "Host: rest of fit",
            "Device: kernels", "Device: copies", "Device: idle",
            "TFLOP/s in the profiled step (of the peak)", "Busy (NVML, an epoch)"]
    return markdown_table(head, rows(records))


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
    """The exercise's answer for one device, from its record."""
    name, share = largest_cut(record)
    found = record["profile"]
    what = ("the arithmetic" if name == "kernels" else
            f"the host's {LABELS.get(name, name)} ({share:.0%})")
    return (f"{record['device_kind'].upper()} ({device_name(record)}): kernels "
            f"{found['device']['kernels'] / found['step']:.0%} of the step; cut {what} first: "
            f"{CPU_KERNELS if (name, record['device_kind']) == ('kernels', 'cpu') else REMEDIES[name]}.")


def factors_text(record: dict | None) -> str:
    """The two factors of a GPU's share of its peak in words (:func:`~gpulesson.experiments.
    profile.records.factors`), each with the numbers it is made of; NOT_RECORDED without them."""
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
    """What the profiler added to a step, and what that does to the dispatch's share
    (:func:`~gpulesson.experiments.profile.records.overhead`); NOT_RECORDED without it."""
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
    return {
        "ref_prof_table": (table(records) if any(profiled(r) for r in records)
                           else NOT_RECORDED),
        "ref_prof_gpu": device_name(gpu) if profiled(gpu) else NOT_RECORDED,
        "ref_prof_gpu_lines": " ".join(summary_lines(gpu)) if gpu else NOT_RECORDED,
        "ref_prof_cpu_lines": " ".join(summary_lines(cpu)) if cpu else NOT_RECORDED,
        "ref_prof_cut": " ".join(cut_text(r) for r in (cpu, gpu) if profiled(r)) or NOT_RECORDED,
        "ref_prof_when": "; ".join(run_labels(records)) or NOT_RECORDED,
        # The data the profiled CNN trained on, named where the table is introduced.
        "ref_prof_data": data_label(records) if records else NOT_RECORDED,
        "ref_prof_alt": alt_text(records),
        "ref_prof_factors": factors_text(gpu),
        "ref_prof_overhead": overhead_text(gpu),
        "ref_prof_order": reordered_note(records, "the generator's batches"),
    }
