"""The episode's ``ref_mlp_*`` values, from the reference runs (read while the site builds).

Times are medians with their ranges (:func:`~gpulesson.experiments.common.summary_text`), and
the words that compare the GPU with the CPU come from
:func:`~gpulesson.experiments.common.compare` (through
:func:`~gpulesson.experiments.small_models.records.gpu_against_cpu`).
"""

from __future__ import annotations

from gpulesson.experiments.common import summary_text, times_text
from gpulesson.experiments.pagewords import accuracy, by_device, first_epoch, listed, run_values
from gpulesson.experiments.small_models.figures import comparison_alt, sweep_alt
from gpulesson.experiments.small_models.records import (
    RECORDS,
    RESULTS_FILE,
    _axes,
    epoch_summary,
    reference_run,
    sample_summary,
    speedup_text,
    step_summary,
    sweep_cells,
    sweep_complete,
    sweep_verdicts,
    verdict,
)
from gpulesson.results import NOT_RECORDED, is_gpu
from gpulesson.results import duration as short_time
from gpulesson.results import pick as _pick

BUDGET = "`python tools/reference.py budget`"
RUN = ("run", "date", "backend", "cpu", "gpu")  # what the page names of each reference run


def cut_sweep_note(path, reference) -> str:
    """Why the page has no GPU sweep: a newer sweep run that stopped before its end (its cells
    per device, in words), or that none has been recorded. A cut run never becomes the page's
    reference (:func:`reference_run`), so the note says which run the page shows instead."""
    grouped = list(RECORDS.runs_in(path, part="sweep").values())
    shown = reference[0]["run_id"] if reference else None
    ids = [group[0]["run_id"] for group in grouped]
    newer = grouped[ids.index(shown) + 1:] if shown in ids else grouped
    cut = next((g for g in reversed(newer) if not sweep_complete(g)), None)
    if not cut:
        return ("The GPU half of the sweep of batch size and layer width has not been recorded "
                f"yet; the next lease of {BUDGET} records it.")
    widths, batches = _axes(cut)
    counts = []
    for kind, gpu in (("GPU", True), ("CPU", False)):
        n = sum(1 for r in cut if is_gpu(r) == gpu)
        counts.append(f"{n} of its {len(widths) * len(batches)} {kind} cells" if n
                      else f"no {kind} cells")
    gpu = _pick(cut, True)
    where = f" on {gpu['device']}" if gpu else ""
    return ("The GPU half of the sweep of batch size and layer width is not completely recorded "
            f"yet: the sweep{where} (run {cut[0]['run_id']}, {cut[0]['date'][:10]}) stopped "
            f"before its end, with {' and '.join(counts)}. A sweep counts only when complete, so "
            "this page shows the last complete one"
            + (f" (run {shown})" if shown else "") + f"; the next lease of {BUDGET} records the rest.")


def sweep_dates(records) -> str:
    """When a sweep's cells were recorded: "on 2026-11-28", or, for a run resumed in a later
    call, each device's days with its cells ("in parts: the GPU's cells on 2026-11-27 (15) and
    2026-11-28 (1), the CPU's on 2026-11-28 (16)") and whether the parts share their
    machine and versions, so that a figure joining them says so."""
    if not records:
        return NOT_RECORDED
    days = sorted({r["date"][:10] for r in records})
    if len(days) == 1:
        return f"on {days[0]}"
    parts = []
    for name, gpu in (("GPU", True), ("CPU", False)):
        kind = [r["date"][:10] for r in records if is_gpu(r) == gpu]
        if kind:
            counted = " and ".join(f"{day} ({kind.count(day)})" for day in sorted(set(kind)))
            parts.append(f"the {name}'s cells on {counted}")
    same = len({(r.get("cpu_model"), r.get("cores_usable"), str(sorted(r.get("versions", {}).items())))
                for r in records}) == 1
    return (f"in parts of one run: {', '.join(parts)}; "
            + ("every part on the same machine with the same versions" if same
               else "the parts differ in machine or versions"))


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference runs for the episode page (MyST substitutions ``ref_mlp_*``)."""
    comparison = reference_run("comparison", path)
    values = run_values("ref_mlp", comparison, *RUN, "batch_size", "epochs")
    values.update({
        "ref_mlp_n_train": str(comparison[0]["n_train"]) if comparison else NOT_RECORDED,
        "ref_mlp_speedup": speedup_text(verdict(comparison)),
        "ref_mlp_fig_comparison_alt": comparison_alt(comparison) if comparison else NOT_RECORDED,
    })
    for name, record in by_device(comparison):
        values[f"ref_mlp_{name}_first_epoch"] = first_epoch(record)
        values[f"ref_mlp_{name}_epoch"] = (summary_text(epoch_summary(record), short_time)
                                           if record else NOT_RECORDED)
        values[f"ref_mlp_{name}_accuracy"] = accuracy(record)

    records = reference_run("sweep", path)
    values.update(run_values("ref_mlp_sweep", records, *RUN, "epochs"))
    values["ref_mlp_sweep_cut_note"] = cut_sweep_note(path, records)
    values["ref_mlp_sweep_dates"] = sweep_dates(records)
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    widths, batches = _axes(records) if records else ([], [])
    smallest = cells.get((widths[0], batches[0]), {}) if records else {}
    largest = cells.get((widths[-1], batches[-1]), {}) if records else {}
    values.update({
        "ref_mlp_sweep_batches": listed(batches) if records else NOT_RECORDED,
        "ref_mlp_sweep_widths": listed(widths) if records else NOT_RECORDED,
        "ref_mlp_sweep_small_cell": (f"width {widths[0]}, batch size {batches[0]}" if records
                                     else NOT_RECORDED),
        "ref_mlp_sweep_large_cell": (f"width {widths[-1]}, batch size {batches[-1]}" if records
                                     else NOT_RECORDED),
        "ref_mlp_fig_sweep_alt": sweep_alt(records) if records else NOT_RECORDED,
    })
    for name in ("cpu", "gpu"):
        kind_records = [r for r in records if is_gpu(r) == (name == "gpu")]
        values[f"ref_mlp_sweep_{name}_total"] = (short_time(sum(r["total_seconds"] for r in kind_records))
                                                 if kind_records else NOT_RECORDED)
        for size, cell in (("small", smallest), ("large", largest)):
            record = cell.get(name)
            values[f"ref_mlp_sweep_{name}_{size}_sample"] = (
                summary_text(sample_summary(record), short_time) if record else NOT_RECORDED)
            values[f"ref_mlp_sweep_{name}_{size}_step"] = (
                summary_text(step_summary(record), short_time) if record else NOT_RECORDED)
        # One step of the narrowest model at the smallest and at the largest batch: how much a
        # step's time grows along the top row of the grid.
        row = [cells.get((widths[0], batch), {}).get(name) for batch in batches] if records else []
        values[f"ref_mlp_sweep_{name}_row_steps"] = (
            f"from {short_time(step_summary(row[0])['median'])} at batch size {batches[0]:,} to "
            f"{short_time(step_summary(row[-1])['median'])} at batch size {batches[-1]:,} (medians)"
            if len(row) > 1 and row[0] and row[-1] else NOT_RECORDED)
    if verdicts:
        best = max(verdicts, key=lambda key: verdicts[key].ratio)
        worst = min(verdicts, key=lambda key: verdicts[key].ratio)
        paying = [key for key, found in verdicts.items()
                  if found.measurable and found.word == "faster"]

        def cell(key):
            found = verdicts[key]
            words = f"GPU {found.sentence}" if found.measurable else found.sentence
            return f"{times_text(found.ratio)} at width {key[0]}, batch size {key[1]} ({words})"
        values["ref_mlp_sweep_best"] = cell(best)
        values["ref_mlp_sweep_worst"] = cell(worst)
        values["ref_mlp_sweep_paying"] = f"{len(paying)} of {len(verdicts)}"
    else:
        for key in ("best", "worst", "paying"):
            values[f"ref_mlp_sweep_{key}"] = NOT_RECORDED
    return values
