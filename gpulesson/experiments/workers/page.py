"""Grain's workers on the page: episode 9's ``ref_workers_*`` values and the command's table.
Each device's values come from its newest complete grid, named by its run and machine."""

from __future__ import annotations

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments import pagewords as words
from gpulesson.experiments import parts
from gpulesson.experiments.ceiling.page import rate_text
from gpulesson.experiments.common import markdown_table
from gpulesson.experiments.recordset import rate_summary
from gpulesson.experiments.workers import records as wr
from gpulesson.experiments.workers.figures import SHORT, alt_text
from gpulesson.records.results import NOT_RECORDED, data_label, duration, hardware
from gpulesson.records.summaries import NO_DIFFERENCE

NONE = words.none_yet("run with Grain's worker processes", "python -m gpulesson.experiments.workers")
IN_WORDS = {"none": "for the stored blocks", "augment": "with `flip_crop`"}  # in a sentence
# Where a stalled last epoch went, by the part of its split that took longest.
WHERE = {
    "after_last_batch": "after its last batch, where the iterator met the end of the data and "
                        "Grain's workers stopped",
    "first_batch": "before its first batch: a refill of the workers' buffers",
    "longest_gap": "in one gap between two batches: a refill",
}


def _title(backend: str, device: str) -> str:
    return f"{wr.NAMES.get(backend, backend)}, {device.upper()}"


def rows(records) -> list[list[str]]:
    found = []
    for backend, device in wr.groups(records):
        for work, n, record in wr.conditions(records, backend, device):
            verdict = wr.against_none(record, records) or "baseline"
            slow = wr.stall(record)
            if slow:  # trimmed from the comparison, never from the page
                verdict += (f"; its last epoch {slow['seconds']:.3g} s, "
                            f"{slow['seconds'] / slow['others']:.1f}× the others (below)")
            found.append([_title(backend, device), SHORT[work], str(n), rate_text(record), verdict])
    return found


def compared(records) -> str:
    return words.middle_note(*(rate_summary(r) for r in records))


def table(records) -> str:
    """The run as a Markdown table; the last column's header says which epochs it compares."""
    return markdown_table(["Backend, device", "Work on each block", "Worker processes",
                           "Images/s: median (range)",
                           words.headed("Against no worker", compared(records))], rows(records))


def describe(records) -> str:
    if not records:
        return "No workers records."
    return "\n".join([*parts.run_labels(records),
                      *(f"  {where:12} {work:24} {n:>2} {rate:42} {said}"
                        for where, work, n, rate, said in rows(records))])


def findings(records) -> str:
    """A sentence a backend and device: what a block costs to read and to augment, and for
    each work the fastest number of workers against none, in the rule's words."""
    sentences = []
    for backend, device in wr.groups(records):
        mine = [r for r in records if (r["backend"], r["device_kind"]) == (backend, device)]
        cores = (mine[0].get("cpu_settings") or {}).get("cpu_cores_available", "?")
        read, work_ms = (wr.cost_ms(records, backend, device, key) for key in ("read_ms", "work_ms"))
        said = []
        for work in wr.WORK:
            top = wr.best(records, backend, device, work)
            if top and (versus := wr.against_none(top, records)):
                said.append(f"{_versus_none(versus)} {IN_WORDS[work]} ({top['workers']})")
        costs = (f"; a block: read {read:.2g} ms, `flip_crop` {work_ms:.2g} ms"
                 if read is not None and work_ms is not None else "")
        if said:
            sentences.append(f"{_title(backend, device)} ({cores} cores{costs}): the best count "
                             f"of workers was {' and '.join(said)}.")
    if sentences:
        sentences.insert(0, f"Each comparison reads the {compared(records)}.")
    return " ".join(part for part in [*sentences, stall_note(records), method_note(records)]
                    if part) or NONE


def _versus_none(said: str) -> str:
    if said == NO_DIFFERENCE:
        return "about as fast as none (no measurable difference)"
    return f"{said} than none"


def stall_note(records) -> str:
    """Each record whose last epoch stalled: its time against the others', and where it went
    (its split), or that it was not split (an older record, which may hold the workers' shutdown)."""
    said = []
    for r in records:
        slow = wr.stall(r)
        if not slow:
            continue
        text = (f"{_title(r['backend'], r['device_kind'])}, {SHORT[r['work']]}, {r['workers']} "
                f"workers: the last epoch took {slow['seconds']:.3g} s against a median of "
                f"{slow['others']:.3g} s")
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
                                "one batch ahead there" if wr.teardown_may_be_timed(r) else ""))
        said.append(text)
    if not said:
        return ""
    return "The comparisons leave out the slowest epoch, not the page: " + "; ".join(said) + "."


def method_note(records) -> str:
    """The devices whose records were timed before the current method, and what the next run adds."""
    older = sorted({r["device_kind"].upper() for r in records if r.get("method") != wr.METHOD})
    if not older:
        return ""
    return (f"The {' and '.join(older)} part{'s' if len(older) > 1 else ''} shown "
            f"{'were' if len(older) > 1 else 'was'} timed before the current method: "
            "its data held one epoch more than fit trained (or its epochs were not split), so "
            "no timed epoch shows what the end of the data costs. The next run "
            "(`python -m gpulesson.experiments.workers`) feeds exactly the epochs fit trains, "
            "as this episode's code does, and splits each epoch where its time goes.")


def provenance(records) -> str:
    """How the run's PyTorch process was set up, then each device's machine, software and run."""
    torch = [r for r in records if r["backend"] == "torch"]
    policy = {r.get("omp_wait_policy") for r in torch}
    said = [*(["glibc malloc's thresholds fixed"] if torch and words.malloc_fixed(torch) else []),
            *([f"`OMP_WAIT_POLICY={policy.pop()}`"] if len(policy) == 1 and None not in policy
              else [])]
    return (f"PyTorch ran with {' and '.join(said)}. " if said else "") + parts.provenance(
        records, file="results/workers.jsonl",
        extra=lambda part: f", Grain {part[0].get('grain', '?')}")


def substitutions(path=wr.RESULTS_FILE) -> dict[str, str]:
    """Episode 9's ``ref_workers_*`` values."""
    records = wr.reference_run(path)
    return {
        "ref_workers_table": table(records) if records else NONE,
        "ref_workers_summary": (f"{findings(records)} {provenance(records)}" if records
                                else words.NOTHING_YET),
        "ref_workers_alt": alt_text(records),
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_workers_data": data_label(records) if records else LABELS[wr.DATA],
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_workers_gpu": hardware(records).get("GPU", NOT_RECORDED),
    }
