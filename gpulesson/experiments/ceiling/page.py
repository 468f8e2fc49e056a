"""The ceiling on the page: episode 9's ``ref_ceil_*`` values and the command's table.

Every value comes from the reference run (:func:`~gpulesson.experiments.ceiling.records.reference_run`);
without one, each says :data:`~gpulesson.results.NOT_RECORDED`. Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.experiments.ceiling.figures import alt_text
from gpulesson.experiments.ceiling.records import (
    BACKENDS,
    NAMES,
    PIPELINES,
    RESULTS_FILE,
    TARGET_SHARE,
    against,
    ceiling,
    find,
    groups,
    has_goal,
    rate_number,
    rate_summary,
    reference_run,
    share,
    share_text,
    verdict,
)
from gpulesson.experiments.common import markdown_table, summary_text
from gpulesson.results import NOT_RECORDED, hardware, software


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


def table(records) -> str:
    """The run as a Markdown table (for the page)."""
    head = ["Backend, device", "Fed from", "Images/s: median (range)", "Against the ceiling"]
    return markdown_table(head, rows(records))


def describe(records) -> str:
    """The run as plain text (for the command line)."""
    if not records:
        return "No ceiling records."
    out = [f"Run {records[0]['run_id']}: {software(records)}"]
    for backend_device, name, rate, said in rows(records):
        out.append(f"  {backend_device:16} {name:17} {rate:40} {said}")
    return "\n".join(out)


LESSON_LABELS = (("the generator reaches", "lesson"), ("with window=1 (not mixed)", "lesson-window1"))


def lesson_summary(records) -> str:
    """One sentence a backend and device: the lesson's generator (mixing or not) against the
    ceiling, which it names."""
    sentences = []
    for backend, device in groups(records):
        top = ceiling(records, backend, device)
        said = [f"{label} {against(r, top)}" for label, name in LESSON_LABELS
                if (r := find(records, backend, device, name))]
        if top and said:
            sentences.append(f"{NAMES.get(backend, backend)} on the {device.upper()} (ceiling: "
                             f"`{top['pipeline']}`): {', '.join(said)}.")
    return " ".join(sentences) if sentences else NOT_RECORDED


def goal_shares(records) -> str:
    """The lesson's generator against the ceiling, one share a backend and device, and whether
    it meets the goal where the goal applies (JAX and PyTorch): what the page says where it
    states the goal."""
    shares, judged = [], []
    for backend, device in groups(records):
        top, lesson = ceiling(records, backend, device), find(records, backend, device, "lesson")
        if top and lesson:
            shares.append(f"{share_text(share(lesson, top))} on {NAMES.get(backend, backend)} "
                          f"({device.upper()})")
            if has_goal(lesson):
                judged.append(share(lesson, top) >= TARGET_SHARE)
    if not shares:
        return "The reference run has no record of the lesson's generator to compare with."
    said = (f"In the reference run the lesson's own generator reached, as a share of the "
            f"ceiling, {_listed(shares)}.")
    if judged:
        how = ("misses it" if not any(judged) else "meets it" if all(judged)
               else f"meets it in {sum(judged)} of {len(judged)} cases")
        said += f" Where the goal applies, it {how}."
    return said


def _listed(items) -> str:
    return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]


NONE = ("No ceiling run has been recorded yet: `python -m gpulesson.experiments.ceiling` "
        "records one.")


def provenance(records) -> str:
    """Where and how the run was measured, as a sentence."""
    names = hardware(records)
    first = records[0]
    settings = first.get("cpu_settings") or {}
    cores = (f", {settings['cpu_cores_available']} of {settings['cpu_cores_machine']} cores "
             "available" if settings else "")
    load = first.get("load_average_before")
    load = f"; load average before the first condition {', '.join(f'{v:.1f}' for v in load)}" \
        if load else ""
    gpu = f", {names['GPU']}" if "GPU" in names else ""
    return (f"Machine: {names.get('CPU', 'CPU not recorded')}{cores}{gpu}{load}; "
            f"{software(records)}; run {first['run_id']} ({first['date'][:10]}), "
            "`results/ceiling.jsonl`.")


def malloc_note(records) -> str:
    """Which malloc mode the run's PyTorch records were made in, as a sentence ('' without
    PyTorch records): a reader compares only runs made in the same mode."""
    torch = [r for r in records if r.get("backend") == "torch"]
    if not torch:
        return ""
    if all((r.get("malloc") or {}).get("mode") == "fixed" for r in torch):
        return "PyTorch was measured with glibc malloc's thresholds fixed."
    return ("PyTorch was measured in glibc malloc's default mode, in which a fit can land in a "
            "fast or a slow mode by chance.")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of the ceiling (MyST substitutions ``ref_ceil_*``)."""
    records = reference_run(path)
    return {
        "ref_ceil_table": table(records) if records else NONE,
        "ref_ceil_summary": (" ".join(filter(None, (lesson_summary(records), malloc_note(records),
                                                    provenance(records)))) if records
                             else "Without a run there is nothing to compare yet."),
        "ref_ceil_backends": (", ".join(NAMES[b] for b in BACKENDS
                                        if any(r["backend"] == b for r in records))
                              or NOT_RECORDED),
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_ceil_gpu": hardware(records).get("GPU", NOT_RECORDED),
        "ref_ceil_goal": f"{TARGET_SHARE:.0%}",
        "ref_ceil_shares": (goal_shares(records) if records else "No ceiling run has been "
                            "recorded yet to say how close the lesson's generator comes."),
        "ref_ceil_alt": alt_text(records),
    }
