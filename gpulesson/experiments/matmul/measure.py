"""Timing a matrix multiplication on one device: the sizes, precisions and rates, and a sweep.

Each size follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`): one
recorded warm-up call (compiling, caching, the first allocation), then at least
:data:`REPEATS` timed calls, every sample kept and summarised (``summary``); every timed call
waits for its result (:func:`wait`) before the clock is read, because GPU frameworks, and JAX
also on the CPU, return from a call before the work is done. A multiplication of two n x n
matrices takes 2 n^3 floating-point operations, so its rate is 2 n^3 / t (:func:`gflops`). Keras
is imported only when something is measured.
"""

from __future__ import annotations

import statistics
import time

from gpulesson.devices import keras_device_name as check_device
from gpulesson.experiments import common
from gpulesson.experiments.common import summarise

DTYPES = ("float32", "bfloat16", "float16")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
QUICK_SIZES = (16, 32, 64, 128, 256)
# REPEATS timed calls per size (QUICK_REPEATS in quick mode) after WARMUP warm-up call(s): the
# lesson's rule. On the lesson's 2-core reference CPU a whole float32 sweep of SIZES with 5
# repeats took 9 to 13 s (``wall_seconds`` in results/matmul.jsonl), n = 4,096 most of it, so
# the size list stays whole; MAX_SECONDS skips sizes on a slower machine.
REPEATS, QUICK_REPEATS, WARMUP = common.REPEATS, common.QUICK_REPEATS, common.WARMUP
MAX_SECONDS = 20.0  # larger sizes are skipped once one call would take longer than this


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


def time_matmul(n: int, device: str = "cpu", dtype: str = "float32", *, repeats: int = REPEATS,
                warmup: int = WARMUP, unsynchronised: bool = False, transfer: bool = False,
                op=None) -> dict:
    """Time ``op(a, b)`` (default ``keras.ops.matmul``) for n x n inputs on ``device``.

    ``warmup`` calls first, each timed and kept (``warmup_seconds``; the first one also as
    ``first_call_seconds``), then ``repeats`` timed calls, each waiting for its result.
    Returns one point of a sweep: the times (``seconds``) and their ``summary``
    (:func:`~gpulesson.experiments.common.summarise`: median, range, the warm-up apart), the
    median, minimum and maximum, and GFLOP/s from the median (``gflops``) and from the slowest
    and fastest call (``gflops_low``, ``gflops_high``).
    ``unsynchronised``: also time ``repeats`` calls that do not wait (the mistake;
    ``unsynchronised_seconds`` and their median).
    ``transfer``: also time copying both inputs from the host's memory to ``device``
    (``transfer_seconds`` and their median).
    """
    import keras

    op = op or keras.ops.matmul
    if repeats < 1 or warmup < 1:
        raise ValueError(f"repeats and warmup must be at least 1, not {repeats} and {warmup}")
    a, b = make_inputs(n, device, dtype)
    with keras.device(check_device(device)):
        warmups = [_clock(op, a, b, synchronise=True)[0] for _ in range(warmup)]
        seconds = [_clock(op, a, b, synchronise=True)[0] for _ in range(repeats)]
        point = {
            "n": n,
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
            copies = []
            for _ in range(repeats):
                start = time.perf_counter()
                on_device = [keras.ops.convert_to_tensor(x, dtype=dtype) for x in host]
                for x in on_device:
                    wait(x)
                copies.append(time.perf_counter() - start)
            point["transfer_seconds"] = copies
            point["transfer_median_seconds"] = statistics.median(copies)
    return point


def sweep(device: str = "cpu", dtype: str = "float32", sizes=SIZES, *, repeats: int = REPEATS,
          warmup: int = WARMUP, max_seconds: float = MAX_SECONDS, unsynchronised: bool | None = None,
          transfer: bool | None = None, progress=None, op=None) -> dict:
    """Time the multiplication on one device in one precision for every size.

    Sizes whose one call would take longer than ``max_seconds`` (predicted from the previous
    size, as time grows like n^3) are skipped and listed in ``skipped``. A precision the
    device or backend cannot multiply in is reported in ``unsupported`` (the error), not
    raised. By default float32 sweeps also time the unsynchronised mistake, and GPU sweeps
    the copy of the inputs to the GPU. ``progress``: a function called with one line per size;
    ``op``: what to time instead of ``keras.ops.matmul`` (see :func:`time_matmul`). The load
    average (``os.getloadavg``) before and after the sweep is kept in ``load_average``.
    """
    keras_device = check_device(device)
    check_dtype(dtype)
    sizes = check_sizes(sizes)
    if unsynchronised is None:
        unsynchronised = dtype == "float32"
    if transfer is None:
        transfer = device == "gpu"
    busy, started = common.BusyMeter(), time.perf_counter()
    result = {"device_kind": device, "keras_device": keras_device, "dtype": dtype,
              "sizes": sizes, "points": [], "skipped": [], "unsupported": None,
              "other_programs_cpu_share": None,
              "load_average": {"start": busy.before, "end": None}}
    for n in sizes:
        points = result["points"]
        if points:
            last = points[-1]
            predicted = last["median_seconds"] * (n / last["n"]) ** 3
            if predicted > max_seconds:
                result["skipped"].append(
                    {"n": n, "reason": f"one call would take about {predicted:.0f} s "
                                       f"(limit {max_seconds:g} s)"})
                continue
        try:
            point = time_matmul(n, device, dtype, repeats=repeats, warmup=warmup,
                                unsynchronised=unsynchronised, transfer=transfer, op=op)
        except Exception as exc:  # a precision this device or backend does not support
            if points:
                raise
            result["unsupported"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            break
        points.append(point)
        if progress:
            progress(f"{device} {dtype:8} n={n:5}: {point['gflops']:10.2f} GFLOP/s "
                     f"(median of {repeats}, {point['median_seconds'] * 1e3:.3f} ms)")
    meter = busy.read()
    result["other_programs_cpu_share"] = meter["other_programs_cpu_share"]
    result["wall_seconds"] = time.perf_counter() - started
    result["load_average"]["end"] = meter["load_average_after"]
    return result
