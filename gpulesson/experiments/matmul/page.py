"""The episode's ``ref_mm_*`` values, from the reference run (read while the site builds)."""

from __future__ import annotations

from gpulesson.experiments.matmul.measure import DTYPES, gflops
from gpulesson.experiments.matmul.records import (
    RESULTS_FILE,
    crossover_text,
    find,
    rate_text,
    reference_run,
    software,
)
from gpulesson.results import NOT_RECORDED, hardware
from gpulesson.results import duration as _seconds


def _peak(record: dict | None) -> str:
    if not record or not record["points"]:
        return NOT_RECORDED
    best = max(record["points"], key=lambda p: p["gflops"])
    return f"{rate_text(best['gflops'])} GFLOP/s (n = {best['n']:,})"


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
            f"{rate_text(smallest['gflops'])} GFLOP/s (n = {smallest['n']:,}, "
            f"{_seconds(smallest['median_seconds'])} a call)" if smallest else NOT_RECORDED)
        values[f"{prefix}_largest_n"] = f"{largest['n']:,}" if largest else NOT_RECORDED
        values[f"{prefix}_largest_time"] = (_seconds(largest["median_seconds"]) if largest
                                            else NOT_RECORDED)
        values[f"{prefix}_first_call"] = (_seconds(largest["first_call_seconds"]) if largest
                                          else NOT_RECORDED)
        unsync = largest and largest.get("unsynchronised_median_seconds")
        values[f"{prefix}_unsync_time"] = _seconds(unsync) if unsync else NOT_RECORDED
        values[f"{prefix}_unsync_gflops"] = (f"{rate_text(gflops(largest['n'], unsync))} GFLOP/s"
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
        f"{rate_text(gflops(copied['n'], copied['median_seconds'] + copy_seconds))} GFLOP/s"
        if copy_seconds else NOT_RECORDED)
    return values
