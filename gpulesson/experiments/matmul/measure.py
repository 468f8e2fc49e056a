"""Timing a matrix product on one device after a recorded warm-up: the **latency** of calls
each waited for (:func:`wait`), and the **throughput** of windows of queued calls with one wait,
long enough for that wait to be a small share; on a GPU with the SM clock and power of each
window. Keras is imported only when something is measured."""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import threading
import time

from gpulesson.experiments import common
from gpulesson.experiments.common import summarise
from gpulesson.machine.devices import keras_device_name as check_device
from gpulesson.records.recordset import RecordSet

# One record a sweep of random inputs; a run that goes on skips the sweeps it has, and the
# method tells the throughput methods' records from the oldest's (synchronised calls only).
RECORDS = RecordSet("matmul", ("device_kind", "dtype", "method"), data="random")
DTYPES = ("float32", "bfloat16", "float16")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
GPU_SIZES = (*SIZES, 8192, 16384)  # a GPU's large products take milliseconds
QUICK_SIZES = (16, 32, 64, 128, 256)
REPEATS, QUICK_REPEATS, WARMUP = common.REPEATS, common.QUICK_REPEATS, common.WARMUP
MAX_SECONDS = 20.0  # larger sizes are skipped once one call would take longer than this
METHOD = "windows"  # the record's method
# The throughput methods, newest first; "amortised" chose its windows by one wait's share alone.
THROUGHPUT_METHODS = (METHOD, "amortised")
MAX_OVERHEAD_SHARE = 0.05  # the fixed cost of a synchronisation: at most this share of a window
TARGET_SHARE = MAX_OVERHEAD_SHARE / 2  # what k is chosen for, so that noise stays under the limit
MAX_CALLS = 200_000  # at most this many calls in one window
MIN_WINDOW_SECONDS = 0.5  # clock, power and NVML's power reading settle over tenths of a second
TRIES = 3  # windows re-chosen at most this many times when a share came out too large
PROBE_CALLS, PROBE_SECONDS = 32, 0.01  # the probe window: 2 to 32 calls, about 10 ms of them
POLL_SECONDS = 0.02  # NVML sampled this often: a 0.5 s window holds about 25 samples


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


class WindowSensor:
    """The GPU's SM clock and board power from NVML, sampled every ``poll`` s while entered."""

    source = "NVML (SM clock, board power)"

    def __init__(self, nvml, handle, poll: float | None = POLL_SECONDS, clock=time.perf_counter):
        self.nvml, self.handle, self.poll, self.clock = nvml, handle, poll, clock
        self.samples: list[tuple[float, float, float]] = []
        self._stop, self._thread = threading.Event(), None

    def sample(self) -> None:
        clock = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        watts = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000  # reported in mW
        self.samples.append((self.clock(), float(clock), float(watts)))

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.sample()

    def __enter__(self):
        if self.poll:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def window(self, start: float, end: float) -> dict:
        """A window's clock and power; one without a sample inside is sampled now."""
        inside = [s for s in list(self.samples) if start < s[0] <= end]
        if not inside:
            self.sample()
            inside = self.samples[-1:]
        clocks, watts = [s[1] for s in inside], [s[2] for s in inside]
        return {"sm_clock_mhz": statistics.fmean(clocks), "sm_clock_min_mhz": min(clocks),
                "watts": statistics.fmean(watts), "samples": len(inside)}


def open_sensor(device: str):
    """``(sensor, None)`` for the first GPU that NVML can read, else ``(None, reason)``."""
    if device != "gpu":
        return None, "the CPU's clock and power are not sampled"
    from gpulesson.machine.energy import _nvml_handle

    try:
        sensor = WindowSensor(*_nvml_handle())
        sensor.sample()  # fails here, not mid-sweep, where NVML cannot read it
        sensor.samples.clear()
    except Exception as exc:  # no pynvml, no driver, not an NVIDIA GPU
        return None, f"NVML could not be read: {type(exc).__name__}: {str(exc)[:120]}"
    return sensor, None


def _timed(call, repeats: int) -> list[tuple[float, object]]:
    found = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        found.append((time.perf_counter() - start, result))
    return found


def copy_fields(host, device: str, dtype: str, wait, repeats: int) -> dict:
    """The seconds of copying the NumPy arrays ``host`` to the device from pageable memory, and
    with JAX, from pinned memory, which the GPU reads over the link directly."""
    import keras

    def pageable():
        for x in [keras.ops.convert_to_tensor(x, dtype=dtype) for x in host]:
            wait(x)

    copies = [s for s, _ in _timed(pageable, repeats)]
    fields = {"transfer_memory": "pageable", "transfer_bytes": int(sum(x.nbytes for x in host)),
              "transfer_seconds": copies, "transfer_median_seconds": statistics.median(copies),
              "pinned_transfer_seconds": None, "pinned_transfer_median_seconds": None}
    try:
        if keras.backend.backend() != "jax":
            raise NotImplementedError("pinned copies are measured with the JAX backend only")
        import jax
        from jax.sharding import SingleDeviceSharding

        target = jax.devices(device)[0]
        staged = [jax.device_put(x, SingleDeviceSharding(target, memory_kind="pinned_host"))
                  for x in host]  # put into pinned memory once, before the clock starts
        jax.block_until_ready(staged)
        on_device = SingleDeviceSharding(target, memory_kind="device")
        found = [s for s, _ in _timed(lambda: jax.block_until_ready(
            [jax.device_put(x, on_device) for x in staged]), repeats)]
    except Exception as exc:  # a backend or device without pinned host memory
        return {**fields, "pinned_transfer_unsupported": f"{type(exc).__name__}: {str(exc)[:160]}"}
    return {**fields, "pinned_transfer_seconds": found, "pinned_transfer_unsupported": None,
            "pinned_transfer_median_seconds": statistics.median(found)}


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
    if calls < 2 or latency <= 0 or probe <= 0:
        raise ValueError(f"a probe needs at least 2 calls and positive times, not {calls}, "
                         f"{latency!r} and {probe!r}")
    per_call = (probe - latency) / (calls - 1)
    if per_call <= 0:  # noise: the probe was not longer than one call
        per_call = probe / calls
    return max(wait_seconds, min(latency - per_call, dispatch + wait_seconds)), per_call


def calls_per_window(per_call: float, overhead_seconds: float, *, share: float = TARGET_SHARE,
                     max_calls: int = MAX_CALLS, min_seconds: float = MIN_WINDOW_SECONDS) -> int:
    """The calls a window needs for one wait to be ``share`` of it and to last ``min_seconds``."""
    if per_call <= 0 or overhead_seconds < 0:
        raise ValueError(f"the time of a call must be positive and the overhead not negative, "
                         f"not {per_call!r} and {overhead_seconds!r}")
    by_share = math.ceil(overhead_seconds * (1 - share) / (share * per_call))
    by_time = math.ceil(min_seconds / per_call)
    return max(1, min(max(by_share, by_time), max_calls))


def _amortised(op, a, b, latency: list[float], dispatches: list[float], waits: list[float],
               repeats: int, sensor=None) -> dict:
    """A probe window, then the windows, longer while the overhead's share is too large."""
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
    return {"probe_calls": probe, "probe_seconds": probe_seconds,
            "sync_overhead_seconds": fixed, "calls_per_sync": calls, "window_seconds": windows,
            "overhead_share": fixed / statistics.median(windows),
            "window_sensor": readings if sensor is not None else None}


def time_matmul(n: int, device: str = "cpu", dtype: str = "float32", *, repeats: int = REPEATS,
                warmup: int = WARMUP, unsynchronised: bool = False, transfer: bool = False,
                op=None, sensor=None) -> dict:
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
        warmups = [s for s, _ in _timed(lambda: wait(op(a, b)), warmup)]
        calls = [synchronised_call(op, a, b) for _ in range(repeats)]
        latency, dispatches, waits = (list(column) for column in zip(*calls, strict=True))
        found = _amortised(op, a, b, latency, dispatches, waits, repeats, sensor)
        seconds = [w / found["calls_per_sync"] for w in found["window_seconds"]]
        point = {"n": n, "latency_seconds": latency, "latency": summarise(latency, warmups),
                 "dispatch_seconds": dispatches, "wait_seconds": waits, **found,
                 "seconds": seconds, "warmup_seconds": warmups,
                 "summary": summarise(seconds, warmups),
                 "median_seconds": statistics.median(seconds), "min_seconds": min(seconds),
                 "max_seconds": max(seconds), "gflops": gflops(n, statistics.median(seconds)),
                 "gflops_low": gflops(n, max(seconds)), "gflops_high": gflops(n, min(seconds)),
                 "first_call_seconds": warmups[0],
                 **dict.fromkeys(("unsynchronised_seconds", "unsynchronised_median_seconds",
                                  "transfer_seconds", "transfer_median_seconds"))}
        if unsynchronised:
            calls = _timed(lambda: op(a, b), repeats)
            for _, result in calls:  # the queued work finishes before more is timed
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
    """:func:`time_matmul` of every size in one precision, skipping sizes whose call would take
    over ``max_seconds``; a precision the device lacks is ``unsupported``. Float32 sweeps also
    time calls not waited for, and on a GPU the copy of the inputs."""
    keras_device = check_device(device)
    check_dtype(dtype)
    sizes = check_sizes(sizes_for(device) if sizes is None else sizes)
    unsynchronised = dtype == "float32" if unsynchronised is None else unsynchronised
    transfer = device == "gpu" and dtype == "float32" if transfer is None else transfer
    busy, started = common.BusyMeter(), time.perf_counter()
    sensor, unsensed = open_sensor(device)
    result = {"method": METHOD, "max_overhead_share": MAX_OVERHEAD_SHARE,
              "min_window_seconds": MIN_WINDOW_SECONDS,
              "sensor": sensor.source if sensor else None, "sensor_unavailable": unsensed,
              "device_kind": device, "keras_device": keras_device, "dtype": dtype,
              "sizes": sizes, "points": [], "skipped": [], "unsupported": None,
              "other_programs_cpu_share": None,
              "load_average": {"start": busy.before, "end": None}}
    points = result["points"]
    with sensor or contextlib.nullcontext():
        for n in sizes:
            if points:
                predicted = points[-1]["latency"]["median"] * (n / points[-1]["n"]) ** 3
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
    meter = busy.read()
    result["other_programs_cpu_share"] = meter["other_programs_cpu_share"]
    result["wall_seconds"] = time.perf_counter() - started
    result["load_average"]["end"] = meter["load_average_after"]
    return result


def sweep_record(result: dict, *, run_id: str, source: str, repeats: int,
                 warmup: int = WARMUP) -> dict:
    """The results-file record of a :func:`sweep`'s ``result``."""
    return RECORDS.record(run_id=run_id, source=source, repeats=repeats, warmup=warmup, **result)


def measure(args, *, run_id: str, done):
    """The command's run: a sweep for each device and precision asked for, yielded when made."""
    from gpulesson.experiments.cli import default_devices, repeats_for
    from gpulesson.machine.devices import keras_device

    sizes = check_sizes(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else None)
    repeats = args.repeats or repeats_for(args.quick)
    found = keras_device()
    devices = default_devices(args.devices, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing was measured or "
              "written. Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        raise SystemExit(2)
    if any(method not in THROUGHPUT_METHODS for *_, method in done):
        print(f"error: run {run_id} in {args.out} was recorded with the older method (one "
              "synchronised call a size, no throughput): start a new run, without --run-id",
              file=sys.stderr)
        raise SystemExit(2)
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
            yield sweep_record(result, run_id=run_id, source="gpulesson.experiments.matmul",
                               repeats=repeats)
