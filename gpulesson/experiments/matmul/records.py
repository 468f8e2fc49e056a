"""The matmul records (one a sweep), the reference runs, the crossover and a run as a table.
The page has two reference runs: the newest of a throughput method, for the rates, and the
newest of any, for the time of one call (records of the oldest method timed only that)."""

from __future__ import annotations

from gpulesson.experiments.common import WARMUP, as_rate, compare, summary_of
from gpulesson.experiments.matmul.measure import METHOD
from gpulesson.records import results
from gpulesson.records.recordset import RecordSet
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software

BUSY = 0.25  # a sweep during which other programs used more CPU time than this is flagged
RECORDS = RecordSet("matmul", ("device_kind", "dtype"), data="random")  # a sweep of random inputs
EXPERIMENT, RESULTS_FILE = RECORDS.experiment, RECORDS.results_file
# The throughput methods, newest first; "amortised" chose its windows by one wait's share alone.
THROUGHPUT_METHODS = (METHOD, "amortised")
FLOOR_FACTOR = 2.0  # sizes within this factor of the smallest's time per call are on the floor
_PEAK_KEYS = {"bfloat16": "bf16", "float16": "fp16"}
_FLOAT32_PEAKS = {"float32": "fp32", "tf32": "tf32", "bf16": "bf16"}


def sweep_record(result: dict, *, run_id: str, source: str, repeats: int,
                 warmup: int = WARMUP) -> dict:
    return RECORDS.record(run_id=run_id, source=source, repeats=repeats, warmup=warmup, **result)


def amortised(record: dict) -> bool:
    """Whether a sweep measured throughput over windows of calls, not only latency."""
    return record.get("method") in THROUGHPUT_METHODS


def compares(records) -> bool:
    """Whether a run has a CPU half, and a GPU half (if any) in the same precisions."""
    cpu, gpu = ({r.get("dtype") for r in records if r.get("device_kind") == d} for d in ("cpu", "gpu"))
    return bool(cpu) and (not gpu or cpu == gpu)


def reference_run(path=None) -> list[dict]:
    """The newest run that :func:`compares` of a throughput method, one with a GPU first; []."""
    found = [run for method in THROUGHPUT_METHODS
             if (run := RECORDS.newest_run(path, complete=compares, method=method))
             and compares(run)]
    with_gpu = [run for run in found if any(results.is_gpu(r) for r in run)]
    return (with_gpu or found or [[]])[0]


def latency_run(path=None) -> list[dict]:
    """The newest run of any method: every one timed synchronised calls."""
    return RECORDS.newest_run(path)


def page_runs(path=None) -> tuple:
    """``(reference_run, latency_run)``, or ``()`` when the file holds no run."""
    runs = reference_run(path), latency_run(path)
    return runs if any(runs) else ()


def float32_mode(record: dict) -> str:
    return str((record.get("float32_precision") or {}).get("matmul") or "float32")


def precision_label(record: dict) -> str:
    """"bfloat16", "float32", or "float32 (TF32)" where the float32 products ran in TF32."""
    mode = float32_mode(record)
    return (f"float32 ({mode.upper()})" if record.get("dtype") == "float32" and mode != "float32"
            else record.get("dtype", "?"))


def published_peak(record: dict) -> dict | None:
    """The vendor's dense peak for a GPU sweep's card and precision in force, if known."""
    from gpulesson.machine import gpu_peaks

    if record.get("device_kind") != "gpu":
        return None
    name = (record.get("gpu") or {}).get("name") or record.get("device")
    peaks, card = gpu_peaks.peaks_for(name), gpu_peaks.card(name)
    dtype = record.get("dtype")
    key = _FLOAT32_PEAKS.get(float32_mode(record)) if dtype == "float32" else _PEAK_KEYS.get(dtype)
    if not peaks or key not in peaks:
        return None
    return {"gflops": peaks[key] * 1e3, "precision": key, "card": card,
            "source": gpu_peaks.SOURCES[card]}


def find(records, device: str, dtype: str = "float32") -> dict | None:
    return RECORDS.find(records, device_kind=device, dtype=dtype)


def point_summary(point: dict | None, key: str = "seconds") -> dict | None:
    """A size's seconds per call, or another list of its times (``key``); None where only a
    median was kept."""
    if not point or not point.get(key):
        return None
    kept = point.get("summary") if key == "seconds" else None
    return summary_of({key: point[key], "summary": kept}, key, warmup_key=None,
                      first_is_warmup=False)


def latency_summary(point: dict | None) -> dict | None:
    """One synchronised call's seconds, which a throughput method keeps under ``latency``."""
    found = (point or {}).get("latency")
    return dict(found) if isinstance(found, dict) and found.get("samples") else None


def as_gflops(summary: dict | None, n: int) -> dict | None:
    return as_rate(summary, 2 * n**3 / 1e9, "GFLOP/s") if summary else None


def rate_summary(point: dict | None) -> dict | None:
    return as_gflops(point_summary(point), point["n"]) if point else None


def dispatch_floor(record: dict | None) -> dict | None:
    """The sizes of a GPU sweep whose time per call stayed within :data:`FLOOR_FACTOR` of the
    smallest's: the host's dispatch of a call, not the GPU's compute, set their rate."""
    if not record or record.get("device_kind") != "gpu" or not amortised(record):
        return None
    medians = [(p["n"], s["median"]) for p in record["points"] if (s := point_summary(p))]
    flat = []
    for n, seconds in medians:
        if seconds > FLOOR_FACTOR * medians[0][1]:
            break
        flat.append((n, seconds))
    if len(flat) < 2:
        return None
    return {"sizes": [n for n, _ in flat], "low": min(s for _, s in flat),
            "high": max(s for _, s in flat)}


def gpu_faster(cpu_point: dict | None, gpu_point: dict | None) -> bool:
    """Whether the GPU was measurably faster than the CPU at one size (ranges apart)."""
    cpu, gpu = rate_summary(cpu_point), rate_summary(gpu_point)
    verdict = cpu and gpu and compare(gpu, cpu, higher_is_better=True)
    return bool(verdict and verdict.measurable and verdict.word == "faster")


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
        if not gpu_faster(cpu_points[n], gpu_points[n]):
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
    why = (crossover_text(records, dtype) if any(r["device_kind"] == "gpu" for r in records)
           else "no GPU sweep in these records")
    return f"GPU faster ({dtype}) from: {why}"


def rate_text(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 1 else f"{value:.3f}"


def _table(sizes, columns, cell) -> list[str]:
    heads = [f"{r['device_kind'].upper()} {precision_label(r)}" for r in columns]
    lines = [f"{'n':>6}" + "".join(f"{h:>19}" for h in heads)]
    for n in sizes:
        points = [next((p for p in r["points"] if p["n"] == n), None) for r in columns]
        lines.append(f"{n:>6}" + "".join(f"{cell(r, p) if p else '-':>19}"
                                         for r, p in zip(columns, points, strict=True)))
    return lines


def describe(records) -> str:
    """The sweeps of one run as tables of GFLOP/s and of latency per size, and the crossover."""
    if not records:
        return "No run recorded."
    lines = [f"Run {records[0].get('run_id', '?')}: {software(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in hardware(records).items())]
    columns = [r for r in records if r["points"]]
    sizes = sorted({p["n"] for r in columns for p in r["points"]})
    lines.append("Throughput, GFLOP/s (median over windows of calls, one wait a window) "
                 "per matrix size n:")
    lines += _table(sizes, columns, lambda r, p: rate_text(p["gflops"]))
    lines.append("Latency of one synchronised call (median) per matrix size n:")
    lines += _table(sizes, columns, lambda r, p: duration(s["median"])
                    if (s := latency_summary(p)) else "-")
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
