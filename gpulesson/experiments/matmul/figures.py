"""The figures of one run: GFLOP/s against size, and the timing mistake
(drawn by ``fig/06-why-gpus-are-fast/matmul.py``), and their alt texts.

What a figure draws is decided once (:func:`rate_lines`, :func:`sync_lines`); the drawing
code and the alt texts (:func:`alt_texts`, the episode's ``ref_mm_fig_*_alt`` values) both
read it, so that an alt text names only what is drawn and takes its numbers from the drawn
data.
"""

from __future__ import annotations

from gpulesson.experiments.common import SPREAD_NOTE, as_rate, draw_spread, fmt_number
from gpulesson.experiments.matmul.measure import gflops
from gpulesson.experiments.matmul.records import (
    BUSY,
    crossover,
    flop,
    rate_summary,
    samples_summary,
    software,
)
from gpulesson.results import NOT_RECORDED, data_label, hardware

_DEVICE_STYLE = {"cpu": {"marker": "o", "color": "tab:blue"},
                 "gpu": {"marker": "s", "color": "tab:orange"}}
_MARKER_WORDS = {"o": "round", "s": "square", "v": "triangle"}
# A shade per precision within each device's colour (the line style says it too).
_SHADES = {("cpu", "bfloat16"): "#0b3d66", ("cpu", "float16"): "#5fa2d8",
           ("gpu", "bfloat16"): "#a64b00", ("gpu", "float16"): "#f5a55c"}
_DTYPE_STYLE = {"float32": {"linestyle": "-", "fillstyle": "full"},
                "bfloat16": {"linestyle": "--", "fillstyle": "bottom"},
                "float16": {"linestyle": ":", "fillstyle": "none"}}
_LINE_WORDS = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dotted"}
# A line chart's version of the spread note: its markers are the medians.
LINE_SPREAD_NOTE = "markers: median; " + SPREAD_NOTE.split("; ", 1)[1]


def _rate(value: float) -> str:
    return f"{fmt_number(value)} GFLOP/s"


def rate_lines(records) -> list[dict]:
    """The lines of the GFLOP/s figure, in drawing order: one per sweep with points (device,
    precision, label, style, sizes and rate summaries), and for a sweep that timed the copy of
    its float32 inputs, a line of the rate with the copy counted (``copy: True``)."""
    lines = []
    for record in records:
        points = [p for p in record["points"] if rate_summary(p)]
        if not points:
            continue
        device, dtype = record["device_kind"], record["dtype"]
        style = {**_DEVICE_STYLE[device], **_DTYPE_STYLE[dtype]}
        style["color"] = _SHADES.get((device, dtype), style["color"])
        lines.append({"device": device, "dtype": dtype, "copy": False,
                      "label": f"{device.upper()} {dtype}", "style": style,
                      "n": [p["n"] for p in points], "rates": [rate_summary(p) for p in points]})
        copies = [p for p in points if p.get("transfer_median_seconds")]
        if dtype == "float32" and copies:
            lines.append({
                "device": device, "dtype": dtype, "copy": True,
                "label": f"{device.upper()} float32, with copying the inputs to it",
                "style": {"marker": "v", "linestyle": "-.", "color": "tab:red",
                          "fillstyle": "none"},
                "n": [p["n"] for p in copies],
                "medians": [gflops(p["n"], p["median_seconds"] + p["transfer_median_seconds"])
                            for p in copies]})
    return lines


def sync_lines(records) -> list[dict]:
    """The float32 sweeps of the timing-mistake figure: sizes, the rate summaries of the calls
    that waited, and the rates of the calls that did not (medians, and summaries where the
    record kept their samples)."""
    found = []
    for record in records:
        points = [p for p in record["points"]
                  if p.get("unsynchronised_median_seconds") and rate_summary(p)]
        if record["dtype"] != "float32" or not points:
            continue
        unsync = []
        for p in points:
            summary = samples_summary(p, "unsynchronised_seconds")
            unsync.append({"n": p["n"], "median": gflops(p["n"], p["unsynchronised_median_seconds"]),
                           "summary": _as_rate(summary, p["n"])})
        found.append({"device": record["device_kind"], "n": [p["n"] for p in points],
                      "rates": [rate_summary(p) for p in points], "unsync": unsync})
    return found


def _as_rate(summary, n):
    return as_rate(summary, flop(n), "GFLOP/s") if summary else None


def _devices(lines) -> list[str]:
    return [d for d in ("cpu", "gpu") if any(line["device"] == d for line in lines)]


def _hardware_line(records, devices) -> str:
    names = hardware(records)
    return " | ".join(f"{d.upper()}: {names.get(d.upper(), NOT_RECORDED)}" for d in devices)


def _title(fig, what: str, records, devices) -> None:
    fig.suptitle(f"{what} | {data_label(records)}\n{_hardware_line(records, devices)}\n"
                 f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _axes(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (n × n times n × n)")
    ax.grid(True, which="major", alpha=0.3)


def _crossover_drawn(records, lines) -> int | None:
    """The crossover the GFLOP/s figure marks: only with a CPU and a GPU float32 line."""
    drawn = {(line["device"], line["dtype"]) for line in lines if not line["copy"]}
    if {("cpu", "float32"), ("gpu", "float32")} <= drawn:
        return crossover(records)
    return None


def _repeats_text(summaries) -> str:
    counts = sorted({s["n"] for s in summaries})
    return (f"{counts[0]} timed calls" if len(counts) == 1
            else f"{counts[0]} to {counts[-1]} timed calls")


def _style_words(style) -> str:
    return (f"{_MARKER_WORDS.get(style['marker'], style['marker'])} markers, "
            f"{_LINE_WORDS[style['linestyle']]} line")


def gflops_alt(records) -> str:
    """The alt text of the GFLOP/s figure, from what :func:`figures` draws of ``records``."""
    lines = rate_lines(records)
    if not lines:
        return "Chart without lines: the run has no measured sizes."
    sizes = sorted({n for line in lines for n in line["n"]})
    rates = [s for line in lines if not line["copy"] for s in line["rates"]]
    devices = " and ".join(d.upper() for d in _devices(lines))
    parts = [f"Log-log line chart of the GFLOP/s of matrix multiplication on the {devices} "
             f"against matrix size n, from n = {sizes[0]:,} to n = {sizes[-1]:,}, one line per "
             "precision and device: "
             + "; ".join(f"{line['label']} ({_style_words(line['style'])})" for line in lines)
             + ". Each marker is the median of "
             f"{_repeats_text(rates)}; whiskers span the fastest to the slowest call and dots "
             "show each call."]
    for line in lines:
        if line["copy"]:
            continue
        medians, sizes = [s["median"] for s in line["rates"]], line["n"]
        best = max(range(len(medians)), key=medians.__getitem__)
        text = f"{line['label']}: {_rate(medians[0])} at n = {sizes[0]:,}"
        if len(sizes) > 1:
            text += f", {_rate(medians[-1])} at n = {sizes[-1]:,}"
        if 0 < best < len(sizes) - 1:
            text += f", highest median {_rate(medians[best])} at n = {sizes[best]:,}"
        parts.append(text + ".")
    n = _crossover_drawn(records, lines)
    if n is not None:
        parts.append(f"A dotted vertical line at n = {n:,} marks the size from which the GPU "
                     "was faster in float32 at every larger size.")
    return " ".join(parts)


def sync_alt(records) -> str:
    """The alt text of the timing-mistake figure, from what :func:`figures` draws."""
    lines = sync_lines(records)
    if not lines:
        return "Chart without lines: the run timed no float32 calls without waiting."
    devices = " and ".join(line["device"].upper() for line in lines)
    parts = [f"Log-log line chart of the float32 GFLOP/s on the {devices} computed from two "
             "timings of the same multiplications: a solid line with filled markers for calls "
             "timed until their result was there (median, whiskers from the fastest to the "
             "slowest call), and a dashed line with hollow markers for calls timed without "
             "waiting."]
    for line in lines:
        n, waited, unsync = line["n"][-1], line["rates"][-1], line["unsync"][-1]
        parts.append(f"At n = {n:,} the {line['device'].upper()} reached {_rate(waited['median'])} "
                     f"timed with waiting and {_rate(unsync['median'])} timed without.")
    return " ".join(parts)


def alt_texts(records) -> tuple[str, str]:
    """``(alt text of the GFLOP/s figure, alt text of the timing-mistake figure)``."""
    return gflops_alt(records), sync_alt(records)


def figures(records):
    """Two figures of one run's sweeps: ``(GFLOP/s against size, the timing mistake)``.

    The first shows every device and precision (median, with the range and the samples of the
    repeats, :func:`~gpulesson.experiments.common.draw_spread`), the GPU with the copy of its
    inputs included where recorded, and the crossover; the second compares float32 timed with
    and without waiting for the result. Markers say the device (circle CPU, square GPU), line
    styles and marker fill the precision, and every line is labelled in the legend. The titles
    name the hardware of the devices drawn.
    """
    import matplotlib.pyplot as plt

    if not records:
        raise ValueError("no records to plot: run the benchmark first")
    lines = rate_lines(records)
    fig, ax = plt.subplots(figsize=(8, 5.2))
    for line in lines:
        if line["copy"]:
            ax.plot(line["n"], line["medians"], label=line["label"], **line["style"])
            continue
        ax.plot(line["n"], [s["median"] for s in line["rates"]], linewidth=1.6, markersize=6,
                label=line["label"], **line["style"])
        draw_spread(ax, line["n"], line["rates"], color=line["style"]["color"])
    sizes = sorted({p["n"] for r in records for p in r["points"]})
    _axes(ax, sizes)
    ax.set_ylabel("GFLOP/s")
    ax.set_title(LINE_SPREAD_NOTE, fontsize=8.5)
    n = _crossover_drawn(records, lines)
    if n is not None:
        ax.axvline(n, color="black", linestyle=(0, (1, 3)), linewidth=1)
        ax.annotate(f"GPU faster\nfrom n = {n:,}", (n, 0.97), xycoords=("data", "axes fraction"),
                    xytext=(4, 0), textcoords="offset points", fontsize=8.5, va="top")
    elif "gpu" not in _devices(lines):
        ax.text(0.02, 0.97, f"GPU: {NOT_RECORDED}", transform=ax.transAxes, va="top",
                fontsize=9, style="italic")
    ax.legend(fontsize=8, loc="lower right")
    busy = max(r.get("other_programs_cpu_share") or 0 for r in records)
    if busy > BUSY:
        ax.text(0.02, 0.90, f"other programs used up to {busy:.0%} of the CPU time:\n"
                "CPU numbers may be low", transform=ax.transAxes, va="top", fontsize=8)
    _title(fig, "Matrix multiplication: GFLOP/s against size", records,
           _devices(lines) or ["cpu"])
    fig.tight_layout()

    mistake, ax2 = plt.subplots(figsize=(8, 4.6))
    drawn = sync_lines(records)
    for line in drawn:
        device = line["device"]
        ax2.plot(line["n"], [s["median"] for s in line["rates"]], linestyle="-",
                 **_DEVICE_STYLE[device],
                 label=f"{device.upper()} float32, waiting for the result (right)")
        draw_spread(ax2, line["n"], line["rates"], color=_DEVICE_STYLE[device]["color"])
        ax2.plot(line["n"], [u["median"] for u in line["unsync"]], linestyle="--",
                 fillstyle="none", **_DEVICE_STYLE[device],
                 label=f"{device.upper()} float32, not waiting (wrong)")
        draw_spread(ax2, line["n"], [u["summary"] for u in line["unsync"]],
                    color=_DEVICE_STYLE[device]["color"])
    _axes(ax2, sizes)
    ax2.set_ylabel("GFLOP/s computed from the time measured")
    ax2.set_title(LINE_SPREAD_NOTE, fontsize=8.5)
    ax2.legend(fontsize=8, loc="upper left")
    _title(mistake, "The same multiplications timed with and without waiting", records,
           _devices(drawn) or ["cpu"])
    mistake.tight_layout()
    return fig, mistake

