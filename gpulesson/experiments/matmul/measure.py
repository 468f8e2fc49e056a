"""Timing a matrix product on one device after a recorded warm-up: the **latency** of calls
each waited for (:func:`wait`), and the **throughput** of windows of queued calls with one wait,
long enough for that wait to be a small share; on a GPU with the SM clock and power of each
window. What a sweep's records say: their summaries, the crossover, its table."""

import contextlib
import math
import statistics
import time
from itertools import takewhile

from gpulesson.experiments.matmul.probes import copy_fields, open_sensor, timed
from gpulesson.machine import timing
from gpulesson.machine.devices import keras_device_name as check_device
from gpulesson.records import summaries
from gpulesson.records.recordset import RecordSet
from gpulesson.records.results import NOT_RECORDED, duration, hardware, is_gpu, software
from gpulesson.records.summaries import NO_DIFFERENCE, as_rate, compare, repeats_for, summarise, summary_of

METHOD = "windows"  # the record's method
# One record a sweep of random inputs; a run that goes on skips the sweeps it has, and the
# method tells the throughput methods' records from the oldest's (synchronised calls only).
RECORDS = RecordSet("matmul", ("device_kind", "dtype", "method"), data="random", methods=(METHOD,))
DTYPES = ("float32", "bfloat16", "float16")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
GPU_SIZES = (*SIZES, 8192, 16384)  # a GPU's large products take milliseconds
QUICK_SIZES = (16, 32, 64, 128, 256)
MAX_SECONDS = 20.0  # larger sizes are skipped once one call would take longer than this
# The throughput methods, newest first; "amortised" chose its windows by one wait's share alone.
THROUGHPUT_METHODS = (METHOD, "amortised")
MAX_OVERHEAD_SHARE = 0.05  # the fixed cost of a synchronisation: at most this share of a window
TARGET_SHARE = MAX_OVERHEAD_SHARE / 2  # what k is chosen for, so that noise stays under the limit
MAX_CALLS = 200_000  # at most this many calls in one window
MIN_WINDOW_SECONDS = 0.5  # clock, power and NVML's power reading settle over tenths of a second
TRIES = 3  # windows re-chosen at most this many times when a share came out too large
PROBE_CALLS, PROBE_SECONDS = 32, 0.01  # the probe window: 2 to 32 calls, about 10 ms of them
FLOOR_FACTOR = 2.0  # sizes within this factor of the smallest's time per call: a fixed cost sets it
BUSY = 0.25  # a sweep during which other programs used more CPU time than this is flagged
_KEPT = {"seconds": "summary", "latency_seconds": "latency"}  # where a point keeps a summary
_SCALE = {"GFLOP/s": 1e9, "TFLOP/s": 1e12}
# A peak's key in gpu_peaks: by the precision float32 products ran in, else by the dtype.
_PEAK_KEYS = {"float32": "fp32", "tf32": "tf32", "bf16": "bf16", "bfloat16": "bf16", "float16": "fp16"}


def sizes_for(device: str) -> tuple[int, ...]:
    check_device(device)
    return SIZES if device == "cpu" else GPU_SIZES


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    return dtype


def check_sizes(sizes) -> list[int]:
    sizes = list(sizes)
    if not sizes:
        raise ValueError("no matrix sizes given")
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"a matrix size must be a whole number of at least 1, not {n!r}")
    return sorted(set(sizes))


def gflops(n: int, seconds: float) -> float:
    """The GFLOP/s of one n x n by n x n product that took ``seconds``: 2 n^3 / t."""
    check_sizes([n])
    if not seconds > 0:
        raise ValueError(f"the time must be positive, not {seconds!r}")
    return 2 * n**3 / seconds / 1e9


def wait(result):
    """Wait until ``result`` is computed, on any backend, by fetching one number of it."""
    import keras

    corner = result[(slice(0, 1),) * len(result.shape)]
    return keras.ops.convert_to_numpy(corner)


def window(op, a, b, calls: int, readings: list | None = None, sensor=None) -> float:
    """The seconds of ``calls`` queued calls and one wait for the last."""
    start = time.perf_counter()
    for _ in range(calls):
        result = op(a, b)
    wait(result)
    end = time.perf_counter()
    if sensor is not None:
        readings.append(sensor.window(start, end))
    return end - start


def synchronised_call(op, a, b) -> tuple[float, float, float]:
    """``(latency, dispatch, wait)`` of one call; the wait, for a result already there, is the
    least that a synchronisation costs."""
    start = time.perf_counter()
    result = op(a, b)
    returned = time.perf_counter()
    wait(result)
    done = time.perf_counter()
    wait(result)
    return done - start, returned - start, time.perf_counter() - done


def overhead(latency: float, probe: float, calls: int, wait_seconds: float,
             dispatch: float) -> tuple[float, float]:
    """``(fixed cost of one synchronisation, time of one queued call)`` from one call and a
    ``probe`` window of ``calls`` (k calls take ``overhead + k * per_call``); the overhead is
    bounded by the wait and the wait plus a dispatch, against noise."""
    per_call = (probe - latency) / (calls - 1)
    if per_call <= 0:  # noise: the probe was not longer than one call
        per_call = probe / calls
    return max(wait_seconds, min(latency - per_call, dispatch + wait_seconds)), per_call


def calls_per_window(per_call: float, overhead_seconds: float, *, share: float = TARGET_SHARE,
                     max_calls: int = MAX_CALLS, min_seconds: float = MIN_WINDOW_SECONDS) -> int:
    """The calls a window needs for one wait to be ``share`` of it and to last ``min_seconds``."""
    by_share = math.ceil(overhead_seconds * (1 - share) / (share * per_call))
    by_time = math.ceil(min_seconds / per_call)
    return max(1, min(max(by_share, by_time), max_calls))


def time_matmul(n: int, device: str = "cpu", dtype: str = "float32", *,
                repeats: int = summaries.REPEATS, warmup: int = summaries.WARMUP,
                unsynchronised: bool = False, transfer: bool = False, op=None, sensor=None) -> dict:
    """One size's point: ``op(a, b)`` (``keras.ops.matmul``) on random n x n inputs made on the
    device; also calls not waited for (``unsynchronised``) and the copy of both (``transfer``)."""
    import keras

    op = op or keras.ops.matmul
    if repeats < 1 or warmup < 1:
        raise ValueError(f"repeats and warmup must be at least 1, not {repeats} and {warmup}")
    check_sizes([n])
    check_dtype(dtype)
    with keras.device(check_device(device)):
        a, b = (keras.ops.cast(keras.random.normal((n, n), seed=seed), dtype) for seed in (0, 1))
        warmups = [s for s, _ in timed(lambda: wait(op(a, b)), warmup)]
        latency, dispatches, waits = (list(column) for column in zip(
            *(synchronised_call(op, a, b) for _ in range(repeats)), strict=True))
        # a probe window, then the windows, longer while one wait's share is too large
        median = statistics.median(latency)
        probe = max(2, min(PROBE_CALLS, math.ceil(PROBE_SECONDS / median)))
        probe_seconds = window(op, a, b, probe)
        fixed, per_call = overhead(median, probe_seconds, probe, statistics.median(waits),
                                   statistics.median(dispatches))
        calls = calls_per_window(per_call, fixed)
        for _ in range(TRIES):
            readings = []
            windows = [window(op, a, b, calls, readings, sensor) for _ in range(repeats)]
            share = fixed / statistics.median(windows)
            if share <= MAX_OVERHEAD_SHARE or calls >= MAX_CALLS:
                break
            calls = min(MAX_CALLS, math.ceil(calls * share / TARGET_SHARE))
        seconds = [w / calls for w in windows]
        summary = summarise(seconds, warmups)
        rate = as_rate(summary, 2 * n**3 / 1e9, "GFLOP/s")  # the median rate: over the median time
        point = {"n": n, "latency_seconds": latency, "latency": summarise(latency, warmups),
                 "dispatch_seconds": dispatches, "wait_seconds": waits, "probe_calls": probe,
                 "probe_seconds": probe_seconds, "sync_overhead_seconds": fixed,
                 "calls_per_sync": calls, "window_seconds": windows, "overhead_share": share,
                 "window_sensor": readings if sensor is not None else None, "seconds": seconds,
                 "warmup_seconds": warmups, "summary": summary,
                 **{f"{key}_seconds": summary[key] for key in ("median", "min", "max")},
                 "gflops": rate["median"], "gflops_low": rate["min"], "gflops_high": rate["max"],
                 "first_call_seconds": warmups[0],
                 **dict.fromkeys(("unsynchronised_seconds", "unsynchronised_median_seconds",
                                  "transfer_seconds", "transfer_median_seconds"))}
        if unsynchronised:
            unwaited = timed(lambda: op(a, b), repeats)
            for _, result in unwaited:  # the queued work finishes before more is timed
                wait(result)
            point["unsynchronised_seconds"] = [s for s, _ in unwaited]
            point["unsynchronised_median_seconds"] = statistics.median(s for s, _ in unwaited)
        if transfer:
            host = [keras.ops.convert_to_numpy(x) for x in (a, b)]
            point.update(copy_fields(host, device, dtype, wait, repeats))
    return point


def sweep(device: str = "cpu", dtype: str = "float32", sizes=None, *,
          repeats: int = summaries.REPEATS, warmup: int = summaries.WARMUP,
          max_seconds: float = MAX_SECONDS, progress=None, op=None) -> dict:
    """:func:`time_matmul` of every size in one precision, skipping sizes whose call would take
    over ``max_seconds``; a precision the device lacks is ``unsupported``. Float32 sweeps also
    time calls not waited for, and on a GPU the copy of the inputs."""
    keras_device = check_device(device)
    check_dtype(dtype)
    sizes = check_sizes(sizes_for(device) if sizes is None else sizes)
    busy, started = timing.BusyMeter(), time.perf_counter()
    sensor, unsensed = open_sensor(device)
    result = {"method": METHOD, "max_overhead_share": MAX_OVERHEAD_SHARE,
              "min_window_seconds": MIN_WINDOW_SECONDS, "sensor": sensor.source if sensor else None,
              "sensor_unavailable": unsensed, "device_kind": device, "keras_device": keras_device,
              "dtype": dtype, "sizes": sizes, "points": [], "skipped": [], "unsupported": None}
    points = result["points"]
    with sensor or contextlib.nullcontext():
        for n in sizes:
            if points:
                predicted = points[-1]["latency"]["median"] * (n / points[-1]["n"]) ** 3
                if predicted > max_seconds:
                    result["skipped"].append({"n": n, "reason": f"one call would take about "
                                              f"{predicted:.0f} s (limit {max_seconds:g} s)"})
                    continue
            try:
                point = time_matmul(n, device, dtype, repeats=repeats, warmup=warmup, op=op,
                                    unsynchronised=dtype == "float32", sensor=sensor,
                                    transfer=device == "gpu" and dtype == "float32")
            except Exception as exc:  # a precision this device or backend does not support
                if points:
                    raise
                result["unsupported"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                break
            points.append(point)
            if progress:
                progress(f"{device} {dtype:8} n={n:5}: {point['gflops']:10.2f} GFLOP/s over "
                         f"{point['calls_per_sync']} call(s) a wait (median of {repeats}); one "
                         f"synchronised call {point['latency']['median'] * 1e3:.3f} ms")
    meter = busy.read()
    return {**result, "other_programs_cpu_share": meter["other_programs_cpu_share"],
            "load_average": {"start": busy.before, "end": meter["load_average_after"]},
            "wall_seconds": time.perf_counter() - started}


def sweep_record(result: dict, *, run_id: str, source: str, repeats: int,
                 warmup: int = summaries.WARMUP) -> dict:
    """The results-file record of a :func:`sweep`'s ``result``."""
    return RECORDS.record(run_id=run_id, source=source, repeats=repeats, warmup=warmup, **result)


def measure(args, *, run_id: str, done):
    """The command's run: a sweep for each device and precision asked for, yielded when made."""
    from gpulesson.experiments.cli import default_devices, refuse
    from gpulesson.machine.devices import keras_device

    sizes = check_sizes(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else None)
    repeats = args.repeats or repeats_for(args.quick)
    found = keras_device()
    devices = default_devices(args.devices, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        refuse(f"No GPU is visible to Keras ({found['backend']} backend): nothing was measured or "
               "written. Run with --devices cpu, or on a machine with a GPU.")
    if any(method not in THROUGHPUT_METHODS for *_, method in done):
        refuse(f"error: run {run_id} in {args.out} was recorded with the older method (one "
               "synchronised call a size, no throughput): start a new run, without --run-id")
    print(f"Keras backend {found['backend']}; devices: {', '.join(devices)}; sizes: "
          + "; ".join(f"{d} {' '.join(map(str, sizes or sizes_for(d)))}" for d in devices)
          + f"; {repeats} timed calls and windows each", flush=True)
    for device in devices:
        for dtype in args.dtypes:
            if {(device, dtype, method) for method in THROUGHPUT_METHODS} & done:
                print(f"{device} {dtype}: recorded in run {run_id} already", flush=True)
                continue
            result = sweep(device, dtype, sizes, repeats=repeats, max_seconds=args.max_seconds,
                           progress=lambda line: print(line, flush=True))
            yield sweep_record(result, run_id=run_id, source="gpulesson.experiments.matmul", repeats=repeats)


# --- what a sweep's records say ------------------------------------------------------------------

def amortised(record: dict) -> bool:
    """Whether a sweep measured throughput over windows of calls, not only latency."""
    return record.get("method") in THROUGHPUT_METHODS


def find(records, device: str, dtype: str = "float32") -> dict | None:
    return RECORDS.find(records, device_kind=device, dtype=dtype)


def points(records, device: str, dtype: str = "float32") -> list[dict]:
    """The sizes of the sweep on ``device`` in ``dtype``, smallest first; [] without one."""
    record = find(records, device, dtype)
    return sorted(record["points"], key=lambda p: p["n"]) if record else []


def point_summary(point: dict | None, samples: str = "seconds") -> dict | None:
    """A size's time per call, or its other ``samples`` (the latency, calls not waited for, the
    copy): the summary kept, else one of the samples; None where only a median was kept."""
    if not point:
        return None
    return summary_of(point, samples, warmup_key=None, first_is_warmup=False, key=_KEPT.get(samples, ""))


def rate_summary(point: dict | None, samples: str = "seconds", unit: str = "GFLOP/s") -> dict | None:
    """:func:`point_summary` as GFLOP/s, or TFLOP/s (the unit of episode 6's page and figure)."""
    summary = point_summary(point, samples)
    return as_rate(summary, 2 * point["n"] ** 3 / _SCALE[unit], unit) if summary else None


def _float32_mode(record: dict) -> str:
    return str((record.get("float32_precision") or {}).get("matmul") or "float32")


def precision_label(record: dict) -> str:
    """"bfloat16", "float32", or "float32 (TF32)" where the float32 products ran in TF32."""
    mode = _float32_mode(record)
    return (f"float32 ({mode.upper()})" if record.get("dtype") == "float32" and mode != "float32"
            else record.get("dtype", "?"))


def published_peak(record: dict) -> dict | None:
    """The vendor's dense peak for a GPU sweep's card and precision in force, if known."""
    from gpulesson.machine import gpu_peaks

    if record.get("device_kind") != "gpu":
        return None
    name = (record.get("gpu") or {}).get("name") or record.get("device")
    peaks, card, dtype = gpu_peaks.peaks_for(name), gpu_peaks.card(name), record.get("dtype")
    key = _PEAK_KEYS.get(_float32_mode(record) if dtype == "float32" else dtype)
    if not peaks or key not in peaks:
        return None
    return {"gflops": peaks[key] * 1e3, "precision": key, "card": card, "source": gpu_peaks.SOURCES[card]}


def crossover(records, dtype: str = "float32") -> int | None:
    """The smallest size from which the GPU was measurably faster at every larger size, in the
    sweeps of one run; None when it was not at the largest."""
    if len({r.get("run_id") for r in records}) > 1:
        raise ValueError("the records come from several runs: compare the sweeps of one run_id")
    if not all(amortised(r) for r in records):
        raise ValueError("the records time one synchronised call each (an older method), not "
                         "the throughput: record a new run with python -m "
                         "gpulesson.experiments.matmul")
    cpu, gpu = find(records, "cpu", dtype), find(records, "gpu", dtype)
    if cpu is None or gpu is None:
        missing = " and ".join(d.upper() for d, r in (("cpu", cpu), ("gpu", gpu)) if r is None)
        raise ValueError(f"no {missing} sweep in {dtype}: the crossover needs both")
    cpu_points, gpu_points = ({p["n"]: p for p in r["points"]} for r in (cpu, gpu))
    found = None
    for n in sorted(cpu_points.keys() & gpu_points.keys(), reverse=True):
        rates = rate_summary(gpu_points[n]), rate_summary(cpu_points[n])
        verdict = all(rates) and compare(*rates, higher_is_better=True)
        if not (verdict and verdict.measurable and verdict.word == "faster"):
            break
        found = n
    return found


def crossover_text(records, dtype: str = "float32") -> str:
    """The crossover in words, or NOT_RECORDED."""
    gpu = find(records, "gpu", dtype)
    if find(records, "cpu", dtype) is None or gpu is None or not all(map(amortised, records)):
        return NOT_RECORDED
    n, sizes = crossover(records, dtype), [p["n"] for p in gpu["points"]]
    if n is None:
        return (f"none: at n = {max(sizes):,}, the largest size, the GPU was not measurably "
                "faster than the CPU")
    if n == min(sizes):
        return f"n = {n:,} or smaller: the GPU was faster at every size measured"
    return f"n = {n:,}"


def crossover_line(records, dtype: str = "float32") -> str:
    """The crossover as a notebook prints it, saying why where there is none to give."""
    why = crossover_text(records, dtype) if any(map(is_gpu, records)) else "no GPU sweep in these records"
    return f"GPU faster ({dtype}) from: {why}"


def fixed_cost(records) -> dict | None:
    """The sizes of the GPU's float32 sweep whose time per call stayed within :data:`FLOOR_FACTOR`
    of the smallest's while the arithmetic grew as n³ (a fixed cost per call set their rate), the
    range of their medians, and the first and last size's summaries."""
    record = find(records, "gpu")
    if not record or not amortised(record):
        return None
    found = [(p["n"], s) for p in record["points"] if (s := point_summary(p))]
    flat = list(takewhile(lambda each: each[1]["median"] <= FLOOR_FACTOR * found[0][1]["median"], found))
    medians = [s["median"] for _, s in flat]
    return {"sizes": [n for n, _ in flat], "low": min(medians), "high": max(medians),
            "ends": (flat[0], flat[-1])} if len(flat) > 1 else None


def fixed_cost_words(floor: dict) -> str:
    """The GPU's float32 fixed cost per call: the range of its medians, and whether it was flat."""
    (first, a), (last, b) = floor["ends"]
    verdict = compare(b, a)
    flat = (f"a call at n = {last:,} was {verdict.text} at n = {first:,}" if verdict.measurable
            else f"{NO_DIFFERENCE} between n = {first:,} and n = {last:,}")
    return (f"{duration(floor['low'])}–{duration(floor['high'])} a call (medians) at every n from "
            f"{first:,} to {last:,}, while the arithmetic grew {(last / first) ** 3:,.0f}-fold; {flat}")


def sync_beside_windows(records) -> tuple[str, str]:
    """``(rate, words)``: the best median rate of one synchronised float32 call on the GPU, and
    that call beside a call in a window of its size, with the sizes from which every GPU sweep's
    first window was the fastest of its size; NOT_RECORDED twice without a GPU sweep of windows."""
    found = [p for p in points(records, "gpu") if point_summary(p, "latency_seconds") and point_summary(p)]
    if not found:
        return NOT_RECORDED, NOT_RECORDED
    best = max(found, key=lambda p: rate_summary(p, "latency_seconds")["median"])
    (one, a), (many, b) = ((point_summary(best, s), rate_summary(best, s, "TFLOP/s")["median"])
                           for s in ("latency_seconds", "seconds"))
    verdict, rate = compare(one, many), f"{summaries.fmt_number(a)} TFLOP/s"
    windows = [p for r in records if is_gpu(r) for p in r["points"] if len(p["seconds"]) > 1]
    later = max((p["n"] for p in windows if p["seconds"][0] > min(p["seconds"])), default=0)
    start = min((p["n"] for p in windows if p["n"] > later), default=None)
    return f"{rate} at n = {best['n']:,}", (
        f"One synchronised call reached its best median rate at n = {best['n']:,}: "
        f"{summaries.summary_text(one, duration)}, {rate}, "
        + (f"{verdict.text} a call in a window there" if verdict.measurable
           else f"with {NO_DIFFERENCE} from a call in a window there")
        + f", which took {summaries.summary_text(many, duration)}, {summaries.fmt_number(b)} TFLOP/s."
        + (f" In every GPU sweep, at each n from {start:,} up, the first of the windows was the "
           "fastest." if start else "")
        + (" A clock or power that fell as the card stayed busy would explain this: the single "
           "calls ran before the windows." if start or verdict.word == "faster" else ""))


def dtype_by_size(records, device: str, dtype: str) -> dict[str, list[int]]:
    """The sizes at which ``dtype`` was "faster", "slower" or no different from float32."""
    base = {p["n"]: p for p in points(records, device)}
    groups: dict[str, list[int]] = {}
    for p in points(records, device, dtype):
        a, b = point_summary(p), point_summary(base.get(p["n"]))
        if a and b:
            verdict = compare(a, b)
            groups.setdefault(verdict.word if verdict.measurable else NO_DIFFERENCE, []).append(p["n"])
    return {key: groups[key] for key in ("faster", "slower", NO_DIFFERENCE) if key in groups}


def rate_text(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 1 else f"{value:.3f}"


def describe(records) -> str:
    """The sweeps of one run as tables of GFLOP/s and of latency per size, and the crossover."""
    if not records:
        return "No run recorded."
    lines = [f"Run {records[0].get('run_id', '?')}: {software(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in hardware(records).items())]
    columns = [r for r in records if r["points"]]
    heads = [f"{r['device_kind'].upper()} {precision_label(r)}" for r in columns]
    for head, cell in (("Throughput, GFLOP/s (median over windows of calls, one wait a window)",
                        lambda p: rate_text(p["gflops"])),
                       ("Latency of one synchronised call (median)",
                        lambda p: duration(s["median"])
                        if (s := point_summary(p, "latency_seconds")) else "-")):
        lines += [f"{head} per matrix size n:", f"{'n':>6}" + "".join(f"{h:>19}" for h in heads)]
        for n in sorted({p["n"] for r in columns for p in r["points"]}):
            found = [next((p for p in r["points"] if p["n"] == n), None) for r in columns]
            lines.append(f"{n:>6}" + "".join(f"{cell(p) if p else '-':>19}" for p in found))
    for r in records:
        what = f"{r['device_kind'].upper()} {r['dtype']}"
        if r.get("unsupported"):
            lines.append(f"{what}: not supported here ({r['unsupported']})")
        lines += [f"{what}: n = {skip['n']} skipped, {skip['reason']}"
                  for skip in r.get("skipped", [])]
    lines.append(crossover_line(records))
    busy = max(r.get("other_programs_cpu_share") or 0 for r in records)
    if busy > BUSY:
        lines.append(f"Note: other programs used up to {busy:.0%} of the CPU time during a "
                     "sweep: the numbers may be too low (CPU) or noisy.")
    return "\n".join(lines)
