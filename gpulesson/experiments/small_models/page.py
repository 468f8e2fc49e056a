"""The episode's ``ref_mlp_*`` values, from the reference runs (read while the site builds)."""

from __future__ import annotations

from gpulesson.experiments.common import summary_text, times_text
from gpulesson.experiments.pagewords import accuracy, by_device, first_epoch, listed, run_values
from gpulesson.experiments.small_models.figures import comparison_alt, sweep_alt
from gpulesson.experiments.small_models.records import (
    RECORDS,
    RESULTS_FILE,
    axes,
    cell_name,
    epoch_summary,
    reference_run,
    sample_summary,
    speedup_text,
    step_summary,
    sweep_cells,
    sweep_complete,
    sweep_verdicts,
    verdict,
    verdict_words,
)
from gpulesson.records.results import NOT_RECORDED, is_gpu
from gpulesson.records.results import duration as short_time
from gpulesson.records.results import pick as _pick

BUDGET = "`python tools/reference.py budget`"


def cut_sweep_note(path, reference) -> str:
    """Why the page has no GPU sweep: a newer sweep run that stopped before its end (its cells
    per device, in words), or that none has been recorded. A cut run never becomes the page's
    reference, so the note says which run the page shows instead."""
    grouped = list(RECORDS.runs_in(path, part="sweep").values())
    shown = reference[0]["run_id"] if reference else None
    ids = [group[0]["run_id"] for group in grouped]
    newer = grouped[ids.index(shown) + 1:] if shown in ids else grouped
    cut = next((g for g in reversed(newer) if not sweep_complete(g)), None)
    if not cut:
        return ("The GPU half of the sweep of batch size and layer width has not been recorded "
                f"yet; the next lease of {BUDGET} records it.")
    widths, batches = axes(cut)
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


# The sweep's values, NOT_RECORDED until a run has them: per device its total, its time per
# sample at the grid's two corners, and a step at the smallest corner and its growth along the
# top row.
SWEEP_KEYS = tuple(f"ref_mlp_sweep_{key}" for key in (
    "batches", "widths", "small_cell", "large_cell", "best", "worst", "paying",
    *(f"{device}_{what}" for device in ("cpu", "gpu") for what in (
        "total", "row_steps", "small_sample", "small_step", "large_sample"))))


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    comparison = reference_run("comparison", path)
    values = run_values("ref_mlp", comparison, "date", "backend", "cpu", "gpu", "batch_size",
                        "epochs")
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
    values.update(run_values("ref_mlp_sweep", records, "run", "cpu", "gpu"))
    values["ref_mlp_sweep_cut_note"] = cut_sweep_note(path, records)
    values["ref_mlp_sweep_dates"] = sweep_dates(records)
    values["ref_mlp_fig_sweep_alt"] = sweep_alt(records) if records else NOT_RECORDED
    values.update(dict.fromkeys(SWEEP_KEYS, NOT_RECORDED))
    if not records:
        return values
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    widths, batches = axes(records)
    corners = {"small": (widths[0], batches[0]), "large": (widths[-1], batches[-1])}
    values.update({"ref_mlp_sweep_batches": listed(batches), "ref_mlp_sweep_widths": listed(widths),
                   "ref_mlp_sweep_small_cell": cell_name(corners["small"]),
                   "ref_mlp_sweep_large_cell": cell_name(corners["large"])})
    for name in ("cpu", "gpu"):
        mine = [r for r in records if is_gpu(r) == (name == "gpu")]
        if mine:
            values[f"ref_mlp_sweep_{name}_total"] = short_time(sum(r["total_seconds"] for r in mine))
        for size, key in corners.items():
            record = cells.get(key, {}).get(name)
            if record:
                values[f"ref_mlp_sweep_{name}_{size}_sample"] = summary_text(sample_summary(record),
                                                                             short_time)
        small = cells.get(corners["small"], {}).get(name)
        if small:
            values[f"ref_mlp_sweep_{name}_small_step"] = summary_text(step_summary(small), short_time)
        # One step of the narrowest model at the smallest and at the largest batch: how much a
        # step's time grows along the top row of the grid.
        first, last = (cells.get((widths[0], batch), {}).get(name) for batch in (batches[0], batches[-1]))
        if len(batches) > 1 and first and last:
            values[f"ref_mlp_sweep_{name}_row_steps"] = (
                f"from {short_time(step_summary(first)['median'])} at batch size {batches[0]:,} to "
                f"{short_time(step_summary(last)['median'])} at batch size {batches[-1]:,} (medians)")
    if verdicts:
        def cell(key):
            return f"{times_text(verdicts[key].ratio)} at {cell_name(key)} ({verdict_words(verdicts[key])})"

        values["ref_mlp_sweep_best"] = cell(max(verdicts, key=lambda key: verdicts[key].ratio))
        values["ref_mlp_sweep_worst"] = cell(min(verdicts, key=lambda key: verdicts[key].ratio))
        paying = [v for v in verdicts.values() if v.measurable and v.word == "faster"]
        values["ref_mlp_sweep_paying"] = f"{len(paying)} of {len(verdicts)}"
    return values
