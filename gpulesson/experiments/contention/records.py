"""The contention records: one per condition, the newest run, the run as a table.

A condition's samples are the epochs after the warm-up of every one of its copies
(:func:`condition_summary`); the page and the figure compare conditions by them.
"""

from __future__ import annotations

import os
import statistics

from gpulesson.experiments.common import SUMMARY_KEY, summarise
from gpulesson.experiments.contention.measure import epoch_summary
from gpulesson.experiments.recordset import RecordSet, split_epochs
from gpulesson.machine.timing import available_cores

EXPERIMENT = "contention"
# A condition: copies and threads. The file also keeps the records of a former part, "watched"
# (one training shown in a browser or not, its mode in ``watched``); new records keep ``part``
# "copies" and ``watched`` None, so that the page, the figure and a run that goes on read only
# the copies'. Speed does not depend on the pixels, so the data is the synthetic stand-in.
RECORDS = RecordSet(EXPERIMENT, ("copies", "threads", "watched"))
RESULTS_FILE, condition_key = RECORDS.results_file, RECORDS.key


def copies_summary(per_copy) -> dict | None:
    """The summary of every copy's epochs after its warm-up (a copy of no more epochs than the
    warm-up gives them as single, warm samples: "no range"); None without epochs."""
    warmup, timed = [], []
    for copy in per_copy:
        first, rest = split_epochs(copy["epoch_seconds"])
        warmup, timed = warmup + first, timed + rest
    return summarise(timed, warmup) if timed else None


def condition_summary(record: dict | None) -> dict | None:
    """The summary a record keeps, or, for one made before it was kept, its copies'."""
    if not record:
        return None
    kept = record.get(SUMMARY_KEY)
    if isinstance(kept, dict) and kept.get("samples"):
        return dict(kept)
    return copies_summary(record.get("per_copy") or [])


def _record(condition: dict, copies: list[dict], *, run_id: str, baseline: float | None,
            skipped, environment, **sizes) -> dict:
    reports = condition["reports"]
    starts, ends = [r["fit_start"] for r in reports], [r["fit_end"] for r in reports]
    mean = statistics.fmean(c["mean_epoch_seconds"] for c in copies)
    samples = condition["load_samples"]
    seen = [r["devices_seen"]["gpu_count"] for r in reports if "devices_seen" in r]
    return RECORDS.record(
        environment=environment, run_id=run_id,
        source="gpulesson.experiments.contention", device="CPU", device_kind="cpu",
        part="copies", watched=None, copies=condition["copies"],
        threads=condition["threads"],
        # None where the backend has no per-process thread setting (JAX).
        framework_threads=reports[0]["framework_threads"],
        # The trainings ran with every GPU hidden; the GPUs their framework still saw (0).
        gpu_hidden=condition.get("gpu_hidden"), gpus_seen=max(seen) if seen else None,
        skipped_conditions=list(skipped), **sizes, per_copy=copies,
        **{SUMMARY_KEY: copies_summary(copies)},
        mean_epoch_seconds=mean,
        first_epoch_seconds=statistics.fmean(c["first_epoch_seconds"] for c in copies),
        images_per_second=statistics.fmean(c["images_per_second"] for c in copies),
        images_per_second_total=sum(c["images_per_second"] for c in copies),
        slowdown=mean / baseline if baseline else None,
        first_epoch_fastest=sum(c["first_epoch_fastest"] for c in copies),
        # Seconds between the first and the last copy's start of training.
        start_spread_seconds=max(starts) - min(starts),
        overlap_seconds=max(0.0, min(ends) - max(starts)),
        load_before=condition["load_before"], load_samples=samples,
        load_max=max(samples, default=None),
        load_mean=statistics.fmean(samples) if samples else None,
        wall_seconds=condition["wall_seconds"], cpu_cores_available=available_cores(),
        cpu_cores_machine=os.cpu_count())


def make_records(conditions, *, run_id: str, n_images: int, batch_size: int, epochs: int,
                 environment: dict | None = None, baseline: float | None = None,
                 skipped=()) -> list[dict]:
    """The records of one run's conditions. ``slowdown``: a condition's mean epoch over that
    of one copy alone, ``baseline`` where that one was recorded earlier in the run;
    ``skipped``: notes on conditions not run, and why."""
    per_copy = [[epoch_summary(r["epoch_seconds"], n_images) for r in c["reports"]]
                for c in conditions]
    alone = find_in(conditions, 1, None)
    if alone is not None:
        baseline = statistics.fmean(c["mean_epoch_seconds"]
                                    for c in per_copy[conditions.index(alone)])
    return [_record(c, copies, baseline=baseline, skipped=skipped, environment=environment,
                    run_id=run_id, n_images=n_images, batch_size=batch_size, epochs=epochs)
            for c, copies in zip(conditions, per_copy, strict=True)]


def find_in(items, copies: int, threads: int | None) -> dict | None:
    """The condition or record of ``copies`` copies with ``threads`` (None: the default)."""
    return next((r for r in items if r.get("copies") == copies and r.get("threads") == threads),
                None)


def reference_run(path=None) -> list[dict]:
    """The records of the newest run of k copies at once (not of the former watched part)."""
    return RECORDS.newest_run(path, part="copies")


def threads_text(threads: int | None) -> str:
    return "framework default" if threads is None else f"{threads} thread{'s' * (threads > 1)}"


def describe(records) -> str:
    """One run as a table: per condition its epochs, images/s, slowdown and load average."""
    if not records:
        return "No run recorded."
    first = records[0]
    lines = [f"Run {first['run_id']}: {first.get('cpu_model', 'CPU')}, "
             f"{first.get('cpu_cores_available', '?')} cores usable; "
             f"{first['n_images']:,} images, batch {first['batch_size']}, "
             f"{first['epochs']} epoch(s) per copy",
             f"{'copies':>6} {'threads':>18} {'epoch s':>8} {'img/s each':>11} "
             f"{'img/s total':>12} {'slowdown':>9} {'load max':>9} {'1st fastest':>12}"]
    for r in records:
        slowdown = f"{r['slowdown']:.2f}x" if r.get("slowdown") else "-"
        load = f"{r['load_max']:.2f}" if r.get("load_max") is not None else "-"
        fastest = f"{r['first_epoch_fastest']} of {r['copies']}" if r["epochs"] > 1 else "-"
        lines.append(f"{r['copies']:>6} {threads_text(r['threads']):>18} "
                     f"{r['mean_epoch_seconds']:>8.1f} {r['images_per_second']:>11,.0f} "
                     f"{r['images_per_second_total']:>12,.0f} {slowdown:>9} {load:>9} "
                     f"{fastest:>12}")
    lines += [f"Note: {note}" for note in dict.fromkeys(
        n for r in records for n in r.get("skipped_conditions") or ())]
    return "\n".join(lines)
