"""The matmul records: one per sweep, the reference runs, the crossover, a run as a table.

A record of the current method (``method`` is :data:`METHOD`) keeps, per size, the latency of
one synchronised call and the throughput over windows of calls (see
:mod:`~gpulesson.experiments.matmul.measure`). Older records timed one synchronised call only:
their ``seconds`` are latencies, and on a GPU they are mostly the round trip, not the work.
So the page has two reference runs: :func:`reference_run`, the newest run of the current
method (throughput: rates, precisions, the crossover), and :func:`latency_run`, the newest run
of any method (the latency of a synchronised call). Each is the newest such run with CPU and GPU
sweeps, else with a GPU sweep, else the newest. Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson import results
from gpulesson.experiments.common import WARMUP, as_rate, compare, summary_of
from gpulesson.experiments.matmul.measure import METHOD
from gpulesson.experiments.recordset import RecordSet
from gpulesson.results import NOT_RECORDED, duration, hardware, software

EXPERIMENT = "matmul"
BUSY = 0.25  # a sweep during which other programs used more CPU time than this is flagged
# A record is one sweep of sizes on one device in one precision (its ``method`` says how it was
# timed). The matrices are random numbers (gpulesson.settings.LABELS).
RECORDS = RecordSet(EXPERIMENT, ("device_kind", "dtype"), data="random")
RESULTS_FILE, DATA, runs = RECORDS.results_file, RECORDS.data, RECORDS.runs


def sweep_record(result: dict, *, run_id: str, source: str, repeats: int,
                 warmup: int = WARMUP) -> dict:
    """The results-file record of one :func:`sweep` (hardware, versions and date added).

    ``device`` is the GPU's name for a GPU sweep and ``"CPU"`` for a CPU sweep.
    """
    return RECORDS.record(run_id=run_id, source=source, repeats=repeats, warmup=warmup, **result)


# The methods that measured throughput over windows of calls, newest first: the current one,
# and "amortised", whose windows were chosen by the share of one wait alone (no minimum length,
# no clock or power per window, the copy from pageable memory only).
THROUGHPUT_METHODS = (METHOD, "amortised")


def amortised(record: dict) -> bool:
    """Whether a sweep measured throughput over windows of calls (a method of
    :data:`THROUGHPUT_METHODS`), not only the latency of one synchronised call."""
    return record.get("method") in THROUGHPUT_METHODS


def compares(records) -> bool:
    """Whether a run's sweeps make the throughput's comparison: a CPU half, and a GPU half (if
    any) in the same precisions. A run cut short (the GPU's float32 alone) does not."""
    cpu = {r.get("dtype") for r in records if r.get("device_kind") == "cpu"}
    gpu = {r.get("dtype") for r in records if r.get("device_kind") == "gpu"}
    return bool(cpu) and (not gpu or cpu == gpu)


def reference_run(path=None) -> list[dict]:
    """The sweeps of the throughput's reference run, only a run that :func:`compares`
    (:func:`gpulesson.results.reference_run`): the current method's, or until one with a GPU is
    recorded, the previous method's (its records name their ``method``); [] without one."""
    found = [run for method in THROUGHPUT_METHODS
             if (run := RECORDS.newest_run(path, complete=compares, method=method))
             and compares(run)]
    # a run with a GPU first: a CPU-only run of the current method does not hide the card's
    with_gpu = [run for run in found if any(results.is_gpu(r) for r in run)]
    return (with_gpu or found or [[]])[0]


def latency_run(path=None) -> list[dict]:
    """The sweeps of the latency's reference run: any method, as every record timed
    synchronised calls (the layer's newest run)."""
    return RECORDS.newest_run(path)


def page_runs(path=None) -> tuple:
    """``(reference_run, latency_run)``: what the page and its figures show; ``()`` when the
    file holds no run at all."""
    throughput, latency = reference_run(path), latency_run(path)
    return (throughput, latency) if throughput or latency else ()


def float32_mode(record: dict) -> str:
    """How the sweep's float32 products were computed, as its record says: "float32", "tf32",
    ...; "float32" for a record that does not say (made on a CPU or before it was kept)."""
    return str((record.get("float32_precision") or {}).get("matmul") or "float32")


def precision_label(record: dict) -> str:
    """A sweep's precision as its record states it: "bfloat16", "float32", or
    "float32 (TF32)" where the float32 products ran in TF32."""
    mode = float32_mode(record)
    if record.get("dtype") != "float32" or mode == "float32":
        return record.get("dtype", "?")
    return f"float32 ({mode.upper()})"


_PEAK_KEYS = {"bfloat16": "bf16", "float16": "fp16"}
_FLOAT32_PEAKS = {"float32": "fp32", "tf32": "tf32", "bf16": "bf16"}


def gpu_name(record: dict) -> str | None:
    """The GPU model a GPU sweep's record names (its ``gpu`` facts, else its ``device``)."""
    if record.get("device_kind") != "gpu":
        return None
    return (record.get("gpu") or {}).get("name") or record.get("device")


def published_peak(record: dict) -> dict | None:
    """The vendor's published dense peak for a GPU sweep's model and precision as recorded
    (:mod:`gpulesson.gpu_peaks`; float32 as TF32 where TF32 was in force):
    ``{"gflops", "precision", "card", "source"}``; None for the CPU or an unknown model."""
    from gpulesson import gpu_peaks

    name = gpu_name(record)
    peaks, card = gpu_peaks.peaks_for(name), gpu_peaks.card(name)
    dtype = record.get("dtype")
    key = (_FLOAT32_PEAKS.get(float32_mode(record)) if dtype == "float32"
           else _PEAK_KEYS.get(dtype))
    if not peaks or key not in peaks:
        return None
    return {"gflops": peaks[key] * 1e3, "precision": key, "card": card,
            "source": gpu_peaks.SOURCES[card]}


def latency_summary(record: dict, point: dict | None) -> dict | None:
    """The latency of one synchronised call at one size: the ``latency`` a current record
    keeps, or for an older one the summary of its ``seconds`` (which were latencies)."""
    if not point:
        return None
    if amortised(record):
        found = point.get("latency")
        return dict(found) if isinstance(found, dict) and found.get("samples") else None
    return point_summary(point)


def find(records, device: str, dtype: str = "float32") -> dict | None:
    """The sweep of ``device`` ("cpu" or "gpu") in ``dtype`` among ``records``, if any."""
    return RECORDS.find(records, device_kind=device, dtype=dtype)


def point_summary(point: dict | None) -> dict | None:
    """The timing summary of one size of a sweep (seconds per call): the ``summary`` a record
    keeps, or, for a point recorded before it had one, one built from its ``seconds`` with the
    first call as the warm-up. None for a point without samples."""
    if not point or not point.get("seconds"):
        return None
    warmup = point.get("warmup_seconds")
    if warmup is None:
        warmup = [point["first_call_seconds"]] if point.get("first_call_seconds") else []
    return summary_of({**point, "warmup_seconds": warmup}, "seconds")


def samples_summary(point: dict | None, key: str) -> dict | None:
    """The summary of another list of times of a point (``unsynchronised_seconds``,
    ``transfer_seconds``), None where the point kept only their median (older records)."""
    seconds = point.get(key) if point else None
    return summary_of({key: seconds}, key, warmup_key=None, first_is_warmup=False) \
        if seconds else None


def flop(n: int) -> float:
    """The billions of floating-point operations of one n x n by n x n multiplication."""
    return 2 * n**3 / 1e9


def rate_summary(point: dict | None) -> dict | None:
    """:func:`point_summary` as GFLOP/s (:func:`~gpulesson.experiments.common.as_rate`)."""
    summary = point_summary(point)
    return as_rate(summary, flop(point["n"]), "GFLOP/s") if summary else None


# A size whose time per call stays within this factor of the smallest size's is on the floor.
FLOOR_FACTOR = 2.0


def dispatch_floor(record: dict | None) -> dict | None:
    """The sizes at which a GPU sweep's calls took a flat time whatever n: from the smallest
    size up to the last whose median time per call (over windows of calls) stayed within
    :data:`FLOOR_FACTOR` of the smallest's. There the card finishes the work sooner than the
    host dispatches the next call, so the rate is 2n³ over the dispatch, not the GPU's
    compute. ``{"sizes", "low", "high"}`` (seconds: the fastest and slowest of those medians),
    or None for a CPU sweep, an older method or fewer than two such sizes."""
    if not record or record.get("device_kind") != "gpu" or not amortised(record):
        return None
    medians = [(p["n"], summary["median"]) for p in record["points"]
               if (summary := point_summary(p))]
    flat = []
    for n, seconds in medians:
        if medians and seconds > FLOOR_FACTOR * medians[0][1]:
            break
        flat.append((n, seconds))
    if len(flat) < 2:
        return None
    return {"sizes": [n for n, _ in flat], "low": min(s for _, s in flat),
            "high": max(s for _, s in flat)}


def gpu_faster(cpu_point: dict | None, gpu_point: dict | None) -> bool:
    """Whether the GPU was measurably faster than the CPU at one size
    (:func:`~gpulesson.experiments.common.compare`: the ranges apart, enough repeats)."""
    cpu, gpu = rate_summary(cpu_point), rate_summary(gpu_point)
    if not (cpu and gpu):
        return False
    verdict = compare(gpu, cpu, higher_is_better=True)
    return verdict.measurable and verdict.word == "faster"


def crossover(records, dtype: str = "float32") -> int | None:
    """The smallest measured size from which the GPU is faster than the CPU: at that size and
    at every larger size measured on both. None when the GPU is not faster at the largest.
    "Faster" is :func:`gpu_faster`: where the ranges of the repeats overlap, the GPU is not
    counted as faster.

    ``records``: the sweeps of one run; they must include a CPU and a GPU sweep in ``dtype``.
    """
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
    cpu_points = {p["n"]: p for p in cpu["points"]}
    gpu_points = {p["n"]: p for p in gpu["points"]}
    found = None
    for n in sorted(cpu_points.keys() & gpu_points.keys(), reverse=True):
        if not gpu_faster(cpu_points[n], gpu_points[n]):
            break
        found = n
    return found




def crossover_text(records, dtype: str = "float32") -> str:
    """The crossover in words, or NOT_RECORDED without both a CPU and a GPU sweep of the
    current method."""
    if (find(records, "cpu", dtype) is None or find(records, "gpu", dtype) is None
            or not all(amortised(r) for r in records)):
        return NOT_RECORDED
    n = crossover(records, dtype)
    largest = max(p["n"] for p in find(records, "gpu", dtype)["points"])
    if n is None:
        return (f"none: at n = {largest:,}, the largest size, the GPU was not measurably faster "
                "than the CPU")
    smallest = min(p["n"] for p in find(records, "gpu", dtype)["points"])
    if n == smallest:
        return f"n = {n:,} or smaller: the GPU was faster at every size measured"
    return f"n = {n:,}"


def crossover_line(records, dtype: str = "float32") -> str:
    """The crossover as a notebook prints it, saying why where there is none to give."""
    if not any(r["device_kind"] == "gpu" for r in records):
        why = "no GPU sweep in these records"
    elif not all(amortised(r) for r in records):
        why = "not measured (records of the old method)"
    else:
        why = crossover_text(records, dtype)
    return f"GPU faster ({dtype}) from: {why}"


def rate_text(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:.1f}"
    return f"{value:.3f}"


def _table(sizes, columns, cell) -> list[str]:
    heads = [f"{r['device_kind'].upper()} {precision_label(r)}" for r in columns]
    lines = [f"{'n':>6}" + "".join(f"{h:>19}" for h in heads)]
    for n in sizes:
        cells = []
        for r in columns:
            point = next((p for p in r["points"] if p["n"] == n), None)
            cells.append(cell(r, point) if point else "-")
        lines.append(f"{n:>6}" + "".join(f"{c:>19}" for c in cells))
    return lines


def describe(records) -> str:
    """The sweeps of one run as a table of GFLOP/s (median) per size, and the crossover."""
    if not records:
        return "No run recorded."
    names = hardware(records)
    lines = [f"Run {records[0].get('run_id', '?')}: {software(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in names.items())]
    columns = [r for r in records if r["points"]]
    sizes = sorted({p["n"] for r in columns for p in r["points"]})
    throughput = [r for r in columns if amortised(r)]
    if throughput:
        lines.append("Throughput, GFLOP/s (median over windows of calls, one wait a window) "
                     "per matrix size n:")
        lines += _table(sizes, throughput, lambda r, p: rate_text(p["gflops"]))
    else:
        lines.append("Throughput: not measured (records of the old method: one synchronised "
                     "call each)")
    lines.append("Latency of one synchronised call (median) per matrix size n:")
    lines += _table(sizes, columns,
                    lambda r, p: duration(latency_summary(r, p)["median"])
                    if latency_summary(r, p) else "-")
    for r in records:
        what = f"{r['device_kind'].upper()} {r['dtype']}"
        if r.get("unsupported"):
            lines.append(f"{what}: not supported here ({r['unsupported']})")
        for skip in r.get("skipped", []):
            lines.append(f"{what}: n = {skip['n']} skipped, {skip['reason']}")
    lines.append(crossover_line(records))
    busy = [r.get("other_programs_cpu_share") or 0 for r in records]
    if max(busy) > BUSY:
        lines.append(f"Note: other programs used up to {max(busy):.0%} of the CPU time during a "
                     "sweep: the numbers may be too low (CPU) or noisy.")
    return "\n".join(lines)
