"""The episode's ``ref_mm_*`` values, from the reference runs (read while the site builds):
throughput from the newest run of the current method, the latency of a synchronised call
(``ref_mm_lat_*``) from the newest run of any method.

Every measured value is a median with its range (:func:`~gpulesson.experiments.common.summary_text`),
and every comparison word comes from :func:`~gpulesson.experiments.common.compare` (or
:func:`~gpulesson.experiments.common.rank`): where the ranges of the repeats overlap, the page
says there is no measurable difference. Old records without a ``summary`` are summarised from
the samples they hold (:func:`~gpulesson.experiments.matmul.records.point_summary`).
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.experiments.common import (
    NO_DIFFERENCE,
    as_rate,
    compare,
    rank,
    summary_of,
    summary_text,
)
from gpulesson.experiments.matmul.figures import floor_drawn, floor_words, gflops_alt, sync_alt
from gpulesson.experiments.matmul.measure import DTYPES, METHOD, MIN_WINDOW_SECONDS, gflops
from gpulesson.experiments.matmul.records import (
    RESULTS_FILE,
    crossover_text,
    find,
    flop,
    latency_run,
    latency_summary,
    point_summary,
    precision_label,
    published_peak,
    rate_summary,
    rate_text,
    reference_run,
    samples_summary,
    software,
)
from gpulesson.experiments.pagewords import listed, median_text, run_values
from gpulesson.results import NOT_RECORDED, hardware
from gpulesson.results import duration as _seconds


def _peak(record: dict | None) -> str:
    """The highest median rate of a sweep, with its range and size; sizes whose rates
    :func:`rank` cannot tell apart from it are named with it."""
    rates = {p["n"]: rate_summary(p) for p in record["points"]} if record else {}
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


def _largest(record: dict | None) -> dict | None:
    """The point of ``record`` with the largest size (None without one)."""
    if not record or not record["points"]:
        return None
    return max(record["points"], key=lambda p: p["n"])


def _times_text(point: dict | None, key: str) -> str:
    """The times of ``key`` (``unsynchronised``, ``transfer``) of a point: median and range, or
    the median alone where the record kept only that."""
    summary = samples_summary(point, f"{key}_seconds")
    if summary:
        return median_text(summary, what="repeats")
    median = point.get(f"{key}_median_seconds") if point else None
    return f"{_seconds(median)} (median; the repeats were not kept)" if median else NOT_RECORDED


def _point(record: dict | None, n: int) -> dict | None:
    return next((p for p in record["points"] if p["n"] == n), None) if record else None


def dtype_comparison(records, device: str, dtype: str):
    """(summary in ``dtype``, summary in float32) of ``device`` at the largest size both
    sweeps measured, or None: the two timings a page compares."""
    base, other = find(records, device, "float32"), find(records, device, dtype)
    if not (base and other and base["points"] and other["points"]):
        return None
    common = {p["n"] for p in base["points"]} & {p["n"] for p in other["points"]}
    if not common:
        return None
    n = max(common)
    a, b = point_summary(_point(other, n)), point_summary(_point(base, n))
    return (a, b, n) if a and b else None


def _dtype_text(records, device: str, dtype: str) -> str:
    """``"1.8× faster than"``, ``"slower than"`` or ``"about as fast as"``: one multiplication
    in ``dtype`` against one in float32 at the largest size of both (:func:`compare`)."""
    found = dtype_comparison(records, device, dtype)
    return compare(found[0], found[1]).text if found else NOT_RECORDED


def dtype_by_size(records, device: str, dtype: str) -> dict[str, list[int]]:
    """The sizes at which one multiplication in ``dtype`` was ``"faster"``, ``"slower"`` or not
    measurably different (:data:`NO_DIFFERENCE`) from one in float32 on ``device``
    (:func:`compare` at each size both sweeps measured); empty groups left out."""
    base, other = find(records, device, "float32"), find(records, device, dtype)
    groups: dict[str, list[int]] = {}
    for point in sorted(other["points"], key=lambda p: p["n"]) if base and other else []:
        a, b = point_summary(point), point_summary(_point(base, point["n"]))
        if a and b:
            verdict = compare(a, b)
            groups.setdefault(verdict.word if verdict.measurable else NO_DIFFERENCE,
                              []).append(point["n"])
    return {key: groups[key] for key in ("faster", "slower", NO_DIFFERENCE) if key in groups}


def _by_size_text(records, device: str, dtype: str) -> str:
    """``dtype`` against float32 size by size, in words: ``"faster at n = 1,024, slower at
    n = 4,096, with no measurable difference at n = 512 and 2,048"``. A verdict at one size
    does not hold at the others (a CPU's float16 can lose at one size and win at another)."""
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


def _latency_rate(record: dict, point: dict) -> dict | None:
    summary = latency_summary(record, point)
    return as_rate(summary, flop(point["n"]), "GFLOP/s") if summary else None


def _unsync_text(record: dict | None) -> str:
    """What the time measured without waiting says: an impossible rate (above the fastest
    call that waited for its result, at any size) or one that the waited-for calls reach too."""
    largest = _largest(record)
    unsync = largest and largest.get("unsynchronised_median_seconds")
    if not unsync:
        return NOT_RECORDED
    rate = gflops(largest["n"], unsync)
    rates = [_latency_rate(record, p) for p in record["points"]]
    best = max(r["max"] for r in rates if r)  # the fastest call that waited, at any size
    if rate > best:
        return (f"{rate_text(rate)} GFLOP/s: more than any call that waited for its result "
                f"reached (at most {rate_text(best)} GFLOP/s), an impossible number")
    return (f"{rate_text(rate)} GFLOP/s, no more than the calls that waited for their result "
            f"reached (up to {rate_text(best)} GFLOP/s): no sign that this call returned before its "
            "work was done")


def latency_values(records) -> dict[str, str]:
    """The ``ref_mm_lat_*`` values: the latency of one synchronised float32 call in the latency
    run (:func:`~gpulesson.experiments.matmul.records.latency_run`), and the same calls timed
    without waiting."""
    names = hardware(records)
    values = {
        **run_values("ref_mm_lat", records, "run", "date"),
        "ref_mm_lat_software": software(records) if records else NOT_RECORDED,
        "ref_mm_lat_cpu": names.get("CPU", NOT_RECORDED),
        "ref_mm_lat_gpu": names.get("GPU", NOT_RECORDED),
    }
    for device in ("cpu", "gpu"):
        base = find(records, device, "float32")
        prefix = f"ref_mm_lat_{device}"
        points = sorted(base["points"], key=lambda p: p["n"]) if base else []
        for name, point in (("smallest", points[0] if points else None),
                            ("largest", points[-1] if points else None)):
            summary = latency_summary(base, point) if point else None
            values[f"{prefix}_{name}"] = (f"{summary_text(summary, _seconds)} at n = "
                                          f"{point['n']:,}" if summary else NOT_RECORDED)
        largest = points[-1] if points else None
        values[f"{prefix}_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
        values[f"{prefix}_largest_time"] = median_text(latency_summary(base, largest)
                                                       if largest else None, what="repeats")
        unsync = largest and largest.get("unsynchronised_median_seconds")
        values[f"{prefix}_unsync_time"] = _times_text(largest, "unsynchronised")
        values[f"{prefix}_unsync_gflops"] = (f"{rate_text(gflops(largest['n'], unsync))} GFLOP/s"
                                             if unsync else NOT_RECORDED)
        values[f"{prefix}_unsync_verdict"] = _unsync_text(base)
    return values


PEAK_WORDS = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16", "fp16": "FP16"}


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}"


def peak_values(records) -> dict[str, str]:
    """The card's published peaks beside the GPU's best rates of the throughput run:
    ``ref_mm_gpu_peaks`` (the vendor's figures; the page says they are not measurements) and
    ``ref_mm_gpu_<dtype>_share`` (the best median rate as a share of the peak for the
    precision in force)."""
    values = {"ref_mm_gpu_peaks": NOT_RECORDED}
    found: dict[str, dict] = {}
    for dtype in DTYPES:
        record = find(records, "gpu", dtype)
        peak = published_peak(record) if record and record["points"] else None
        values[f"ref_mm_gpu_{dtype}_share"] = NOT_RECORDED
        if not peak:
            continue
        best = max(record["points"], key=lambda p: p["gflops"])
        values[f"ref_mm_gpu_{dtype}_share"] = (
            f"{_share_text(best['gflops'] / peak['gflops'])} of the published "
            f"{PEAK_WORDS[peak['precision']]} peak")
        found.setdefault(peak["precision"], peak)
    if found:
        first = next(iter(found.values()))
        card, source = first["card"], first["source"]
        peaks = listed([f"{PEAK_WORDS[key]} {peak['gflops'] / 1e3:g} TFLOP/s"
                        for key, peak in found.items()])
        values["ref_mm_gpu_peaks"] = f"{peaks} for the {card}, from the {source}"
    return values


def throughput_values(records) -> dict[str, str]:
    """How each device's windows were chosen: ``ref_mm_<device>_calls`` (the calls a window
    held, over the sizes) and ``ref_mm_<device>_overhead`` (the largest share of a window that
    one synchronisation took)."""
    values = {}
    for device in ("cpu", "gpu"):
        points = [p for r in records if r.get("device_kind") == device for p in r["points"]]
        calls = sorted({p["calls_per_sync"] for p in points if p.get("calls_per_sync")})
        shares = [p["overhead_share"] for p in points if p.get("overhead_share") is not None]
        values[f"ref_mm_{device}_calls"] = (
            (f"{calls[0]:,} to {calls[-1]:,}" if len(calls) > 1 else f"{calls[0]:,}")
            if calls else NOT_RECORDED)
        values[f"ref_mm_{device}_overhead"] = (_share_text(max(shares)) if shares
                                               else NOT_RECORDED)
        record = find(records, device, "float32")
        values[f"ref_mm_{device}_float32_label"] = (precision_label(record) if record
                                                    else NOT_RECORDED)
    return values


# The whole-model measurement episode 6 sets beside the matmul: episode 9's training of the CNN
# in float32 and in mixed bfloat16 (results/feeding.jsonl), on the CPU.
FEEDING_FILE = "feeding.jsonl"


def model_precision(path) -> tuple[dict, dict, dict] | None:
    """(mixed bfloat16 rate summary, float32 rate summary, the bfloat16 record) of the newest
    feeding run that trained the CNN on the CPU in mixed bfloat16 with one setting changed,
    against the same pipeline's float32 training of that run; None without both."""
    from gpulesson.experiments.feeding.records import RECORDS as FEEDING

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
    """A feeding record's training rate as a summary (images/s of each timed epoch)."""
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
    return {
        "ref_mm_model_bfloat16": summary_text(mixed),
        "ref_mm_model_float32": summary_text(base),
        "ref_mm_model_verdict": words,
        "ref_mm_model_cpu": hardware([record]).get("CPU", NOT_RECORDED),
        "ref_mm_model_data": record.get("data_label", NOT_RECORDED),
    }


# Page values that are comparisons, with the two timings each compares (tests check their words):
# at the largest size of both sweeps, and size by size.
COMPARISONS = {f"ref_mm_{device}_{dtype}_vs_float32": (device, dtype)
               for device in ("cpu", "gpu") for dtype in DTYPES if dtype != "float32"}
BY_SIZE = {f"ref_mm_{device}_{dtype}_by_size": (device, dtype)
           for device in ("cpu", "gpu") for dtype in DTYPES if dtype != "float32"}


def copy_text(point: dict) -> str:
    """Where the copy's inputs were in the host's memory, and its rate from each kind: "from
    pageable host memory (a NumPy array), 7.6 GB/s; from pinned memory, 50 GB/s". Records
    before the pinned copy measured the pageable one only, and the text says so."""
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
    """Which method made the throughput's reference run: the current one (windows of at least
    :data:`MIN_WINDOW_SECONDS`, the GPU's clock and power per window, both copies), or the one
    before it, which the page shows until a GPU run of the current method is recorded."""
    if not records:
        return NOT_RECORDED
    if records[0].get("method") == METHOD:
        return (f"Each window lasted at least {MIN_WINDOW_SECONDS:g} s, and on the GPU kept the "
                "SM clock and board power that NVML showed while it ran.")
    return (f"These windows were recorded before the lesson's current method: they lasted as "
            f"little as a few milliseconds, and kept neither clock nor power. The next GPU run "
            f"(`python -m gpulesson.experiments.matmul`) times windows of at least "
            f"{MIN_WINDOW_SECONDS:g} s with both.")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets for the episode (MyST substitutions ``ref_mm_*``) from the two reference
    runs (:func:`~gpulesson.experiments.matmul.records.reference_run` and
    :func:`~gpulesson.experiments.matmul.records.latency_run`): rates, precisions, the
    crossover and the copy from the throughput run, ``ref_mm_lat_*`` from the latency run;
    NOT_RECORDED for everything that a run lacks (e.g. every GPU rate before a GPU run of the
    current method)."""
    records, latency = reference_run(path), latency_run(path)
    names = hardware(records)
    values = {
        **run_values("ref_mm", records, "run", "date"),
        "ref_mm_software": software(records) if records else NOT_RECORDED,
        "ref_mm_cpu": names.get("CPU", NOT_RECORDED),
        "ref_mm_gpu": names.get("GPU", NOT_RECORDED),
        # the CPU of a throughput run without a GPU sweep: the page's CPU-only table
        "ref_mm_cpu_only": (names.get("CPU", NOT_RECORDED) if "GPU" not in names
                            else NOT_RECORDED),
        "ref_mm_crossover": crossover_text(records) if records else NOT_RECORDED,
    }
    for device in ("cpu", "gpu"):
        base = find(records, device, "float32")
        smallest = min(base["points"], key=lambda p: p["n"]) if base and base["points"] else None
        largest = _largest(base)
        prefix = f"ref_mm_{device}"
        small_rate = rate_summary(smallest)
        values[f"{prefix}_smallest"] = (f"{summary_text(small_rate)} at n = {smallest['n']:,}"
                                        if small_rate else NOT_RECORDED)
        values[f"{prefix}_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
        values[f"{prefix}_largest_time"] = median_text(point_summary(largest), what="repeats")
        values[f"{prefix}_first_call"] = (_seconds(largest["first_call_seconds"])
                                          if largest and largest.get("first_call_seconds")
                                          else NOT_RECORDED)
        for dtype in DTYPES:
            values[f"{prefix}_{dtype}"] = _peak(find(records, device, dtype))
        walls = [r["wall_seconds"] for r in records
                 if r.get("device_kind") == device and r.get("wall_seconds")]
        values[f"{prefix}_sweep_time"] = _seconds(sum(walls)) if walls else NOT_RECORDED
    for name, (device, dtype) in COMPARISONS.items():
        values[name] = _dtype_text(records, device, dtype)
    for name, (device, dtype) in BY_SIZE.items():
        values[name] = _by_size_text(records, device, dtype)
    values.update(throughput_values(records))
    values.update(peak_values(records))
    values.update(latency_values(latency))
    values.update(_model_values(Path(path).parent / FEEDING_FILE))
    gpu = find(records, "gpu", "float32")
    copied = _largest(gpu)
    copy_seconds = copied and copied.get("transfer_median_seconds")
    values["ref_mm_gpu_transfer_n"] = f"{copied['n']:,}" if copy_seconds else NOT_RECORDED
    values["ref_mm_gpu_transfer_time"] = (_times_text(copied, "transfer") if copy_seconds
                                          else NOT_RECORDED)
    values["ref_mm_gpu_transfer_gflops"] = (
        f"{rate_text(gflops(copied['n'], copied['median_seconds'] + copy_seconds))} GFLOP/s"
        if copy_seconds else NOT_RECORDED)
    values["ref_mm_gpu_copy_memory"] = copy_text(copied) if copy_seconds else NOT_RECORDED
    floor = floor_drawn(records)
    values["ref_mm_gpu_floor"] = floor_words(floor) if floor else NOT_RECORDED
    values["ref_mm_method_note"] = method_note(records)
    values["ref_mm_fig_gflops_alt"] = gflops_alt(records) if records else NOT_RECORDED
    values["ref_mm_fig_sync_alt"] = sync_alt(latency) if latency else NOT_RECORDED
    return values
