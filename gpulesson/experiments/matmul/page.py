"""The episode's ``ref_mm_*`` values: medians with their ranges, and comparison words from
``compare`` or ``rank``, which say "no measurable difference" where the ranges overlap."""

from __future__ import annotations

from pathlib import Path

from gpulesson.experiments.common import NO_DIFFERENCE, as_rate, compare, rank, summary_of, summary_text
from gpulesson.experiments.matmul import records as mr
from gpulesson.experiments.matmul.figures import floor_drawn, floor_words, gflops_alt, sync_alt
from gpulesson.experiments.matmul.measure import DTYPES, METHOD, MIN_WINDOW_SECONDS, gflops
from gpulesson.records.pagewords import listed, median_text, run_values
from gpulesson.records.results import NOT_RECORDED, hardware, software
from gpulesson.records.results import duration as _seconds

DEVICES = ("cpu", "gpu")
# The CPU's other precisions against float32, size by size.
BY_SIZE = {f"ref_mm_cpu_{dtype}_by_size": ("cpu", dtype) for dtype in DTYPES if dtype != "float32"}


def _peak(record: dict | None) -> str:
    """A sweep's highest median rate, with the sizes :func:`rank` cannot tell apart from it."""
    rates = {p["n"]: mr.rate_summary(p) for p in record["points"]} if record else {}
    rates = {n: s for n, s in rates.items() if s}
    if not rates:
        return NOT_RECORDED
    first = rank({f"{n:,}": s for n, s in rates.items()}, higher_is_better=True)[0]
    best = max(rates, key=lambda n: rates[n]["median"])
    text = f"{summary_text(rates[best])} at n = {best:,}"
    others = [n for n in first if n != f"{best:,}"]
    if others:
        text += f" ({NO_DIFFERENCE} from n = {listed(others)})"
    return text


def _sorted_points(record: dict | None) -> list[dict]:
    return sorted(record["points"], key=lambda p: p["n"]) if record else []


def _times_text(point: dict | None, key: str) -> str:
    """A point's "unsynchronised" or "transfer" times, or their median where only it was kept."""
    summary = mr.point_summary(point, f"{key}_seconds")
    if summary:
        return median_text(summary, what="repeats")
    median = point.get(f"{key}_median_seconds") if point else None
    return f"{_seconds(median)} (median; the repeats were not kept)" if median else NOT_RECORDED


def dtype_by_size(records, device: str, dtype: str) -> dict[str, list[int]]:
    """The sizes at which ``dtype`` was "faster", "slower" or no different from float32."""
    base = {p["n"]: p for p in _sorted_points(mr.find(records, device, "float32"))}
    groups: dict[str, list[int]] = {}
    for p in _sorted_points(mr.find(records, device, dtype)):
        a, b = mr.point_summary(p), mr.point_summary(base.get(p["n"]))
        if a and b:
            verdict = compare(a, b)
            groups.setdefault(verdict.word if verdict.measurable else NO_DIFFERENCE, []).append(p["n"])
    return {key: groups[key] for key in ("faster", "slower", NO_DIFFERENCE) if key in groups}


def _by_size_text(records, device: str, dtype: str) -> str:
    """``dtype`` against float32 size by size: a CPU's float16 can lose at one and win at another."""
    groups = dtype_by_size(records, device, dtype)
    if not groups:
        return NOT_RECORDED
    sizes = {key: "n = " + listed([f"{n:,}" for n in found]) for key, found in groups.items()}
    ranked = [f"{word} at {sizes[word]}" for word in ("faster", "slower") if word in sizes]
    if NO_DIFFERENCE not in sizes:
        return ", ".join(ranked)
    if not ranked:
        return f"{NO_DIFFERENCE} at any size measured ({sizes[NO_DIFFERENCE]})"
    return ", ".join(ranked) + f", with {NO_DIFFERENCE} at {sizes[NO_DIFFERENCE]}"


def _unsync_text(record: dict | None) -> str:
    """The rate of a call not waited for: impossible where above every call that waited."""
    points = _sorted_points(record)
    unsync = points and points[-1].get("unsynchronised_median_seconds")
    rates = [r["max"] for p in points if (r := mr.as_gflops(mr.latency_summary(p), p["n"]))]
    if not unsync or not rates:
        return NOT_RECORDED
    rate, best = gflops(points[-1]["n"], unsync), max(rates)  # best: the fastest call that waited
    if rate > best:
        return (f"{mr.rate_text(rate)} GFLOP/s: more than any call that waited for its result "
                f"reached (at most {mr.rate_text(best)} GFLOP/s), an impossible number")
    return (f"{mr.rate_text(rate)} GFLOP/s, no more than the calls that waited for their result "
            f"reached (up to {mr.rate_text(best)} GFLOP/s): no sign that this call returned before its "
            "work was done")


def _run_values(prefix: str, records) -> dict[str, str]:
    names = hardware(records)
    return {**run_values(prefix, records, "run", "date"),
            f"{prefix}_software": software(records) if records else NOT_RECORDED,
            f"{prefix}_cpu": names.get("CPU", NOT_RECORDED),
            f"{prefix}_gpu": names.get("GPU", NOT_RECORDED)}


def latency_values(records) -> dict[str, str]:
    """The ``ref_mm_lat_*`` values: one synchronised float32 call on each device, and calls
    not waited for on the CPU."""
    values = _run_values("ref_mm_lat", records)
    for device in DEVICES:
        points = _sorted_points(mr.find(records, device, "float32")) or [None]
        for name, point in (("smallest", points[0]), ("largest", points[-1])):
            summary = mr.latency_summary(point)
            values[f"ref_mm_lat_{device}_{name}"] = (f"{summary_text(summary, _seconds)} at n = "
                                                     f"{point['n']:,}" if summary else NOT_RECORDED)
    base = mr.find(records, "cpu", "float32")
    largest = (_sorted_points(base) or [None])[-1]
    values["ref_mm_lat_cpu_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
    values["ref_mm_lat_cpu_largest_time"] = median_text(mr.latency_summary(largest),
                                                        what="repeats")
    values["ref_mm_lat_cpu_unsync_time"] = _times_text(largest, "unsynchronised")
    values["ref_mm_lat_cpu_unsync_verdict"] = _unsync_text(base)
    return values


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}"


def peak_values(records) -> dict[str, str]:
    """The card's published peaks, and the GPU's best median rates as shares of them."""
    values = {"ref_mm_gpu_peaks": NOT_RECORDED}
    found: dict[str, dict] = {}
    for dtype in DTYPES:
        record = mr.find(records, "gpu", dtype)
        peak = mr.published_peak(record) if record and record["points"] else None
        values[f"ref_mm_gpu_{dtype}_share"] = NOT_RECORDED
        if not peak:
            continue
        best = max(record["points"], key=lambda p: p["gflops"])
        values[f"ref_mm_gpu_{dtype}_share"] = (
            f"{_share_text(best['gflops'] / peak['gflops'])} of the published "
            f"{peak['precision'].upper()} peak")
        found.setdefault(peak["precision"], peak)
    if found:
        first = next(iter(found.values()))
        peaks = listed([f"{key.upper()} {peak['gflops'] / 1e3:g} TFLOP/s"
                        for key, peak in found.items()])
        values["ref_mm_gpu_peaks"] = f"{peaks} for the {first['card']}, from the {first['source']}"
    return values


def throughput_values(records) -> dict[str, str]:
    """How each device's windows were chosen: their calls, and one wait's largest share."""
    values = {}
    for device in DEVICES:
        points = [p for r in records if r.get("device_kind") == device for p in r["points"]]
        calls = sorted({p["calls_per_sync"] for p in points if p.get("calls_per_sync")})
        shares = [p["overhead_share"] for p in points if p.get("overhead_share") is not None]
        values[f"ref_mm_{device}_calls"] = (
            (f"{calls[0]:,} to {calls[-1]:,}" if len(calls) > 1 else f"{calls[0]:,}")
            if calls else NOT_RECORDED)
        values[f"ref_mm_{device}_overhead"] = (_share_text(max(shares)) if shares
                                               else NOT_RECORDED)
        record = mr.find(records, device, "float32")
        values[f"ref_mm_{device}_float32_label"] = mr.precision_label(record) if record else NOT_RECORDED
    return values


def model_precision(path) -> tuple[dict, dict, dict] | None:
    """(mixed bfloat16 rate, float32 rate, the bfloat16 record) of the newest feeding run that
    trained the CNN on the CPU in both, all else the same; None without both."""
    from gpulesson.experiments.feeding.records import RECORDS as FEEDING  # episode 9's records

    for group in reversed(list(FEEDING.runs_in(path).values())):
        cpu = [r for r in group if r.get("device_kind") == "cpu" and r.get("mode") == "train"]
        mixed = next((r for r in cpu if r.get("group") == "precision"
                      and r.get("precision") == "mixed_bfloat16"), None)
        if not mixed:
            continue
        base = next((r for r in cpu if r.get("group") == "pipelines"
                     and r.get("pipeline") == mixed["pipeline"] and r.get("precision") == "float32"
                     and r.get("jit_compile") == mixed.get("jit_compile")
                     and r.get("steps_per_execution") == mixed.get("steps_per_execution")
                     and r.get("batch_size") == mixed.get("batch_size")), None)
        if base:
            return _rate(mixed), _rate(base), mixed
    return None


def _rate(record: dict) -> dict:
    """A feeding record's images/s of each timed epoch."""
    images = record["images_per_second"] * record["median_epoch_seconds"]
    return as_rate(summary_of(record), images)


def _model_values(path) -> dict[str, str]:
    found = model_precision(path)
    keys = ("ref_mm_model_bfloat16", "ref_mm_model_float32", "ref_mm_model_verdict",
            "ref_mm_model_cpu", "ref_mm_model_data")
    if not found:
        return dict.fromkeys(keys, NOT_RECORDED)
    mixed, base, record = found
    verdict = compare(mixed, base, higher_is_better=True)
    if verdict.measurable:
        words = f"mixed bfloat16 trained {verdict.text} float32"
    elif min(mixed["n"], base["n"]) < 2:
        words = (f"{NO_DIFFERENCE} by the lesson's rule, because "
                 + ("a setting was timed only once" if min(mixed["n"], base["n"]) == 1
                    else "a setting was timed too few times")
                 + " and so has no range to tell the two apart")
    else:
        words = f"{NO_DIFFERENCE}: their ranges overlap"
    return dict(zip(keys, (summary_text(mixed), summary_text(base), words,
                           hardware([record]).get("CPU", NOT_RECORDED),
                           record.get("data_label", NOT_RECORDED)), strict=True))


def copy_text(point: dict) -> str:
    """The copy's rate from each kind of host memory (older records: the pageable one only)."""
    nbytes = point.get("transfer_bytes") or 2 * point["n"] ** 2 * 4  # two float32 inputs
    pageable = nbytes / point["transfer_median_seconds"] / 1e9
    text = f"from pageable host memory (a NumPy array), {pageable:.3g} GB/s"
    if point.get("pinned_transfer_median_seconds"):
        pinned = nbytes / point["pinned_transfer_median_seconds"] / 1e9
        return text + f"; from pinned (page-locked) host memory, {pinned:.3g} GB/s"
    reason = point.get("pinned_transfer_unsupported")
    return text + ("; the copy from pinned memory could not be made: " + reason if reason else
                   "; this run did not time a copy from pinned memory, which the GPU reads "
                   "over the link directly")


def method_note(records) -> str:
    if not records:
        return NOT_RECORDED
    if records[0].get("method") == METHOD:
        return (f"Each window lasted at least {MIN_WINDOW_SECONDS:g} s, and on the GPU kept the "
                "SM clock and board power that NVML showed while it ran.")
    return (f"These windows were recorded before the lesson's current method: they lasted as "
            f"little as a few milliseconds, and kept neither clock nor power. The next GPU run "
            f"(`python -m gpulesson.experiments.matmul`) times windows of at least "
            f"{MIN_WINDOW_SECONDS:g} s with both.")


def substitutions(path=mr.RESULTS_FILE) -> dict[str, str]:
    """The episode's values (``ref_mm_*``), NOT_RECORDED for what the runs lack."""
    records, latency = mr.reference_run(path), mr.latency_run(path)
    values = _run_values("ref_mm", records)
    values["ref_mm_cpu_only"] = (values["ref_mm_cpu"] if values["ref_mm_gpu"] == NOT_RECORDED
                                 else NOT_RECORDED)
    values["ref_mm_crossover"] = mr.crossover_text(records) if records else NOT_RECORDED
    for device in DEVICES:
        points = _sorted_points(mr.find(records, device, "float32"))
        smallest, largest = (points[0], points[-1]) if points else (None, None)
        prefix = f"ref_mm_{device}"
        small_rate = mr.rate_summary(smallest)
        values[f"{prefix}_smallest"] = (f"{summary_text(small_rate)} at n = {smallest['n']:,}"
                                        if small_rate else NOT_RECORDED)
        values[f"{prefix}_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
        values[f"{prefix}_largest_time"] = median_text(mr.point_summary(largest), what="repeats")
        values[f"{prefix}_first_call"] = (_seconds(largest["first_call_seconds"])
                                          if largest and largest.get("first_call_seconds")
                                          else NOT_RECORDED)
        for dtype in DTYPES:
            values[f"{prefix}_{dtype}"] = _peak(mr.find(records, device, dtype))
    walls = [r["wall_seconds"] for r in records
             if r.get("device_kind") == "cpu" and r.get("wall_seconds")]
    values["ref_mm_cpu_sweep_time"] = _seconds(sum(walls)) if walls else NOT_RECORDED
    for name, (device, dtype) in BY_SIZE.items():
        values[name] = _by_size_text(records, device, dtype)
    values.update(throughput_values(records))
    values.update(peak_values(records))
    values.update(latency_values(latency))
    from gpulesson.experiments.feeding.records import RESULTS_FILE as FEEDING_FILE

    values.update(_model_values(Path(path).parent / FEEDING_FILE.name))
    copied = (_sorted_points(mr.find(records, "gpu", "float32")) or [None])[-1]
    copy_seconds = copied and copied.get("transfer_median_seconds")
    values["ref_mm_gpu_transfer_n"] = f"{copied['n']:,}" if copy_seconds else NOT_RECORDED
    values["ref_mm_gpu_transfer_time"] = (_times_text(copied, "transfer") if copy_seconds
                                          else NOT_RECORDED)
    values["ref_mm_gpu_transfer_gflops"] = (
        f"{mr.rate_text(gflops(copied['n'], copied['median_seconds'] + copy_seconds))} GFLOP/s"
        if copy_seconds else NOT_RECORDED)
    values["ref_mm_gpu_copy_memory"] = copy_text(copied) if copy_seconds else NOT_RECORDED
    floor = floor_drawn(records)
    values["ref_mm_gpu_floor"] = floor_words(floor) if floor else NOT_RECORDED
    values["ref_mm_method_note"] = method_note(records)
    values["ref_mm_fig_gflops_alt"] = gflops_alt(records) if records else NOT_RECORDED
    values["ref_mm_fig_sync_alt"] = sync_alt(latency) if latency else NOT_RECORDED
    return values
