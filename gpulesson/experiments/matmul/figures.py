"""The figures of one run: GFLOP/s against size, and the timing mistake
(drawn by ``fig/06-why-gpus-are-fast/matmul.py``)."""

from __future__ import annotations

from gpulesson.experiments.matmul.measure import gflops
from gpulesson.experiments.matmul.records import BUSY, crossover, find, software
from gpulesson.results import NOT_RECORDED, data_label, hardware

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
