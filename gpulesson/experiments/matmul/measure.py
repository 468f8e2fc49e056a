"""Timing a matrix multiplication on one device: the sizes, precisions and rates, and a sweep.

Each size is measured in two ways, after one recorded warm-up call (compiling, caching, the
first allocation), by the lesson's measurement rule (:mod:`gpulesson.experiments.common`):

- **Latency**: :data:`REPEATS` calls, each timed until its result is there (:func:`wait`),
  because GPU frameworks, and JAX also on the CPU, return from a call before the work is done.
  A synchronised call pays the fixed cost of a round trip to the device (the call's dispatch,
  the wait, the fetch of one number) on top of the work: that is its latency, kept as such
  (``latency_seconds``, ``latency``).
- **Throughput**: :data:`REPEATS` windows of ``k`` calls queued one after another and one wait
  at the end (``calls_per_sync``, ``window_seconds``), the time per call being the window over
  ``k`` (``seconds``, ``summary``, ``gflops``). ``k`` is chosen from the latency calls
  (:func:`calls_per_window`): the fixed cost of one synchronisation (``sync_overhead_seconds``,
  :func:`synchronised_call`: a call's dispatch plus a wait for a result that is already
  there) must be under :data:`MAX_OVERHEAD_SHARE` of the window (``overhead_share``), and
  every window lasts at least :data:`MIN_WINDOW_SECONDS`. On a GPU each window keeps the SM
  clock and board power that NVML showed while it ran (``window_sensor``,
  :mod:`~gpulesson.experiments.matmul.sensors`), so a window slowed by clock or power droop
  can be told from one slowed by the work.

A multiplication of two n x n matrices takes 2 n^3 floating-point operations, so its rate is
2 n^3 / t (:func:`gflops`). Keras is imported only when something is measured.
"""

from __future__ import annotations

import math
import statistics
import time

from gpulesson.devices import keras_device_name as check_device
from gpulesson.experiments import common
from gpulesson.experiments.common import summarise
from gpulesson.experiments.matmul.copies import copy_fields
from gpulesson.experiments.matmul.sensors import open_sensor

DTYPES = ("float32", "bfloat16", "float16")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
# A GPU's large products take milliseconds: its sweep goes on to n = 16,384 (2 GB of float32
# inputs). The CPU stays at SIZES, and MAX_SECONDS skips its sizes on a slow machine.
GPU_SIZES = (*SIZES, 8192, 16384)
QUICK_SIZES = (16, 32, 64, 128, 256)
# REPEATS timed calls (latency) and windows (throughput) per size (QUICK_REPEATS in quick mode)
# after WARMUP warm-up call(s): the lesson's rule. On the lesson's 2-core reference CPU a whole
# float32 sweep of SIZES with 5 repeats took 9 to 13 s (``wall_seconds`` in results/matmul.jsonl),
# n = 4,096 most of it; there one call is long enough, so the windows add little.
REPEATS, QUICK_REPEATS, WARMUP = common.REPEATS, common.QUICK_REPEATS, common.WARMUP
MAX_SECONDS = 20.0  # larger sizes are skipped once one call would take longer than this
# The method of the records this module makes (the record's ``method``): latency and throughput
# apart. Records without it timed one synchronised call and called it the rate.
# "windows": windows of at least MIN_WINDOW_SECONDS, the GPU's SM clock and power per window,
# the copy from pinned and from pageable memory. "amortised" records chose their windows by
# the share of one wait alone, down to a few milliseconds.
METHOD = "windows"
MAX_OVERHEAD_SHARE = 0.05  # the fixed cost of a synchronisation: at most this share of a window
TARGET_SHARE = MAX_OVERHEAD_SHARE / 2  # what k is chosen for, so that noise stays under the limit
MAX_CALLS = 200_000  # at most this many calls in one window
# Every window lasts at least this long: a card's clock and power settle over tenths of a
# second, and NVML's power reading is itself an average over a similar time.
MIN_WINDOW_SECONDS = 0.5
TRIES = 3  # windows re-chosen at most this many times when a share came out too large
PROBE_CALLS, PROBE_SECONDS = 32, 0.01  # the probe window: 2 to 32 calls, about 10 ms of them


def sizes_for(device: str) -> tuple[int, ...]:
    """The default sizes of a sweep on ``device``: up to 16,384 on a GPU, 4,096 on the CPU."""
    check_device(device)
    return SIZES if device == "cpu" else GPU_SIZES


def check_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    return dtype


def check_sizes(sizes) -> list[int]:
    """The sizes as a sorted list of distinct whole numbers, each at least 1."""
    sizes = list(sizes)
    if not sizes:
        raise ValueError("no matrix sizes given")
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"a matrix size must be a whole number of at least 1, not {n!r}")
    return sorted(set(sizes))


def gflops(n: int, seconds: float) -> float:
    """The rate of one n x n by n x n multiplication that took ``seconds``: 2 n^3 / t, in
    billions of floating-point operations per second (n^3 multiplications and as many
    additions)."""
    check_sizes([n])
    if not seconds > 0:
        raise ValueError(f"the time must be positive, not {seconds!r}")
    return 2 * n**3 / seconds / 1e9


def wait(result):
    """Wait until ``result`` has been computed, on any backend and device.

    Fetching a number to the host's memory can only finish once the work that makes it is
    done, so converting one element to NumPy waits for the whole multiplication (a GPU runs
    its queued work in order). One element, not the whole matrix: the wait must not add a
    copy of n^2 numbers to the time.
    """
    import keras

    corner = result[(slice(0, 1),) * len(result.shape)]
    return keras.ops.convert_to_numpy(corner)


def make_inputs(n: int, device: str = "cpu", dtype: str = "float32", seed: int = 0):
    """Two random n x n matrices of ``dtype``, created on ``device`` ("cpu" or "gpu")."""
    import keras

    name = check_device(device)
    check_sizes([n])
    check_dtype(dtype)
    with keras.device(name):
        a = keras.random.normal((n, n), seed=seed)
        b = keras.random.normal((n, n), seed=seed + 1)
        return keras.ops.cast(a, dtype), keras.ops.cast(b, dtype)


def _clock(op, a, b, synchronise: bool):
    start = time.perf_counter()
    result = op(a, b)
    if synchronise:
        wait(result)
    return time.perf_counter() - start, result


def window(op, a, b, calls: int, readings: list | None = None, sensor=None) -> float:
    """The seconds of ``calls`` calls queued one after another and one wait for the last: a
    device runs its queued work in order, so the last result is there only when all are.
    With a ``sensor`` (:mod:`~gpulesson.experiments.matmul.sensors`), the window's clock and
    power are appended to ``readings``."""
    start = time.perf_counter()
    for _ in range(calls):
        result = op(a, b)
    wait(result)
    end = time.perf_counter()
    if sensor is not None:
        readings.append(sensor.window(start, end))
    return end - start


def synchronised_call(op, a, b) -> tuple[float, float, float]:
    """``(latency, dispatch, wait)`` of one call that waits for its result: the seconds until
    the result is there, the seconds until the call returned, and the seconds of a second
    wait, for a result that is already there (its slice, the fetch of one number): the least
    that a synchronisation costs."""
    start = time.perf_counter()
    result = op(a, b)
    returned = time.perf_counter()
    wait(result)
    done = time.perf_counter()
    wait(result)
    return done - start, returned - start, time.perf_counter() - done


def probe_calls(latency: float) -> int:
    """The calls of the probe window: at least 2, up to :data:`PROBE_CALLS` where the calls are
    short (about :data:`PROBE_SECONDS` of synchronised calls)."""
    return max(2, min(PROBE_CALLS, math.ceil(PROBE_SECONDS / latency)))


def overhead(latency: float, probe: float, calls: int, wait_seconds: float,
             dispatch: float) -> tuple[float, float]:
    """``(fixed cost of one synchronisation, time of one call once calls queue up)`` from the
    median ``latency`` of a synchronised call and a ``probe`` window of ``calls`` calls:
    a window of k calls takes about ``overhead + k * per_call``, so two windows (1 call, and
    ``calls``) give both. The overhead is at least ``wait_seconds``, the cost of a wait for a
    result that is already there, and at most that plus ``dispatch``, the time until a call
    returns (so that noise on a busy machine cannot make it larger). A backend that computes
    before a call returns (TensorFlow on the CPU) shows no overhead beyond the wait."""
    if calls < 2 or latency <= 0 or probe <= 0:
        raise ValueError(f"a probe needs at least 2 calls and positive times, not {calls}, "
                         f"{latency!r} and {probe!r}")
    per_call = (probe - latency) / (calls - 1)
    if per_call <= 0:  # noise: the probe was not longer than one call
        per_call = probe / calls
    return max(wait_seconds, min(latency - per_call, dispatch + wait_seconds)), per_call


def calls_per_window(per_call: float, overhead_seconds: float, *, share: float = TARGET_SHARE,
                     max_calls: int = MAX_CALLS, min_seconds: float = MIN_WINDOW_SECONDS) -> int:
    """How many calls a window needs, when a call costs ``per_call`` once calls queue up: so
    many that ``overhead_seconds`` (one synchronisation) is at most ``share`` of it, and that
    it lasts at least ``min_seconds``; at most ``max_calls``."""
    if per_call <= 0 or overhead_seconds < 0:
        raise ValueError(f"the time of a call must be positive and the overhead not negative, "
                         f"not {per_call!r} and {overhead_seconds!r}")
    by_share = math.ceil(overhead_seconds * (1 - share) / (share * per_call))
    by_time = math.ceil(min_seconds / per_call)
    return max(1, min(max(by_share, by_time), max_calls))


def _amortised(op, a, b, latency: list[float], dispatches: list[float], waits: list[float],
               repeats: int, sensor=None) -> dict:
    """The windows of one size: a probe window, then ``repeats`` windows of
    :func:`calls_per_window` calls, re-chosen with more calls while the overhead's share of the
    median window is above :data:`MAX_OVERHEAD_SHARE`."""
    median = statistics.median(latency)
    probe = probe_calls(median)
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
    return {"probe_calls": probe, "probe_seconds": probe_seconds,
            "sync_overhead_seconds": fixed, "calls_per_sync": calls, "window_seconds": windows,
            "overhead_share": fixed / statistics.median(windows),
            "window_sensor": readings if sensor is not None else None}


def time_matmul(n: int, device: str = "cpu", dtype: str = "float32", *, repeats: int = REPEATS,
                warmup: int = WARMUP, unsynchronised: bool = False, transfer: bool = False,
                op=None, sensor=None) -> dict:
    """Time ``op(a, b)`` (default ``keras.ops.matmul``) for n x n inputs on ``device``.

    ``warmup`` calls first, each timed and kept (``warmup_seconds``; the first one also as
    ``first_call_seconds``). Then the latency: ``repeats`` calls that each wait for their result
    (``latency_seconds`` and their ``latency`` summary). Then the throughput: ``repeats``
    windows of ``calls_per_sync`` calls (``window_seconds``), each with one wait at its end,
    so that the fixed cost of a synchronisation (``sync_overhead_seconds``, :func:`overhead`
    from the latency, a probe window of ``probe_calls`` calls lasting ``probe_seconds``, and the
    latency calls' dispatch and second waits, ``dispatch_seconds`` and ``wait_seconds``) is
    at most :data:`MAX_OVERHEAD_SHARE`
    of a window (``overhead_share``).
    The time per call of each window (``seconds``) and its ``summary``
    (:func:`~gpulesson.experiments.common.summarise`: median, range, the warm-up apart), the
    median, minimum and maximum, and GFLOP/s from the median (``gflops``) and from the slowest
    and fastest window (``gflops_low``, ``gflops_high``) are the throughput.
    ``unsynchronised``: also time ``repeats`` calls that do not wait (the mistake;
    ``unsynchronised_seconds`` and their median).
    ``transfer``: also time copying both inputs to ``device`` from pageable and from pinned
    host memory (:func:`~gpulesson.experiments.matmul.copies.copy_fields`).
    ``sensor``: a :class:`~gpulesson.experiments.matmul.sensors.WindowSensor` whose clock and
    power readings of each window are kept (``window_sensor``).
    """
    import keras

    op = op or keras.ops.matmul
    if repeats < 1 or warmup < 1:
        raise ValueError(f"repeats and warmup must be at least 1, not {repeats} and {warmup}")
    a, b = make_inputs(n, device, dtype)
    with keras.device(check_device(device)):
        warmups = [_clock(op, a, b, synchronise=True)[0] for _ in range(warmup)]
        calls = [synchronised_call(op, a, b) for _ in range(repeats)]
        latency, dispatches, waits = (list(column) for column in zip(*calls, strict=True))
        found = _amortised(op, a, b, latency, dispatches, waits, repeats, sensor)
        seconds = [w / found["calls_per_sync"] for w in found["window_seconds"]]
        point = {
            "n": n,
            "latency_seconds": latency,
            "latency": summarise(latency, warmups),
            "dispatch_seconds": dispatches,
            "wait_seconds": waits,
            **found,
            "seconds": seconds,
            "warmup_seconds": warmups,
            "summary": summarise(seconds, warmups),
            "median_seconds": statistics.median(seconds),
            "min_seconds": min(seconds),
            "max_seconds": max(seconds),
            "gflops": gflops(n, statistics.median(seconds)),
            "gflops_low": gflops(n, max(seconds)),
            "gflops_high": gflops(n, min(seconds)),
            "first_call_seconds": warmups[0],
            "unsynchronised_seconds": None,
            "unsynchronised_median_seconds": None,
            "transfer_seconds": None,
            "transfer_median_seconds": None,
        }
        if unsynchronised:
            calls = [_clock(op, a, b, synchronise=False) for _ in range(repeats)]
            # Let the queued work finish before anything else is timed.
            for _, result in calls:
                wait(result)
            point["unsynchronised_seconds"] = [s for s, _ in calls]
            point["unsynchronised_median_seconds"] = statistics.median(s for s, _ in calls)
        if transfer:
            host = [keras.ops.convert_to_numpy(x) for x in (a, b)]
            point.update(copy_fields(host, device, dtype, wait, repeats))
    return point


def sweep(device: str = "cpu", dtype: str = "float32", sizes=None, *, repeats: int = REPEATS,
          warmup: int = WARMUP, max_seconds: float = MAX_SECONDS, unsynchronised: bool | None = None,
          transfer: bool | None = None, progress=None, op=None) -> dict:
    """Time the multiplication on one device in one precision for every size (default
    :func:`sizes_for` the device), by :func:`time_matmul`: latency and throughput.

    Sizes whose one call would take longer than ``max_seconds`` (predicted from the previous
    size, as time grows like n^3) are skipped and listed in ``skipped``. A precision the
    device or backend cannot multiply in is reported in ``unsupported`` (the error), not
    raised. By default float32 sweeps also time the unsynchronised mistake, and float32 GPU
    sweeps the copy of the inputs to the GPU (the page shows that one). ``progress``: a
    function called with one line per size; ``op``: what to time instead of
    ``keras.ops.matmul`` (see :func:`time_matmul`). The load
    average (``os.getloadavg``) before and after the sweep is kept in ``load_average``.
    """
    keras_device = check_device(device)
    check_dtype(dtype)
    sizes = check_sizes(sizes_for(device) if sizes is None else sizes)
    if unsynchronised is None:
        unsynchronised = dtype == "float32"
    if transfer is None:
        transfer = device == "gpu" and dtype == "float32"
    busy, started = common.BusyMeter(), time.perf_counter()
    sensor, unsensed = open_sensor(device)
    result = {"method": METHOD, "max_overhead_share": MAX_OVERHEAD_SHARE,
              "min_window_seconds": MIN_WINDOW_SECONDS,
              "sensor": sensor.source if sensor else None, "sensor_unavailable": unsensed,
              "device_kind": device, "keras_device": keras_device, "dtype": dtype,
              "sizes": sizes, "points": [], "skipped": [], "unsupported": None,
              "other_programs_cpu_share": None,
              "load_average": {"start": busy.before, "end": None}}
    if sensor:
        sensor.__enter__()
    try:
        _measure_sizes(result, sizes, device, dtype, repeats, warmup, max_seconds,
                       unsynchronised, transfer, progress, op, sensor)
    finally:
        if sensor:
            sensor.__exit__(None, None, None)
    meter = busy.read()
    result["other_programs_cpu_share"] = meter["other_programs_cpu_share"]
    result["wall_seconds"] = time.perf_counter() - started
    result["load_average"]["end"] = meter["load_average_after"]
    return result


def _measure_sizes(result, sizes, device, dtype, repeats, warmup, max_seconds, unsynchronised,
                   transfer, progress, op, sensor) -> None:
    """The sweep's sizes in turn, into ``result`` (see :func:`sweep`)."""
    for n in sizes:
        points = result["points"]
        if points:
            last = points[-1]
            predicted = last["latency"]["median"] * (n / last["n"]) ** 3
            if predicted > max_seconds:
                result["skipped"].append(
                    {"n": n, "reason": f"one call would take about {predicted:.0f} s "
                                       f"(limit {max_seconds:g} s)"})
                continue
        try:
            point = time_matmul(n, device, dtype, repeats=repeats, warmup=warmup,
                                unsynchronised=unsynchronised, transfer=transfer, op=op,
                                sensor=sensor)
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
