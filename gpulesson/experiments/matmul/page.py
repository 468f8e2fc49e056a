"""Episode 6's reference runs of matrix products, their figures and the page's values
(``ref_mm_*``). The alt texts read the lines the figures draw; comparison words come from
``compare`` or ``rank``, which say "no measurable difference" where ranges overlap."""

import math
from pathlib import Path

from gpulesson.experiments.matmul import measure as mm
from gpulesson.experiments.matmul.measure import RECORDS, describe  # noqa: F401 (the command's table)
from gpulesson.records import summaries
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import given, listed, median_text, run_values
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software
from gpulesson.records.summaries import NO_DIFFERENCE, compare, draw_spread, fmt_number, summary_text

RESULTS_FILE = RECORDS.results_file
DEVICES = ("cpu", "gpu")
FIGURES, FIGURE_FOLDER = ("matmul-gflops.svg", "matmul-sync.svg"), "fig/06-why-gpus-are-fast"


def compares(records) -> bool:
    """Whether a run measured throughput (:func:`~measure.amortised`) on the CPU, and on a GPU
    (if any) in the same precisions."""
    cpu, gpu = ({r.get("dtype") for r in records if r.get("device_kind") == d} for d in DEVICES)
    return bool(cpu) and (not gpu or cpu == gpu) and all(map(mm.amortised, records))


def reference_run(path=None) -> list[dict]:
    """The newest run that :func:`compares`, one with a GPU first; [] without one."""
    run = RECORDS.newest_run(path, complete=compares)
    return run if compares(run) else []


# The newest run of any method: the time of one call, its values and its figure, come from it.
latency_run = RECORDS.newest_run


def page_runs(path=None) -> tuple:
    """``(reference_run, latency_run)``, or ``()`` when the file holds no run."""
    runs = reference_run(path), latency_run(path)
    return runs if any(runs) else ()


# --- the figures and their alt texts ----------------------------------------------------------

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
LINE_SPREAD_NOTE = "markers: median; " + summaries.SPREAD_NOTE.split("; ", 1)[1]
_COPY_STYLE = {"marker": "v", "linestyle": "-.", "color": "tab:red", "fillstyle": "none"}


def _with_copy(point: dict) -> float:
    """A size's GFLOP/s counting the copy of its inputs to the device."""
    return mm.gflops(point["n"], point["median_seconds"] + point["transfer_median_seconds"])


def rate_lines(records) -> list[dict]:
    """The throughput figure's lines: one a sweep, and one counting the float32 copy (``copy``)."""
    lines = []
    for record in filter(mm.amortised, records):
        found = [p for p in record["points"] if mm.rate_summary(p)]
        if not found:
            continue
        device, dtype = record["device_kind"], record["dtype"]
        style = {**_DEVICE_STYLE[device], **_DTYPE_STYLE[dtype]}
        style["color"] = _SHADES.get((device, dtype), style["color"])
        label = f"{device.upper()} {mm.precision_label(record)}"
        lines.append({"device": device, "dtype": dtype, "copy": False, "label": label,
                      "style": style, "n": [p["n"] for p in found],
                      "rates": [mm.rate_summary(p) for p in found], "peak": mm.published_peak(record)})
        copies = [p for p in found if p.get("transfer_median_seconds")]
        if dtype == "float32" and copies:
            lines.append({"device": device, "dtype": dtype, "copy": True, "style": _COPY_STYLE,
                          "label": f"{label}, with copying the inputs to it",
                          "n": [p["n"] for p in copies], "medians": list(map(_with_copy, copies))})
    return lines


def peak_lines(lines) -> list[dict]:
    """The published peaks, one a precision drawn."""
    found = {}
    for line in lines:
        peak = line.get("peak")
        if peak and peak["precision"] not in found:
            found[peak["precision"]] = {
                **peak, "color": line["style"]["color"],
                "label": f"{peak['card']} published {peak['precision'].upper()} peak "
                         f"({peak['gflops'] / 1e3:g} TFLOP/s)"}
    return list(found.values())


def sync_lines(records) -> list[dict]:
    """The time of one float32 call: synchronised, over a window, and not waited for."""
    found = []
    for record in records:
        timed = [p for p in record["points"] if mm.point_summary(p, "latency_seconds")]
        if record["dtype"] != "float32" or not timed:
            continue
        unsync = {p["n"]: s for p in timed if (s := mm.point_summary(p, "unsynchronised_seconds"))}
        found.append({"device": record["device_kind"], "label": mm.precision_label(record),
                      "n": [p["n"] for p in timed],
                      "latency": [mm.point_summary(p, "latency_seconds") for p in timed],
                      "amortised": [mm.point_summary(p) for p in timed],
                      "calls": [p.get("calls_per_sync") for p in timed], "unsync": unsync})
    return found


def _devices(lines) -> list[str]:
    return [d for d in DEVICES if any(line["device"] == d for line in lines)]


def _crossover_drawn(records, lines) -> int | None:
    """The crossover, where a CPU and a GPU float32 line are drawn."""
    drawn = {(line["device"], line["dtype"]) for line in lines if not line["copy"]}
    return mm.crossover(records) if {("cpu", "float32"), ("gpu", "float32")} <= drawn else None


def gflops_alt(records) -> str:
    lines = rate_lines(records)
    if not lines:
        return ("Chart without lines: the run has no sizes measured with the current method "
                "(throughput over windows of calls).")
    sizes = sorted({n for line in lines for n in line["n"]})
    counts = sorted({s["n"] for line in lines if not line["copy"] for s in line["rates"]})
    styles = "; ".join(f"{line['label']} ({_MARKER_WORDS[line['style']['marker']]} markers, "
                       f"{_LINE_WORDS[line['style']['linestyle']]} line)" for line in lines)
    parts = [f"Log-log line chart of the TFLOP/s of matrix multiplication on the "
             f"{' and '.join(d.upper() for d in _devices(lines))} against matrix size n, from "
             f"n = {sizes[0]:,} to n = {sizes[-1]:,}, one line per precision and device: "
             f"{styles}. Each marker is the median time per call over "
             + (f"{counts[0]}" if len(counts) == 1 else f"{counts[0]} to {counts[-1]}")
             + " windows of calls with one wait each; whiskers span "
             "the fastest to the slowest window and dots show each window."]
    for line in (line for line in lines if not line["copy"]):
        medians, n = [s["median"] / 1e3 for s in line["rates"]], line["n"]
        best = max(range(len(medians)), key=medians.__getitem__)
        text = f"{line['label']}: {fmt_number(medians[0])} TFLOP/s at n = {n[0]:,}"
        if len(n) > 1:
            text += f", {fmt_number(medians[-1])} TFLOP/s at n = {n[-1]:,}"
        if 0 < best < len(n) - 1:
            text += f", highest median {fmt_number(medians[best])} TFLOP/s at n = {n[best]:,}"
        parts.append(text + ".")
    peaks = peak_lines(lines)
    if peaks:
        parts.append("Thin dashed horizontal lines mark the vendor's published peaks, not "
                     "measurements: " + "; ".join(p["label"] for p in peaks) + ".")
    floor = mm.fixed_cost(records)
    if floor:
        parts.append(f"A grey band over n = {floor['sizes'][0]:,} to {floor['sizes'][-1]:,} marks "
                     f"the GPU's float32 fixed cost per call: {mm.fixed_cost_words(floor)}.")
    n = _crossover_drawn(records, lines)
    if n is not None:
        parts.append(f"A dotted vertical line at n = {n:,} marks the size from which the GPU "
                     "was faster in float32 at every larger size.")
    return " ".join(parts)


def sync_alt(records) -> str:
    lines = sync_lines(records)
    if not lines:
        return "Chart without lines: the run timed no float32 calls."
    parts = [f"Log-log line chart of the time of one float32 call on the "
             f"{' and '.join(line['device'].upper() for line in lines)} against matrix size n: "
             "a solid line with filled markers for one call timed until its result was there "
             "(its latency; median, whiskers from the fastest to the slowest call), a "
             "dash-dotted line with half-filled markers for the time per call of a window of "
             "calls with one wait at its end"
             + (", and a dashed line with hollow markers for calls timed without waiting"
                if any(line["unsync"] for line in lines) else "") + "."]
    for line in lines:
        n, waited = line["n"][-1], line["latency"][-1]
        text = (f"At n = {n:,} one synchronised call on the {line['device'].upper()} took "
                f"{duration(waited['median'])}")
        if line["amortised"][-1]:
            text += (f", a call in a window of {line['calls'][-1]:,} took "
                     f"{duration(line['amortised'][-1]['median'])}")
        if n in line["unsync"]:
            text += f", and a call not waited for {duration(line['unsync'][n]['median'])}"
        parts.append(text + ".")
    return " ".join(parts)


def _frame(fig, ax, records, what: str, lines) -> None:
    """Both figures' log-log axes over the sizes of ``records`` and their title of the run."""
    sizes = sorted({p["n"] for r in records for p in r["points"]}) or [1]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(sizes, [str(n) for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("matrix size n (n × n times n × n)")
    ax.grid(True, which="major", alpha=0.3)
    if records:
        names = hardware(records)
        title(fig, what, records, " | ".join(f"{d.upper()}: {names.get(d.upper(), NOT_RECORDED)}"
                                             for d in _devices(lines) or ["cpu"]),
              f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _rates_figure(records):
    from matplotlib.ticker import FuncFormatter, LogLocator

    lines = rate_lines(records)
    fig, (ax,) = panels(1, (8, 5.4))
    for line in lines:  # recorded in GFLOP/s, drawn in TFLOP/s
        if line["copy"]:
            ax.plot(line["n"], [m / 1e3 for m in line["medians"]], label=line["label"], **line["style"])
            continue
        ax.plot(line["n"], [s["median"] / 1e3 for s in line["rates"]], linewidth=1.6,
                markersize=6, label=line["label"], **line["style"])
        draw_spread(ax, line["n"], line["rates"], color=line["style"]["color"], scale=1e-3)
    for peak in peak_lines(lines):
        ax.axhline(peak["gflops"] / 1e3, color=peak["color"], linestyle=(0, (6, 3)),
                   linewidth=0.9, label=peak["label"])
    _frame(fig, ax, records, "Matrix multiplication: throughput (TFLOP/s) against size", lines)
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=12))
    ax.yaxis.set_major_formatter(FuncFormatter(  # 0.001, 1, 100
        lambda v, _: f"{v:,.{max(0, -math.floor(math.log10(v) + 1e-9))}f}"))
    ax.set_ylabel("TFLOP/s (time per call over a window of calls)")
    ax.set_title(LINE_SPREAD_NOTE.replace("median", "median window"), fontsize=8.5)
    floor = mm.fixed_cost(records)
    if floor:
        low, high = floor["sizes"][0], floor["sizes"][-1]
        ax.axvspan(low / 1.25, high * 1.25, color="0.5", alpha=0.12, linewidth=0)
        ax.text(low / 1.2, 0.90, f"GPU float32, fixed cost\nper call: {duration(floor['low'])}–"
                f"{duration(floor['high'])}\nat n = {low:,} to {high:,}\n(a call, its dispatch,\n"
                "its share of one wait)", transform=ax.get_xaxis_transform(), fontsize=8, va="top")
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
    if busy > mm.BUSY:
        ax.text(0.02, 0.90, f"other programs used up to {busy:.0%} of the CPU time:\n"
                "CPU numbers may be low", transform=ax.transAxes, va="top", fontsize=8)
    fig.tight_layout()
    return fig


def _times_figure(records):
    fig, (ax,) = panels(1, (8, 4.8))
    drawn = sync_lines(records)
    for line in drawn:
        style = _DEVICE_STYLE[line["device"]]
        name = f"{line['device'].upper()} {line['label']}"
        for n, found, kind, label in (
                (line["n"], line["latency"], {"linestyle": "-"},
                 "one call, waiting for its result (latency)"),
                (line["n"], line["amortised"], {"linestyle": "-.", "fillstyle": "bottom"},
                 "per call, many calls and one wait (throughput)"),
                (list(line["unsync"]), list(line["unsync"].values()),
                 {"linestyle": "--", "fillstyle": "none"}, "one call, not waiting (wrong)")):
            if n:
                ax.plot(n, [s["median"] if s else math.nan for s in found], **kind, **style,
                        label=f"{name}: {label}")
                draw_spread(ax, n, found, color=style["color"])
    _frame(fig, ax, records, "The time of one call: waiting for each, one wait for many, not "
           "waiting", drawn)
    ax.set_ylabel("seconds per call")
    ax.set_title(LINE_SPREAD_NOTE, fontsize=8.5)
    if drawn:
        ax.legend(fontsize=7.5, loc="upper left")
    fig.tight_layout()
    return fig


def figures(records, latency=None):
    """``(TFLOP/s against size, the time of one call)``, the second of ``latency`` if given."""
    latency = records if latency is None else latency
    need(records or latency, "run the benchmark first")
    return _rates_figure(records), _times_figure(latency)


# --- the page's values --------------------------------------------------------------------------

def _peak(record: dict | None) -> str:
    """A sweep's highest median rate, with the sizes :func:`rank` cannot tell apart from it."""
    rates = {p["n"]: s for p in (record or {}).get("points", []) if (s := mm.rate_summary(p, unit="TFLOP/s"))}
    if not rates:
        return NOT_RECORDED
    first = summaries.rank({f"{n:,}": s for n, s in rates.items()}, higher_is_better=True)[0]
    best = max(rates, key=lambda n: rates[n]["median"])
    others = [n for n in first if n != f"{best:,}"]
    return (f"{summary_text(rates[best])} at n = {best:,}"
            + (f" ({NO_DIFFERENCE} from n = {listed(others)})" if others else ""))


def _by_size_text(records, dtype: str) -> str:
    """``dtype`` against float32 size by size: a CPU's float16 can lose at one and win at another."""
    sizes = {key: "n = " + listed([f"{n:,}" for n in found])
             for key, found in mm.dtype_by_size(records, "cpu", dtype).items()}
    ranked = ", ".join(f"{word} at {sizes[word]}" for word in ("faster", "slower") if word in sizes)
    if NO_DIFFERENCE not in sizes:
        return ranked or NOT_RECORDED
    if not ranked:
        return f"{NO_DIFFERENCE} at any size measured ({sizes[NO_DIFFERENCE]})"
    return f"{ranked}, with {NO_DIFFERENCE} at {sizes[NO_DIFFERENCE]}"


def _unsync_text(found: list[dict]) -> str:
    """The rate of a call not waited for: impossible where above every call that waited."""
    unsync = found and found[-1].get("unsynchronised_median_seconds")
    rates = [r["max"] for p in found if (r := mm.rate_summary(p, "latency_seconds", "TFLOP/s"))]
    if not unsync or not rates:
        return NOT_RECORDED
    rate, best = mm.gflops(found[-1]["n"], unsync) / 1e3, max(rates)  # best: the fastest call that waited
    if rate > best:
        return (f"{fmt_number(rate)} TFLOP/s: more than any call that waited for its result "
                f"reached (at most {fmt_number(best)} TFLOP/s), an impossible number")
    return (f"{fmt_number(rate)} TFLOP/s, no more than the calls that waited for their result "
            f"reached (up to {fmt_number(best)} TFLOP/s): no sign that this call returned before its "
            "work was done")


def _share_text(share: float) -> str:
    return f"{share:.0%}" if share >= 0.1 else f"{share:.1%}"


def _peaks_text(records) -> dict[str, str]:
    """The card's published peaks, and the GPU's best median rates as shares of them."""
    values = {}
    for dtype in mm.DTYPES:
        record = mm.find(records, "gpu", dtype)
        peak = record and record["points"] and mm.published_peak(record)
        best = peak and max(p["gflops"] for p in record["points"]) / peak["gflops"]
        values[f"ref_mm_gpu_{dtype}_share"] = given(
            peak and f"{_share_text(best)} of the published {peak['precision'].upper()} peak")
    peaks = peak_lines(rate_lines(records))
    values["ref_mm_gpu_peaks"] = given(peaks and listed(
        [f"{p['precision'].upper()} {p['gflops'] / 1e3:g} TFLOP/s" for p in peaks])
        + f" for the {peaks[0]['card']}, from the {peaks[0]['source']}")
    return values


def model_precision(path) -> tuple[dict, dict, dict] | None:
    """(mixed bfloat16 rate, float32 rate, the bfloat16 record) of the newest feeding run that
    trained the CNN on the CPU in both, all else the same; None without both."""
    from gpulesson.experiments.feeding.measure import RECORDS as FEEDING  # episode 9's records
    from gpulesson.experiments.feeding.measure import rate_summary

    same = ("pipeline", "jit_compile", "steps_per_execution", "batch_size")
    for group in reversed(list(FEEDING.runs_in(path).values())):
        cpu = {"device_kind": "cpu", "mode": "train"}
        mixed = FEEDING.find(group, **cpu, group="precision", precision="mixed_bfloat16")
        base = mixed and FEEDING.find(group, **cpu, group="pipelines", precision="float32",
                                      **{k: mixed.get(k) for k in same})
        if base:
            return rate_summary(mixed), rate_summary(base), mixed
    return None


def _model_values(path) -> dict[str, str]:
    found = model_precision(path)
    keys = ("ref_mm_model_bfloat16", "ref_mm_model_float32", "ref_mm_model_verdict",
            "ref_mm_model_cpu", "ref_mm_model_data", "ref_mm_model_software")
    if not found:
        return dict.fromkeys(keys, NOT_RECORDED)
    mixed, base, record = found
    verdict = compare(mixed, base, higher_is_better=True)
    if verdict.measurable:
        words = f"mixed bfloat16 trained {verdict.text} float32"
    elif min(mixed["n"], base["n"]) < 2:
        words = (f"{NO_DIFFERENCE} by the lesson's rule, because a setting was timed only once "
                 "and so has no range to tell the two apart")
    else:
        words = f"{NO_DIFFERENCE}: their ranges overlap"
    return dict(zip(keys, (summary_text(mixed), summary_text(base), words,
                           hardware([record]).get("CPU", NOT_RECORDED),
                           record.get("data_label", NOT_RECORDED), software([record])), strict=True))


def copy_text(point: dict) -> str:
    """The copy's rate from each kind of host memory (older records: the pageable one only)."""
    nbytes = point.get("transfer_bytes") or 2 * point["n"] ** 2 * 4  # two float32 inputs
    text = (f"from pageable host memory (a NumPy array), "
            f"{nbytes / point['transfer_median_seconds'] / 1e9:.3g} GB/s")
    if point.get("pinned_transfer_median_seconds"):
        pinned = nbytes / point["pinned_transfer_median_seconds"] / 1e9
        return text + f"; from pinned (page-locked) host memory, {pinned:.3g} GB/s"
    reason = point.get("pinned_transfer_unsupported")
    return text + ("; the copy from pinned memory could not be made: " + reason if reason else
                   "; this run did not time a copy from pinned memory, which the GPU reads "
                   "over the link directly")


def _method_note(records) -> str:
    if not RECORDS.predates(records[0]):
        return (f"Each window lasted at least {mm.MIN_WINDOW_SECONDS:g} s, and on the GPU kept the "
                "SM clock and board power that NVML showed while it ran.")
    return (f"These windows were recorded before the lesson's current method: they lasted as "
            f"little as a few milliseconds, and kept neither clock nor power. The next GPU run "
            f"(`python -m gpulesson.experiments.matmul`) times windows of at least "
            f"{mm.MIN_WINDOW_SECONDS:g} s with both.")


def _at(summary: dict | None, point: dict, show=None) -> str:
    """A size's summary as the page writes it: "... (range ...) at n = 1,024"."""
    return given(summary and f"{summary_text(summary, show)} at n = {point['n']:,}")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """The episode's values (``ref_mm_*``), NOT_RECORDED for what the runs lack; the
    ``ref_mm_lat_*`` ones (one synchronised float32 call) from the newest run of any method."""
    from gpulesson.experiments.feeding import RESULTS_FILE as FEEDING_FILE

    records, latency = reference_run(path), latency_run(path)
    values = {**_peaks_text(records), **_model_values(Path(path).parent / FEEDING_FILE.name)}
    for prefix, run in (("ref_mm", records), ("ref_mm_lat", latency)):
        values.update(run_values(prefix, run, "run", "date", "cpu", "gpu"))
        values[f"{prefix}_software"] = given(run, software)
    values["ref_mm_cpu_only"] = (values["ref_mm_cpu"] if values["ref_mm_gpu"] == NOT_RECORDED
                                 else NOT_RECORDED)
    for device in DEVICES:
        found, prefix = mm.points(records, device) or [None], f"ref_mm_{device}"
        smallest, largest = found[0], found[-1]
        values[f"{prefix}_smallest"] = _at(mm.rate_summary(smallest, unit="TFLOP/s"), smallest)
        values[f"{prefix}_largest_n"] = given(largest and f"{largest['n']:,}")
        values[f"{prefix}_largest_time"] = median_text(mm.point_summary(largest), what="repeats")
        values[f"{prefix}_first_call"] = given(largest and largest.get("first_call_seconds"), duration)
        values.update({f"{prefix}_{dtype}": _peak(mm.find(records, device, dtype))
                       for dtype in mm.DTYPES})
        # how the windows were chosen: their calls, and one wait's largest share
        timed = [p for r in records if r.get("device_kind") == device for p in r["points"]]
        calls = sorted({p["calls_per_sync"] for p in timed if p.get("calls_per_sync")})
        shares = [p["overhead_share"] for p in timed if p.get("overhead_share") is not None]
        values[f"{prefix}_calls"] = given(calls and " to ".join(f"{n:,}" for n in
                                                                sorted({calls[0], calls[-1]})))
        values[f"{prefix}_overhead"] = given(shares and max(shares), _share_text)
        values[f"{prefix}_float32_label"] = given(mm.find(records, device), mm.precision_label)
        timed = mm.points(latency, device) or [None]
        for name, point in (("smallest", timed[0]), ("largest", timed[-1])):
            values[f"ref_mm_lat_{device}_{name}"] = _at(mm.point_summary(point, "latency_seconds"),
                                                        point, duration)
    cpu = mm.points(latency, "cpu")
    largest = (cpu or [None])[-1]
    values["ref_mm_lat_cpu_largest_n"] = given(largest and f"{largest['n']:,}")
    for key, samples in (("largest_time", "latency_seconds"), ("unsync_time", "unsynchronised_seconds")):
        values[f"ref_mm_lat_cpu_{key}"] = median_text(mm.point_summary(largest, samples), what="repeats")
    values["ref_mm_lat_cpu_unsync_verdict"] = _unsync_text(cpu)
    values["ref_mm_cpu_sweep_time"] = given(sum(r.get("wall_seconds") or 0 for r in records
                                                if r.get("device_kind") == "cpu"), duration)
    for dtype in mm.DTYPES[1:]:  # the CPU's other precisions against float32, size by size
        values[f"ref_mm_cpu_{dtype}_by_size"] = _by_size_text(records, dtype)
    copy = next((p for p in mm.points(records, "gpu")[-1:] if p.get("transfer_median_seconds")), None)
    values["ref_mm_gpu_transfer_n"] = given(copy and f"{copy['n']:,}")
    values["ref_mm_gpu_transfer_time"] = median_text(mm.point_summary(copy, "transfer_seconds"),
                                                     what="repeats")
    values["ref_mm_gpu_transfer_gflops"] = given(copy and f"{fmt_number(_with_copy(copy) / 1e3)} TFLOP/s")
    values["ref_mm_gpu_copy_memory"] = given(copy, copy_text)
    values["ref_mm_gpu_floor"] = given(mm.fixed_cost(records), mm.fixed_cost_words)
    values["ref_mm_gpu_sync_rate"], values["ref_mm_gpu_windows"] = mm.sync_beside_windows(records)
    values["ref_mm_crossover"] = given(records, mm.crossover_text)
    values["ref_mm_method_note"] = given(records, _method_note)
    values["ref_mm_fig_gflops_alt"] = given(records, gflops_alt)
    values["ref_mm_fig_sync_alt"] = given(latency, sync_alt)
    return values
