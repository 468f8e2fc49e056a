"""The figures of the reference runs and their alt texts, both from :func:`rate_lines` and
:func:`sync_lines`, so that an alt text names only what is drawn."""

from __future__ import annotations

import math

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread, fmt_number
from gpulesson.experiments.matmul import records as mr
from gpulesson.experiments.matmul.measure import gflops
from gpulesson.records.figkit import need, title
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software

_DEVICE_STYLE = {"cpu": {"marker": "o", "color": "tab:blue"},
                 "gpu": {"marker": "s", "color": "tab:orange"}}
_MARKER_WORDS = {"o": "round", "s": "square", "v": "triangle"}
# A shade per precision within each device's colour.
_SHADES = {("cpu", "bfloat16"): "#0b3d66", ("cpu", "float16"): "#5fa2d8",
           ("gpu", "bfloat16"): "#a64b00", ("gpu", "float16"): "#f5a55c"}
_DTYPE_STYLE = {"float32": {"linestyle": "-", "fillstyle": "full"},
                "bfloat16": {"linestyle": "--", "fillstyle": "bottom"},
                "float16": {"linestyle": ":", "fillstyle": "none"}}
_LINE_WORDS = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dotted"}
LINE_SPREAD_NOTE = "markers: median; " + SPREAD_NOTE.split("; ", 1)[1]


def _rate(value: float) -> str:
    return f"{fmt_number(value / 1e3)} TFLOP/s"


def _tick(value: float, _position=None) -> str:
    """0.001, 1, 100."""
    return f"{value:,.{max(0, -math.floor(math.log10(value) + 1e-9))}f}"


def rate_lines(records) -> list[dict]:
    """The throughput figure's lines: one a sweep, and one with the copy of the float32
    inputs counted (``copy: True``) where it was timed."""
    lines = []
    for record in records:
        points = [p for p in record["points"] if mr.rate_summary(p)] if mr.amortised(record) else []
        if not points:
            continue
        device, dtype = record["device_kind"], record["dtype"]
        style = {**_DEVICE_STYLE[device], **_DTYPE_STYLE[dtype]}
        style["color"] = _SHADES.get((device, dtype), style["color"])
        lines.append({"device": device, "dtype": dtype, "copy": False,
                      "label": f"{device.upper()} {mr.precision_label(record)}", "style": style,
                      "n": [p["n"] for p in points], "rates": [mr.rate_summary(p) for p in points],
                      "peak": mr.published_peak(record)})
        copies = [p for p in points if p.get("transfer_median_seconds")]
        if dtype == "float32" and copies:
            lines.append({
                "device": device, "dtype": dtype, "copy": True,
                "label": f"{device.upper()} {mr.precision_label(record)}, with copying the inputs "
                         "to it",
                "style": {"marker": "v", "linestyle": "-.", "color": "tab:red",
                          "fillstyle": "none"},
                "n": [p["n"] for p in copies],
                "medians": [gflops(p["n"], p["median_seconds"] + p["transfer_median_seconds"])
                            for p in copies]})
    return lines


def peak_lines(lines) -> list[dict]:
    """The published peaks, one a precision drawn."""
    found = {}
    for line in lines:
        peak = line.get("peak")
        if peak and not line["copy"] and peak["precision"] not in found:
            found[peak["precision"]] = {
                "gflops": peak["gflops"], "color": line["style"]["color"],
                "label": f"{peak['card']} published {peak['precision'].upper()} peak "
                         f"({peak['gflops'] / 1e3:g} TFLOP/s)"}
    return list(found.values())


def sync_lines(records) -> list[dict]:
    """The time of one float32 call: synchronised, over a window (throughput methods), and not
    waited for."""
    found = []
    for record in records:
        if record["dtype"] != "float32":
            continue
        points = [p for p in record["points"] if mr.latency_summary(p)]
        if not points:
            continue
        unsync = [{"n": p["n"], "median": p["unsynchronised_median_seconds"],
                   "summary": mr.point_summary(p, "unsynchronised_seconds")}
                  for p in points if p.get("unsynchronised_median_seconds")]
        found.append({"device": record["device_kind"], "label": mr.precision_label(record),
                      "n": [p["n"] for p in points],
                      "latency": [mr.latency_summary(p) for p in points],
                      "amortised": [mr.point_summary(p) for p in points],
                      "calls": [p.get("calls_per_sync") for p in points],
                      "unsync": unsync})
    return found


def _devices(lines) -> list[str]:
    return [d for d in ("cpu", "gpu") if any(line["device"] == d for line in lines)]


def _title(fig, what: str, records, devices) -> None:
    names = hardware(records)
    title(fig, what, records,
          " | ".join(f"{d.upper()}: {names.get(d.upper(), NOT_RECORDED)}" for d in devices),
          f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _axes(ax, sizes) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (n × n times n × n)")
    ax.grid(True, which="major", alpha=0.3)


def floor_drawn(records) -> dict | None:
    """The GPU float32 sweep's dispatch floor, if any."""
    return next((floor for r in records if r.get("dtype") == "float32"
                 and (floor := mr.dispatch_floor(r))), None)


def floor_words(floor: dict) -> str:
    return (f"{duration(floor['low'])}–{duration(floor['high'])} a call at every n up to "
            f"{floor['sizes'][-1]:,}: the host's dispatch of the call, not the GPU's compute")


def _crossover_drawn(records, lines) -> int | None:
    """The crossover, where a CPU and a GPU float32 line are drawn."""
    drawn = {(line["device"], line["dtype"]) for line in lines if not line["copy"]}
    return mr.crossover(records) if {("cpu", "float32"), ("gpu", "float32")} <= drawn else None


def _style_words(style) -> str:
    return (f"{_MARKER_WORDS.get(style['marker'], style['marker'])} markers, "
            f"{_LINE_WORDS[style['linestyle']]} line")


def gflops_alt(records) -> str:
    lines = rate_lines(records)
    if not lines:
        return ("Chart without lines: the run has no sizes measured with the current method "
                "(throughput over windows of calls).")
    sizes = sorted({n for line in lines for n in line["n"]})
    counts = sorted({s["n"] for line in lines if not line["copy"] for s in line["rates"]})
    devices = " and ".join(d.upper() for d in _devices(lines))
    parts = [f"Log-log line chart of the TFLOP/s of matrix multiplication on the {devices} "
             f"against matrix size n, from n = {sizes[0]:,} to n = {sizes[-1]:,}, one line per "
             "precision and device: "
             + "; ".join(f"{line['label']} ({_style_words(line['style'])})" for line in lines)
             + ". Each marker is the median time per call over "
             + (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}")
             + " windows of calls with one wait each; whiskers span "
             "the fastest to the slowest window and dots show each window."]
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
    peaks = peak_lines(lines)
    if peaks:
        parts.append("Thin dashed horizontal lines mark the vendor's published peaks, not "
                     "measurements: " + "; ".join(p["label"] for p in peaks) + ".")
    floor = floor_drawn(records)
    if floor:
        parts.append(f"A grey band over n = {floor['sizes'][0]:,} to {floor['sizes'][-1]:,} "
                     f"marks the GPU's dispatch floor: float32 calls took {floor_words(floor)}.")
    n = _crossover_drawn(records, lines)
    if n is not None:
        parts.append(f"A dotted vertical line at n = {n:,} marks the size from which the GPU "
                     "was faster in float32 at every larger size.")
    return " ".join(parts)


def sync_alt(records) -> str:
    lines = sync_lines(records)
    if not lines:
        return "Chart without lines: the run timed no float32 calls."
    devices = " and ".join(line["device"].upper() for line in lines)
    parts = [f"Log-log line chart of the time of one float32 call on the {devices} against "
             "matrix size n: a solid line with filled markers for one call timed until its "
             "result was there (its latency; median, whiskers from the fastest to the slowest "
             "call), a dash-dotted line with half-filled markers for the time per call of a "
             "window of calls with one wait at its end"]
    if any(line["unsync"] for line in lines):
        parts[0] += ", and a dashed line with hollow markers for calls timed without waiting"
    parts[0] += "."
    for line in lines:
        n, waited = line["n"][-1], line["latency"][-1]
        text = (f"At n = {n:,} one synchronised call on the {line['device'].upper()} took "
                f"{duration(waited['median'])}")
        if line["amortised"][-1]:
            text += (f", a call in a window of {line['calls'][-1]:,} took "
                     f"{duration(line['amortised'][-1]['median'])}")
        unsync = next((u for u in line["unsync"] if u["n"] == n), None)
        if unsync:
            text += f", and a call not waited for {duration(unsync['median'])}"
        parts.append(text + ".")
    return " ".join(parts)


def _sizes(records) -> list[int]:
    return sorted({p["n"] for r in records for p in r["points"]})


def _rates_figure(records):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator

    lines = rate_lines(records)
    fig, ax = plt.subplots(figsize=(8, 5.4))
    for line in lines:  # recorded in GFLOP/s, drawn in TFLOP/s
        if line["copy"]:
            ax.plot(line["n"], [m / 1e3 for m in line["medians"]], label=line["label"],
                    **line["style"])
            continue
        ax.plot(line["n"], [s["median"] / 1e3 for s in line["rates"]], linewidth=1.6,
                markersize=6, label=line["label"], **line["style"])
        draw_spread(ax, line["n"], line["rates"], color=line["style"]["color"], scale=1e-3)
    for peak in peak_lines(lines):
        ax.axhline(peak["gflops"] / 1e3, color=peak["color"], linestyle=(0, (6, 3)),
                   linewidth=0.9, label=peak["label"])
    sizes = _sizes([r for r in records if mr.amortised(r)]) or _sizes(records) or [1]
    _axes(ax, sizes)
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(_tick))
    ax.set_ylabel("TFLOP/s (time per call over a window of calls)")
    ax.set_title(LINE_SPREAD_NOTE.replace("median", "median window"), fontsize=8.5)
    floor = floor_drawn(records)
    if floor:
        low, high = floor["sizes"][0], floor["sizes"][-1]
        ax.axvspan(low / 1.25, high * 1.25, color="0.5", alpha=0.12, linewidth=0)
        ax.text(low / 1.2, 0.90, f"GPU dispatch floor:\n{duration(floor['low'])}–"
                f"{duration(floor['high'])} a call\nat every n up to {high:,}:\nthe host's "
                "dispatch,\nnot the GPU's compute", transform=ax.get_xaxis_transform(),
                fontsize=8, va="top")
    n = _crossover_drawn(records, lines)
    if n is not None:
        ax.axvline(n, color="black", linestyle=(0, (1, 3)), linewidth=1)
        ax.annotate(f"GPU faster\nfrom n = {n:,}", (n, 0.97), xycoords=("data", "axes fraction"),
                    xytext=(4, 0), textcoords="offset points", fontsize=8.5, va="top")
    elif "gpu" not in _devices(lines):
        ax.text(0.02, 0.97, f"GPU: {NOT_RECORDED}", transform=ax.transAxes, va="top",
                fontsize=9, style="italic")
    if lines:
        ax.legend(fontsize=7.5, loc="lower right")
    busy = max((r.get("other_programs_cpu_share") or 0 for r in records), default=0)
    if busy > mr.BUSY:
        ax.text(0.02, 0.90, f"other programs used up to {busy:.0%} of the CPU time:\n"
                "CPU numbers may be low", transform=ax.transAxes, va="top", fontsize=8)
    if records:
        _title(fig, "Matrix multiplication: throughput (TFLOP/s) against size", records,
               _devices(lines) or ["cpu"])
    fig.tight_layout()
    return fig


def _times_figure(records):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    drawn = sync_lines(records)
    for line in drawn:
        device, style = line["device"], _DEVICE_STYLE[line["device"]]
        name = f"{device.upper()} {line['label']}"
        ax.plot(line["n"], [s["median"] for s in line["latency"]], linestyle="-", **style,
                label=f"{name}: one call, waiting for its result (latency)")
        draw_spread(ax, line["n"], line["latency"], color=style["color"])
        ax.plot(line["n"], [s["median"] for s in line["amortised"]], linestyle="-.",
                fillstyle="bottom", **style,
                label=f"{name}: per call, many calls and one wait (throughput)")
        draw_spread(ax, line["n"], line["amortised"], color=style["color"])
        if line["unsync"]:
            ax.plot([u["n"] for u in line["unsync"]], [u["median"] for u in line["unsync"]],
                    linestyle="--", fillstyle="none", **style,
                    label=f"{name}: one call, not waiting (wrong)")
            draw_spread(ax, [u["n"] for u in line["unsync"]],
                        [u["summary"] for u in line["unsync"]], color=style["color"])
    _axes(ax, _sizes(records) or [1])
    ax.set_ylabel("seconds per call")
    ax.set_title(LINE_SPREAD_NOTE, fontsize=8.5)
    if drawn:
        ax.legend(fontsize=7.5, loc="upper left")
    if records:
        _title(fig, "The time of one call: waiting for each, one wait for many, not waiting",
               records, _devices(drawn) or ["cpu"])
    fig.tight_layout()
    return fig


def figures(records, latency=None):
    """``(TFLOP/s against size, the time of one call)``; ``latency``: the second's run."""
    latency = records if latency is None else latency
    need(records or latency, "run the benchmark first")
    return _rates_figure(records), _times_figure(latency)
