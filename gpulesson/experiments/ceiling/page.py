"""The ceiling on the page: episode 9's ``ref_ceil_*`` values and the command's table.

Every value comes from the reference (:func:`~gpulesson.experiments.ceiling.records.reference_run`):
for each device the newest run complete there, named by its run, machine and software. A
``device`` record of the old method is in no row, share or ceiling, and a sentence says so
(:func:`old_method_note`). Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.experiments import parts
from gpulesson.experiments.ceiling.figures import alt_text
from gpulesson.experiments.ceiling.records import (
    BACKENDS,
    DATA,
    NAMES,
    PIPELINES,
    RESULTS_FILE,
    TARGET_SHARE,
    ceiling,
    find,
    groups,
    has_goal,
    middle_note,
    old_method,
    own_step_note,
    rate_number,
    rate_summary,
    reference_run,
    share,
    share_text,
    shown,
    verdict,
)
from gpulesson.experiments.common import markdown_table, summary_text
from gpulesson.experiments.pagewords import (
    NOTHING_YET,
    headed,
    listed,
    malloc_fixed,
    met,
    none_yet,
)
from gpulesson.results import NOT_RECORDED, data_label, hardware
from gpulesson.settings import LABELS


def rate_text(record: dict | None) -> str:
    """Median images/s and the range over the record's timed epochs."""
    return summary_text(rate_summary(record), rate_number, what="epochs") if record else "not measured"


def rows(records) -> list[list[str]]:
    """One row per record: backend and device, pipeline, images/s, how it compares with the
    ceiling of its backend and device."""
    found = []
    for backend, device in groups(records):
        top = ceiling(records, backend, device)
        for name in PIPELINES:
            record = find(records, backend, device, name)
            if record:
                found.append([f"{NAMES.get(backend, backend)}, {device.upper()}", name,
                              rate_text(record), verdict(record, top) or ""])
    return found


def compared(records) -> str:
    """Which epochs the last column compares, in the rule's words
    (:func:`~gpulesson.experiments.ceiling.records.middle_note`)."""
    return middle_note(*(rate_summary(r) for r in shown(records)))


def table(records) -> str:
    """The run as a Markdown table (for the page); the last column's header says which epochs
    its verdicts compare, so that a reader can check them against the ranges shown."""
    note = compared(records)
    head = ["Backend, device", "Fed from", "Images/s: median (range)",
            headed("Against the ceiling", note)]
    return markdown_table(head, rows(records))


def describe(records) -> str:
    """The run as plain text (for the command line)."""
    if not records:
        return "No ceiling records."
    out = parts.run_labels(records)
    for backend_device, name, rate, said in rows(records):
        out.append(f"  {backend_device:16} {name:17} {rate:40} {said}")
    return "\n".join(out)


def goal_shares(records) -> str:
    """The lesson's generator against the ceiling, one share a backend and device, grouped by
    device with the machine and date each was measured on (the CPU's and the GPU's may be
    different machines and days), and whether it meets the goal where the goal applies (JAX
    and PyTorch): what the page says where it states the goal."""
    shares: dict[str, list[str]] = {}
    judged, hidden = [], []
    for backend, device in groups(records):
        top, lesson = ceiling(records, backend, device), find(records, backend, device, "lesson")
        if top and lesson:
            shares.setdefault(device, []).append(
                f"{share_text(share(lesson, top))} on {NAMES.get(backend, backend)}")
            if has_goal(lesson):
                judged.append(share(lesson, top) >= TARGET_SHARE)
                own = own_step_note(records, backend, device)
                if judged[-1] and own:
                    hidden.append(f"on {NAMES.get(backend, backend)} ({device.upper()}) only "
                                  f"because {own} hides the reading")
    if not shares:
        return "The reference run has no record of the lesson's generator to compare with."
    runs = parts.part_runs(shown(records))
    said = "With the do-nothing model, the lesson's generator reached these shares of the ceiling."
    for device, found in shares.items():
        part = [r for r in shown(records) if r["device_kind"] == device
                and r["run_id"] == runs[device]]
        said += (f" On the {device.upper()} ({parts.machine(part)}, {part[0]['date'][:10]}): "
                 f"{listed(found)}.")
    if judged:
        how = ("missed" if not any(judged) else "met" if all(judged)
               else f"met in {sum(judged)} of {len(judged)} cases")
        said += f" The goal, where it applies, was {how}"
        said += (": " + "; ".join(hidden) + "." if hidden else ".")
    return said


STREAMS = ("lesson-ahead", "lesson-grain")  # the lesson's streams: a reader thread, Grain's processes
GPU_COMMAND = "python -m gpulesson.experiments.ceiling --devices gpu"


def _gpu_part(records) -> list[dict]:
    run = parts.part_runs(shown(records)).get("gpu")
    return [r for r in shown(records) if r["device_kind"] == "gpu" and r["run_id"] == run]


def stream_goal(records) -> str:
    """The stream's goal with the do-nothing model: each of :data:`STREAMS` at least
    :data:`TARGET_SHARE` of ``ram`` (medians), on each backend the GPU's run measured, named with
    its run; where it has no such pair, the command that records it."""
    part = _gpu_part(records)
    said = []
    for backend, _ in groups(part):
        ram = find(part, backend, "gpu", "ram")
        for name in STREAMS:
            stream = find(part, backend, "gpu", name)
            if stream and ram:
                ratio = share(stream, ram)
                said.append(f"`{name}` {share_text(ratio)} of `ram` on "
                            f"{NAMES.get(backend, backend)} "
                            f"({met(ratio >= TARGET_SHARE)})")
    goal = f"goal: at least {TARGET_SHARE:.0%} of `ram`"
    if not said:
        return (f"With the do-nothing model, `{STREAMS[0]}` has no GPU record yet ({goal}): "
                f"`{GPU_COMMAND}` records it.")
    missing = [f"`{name}`" for name in STREAMS if not any(r["pipeline"] == name for r in part)]
    later = (f" {listed(missing)}: not yet recorded on the GPU." if missing else "")
    return (f"With the do-nothing model on the {parts.machine(part)} (run {part[0]['run_id']}), "
            f"{listed(said)}; {goal}.{later}")


NONE = none_yet("ceiling run", "python -m gpulesson.experiments.ceiling")


def provenance(records) -> str:
    """Where and how each device's part was measured: its machine, software and run."""
    return parts.provenance(records, file="results/ceiling.jsonl")


def malloc_note(records) -> str:
    """Which malloc mode the run's PyTorch records were made in, as a sentence ('' without
    PyTorch records): a reader compares only runs made in the same mode."""
    torch = [r for r in shown(records) if r.get("backend") == "torch"]
    if not torch:
        return ""
    if malloc_fixed(torch):
        return "PyTorch was measured with glibc malloc's thresholds fixed."
    return ("PyTorch was measured in glibc malloc's default mode, in which a fit can land in a "
            "fast or a slow mode by chance.")


def old_method_note(records) -> str:
    """A sentence naming the ``device`` rows left out because they were recorded before their
    method was (:func:`~gpulesson.experiments.ceiling.records.old_method`), or ''."""
    old = old_method(records)
    if not old:
        return ""
    devices = " and ".join(d.upper() for d in ("cpu", "gpu") if any(r["device_kind"] == d for r in old))
    how = " (JAX's were eager slices)" if any(r["backend"] == "jax" for r in old) else ""
    return (f"The {devices}'s `device` rows predate their recorded method{how}: kept in the file, "
            "they are left out here, ceiling included.")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of the ceiling (MyST substitutions ``ref_ceil_*``)."""
    records = reference_run(path)
    return {
        "ref_ceil_table": table(records) if records else NONE,
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_ceil_data": data_label(shown(records)) if shown(records) else LABELS[DATA],
        "ref_ceil_summary": (" ".join(filter(None, (malloc_note(records), provenance(records),
                                                    old_method_note(records)))) if records
                             else NOTHING_YET),
        "ref_ceil_backends": (", ".join(NAMES[b] for b in BACKENDS
                                        if any(r["backend"] == b for r in records))
                              or NOT_RECORDED),
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_ceil_gpu": hardware(records).get("GPU", NOT_RECORDED),
        "ref_ceil_goal": f"{TARGET_SHARE:.0%}",
        "ref_ceil_shares": (goal_shares(records) if records else "No ceiling run has been "
                            "recorded yet to say how close the lesson's generator comes."),
        "ref_ceil_alt": alt_text(records),
        "ref_ceil_stream": stream_goal(records),
    }
