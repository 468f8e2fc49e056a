"""Grain's workers on the page: episode 9's ``ref_workers_*`` values and the command's table.

Every value comes from the reference (:func:`~gpulesson.experiments.workers.records.reference_run`):
for each device the newest run with a complete grid there, each named by its run, machine and
software; without one, each says so in a sentence. Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.experiments import parts
from gpulesson.experiments.ceiling.records import measurably, middle_note
from gpulesson.experiments.common import compare_middle, markdown_table, summary_text
from gpulesson.experiments.pagewords import NOTHING_YET, headed, malloc_fixed, none_yet
from gpulesson.experiments.workers.figures import SHORT, alt_text
from gpulesson.experiments.workers.records import (
    DATA,
    METHOD,
    NAMES,
    RESULTS_FILE,
    WORK,
    against_none,
    best,
    conditions,
    cost_ms,
    find,
    groups,
    rate_summary,
    reference_run,
    stall,
    teardown_may_be_timed,
)
from gpulesson.results import NOT_RECORDED, data_label, duration, hardware
from gpulesson.settings import LABELS

NONE = none_yet("run with Grain's worker processes", "python -m gpulesson.experiments.workers")


def rate_text(record: dict) -> str:
    """Median images/s and the range over the record's timed epochs."""
    return summary_text(rate_summary(record), lambda v: f"{v:,.0f}", what="epochs")


def rows(records) -> list[list[str]]:
    """One row per record: backend and device, work, workers, images/s, against none."""
    found = []
    for backend, device in groups(records):
        for work, n, record in conditions(records, backend, device):
            verdict = against_none(record, records) or "baseline"
            slow = stall(record)
            if slow:  # trimmed from the comparison, never from the page
                verdict += (f"; its last epoch {slow['seconds']:.3g} s, "
                            f"{slow['seconds'] / slow['others']:.1f}× the others (below)")
            found.append([f"{NAMES.get(backend, backend)}, {device.upper()}", SHORT[work],
                          str(n), rate_text(record), verdict])
    return found


def compared(records) -> str:
    """Which epochs the comparisons with no worker read, in the rule's words
    (:func:`~gpulesson.experiments.ceiling.records.middle_note`)."""
    return middle_note(*(rate_summary(r) for r in records))


def table(records) -> str:
    """The run as a Markdown table (for the page); the last column's header says which epochs
    its verdicts compare, so that a reader can check them against the ranges shown."""
    note = compared(records)
    head = ["Backend, device", "Work on each block", "Worker processes",
            "Images/s: median (range)", headed("Against no worker", note)]
    return markdown_table(head, rows(records))


def describe(records) -> str:
    """The run as plain text (for the command line)."""
    if not records:
        return "No workers records."
    out = parts.run_labels(records)
    for backend_device, work, n, rate, said in rows(records):
        out.append(f"  {backend_device:12} {work:24} {n:>2} {rate:42} {said}")
    return "\n".join(out)


# How a sentence names each work.
IN_WORDS = {"none": "for the stored blocks", "augment": "with `flip_crop`"}


def findings(records) -> str:
    """A sentence a backend and device: what a block costs to read and to augment, and for
    each work the fastest number of workers against none, in the rule's words."""
    sentences = []
    for backend, device in groups(records):
        mine = [r for r in records if (r["backend"], r["device_kind"]) == (backend, device)]
        cores = (mine[0].get("cpu_settings") or {}).get("cpu_cores_available", "?")
        read, work_ms = (cost_ms(records, backend, device, key) for key in ("read_ms", "work_ms"))
        said = []
        for work in WORK:
            top, base = best(records, backend, device, work), find(records, backend, device,
                                                                     work, 0)
            if top and base:
                words = compare_middle(rate_summary(top), rate_summary(base),
                                       higher_is_better=True)
                said.append(f"{_versus_none(words)} {IN_WORDS[work]} ({top['workers']})")
        costs = (f"; a block: read {read:.2g} ms, `flip_crop` {work_ms:.2g} ms"
                 if read is not None and work_ms is not None else "")
        if said:
            sentences.append(f"{NAMES.get(backend, backend)}, {device.upper()} ({cores} "
                             f"cores{costs}): the best count of workers was "
                             f"{' and '.join(said)}.")
    if sentences:
        sentences.insert(0, f"Each comparison reads the {compared(records)}.")
    return " ".join(part for part in [*sentences, stall_note(records), method_note(records)]
                    if part) or NONE


def _versus_none(said) -> str:
    """A comparison with no worker as a clause: "1.3× slower than none", "measurably slower
    than none", or, where the rule cannot tell them apart, "about as fast as none (no
    measurable difference)"."""
    if not said.measurable:
        return "about as fast as none (no measurable difference)"
    return f"{measurably(said)} than none"


# Where a stalled last epoch went, by the part of its split that took longest.
WHERE = {
    "after_last_batch": "after its last batch, where the iterator met the end of the data and "
                        "Grain's workers stopped",
    "first_batch": "before its first batch: a refill of the workers' buffers",
    "longest_gap": "in one gap between two batches: a refill",
}


def stall_note(records) -> str:
    """A sentence a record whose last epoch stalled (:func:`~gpulesson.experiments.workers.
    records.stall`): its time against the others', and where it went (its split), or that it
    was not split (an older record, which may hold the workers' shutdown,
    :func:`~gpulesson.experiments.workers.records.teardown_may_be_timed`); '' without one."""
    said = []
    for r in records:
        slow = stall(r)
        if not slow:
            continue
        text = (f"{NAMES.get(r['backend'], r['backend'])}, {r['device_kind'].upper()}, "
                f"{SHORT[r['work']]}, {r['workers']} workers: the last epoch took "
                f"{slow['seconds']:.3g} s against a median of {slow['others']:.3g} s")
        split = slow["split"]
        if split:
            text += (f"; {duration(split[slow['where']])} of it {WHERE[slow['where']]} "
                     f"({duration(split['to_last_batch'])} to its last batch, "
                     f"{duration(split['after_last_batch'])} after it)")
            if r.get("teardown_seconds") is not None:
                text += (f"; then fit returned in {duration(r['exit_seconds'])} and the "
                         f"dataset's teardown took {duration(r['teardown_seconds'])}")
        else:
            text += ("; not split, as it was recorded before the method that splits each "
                     "epoch" + (": it may hold the workers' shutdown, as Keras on JAX reads "
                                "one batch ahead there" if teardown_may_be_timed(r) else ""))
        said.append(text)
    if not said:
        return ""
    return "The comparisons leave out the slowest epoch, not the page: " + "; ".join(said) + "."


def method_note(records) -> str:
    """Which method the records shown were timed with, where it is not the current one
    (:data:`~gpulesson.experiments.workers.records.METHOD`), and what the next run adds."""
    older = sorted({r["device_kind"].upper() for r in records if r.get("method") != METHOD})
    if not older:
        return ""
    return (f"The {' and '.join(older)} part{'s' if len(older) > 1 else ''} shown "
            f"{'were' if len(older) > 1 else 'was'} timed before the current method: "
            "its data held one epoch more than fit trained (or its epochs were not split), so "
            "no timed epoch shows what the end of the data costs. The next run "
            "(`python -m gpulesson.experiments.workers`) feeds exactly the epochs fit trains, "
            "as this episode's code does, and splits each epoch where its time goes.")


def torch_setting(records) -> str:
    """How the run's PyTorch process was set up, as it recorded it ('' without one)."""
    torch = [r for r in records if r["backend"] == "torch"]
    if not torch:
        return ""
    malloc = malloc_fixed(torch)
    policy = {r.get("omp_wait_policy") for r in torch}
    said = [*(["glibc malloc's thresholds fixed"] if malloc else []),
            *([f"`OMP_WAIT_POLICY={policy.pop()}`"] if len(policy) == 1 and None not in policy
              else [])]
    return f"PyTorch ran with {' and '.join(said)}. " if said else ""


def provenance(records) -> str:
    """Where and how each device's part was measured: its machine, software and run."""
    return torch_setting(records) + parts.provenance(
        records, file="results/workers.jsonl",
        extra=lambda part: f", Grain {part[0].get('grain', '?')}")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of Grain's workers (MyST substitutions ``ref_workers_*``)."""
    records = reference_run(path)
    return {
        "ref_workers_table": table(records) if records else NONE,
        "ref_workers_summary": (f"{findings(records)} {provenance(records)}" if records
                                else NOTHING_YET),
        "ref_workers_alt": alt_text(records),
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_workers_data": data_label(records) if records else LABELS[DATA],
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_workers_gpu": hardware(records).get("GPU", NOT_RECORDED),
    }
