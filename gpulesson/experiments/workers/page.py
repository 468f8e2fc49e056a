"""Grain's worker processes on the page: the records (one per backend, device, per-item work and
number of workers, each compared with none), episode 9's ``ref_workers_*`` values, the figure
and the command's table. Each device's values come from its newest complete grid."""

import statistics

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.ceiling.page import rate_text
from gpulesson.machine.devices import BACKEND_TITLES as NAMES
from gpulesson.records import pagewords as words
from gpulesson.records import parts
from gpulesson.records.figkit import need, panels, run_title
from gpulesson.records.recordset import RecordSet, rate_summary
from gpulesson.records.results import NOT_RECORDED, data_label, duration, hardware
from gpulesson.records.summaries import NO_DIFFERENCE, SPREAD_NOTE, compare_middle, draw_spread

# name -> what is done to each block before training (tables, figure labels, records)
WORK: dict[str, str] = {
    "none": "the stored blocks as they are",
    "augment": "flip_crop: each image shifted and flipped, one at a time in Python",
}
# How the epochs were timed: the dataset holds exactly the epochs fit trains and every epoch is
# split where its time went (measure.EpochSplitter). Before: "spare-epoch", or no ``method``.
METHOD = "epoch-split"
STALL_FACTOR = 1.5  # a last epoch this many times the other timed epochs' median stalled
FIGURES, FIGURE_FOLDER = ("feeding-workers.svg",), "fig/09-feeding-the-gpu"
COLOURS = {"none": "#4c72b0", "augment": "#dd8452"}
SHORT = {"none": "blocks as stored", "augment": "flip_crop on each image"}
NONE = words.none_yet("run with Grain's worker processes", "python -m gpulesson.experiments.workers")
IN_WORDS = {"none": "for the stored blocks", "augment": "with `flip_crop`"}  # in a sentence
# Where a stalled last epoch went, by the part of its split that took longest.
WHERE = {"after_last_batch": "after its last batch, where the iterator met the end of the data "
                             "and Grain's workers stopped",
         "first_batch": "before its first batch: a refill of the workers' buffers",
         "longest_gap": "in one gap between two batches: a refill"}


def stall(record: dict) -> dict | None:
    """The last timed epoch where it took over :data:`STALL_FACTOR` times the others' median:
    its ``seconds``, the ``others``' median, its ``split`` (None for a record from before
    :data:`METHOD`) and ``where`` it went most; None for a last epoch like the others."""
    timed = record["epoch_seconds"]
    others = statistics.median(timed[:-1]) if len(timed) > 2 else None
    if others is None or timed[-1] <= STALL_FACTOR * others:
        return None
    splits = record.get("epoch_splits") or []
    split = splits[-1] if len(splits) == len(timed) + len(record.get("warmup_seconds") or []) else None
    where = (max(("after_last_batch", "first_batch", "longest_gap"), key=split.__getitem__)
             if split else None)
    return {"seconds": timed[-1], "others": others, "split": split, "where": where}


def complete(part: list[dict]) -> bool:
    """Whether one device's part is a complete grid: each backend's works all measured with
    no worker and the same counts of workers (a run stopped in its grid is not)."""
    counts = {}
    for r in part:
        counts.setdefault(r["backend"], {}).setdefault(r["work"], set()).add(r["workers"])
    for works in counts.values():
        found = {frozenset(c) for c in works.values()}
        if len(found) != 1 or 0 not in (one := found.pop()) or len(one) < 2:
            return False
    return True


# Grain needs no TensorFlow; on TensorFlow any Python feed pays more. Synthetic data: speed
# does not depend on the pixel values.
RECORDS = RecordSet("workers", ("backend", "device_kind", "work", "workers", "batch_size"),
                    backends=("jax", "torch"), complete=complete, data="synthetic",
                    methods=(METHOD,))


def conditions(records, backend: str, device: str) -> list[tuple[str, int, dict]]:
    """``(work, workers, record)`` of a backend and device, by work, then number of workers."""
    mine = [r for r in records if (r["backend"], r["device_kind"]) == (backend, device)]
    return [(r["work"], r["workers"], r)
            for r in sorted(mine, key=lambda r: (list(WORK).index(r["work"]), r["workers"]))]


def against_none(record: dict, records) -> str:
    """``record`` against the same work with no worker, from the middle epochs ("1.4× slower",
    "no measurable difference"); '' for the record with none, or without it."""
    base = RECORDS.find(records, backend=record["backend"], device_kind=record["device_kind"],
                        work=record["work"], workers=0)
    if base is None or record is base:
        return ""
    return words.measurably(compare_middle(rate_summary(record), rate_summary(base),
                                           higher_is_better=True))


def _title(backend: str, device: str) -> str:
    return f"{NAMES.get(backend, backend)}, {device.upper()}"


def rows(records) -> list[list[str]]:
    found = []
    for backend, device in RECORDS.groups(records):
        for work, n, record in conditions(records, backend, device):
            verdict = against_none(record, records) or "baseline"
            if slow := stall(record):  # trimmed from the comparison, never from the page
                verdict += (f"; its last epoch {slow['seconds']:.3g} s, "
                            f"{slow['seconds'] / slow['others']:.1f}× the others (below)")
            found.append([_title(backend, device), SHORT[work], str(n), rate_text(record), verdict])
    return found


def compared(records) -> str:
    return words.middle_note(*(rate_summary(r) for r in records))


def table(records) -> str:
    """The run as a Markdown table; the last column's header says which epochs it compares."""
    return words.markdown_table(["Backend, device", "Work on each block", "Worker processes",
                                 "Images/s: median (range)",
                                 words.headed("Against no worker", compared(records))],
                                rows(records))


def describe(records) -> str:
    return parts.run_table(records, rows(records), "  {:12} {:24} {:>2} {:42} {}", "workers")


def findings(records) -> str:
    """A sentence a backend and device: what a block costs to read and to augment, and for
    each work the fastest number of workers against none, in the rule's words."""
    sentences = []
    for backend, device in RECORDS.groups(records):
        mine = [r for _, _, r in conditions(records, backend, device)]
        cores = (mine[0].get("cpu_settings") or {}).get("cpu_cores_available", "?")
        # what a block costs to read and to augment, each measured alone
        read, work_ms = ([r[key] for r in mine if r.get(key) is not None] for key in ("read_ms", "work_ms"))
        said = []
        for work in WORK:
            top = max((r for r in mine if r["work"] == work and r["workers"]), default=None,
                      key=lambda r: r["images_per_second"])  # the fastest with workers
            if top and (versus := against_none(top, records)):
                versus = ("about as fast as none (no measurable difference)"
                          if versus == NO_DIFFERENCE else f"{versus} than none")
                said.append(f"{versus} {IN_WORDS[work]} ({top['workers']})")
        costs = (f"; a block: read {statistics.median(read):.2g} ms, `flip_crop` "
                 f"{statistics.median(work_ms):.2g} ms" if read and work_ms else "")
        if said:
            sentences.append(f"{_title(backend, device)} ({cores} cores{costs}): the best count "
                             f"of workers was {' and '.join(said)}.")
    if sentences:
        sentences.insert(0, f"Each comparison reads the {compared(records)}.")
    return " ".join(part for part in [*sentences, stall_note(records), method_note(records)]
                    if part) or NONE


def stall_note(records) -> str:
    """Each record whose last epoch stalled: its time against the others', and where it went
    (its split), or that it was not split (a record from before :data:`METHOD`)."""
    said = []
    for r in records:
        if not (slow := stall(r)):
            continue
        text = (f"{_title(r['backend'], r['device_kind'])}, {SHORT[r['work']]}, {r['workers']} "
                f"workers: the last epoch took {slow['seconds']:.3g} s against a median of "
                f"{slow['others']:.3g} s")
        if split := slow["split"]:
            text += (f"; {duration(split[slow['where']])} of it {WHERE[slow['where']]} "
                     f"({duration(split['to_last_batch'])} to its last batch, "
                     f"{duration(split['after_last_batch'])} after it)")
            if r.get("teardown_seconds") is not None:
                text += (f"; then fit returned in {duration(r['exit_seconds'])} and the "
                         f"dataset's teardown took {duration(r['teardown_seconds'])}")
        else:  # the first way (no method recorded) may time the workers' shutdown on JAX's GPU
            shutdown = (r.get("method") is None and r["workers"]
                        and (r["backend"], r["device_kind"]) == ("jax", "gpu"))
            text += ("; not split, as it was recorded before the method that splits each "
                     "epoch" + (": it may hold the workers' shutdown, as Keras on JAX reads "
                                "one batch ahead there" if shutdown else ""))
        said.append(text)
    if not said:
        return ""
    return "The comparisons leave out the slowest epoch, not the page: " + "; ".join(said) + "."


def method_note(records) -> str:
    """The devices whose records were timed before the current method, and what the next run adds."""
    older = " and ".join(RECORDS.predating_devices(records))
    return older and (f"The {older} records shown predate the current method: the data held one "
                      "epoch more than fit trained (or the epochs were not split), so no timed "
                      "epoch shows what the end of the data costs. The next run (`python -m "
                      "gpulesson.experiments.workers`) feeds exactly the epochs fit trains and "
                      "splits each epoch where its time goes.")


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


def alt_text(records) -> str:
    if not records:
        return "No measurement of Grain's worker processes is recorded yet."
    said = []
    for backend, device in RECORDS.groups(records):
        drawn = conditions(records, backend, device)
        bars = "; ".join(
            f"{SHORT[work]}: " + ", ".join(f"{n} {'worker' if n == 1 else 'workers'} "
                                           f"{r['images_per_second']:,.0f}"
                                           for w, n, r in drawn if w == work)
            for work in WORK if any(w == work for w, _, _ in drawn))
        said.append(f"{NAMES.get(backend, backend)} on the {device.upper()}: {bars}")
    return ("Bars of the median images per second that fit reaches through Grain with a model "
            "that does almost nothing, against the number of worker processes, blue for the "
            "stored blocks as they are and orange with the lesson's augmentation, one panel per "
            "backend and device, each on its own scale and titled with its run and machine, "
            f"with whiskers from the slowest to the fastest epoch. Medians: {'. '.join(said)}.")


def figures(records):
    """A panel per backend and device (each on its own scale: the devices may be different
    machines), bars by number of workers, side by side only where a panel has both works."""
    need(records, "run python -m gpulesson.experiments.workers")
    pairs = RECORDS.groups(records)
    fig, axes = panels(len(pairs), (4.2 * len(pairs) + 1, 3.9), across=True)
    for ax, (backend, device) in zip(axes, pairs, strict=True):
        bars = conditions(records, backend, device)
        counts = sorted({n for _, n, _ in bars})
        works = [work for work in WORK if any(w == work for w, _, _ in bars)]
        width = 0.8 / len(works)
        for offset, work in enumerate(works):
            drawn = [(counts.index(n) + (offset - (len(works) - 1) / 2) * width, rate_summary(r))
                     for w, n, r in bars if w == work]
            positions = [p for p, _ in drawn]
            ax.bar(positions, [s["median"] for _, s in drawn], width=width * 0.95,
                   color=COLOURS[work], label=SHORT[work])
            draw_spread(ax, positions, [s for _, s in drawn])
        ax.set_xticks(range(len(counts)), [str(n) for n in counts])
        ax.set_xlabel("Grain worker processes (0: none)")
        run_title(ax, _title(backend, device), [r for _, _, r in bars], between="\n", fontsize=8)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("images per second through fit\n(higher is better)")
    fig.suptitle("Grain's worker processes with a model that does almost nothing; each panel on "
                 f"its own scale\n{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)


def substitutions(path=None) -> dict[str, str]:
    """Episode 9's ``ref_workers_*`` values."""
    records = RECORDS.reference_run(path)
    return {
        "ref_workers_table": table(records) if records else NONE,
        "ref_workers_summary": (f"{findings(records)} {provenance(records)}" if records
                                else words.NOTHING_YET),
        "ref_workers_alt": alt_text(records),
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_workers_data": data_label(records) if records else LABELS[RECORDS.data],
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_workers_gpu": hardware(records).get("GPU", NOT_RECORDED),
    }
