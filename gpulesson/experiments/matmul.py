"""Matrix multiplication on the CPU and on the GPU: GFLOP/s against matrix size.

    python -m gpulesson.experiments.matmul                      # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.matmul --devices cpu gpu
    python -m gpulesson.experiments.matmul --quick --out my-matmul.jsonl

The benchmark of the episode "Why GPUs are fast". It multiplies two random n x n matrices with
``keras.ops.matmul`` (any Keras backend), on a device chosen with ``keras.device``, with the
inputs created on that device. Each size is multiplied once or more to warm up (compiling,
caching, the first allocation), then timed several times; every timed call waits for its
result (:func:`wait`) before the clock is read, because GPU frameworks, and JAX also on the
CPU, return from a call before the work is done. A multiplication of two n x n matrices takes
2 n^3 floating-point operations, so its rate is 2 n^3 / t (:func:`gflops`).

A *sweep* is one device and one precision (float32, bfloat16, float16) over the sizes; each
sweep is one record in the results file, and the sweeps of one command share a ``run_id``.
float32 sweeps also time the same calls without waiting (the classic mistake), and GPU sweeps
time copying the inputs from the host's memory to the GPU. From the CPU and GPU sweeps of one
run, :func:`crossover` finds the size from which the GPU is faster.

The lesson's reference run is the newest run in :data:`RESULTS_FILE` with a GPU sweep (else the
newest run): its numbers reach the episode through :func:`substitutions` and its figures are
drawn by ``fig/06-why-gpus-are-fast/matmul.py``. Needs only keras, numpy and a Keras backend
(matplotlib for the figures); never imports TensorFlow itself.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from gpulesson import results
from gpulesson.devices import KERAS_DEVICES as DEVICES
from gpulesson.devices import keras_device_name as check_device
from gpulesson.results import (
    NOT_RECORDED,
    data_label,
    hardware,
    make_record,
    new_run_id,
)
from gpulesson.results import duration as _seconds

EXPERIMENT = "matmul"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
DATA = "random"  # the matrices are random numbers: gpulesson.settings.LABELS
DTYPES = ("float32", "bfloat16", "float16")
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
QUICK_SIZES = (16, 32, 64, 128, 256)
REPEATS, QUICK_REPEATS = 5, 3
MAX_SECONDS = 20.0  # larger sizes are skipped once one call would take longer than this
BUSY = 0.25  # a sweep during which other programs used more CPU time than this is flagged


# --- checks -----------------------------------------------------------------------------------

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


# --- measuring --------------------------------------------------------------------------------

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
                warmup: int = 1, unsynchronised: bool = False, transfer: bool = False,
                op=None) -> dict:
    """Time ``op(a, b)`` (default ``keras.ops.matmul``) for n x n inputs on ``device``.

    ``warmup`` calls first (the first one's time is kept as ``first_call_seconds``), then
    ``repeats`` timed calls, each waiting for its result. Returns one point of a sweep: the
    times, their median, minimum and maximum, and GFLOP/s from the median (``gflops``) and
    from the slowest and fastest call (``gflops_low``, ``gflops_high``).
    ``unsynchronised``: also time ``repeats`` calls that do not wait (the mistake).
    ``transfer``: also time copying both inputs from the host's memory to ``device``.
    """
    import keras

    op = op or keras.ops.matmul
    if repeats < 1 or warmup < 1:
        raise ValueError(f"repeats and warmup must be at least 1, not {repeats} and {warmup}")
    a, b = make_inputs(n, device, dtype)
    with keras.device(check_device(device)):
        first = _clock(op, a, b, synchronise=True)[0]
        for _ in range(warmup - 1):
            _clock(op, a, b, synchronise=True)
        seconds = [_clock(op, a, b, synchronise=True)[0] for _ in range(repeats)]
        point = {
            "n": n,
            "seconds": seconds,
            "median_seconds": statistics.median(seconds),
            "min_seconds": min(seconds),
            "max_seconds": max(seconds),
            "gflops": gflops(n, statistics.median(seconds)),
            "gflops_low": gflops(n, max(seconds)),
            "gflops_high": gflops(n, min(seconds)),
            "first_call_seconds": first,
            "unsynchronised_median_seconds": None,
            "transfer_median_seconds": None,
        }
        if unsynchronised:
            calls = [_clock(op, a, b, synchronise=False) for _ in range(repeats)]
            # Let the queued work finish before anything else is timed.
            for _, result in calls:
                wait(result)
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
            point["transfer_median_seconds"] = statistics.median(copies)
    return point


def sweep(device: str = "cpu", dtype: str = "float32", sizes=SIZES, *, repeats: int = REPEATS,
          warmup: int = 1, max_seconds: float = MAX_SECONDS, unsynchronised: bool | None = None,
          transfer: bool | None = None, progress=None, op=None) -> dict:
    """Time the multiplication on one device in one precision for every size.

    Sizes whose one call would take longer than ``max_seconds`` (predicted from the previous
    size, as time grows like n^3) are skipped and listed in ``skipped``. A precision the
    device or backend cannot multiply in is reported in ``unsupported`` (the error), not
    raised. By default float32 sweeps also time the unsynchronised mistake, and GPU sweeps
    the copy of the inputs to the GPU. ``progress``: a function called with one line per size;
    ``op``: what to time instead of ``keras.ops.matmul`` (see :func:`time_matmul`).
    """
    keras_device = check_device(device)
    check_dtype(dtype)
    sizes = check_sizes(sizes)
    if unsynchronised is None:
        unsynchronised = dtype == "float32"
    if transfer is None:
        transfer = device == "gpu"
    result = {"device_kind": device, "keras_device": keras_device, "dtype": dtype,
              "sizes": sizes, "points": [], "skipped": [], "unsupported": None,
              "other_programs_cpu_share": None}
    busy, started = _BusyMeter(), time.perf_counter()
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
    result["other_programs_cpu_share"] = busy.other_share()
    result["wall_seconds"] = time.perf_counter() - started
    return result


class _BusyMeter:
    """How much of the machine's CPU time other programs used while this one measured.

    Other programs busy on the same cores slow a CPU measurement down, so each sweep records
    their share (0: the machine was ours; 0.5: half of all cores were busy elsewhere). Linux
    only (from /proc/stat); None elsewhere.
    """

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
        busy = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")
        return busy, time.process_time(), time.perf_counter()

    def other_share(self) -> float | None:
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy, own, wall = (b - a for a, b in zip(self.start, end, strict=True))
        if wall <= 0:
            return None
        share = (busy - own) / (wall * (os.cpu_count() or 1))
        return round(min(max(share, 0.0), 1.0), 3)


# --- records ----------------------------------------------------------------------------------

def sweep_record(result: dict, *, run_id: str, source: str, repeats: int, warmup: int = 1) -> dict:
    """The results-file record of one :func:`sweep` (hardware, versions and date added).

    ``device`` is the GPU's name for a GPU sweep and ``"CPU"`` for a CPU sweep.
    """
    fields = {"run_id": run_id, "source": source, "repeats": repeats, "warmup": warmup,
              **result}
    if result["device_kind"] == "cpu":
        fields["device"] = "CPU"
    return make_record(EXPERIMENT, data=DATA, **fields)


def runs(records) -> dict[str, list[dict]]:
    """The matmul records grouped by ``run_id`` (:func:`gpulesson.results.runs`)."""
    return results.runs(records, EXPERIMENT)


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The sweeps of the reference run (:func:`gpulesson.results.reference_run`)."""
    return results.reference_run(path, EXPERIMENT)


def find(records, device: str, dtype: str = "float32") -> dict | None:
    """The sweep of ``device`` ("cpu" or "gpu") in ``dtype`` among ``records``, if any."""
    return next((r for r in records if r.get("device_kind") == device and r.get("dtype") == dtype),
                None)


def crossover(records, dtype: str = "float32") -> int | None:
    """The smallest measured size from which the GPU is faster than the CPU: at that size and
    at every larger size measured on both. None when the GPU is not faster at the largest.

    ``records``: the sweeps of one run; they must include a CPU and a GPU sweep in ``dtype``.
    """
    if len({r.get("run_id") for r in records}) > 1:
        raise ValueError("the records come from several runs: compare the sweeps of one run_id")
    cpu, gpu = find(records, "cpu", dtype), find(records, "gpu", dtype)
    if cpu is None or gpu is None:
        missing = " and ".join(d.upper() for d, r in (("cpu", cpu), ("gpu", gpu)) if r is None)
        raise ValueError(f"no {missing} sweep in {dtype}: the crossover needs both")
    cpu_rate = {p["n"]: p["gflops"] for p in cpu["points"]}
    gpu_rate = {p["n"]: p["gflops"] for p in gpu["points"]}
    found = None
    for n in sorted(cpu_rate.keys() & gpu_rate.keys(), reverse=True):
        if gpu_rate[n] <= cpu_rate[n]:
            break
        found = n
    return found


def software(records) -> str:
    """``"Keras 3.15.1, jax 0.10.2"``: the versions the records were measured with."""
    first = records[0]
    versions = first.get("versions", {})
    backend = first["backend"]
    return f"Keras {versions.get('keras', '?')}, {backend} {versions.get(backend, '?')}"


def crossover_text(records, dtype: str = "float32") -> str:
    """The crossover in words, or NOT_RECORDED without both a CPU and a GPU sweep."""
    if find(records, "cpu", dtype) is None or find(records, "gpu", dtype) is None:
        return NOT_RECORDED
    n = crossover(records, dtype)
    largest = max(p["n"] for p in find(records, "gpu", dtype)["points"])
    if n is None:
        return f"none: the CPU was as fast or faster up to n = {largest:,}"
    smallest = min(p["n"] for p in find(records, "gpu", dtype)["points"])
    if n == smallest:
        return f"n = {n:,} or smaller: the GPU was faster at every size measured"
    return f"n = {n:,}"


def _rate(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.3f}"


def describe(records) -> str:
    """The sweeps of one run as a table of GFLOP/s (median) per size, and the crossover."""
    if not records:
        return "No run recorded."
    names = hardware(records)
    lines = [f"Run {records[0].get('run_id', '?')}: {software(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in names.items())]
    columns = [r for r in records if r["points"]]
    sizes = sorted({p["n"] for r in columns for p in r["points"]})
    heads = [f"{r['device_kind'].upper()} {r['dtype']}" for r in columns]
    lines.append("GFLOP/s (median) per matrix size n:")
    lines.append(f"{'n':>6}" + "".join(f"{h:>16}" for h in heads))
    for n in sizes:
        cells = []
        for r in columns:
            point = next((p for p in r["points"] if p["n"] == n), None)
            cells.append(_rate(point["gflops"]) if point else "-")
        lines.append(f"{n:>6}" + "".join(f"{c:>16}" for c in cells))
    for r in records:
        what = f"{r['device_kind'].upper()} {r['dtype']}"
        if r.get("unsupported"):
            lines.append(f"{what}: not supported here ({r['unsupported']})")
        for skip in r.get("skipped", []):
            lines.append(f"{what}: n = {skip['n']} skipped, {skip['reason']}")
    lines.append(f"GPU faster (float32) from: {crossover_text(records)}")
    busy = [r.get("other_programs_cpu_share") or 0 for r in records]
    if max(busy) > BUSY:
        lines.append(f"Note: other programs used up to {max(busy):.0%} of the CPU time during a "
                     "sweep: the numbers may be too low (CPU) or noisy.")
    return "\n".join(lines)


# --- the page's numbers -----------------------------------------------------------------------

def _peak(record: dict | None) -> str:
    if not record or not record["points"]:
        return NOT_RECORDED
    best = max(record["points"], key=lambda p: p["gflops"])
    return f"{_rate(best['gflops'])} GFLOP/s (n = {best['n']:,})"


def _largest(record: dict | None) -> dict | None:
    """The point of ``record`` with the largest size (None without one)."""
    if not record or not record["points"]:
        return None
    return max(record["points"], key=lambda p: p["n"])


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference run for the episode (MyST substitutions ``ref_mm_*``);
    NOT_RECORDED for everything that the run lacks (e.g. every GPU value before a GPU run)."""
    records = reference_run(path)
    names = hardware(records)
    values = {
        "ref_mm_run": records[0]["run_id"] if records else NOT_RECORDED,
        "ref_mm_date": records[0]["date"][:10] if records else NOT_RECORDED,
        "ref_mm_software": software(records) if records else NOT_RECORDED,
        "ref_mm_cpu": names.get("CPU", NOT_RECORDED),
        "ref_mm_gpu": names.get("GPU", NOT_RECORDED),
        "ref_mm_crossover": crossover_text(records) if records else NOT_RECORDED,
    }
    for device in ("cpu", "gpu"):
        base = find(records, device, "float32")
        smallest = min(base["points"], key=lambda p: p["n"]) if base and base["points"] else None
        largest = _largest(base)
        prefix = f"ref_mm_{device}"
        values[f"{prefix}_smallest"] = (
            f"{_rate(smallest['gflops'])} GFLOP/s (n = {smallest['n']:,}, "
            f"{_seconds(smallest['median_seconds'])} a call)" if smallest else NOT_RECORDED)
        values[f"{prefix}_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
        values[f"{prefix}_largest_time"] = (_seconds(largest["median_seconds"]) if largest
                                            else NOT_RECORDED)
        values[f"{prefix}_first_call"] = (_seconds(largest["first_call_seconds"]) if largest
                                          else NOT_RECORDED)
        unsync = largest and largest.get("unsynchronised_median_seconds")
        values[f"{prefix}_unsync_time"] = _seconds(unsync) if unsync else NOT_RECORDED
        values[f"{prefix}_unsync_gflops"] = (f"{_rate(gflops(largest['n'], unsync))} GFLOP/s"
                                             if unsync else NOT_RECORDED)
        for dtype in DTYPES:
            values[f"{prefix}_{dtype}"] = _peak(find(records, device, dtype))
        walls = [r["wall_seconds"] for r in records
                 if r.get("device_kind") == device and r.get("wall_seconds")]
        values[f"{prefix}_sweep_time"] = _seconds(sum(walls)) if walls else NOT_RECORDED
    gpu = find(records, "gpu", "float32")
    copied = _largest(gpu)
    copy_seconds = copied and copied.get("transfer_median_seconds")
    values["ref_mm_gpu_transfer_n"] = f"{copied['n']:,}" if copy_seconds else NOT_RECORDED
    values["ref_mm_gpu_transfer_time"] = _seconds(copy_seconds) if copy_seconds else NOT_RECORDED
    values["ref_mm_gpu_transfer_gflops"] = (
        f"{_rate(gflops(copied['n'], copied['median_seconds'] + copy_seconds))} GFLOP/s"
        if copy_seconds else NOT_RECORDED)
    return values


# --- figures ----------------------------------------------------------------------------------

_DEVICE_STYLE = {"cpu": {"marker": "o", "color": "tab:blue"},
                 "gpu": {"marker": "s", "color": "tab:orange"}}
# A shade per precision within each device's colour (the line style says it too).
_SHADES = {("cpu", "bfloat16"): "#0b3d66", ("cpu", "float16"): "#5fa2d8",
           ("gpu", "bfloat16"): "#a64b00", ("gpu", "float16"): "#f5a55c"}
_DTYPE_STYLE = {"float32": {"linestyle": "-", "fillstyle": "full"},
                "bfloat16": {"linestyle": "--", "fillstyle": "bottom"},
                "float16": {"linestyle": ":", "fillstyle": "none"}}


def _title(fig, what: str, records) -> None:
    names = hardware(records)
    devices = " | ".join(f"{k}: {names.get(k, NOT_RECORDED)}" for k in ("CPU", "GPU"))
    fig.suptitle(f"{what} | {data_label(records)}\n{devices}\n"
                 f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _axes(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (n × n times n × n)")
    ax.grid(True, which="major", alpha=0.3)


def figures(records):
    """Two figures of one run's sweeps: ``(GFLOP/s against size, the timing mistake)``.

    The first shows every device and precision (median, with the range of the repeats as
    error bars), the GPU with the copy of its inputs included where recorded, and the
    crossover; the second compares float32 timed with and without waiting for the result.
    Markers say the device (circle CPU, square GPU), line styles and marker fill the precision,
    and every line is labelled in the legend.
    """
    import matplotlib.pyplot as plt

    if not records:
        raise ValueError("no records to plot: run the benchmark first")
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for record in records:
        if not record["points"]:
            continue
        device, dtype = record["device_kind"], record["dtype"]
        n = [p["n"] for p in record["points"]]
        rate = [p["gflops"] for p in record["points"]]
        low = [r - p["gflops_low"] for r, p in zip(rate, record["points"], strict=True)]
        high = [p["gflops_high"] - r for r, p in zip(rate, record["points"], strict=True)]
        style = {**_DEVICE_STYLE[device], **_DTYPE_STYLE[dtype]}
        style["color"] = _SHADES.get((device, dtype), style["color"])
        ax.errorbar(n, rate, yerr=[low, high], capsize=2, linewidth=1.6, markersize=6,
                    label=f"{device.upper()} {dtype}", **style)
        copies = [p for p in record["points"] if p.get("transfer_median_seconds")]
        if dtype == "float32" and copies:
            ax.plot([p["n"] for p in copies],
                    [gflops(p["n"], p["median_seconds"] + p["transfer_median_seconds"])
                     for p in copies],
                    marker="v", linestyle="-.", color="tab:red", fillstyle="none",
                    label=f"{device.upper()} float32, with copying the inputs to it")
    sizes = sorted({p["n"] for r in records for p in r["points"]})
    _axes(ax, sizes)
    ax.set_ylabel("GFLOP/s (median, bars: fastest to slowest call)")
    has_gpu = find(records, "gpu") is not None
    if has_gpu and crossover(records) is not None:
        n = crossover(records)
        ax.axvline(n, color="black", linestyle=(0, (1, 3)), linewidth=1)
        ax.annotate(f"GPU faster\nfrom n = {n:,}", (n, 0.02), xycoords=("data", "axes fraction"),
                    xytext=(4, 0), textcoords="offset points", fontsize=8.5)
    elif not has_gpu:
        ax.text(0.02, 0.97, f"GPU: {NOT_RECORDED}", transform=ax.transAxes, va="top",
                fontsize=9, style="italic")
    ax.legend(fontsize=8, loc="lower right")
    busy = max(r.get("other_programs_cpu_share") or 0 for r in records)
    if busy > BUSY:
        ax.text(0.02, 0.90, f"other programs used up to {busy:.0%} of the CPU time:\n"
                "CPU numbers may be low", transform=ax.transAxes, va="top", fontsize=8)
    _title(fig, "Matrix multiplication: GFLOP/s against size", records)
    fig.tight_layout()

    mistake, ax2 = plt.subplots(figsize=(8, 4.6))
    for record in records:
        points = [p for p in record["points"] if p.get("unsynchronised_median_seconds")]
        if record["dtype"] != "float32" or not points:
            continue
        device = record["device_kind"]
        n = [p["n"] for p in points]
        ax2.plot(n, [p["gflops"] for p in points], linestyle="-", **_DEVICE_STYLE[device],
                 label=f"{device.upper()} float32, waiting for the result (right)")
        ax2.plot(n, [gflops(p["n"], p["unsynchronised_median_seconds"]) for p in points],
                 linestyle="--", fillstyle="none", **_DEVICE_STYLE[device],
                 label=f"{device.upper()} float32, not waiting (wrong)")
    _axes(ax2, sizes)
    ax2.set_ylabel("GFLOP/s computed from the time measured")
    ax2.legend(fontsize=8, loc="upper left")
    _title(mistake, "The same multiplications timed with and without waiting", records)
    mistake.tight_layout()
    return fig, mistake


# --- command line -----------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices to measure, in this order (default: cpu, then gpu if visible)")
    parser.add_argument("--dtypes", nargs="+", choices=DTYPES, default=list(DTYPES),
                        help="precisions to measure (default: all)")
    parser.add_argument("--sizes", nargs="+", type=int, default=None,
                        help=f"matrix sizes n (default {' '.join(map(str, SIZES))}; "
                             f"--quick: {' '.join(map(str, QUICK_SIZES))})")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"timed calls per size (default {REPEATS}; --quick: {QUICK_REPEATS})")
    parser.add_argument("--max-seconds", type=float, default=MAX_SECONDS,
                        help=f"skip sizes whose one call would take longer (default {MAX_SECONDS:g})")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats (also when LESSON_QUICK=1)")
    parser.add_argument("--out", type=Path, default=RESULTS_FILE,
                        help=f"results file to append to (default {RESULTS_FILE})")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    try:
        sizes = check_sizes(args.sizes or (QUICK_SIZES if quick else SIZES))
    except ValueError as exc:
        parser.error(str(exc))
    repeats = args.repeats if args.repeats is not None else (QUICK_REPEATS if quick else REPEATS)
    if repeats < 1:
        parser.error(f"--repeats must be at least 1, not {repeats}")

    from gpulesson.devices import keras_device
    from gpulesson.results import append_record

    found = keras_device()
    devices = args.devices or (["cpu", "gpu"] if found["gpu_count"] else ["cpu"])
    if "gpu" in devices and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing was measured or "
              "written. Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        return 2
    print(f"Keras backend {found['backend']}; devices: {', '.join(devices)}; sizes: "
          f"{' '.join(map(str, sizes))}; {repeats} timed calls each", flush=True)

    run_id, records = new_run_id(), []
    for device in devices:
        for dtype in args.dtypes:
            result = sweep(device, dtype, sizes, repeats=repeats, max_seconds=args.max_seconds,
                           progress=lambda line: print(line, flush=True))
            record = sweep_record(result, run_id=run_id, source="gpulesson.experiments.matmul",
                                  repeats=repeats)
            append_record(args.out, record)
            records.append(record)
    print(describe(records))
    print(f"Appended {len(records)} sweep(s) of run {run_id} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
