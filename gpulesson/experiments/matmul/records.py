"""The matmul records: one per sweep, the reference run, the crossover, a run as a table.

The lesson's reference run is the newest run in :data:`RESULTS_FILE` with a GPU sweep (else the
newest run). Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson import results
from gpulesson.experiments.common import WARMUP, as_rate, compare, summary_of
from gpulesson.results import (
    NOT_RECORDED,
    hardware,
    make_record,
    software,
)

EXPERIMENT = "matmul"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
DATA = "random"  # the matrices are random numbers: gpulesson.settings.LABELS
BUSY = 0.25  # a sweep during which other programs used more CPU time than this is flagged


def sweep_record(result: dict, *, run_id: str, source: str, repeats: int,
                 warmup: int = WARMUP) -> dict:
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
    """The crossover in words, or NOT_RECORDED without both a CPU and a GPU sweep."""
    if find(records, "cpu", dtype) is None or find(records, "gpu", dtype) is None:
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


def rate_text(value: float) -> str:
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
            cells.append(rate_text(point["gflops"]) if point else "-")
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
