"""The contention records: one per condition (copies, threads), the reference run, a table.

The lesson's reference run is the newest run in :data:`RESULTS_FILE`. A record's
``slowdown`` is its mean epoch time over that of one copy with the framework's threads in the
same run. Imports no deep-learning framework.

**The measurement rule** (:mod:`gpulesson.experiments.common`): each copy's first
:data:`~gpulesson.experiments.common.WARMUP` epoch is its warm-up, recorded but not averaged;
the epochs after it, of every copy of a condition, are the condition's timed samples. A record
keeps them summarised under ``summary`` (:func:`condition_summary`, which builds the same
summary for records made before it was kept), and the page and the figure compare conditions
by these summaries (:func:`~gpulesson.experiments.common.compare`).
"""

from __future__ import annotations

import os
import statistics

from gpulesson.experiments.common import SUMMARY_KEY, summarise
from gpulesson.experiments.contention.measure import epoch_summary
from gpulesson.experiments.recordset import RecordSet, split_epochs
from gpulesson.timing import available_cores

EXPERIMENT = "contention"
BASELINE_MODE = "no browser"  # the watched part's slowdowns are against this training
# What tells a condition (or its record) from the others of its run: copies, threads and how
# it was shown (None in the copies part). Speed does not depend on the pixels.
RECORDS = RecordSet(EXPERIMENT, ("copies", "threads", "watched"))
RESULTS_FILE, DATA, condition_key = RECORDS.results_file, RECORDS.data, RECORDS.key


def copies_summary(per_copy) -> dict | None:
    """The summary of a condition's copies (``per_copy``: dicts with ``epoch_seconds``): every
    copy's epochs after its warm-up are the samples, the warm-ups kept apart. A copy of no more
    epochs than the warm-up gives its epochs as (single, warm) samples, which
    :func:`~gpulesson.experiments.common.summary_text` shows as "no range". None without epochs."""
    warmup, timed = [], []
    for copy in per_copy:
        first, rest = split_epochs(copy["epoch_seconds"])
        warmup, timed = warmup + first, timed + rest
    return summarise(timed, warmup) if timed else None


def condition_summary(record: dict | None) -> dict | None:
    """A condition's epoch times as one summary: the one its record keeps (``summary``), or,
    for a record made before it was kept, :func:`copies_summary` of its ``per_copy``."""
    if not record:
        return None
    kept = record.get(SUMMARY_KEY)
    if isinstance(kept, dict) and kept.get("samples"):
        return dict(kept)
    return copies_summary(record.get("per_copy") or [])


def condition_record(condition: dict, *, run_id: str, n_images: int, batch_size: int,
                     epochs: int, baseline: float | None, source: str,
                     environment: dict | None = None, skipped=()) -> dict:
    """The results-file record of one :func:`~gpulesson.experiments.contention.measure.run_condition`.

    ``baseline``: the mean epoch seconds of one copy with the framework's threads in this run
    (None when that condition was not measured): ``slowdown`` is this condition's over it.
    ``skipped``: notes on conditions of the run that were not measured, and why.
    """
    copies = [epoch_summary(r["epoch_seconds"], n_images) for r in condition["reports"]]
    starts = [r["fit_start"] for r in condition["reports"]]
    ends = [r["fit_end"] for r in condition["reports"]]
    mean = statistics.fmean(c["mean_epoch_seconds"] for c in copies)
    samples = condition["load_samples"]
    seen = [r["devices_seen"]["gpu_count"] for r in condition["reports"] if "devices_seen" in r]
    fields = {
        "run_id": run_id, "source": source, "device": "CPU", "device_kind": "cpu",
        # Two parts, each recorded as a run of its own: k copies at once ("copies"), and one
        # training shown live in a browser or not ("watched", see contention.watched).
        "part": "watched" if condition.get("watched") else "copies",
        "watched": condition.get("watched"),
        "copies": condition["copies"], "threads": condition["threads"],
        # None where the backend has no per-process thread setting (JAX).
        "framework_threads": condition["reports"][0]["framework_threads"],
        # The trainings ran with every GPU hidden; the GPUs their framework still saw (0).
        "gpu_hidden": condition.get("gpu_hidden"),
        "gpus_seen": max(seen) if seen else None,
        "skipped_conditions": list(skipped),
        "n_images": n_images, "batch_size": batch_size, "epochs": epochs,
        "per_copy": copies,
        # Every copy's epochs after its warm-up, summarised: what the page compares.
        SUMMARY_KEY: copies_summary(copies),
        "mean_epoch_seconds": mean,
        "first_epoch_seconds": statistics.fmean(c["first_epoch_seconds"] for c in copies),
        "images_per_second": statistics.fmean(c["images_per_second"] for c in copies),
        "images_per_second_total": sum(c["images_per_second"] for c in copies),
        "slowdown": mean / baseline if baseline else None,
        "first_epoch_fastest": sum(c["first_epoch_fastest"] for c in copies),
        # Seconds between the first and the last copy's start of training.
        "start_spread_seconds": max(starts) - min(starts),
        "overlap_seconds": max(0.0, min(ends) - max(starts)),
        "load_before": condition["load_before"],
        "load_samples": samples,
        "load_max": max(samples, default=None),
        "load_mean": statistics.fmean(samples) if samples else None,
        "wall_seconds": condition["wall_seconds"],
        "cpu_cores_available": available_cores(),
        "cpu_cores_machine": os.cpu_count(),
    }
    return RECORDS.record(environment=environment, **fields)


def make_records(conditions, *, run_id: str, n_images: int, batch_size: int, epochs: int,
                 source: str = "gpulesson.experiments.contention",
                 environment: dict | None = None, baseline: float | None = None,
                 skipped=()) -> list[dict]:
    """The records of one run's conditions, with slowdowns against its one-copy condition (in
    the watched part: against the training shown in no browser). ``baseline``: that
    condition's mean epoch seconds when it is not among ``conditions`` (recorded earlier in
    the run, by a command that went on with it)."""
    watched = any(c.get("watched") for c in conditions)
    alone = find_in(conditions, 1, None, BASELINE_MODE if watched else None)
    if alone is not None:
        baseline = statistics.fmean(epoch_summary(r["epoch_seconds"], n_images)
                                    ["mean_epoch_seconds"] for r in alone["reports"])
    return [condition_record(c, run_id=run_id, n_images=n_images, batch_size=batch_size,
                             epochs=epochs, baseline=baseline, source=source,
                             environment=environment, skipped=skipped) for c in conditions]


def find_in(items, copies: int, threads: int | None, watched: str | None = None) -> dict | None:
    """The condition or record of ``copies`` copies with ``threads`` (None: the default),
    shown as ``watched`` (None: the copies part)."""
    return next((r for r in items if r.get("copies") == copies and r.get("threads") == threads
                 and r.get("watched") == watched), None)


def reference_run(path=None, part: str = "copies") -> list[dict]:
    """The records of the newest run of ``part`` ("copies" or "watched")."""
    return RECORDS.newest_run(path, part=part)


def threads_text(threads: int | None) -> str:
    return "framework default" if threads is None else f"{threads} thread{'s' * (threads > 1)}"


def describe(records) -> str:
    """One run as a table: per condition the epoch time, images/s, slowdown, load average."""
    if not records:
        return "No run recorded."
    first = records[0]
    lines = [f"Run {first['run_id']}: {first.get('cpu_model', 'CPU')}, "
             f"{first.get('cpu_cores_available', '?')} cores usable; "
             f"{first['n_images']:,} images, batch {first['batch_size']}, "
             f"{first['epochs']} epoch(s) per copy",
             f"{'copies':>6} {'threads':>18} {'epoch s':>8} {'img/s each':>11} "
             f"{'img/s total':>12} {'slowdown':>9} {'load max':>9} {'1st fastest':>12}"]
    if first.get("part") == "watched":
        return _describe_watched(records, lines[0])
    notes = [note for note in dict.fromkeys(n for r in records
                                             for n in r.get("skipped_conditions") or ())]
    for r in records:
        slowdown = f"{r['slowdown']:.2f}x" if r.get("slowdown") else "-"
        load = f"{r['load_max']:.2f}" if r.get("load_max") is not None else "-"
        fastest = f"{r['first_epoch_fastest']} of {r['copies']}" if r["epochs"] > 1 else "-"
        lines.append(f"{r['copies']:>6} {threads_text(r['threads']):>18} "
                     f"{r['mean_epoch_seconds']:>8.1f} {r['images_per_second']:>11,.0f} "
                     f"{r['images_per_second_total']:>12,.0f} {slowdown:>9} {load:>9} "
                     f"{fastest:>12}")
    lines += [f"Note: {note}" for note in notes]
    return "\n".join(lines)


def _describe_watched(records, title: str) -> str:
    lines = [title, f"{'shown':>24} {'epochs (s)':>24} {'slowdown':>9} {'load max':>9}"]
    for r in records:
        epochs = ", ".join(f"{t:.1f}" for t in r["per_copy"][0]["epoch_seconds"])
        slowdown = f"{r['slowdown']:.2f}x" if r.get("slowdown") else "-"
        load = f"{r['load_max']:.2f}" if r.get("load_max") is not None else "-"
        lines.append(f"{r['watched']:>24} {epochs:>24} {slowdown:>9} {load:>9}")
    return "\n".join(lines)
