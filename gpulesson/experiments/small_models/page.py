"""Episode 7's reference runs, one per part (a sweep counts only whole), in words, tables and
figures (their alt texts read what they draw), and the ``ref_mlp_*`` values. No framework imported."""

import itertools
import math
from collections import Counter

import numpy as np

from gpulesson.experiments.small_models.measure import EPISODE_MLP, PARTS, RECORDS, hidden_widths
from gpulesson.records.compare_plots import LOG_NOTE, epoch_times, needs_log_axis
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import accuracy, by_device, first_epoch, listed, median_text, run_values
from gpulesson.records.results import NOT_RECORDED, data_label, duration, hardware, is_gpu, pick
from gpulesson.records.summaries import SPREAD_NOTE, Comparison, draw_spread, scale, summary_text, times_text

COMMAND = "python -m gpulesson.experiments.small_models"
BUDGET = "`python tools/reference.py budget`"
FIGURES, FIGURE_FOLDER = ("comparison-epoch-times.svg", "sweep.svg"), "fig/07-small-models"
STEPS = "steps_per_epoch"
DEVICE_WORDS = {"CPU": "round markers and a solid line", "GPU": "square markers and a dashed line"}


def axes(records) -> tuple[list[int], list[int]]:
    """The sorted widths and batch sizes of a sweep's records."""
    return sorted({r["width"] for r in records}), sorted({r["batch_size"] for r in records})


def cell_name(key: tuple[int, int]) -> str:
    return f"width {key[0]}, batch size {key[1]}"


def sweep_cells(records) -> dict[tuple[int, int], dict[str, dict]]:
    """``{(width, batch_size): {"cpu": record, "gpu": record}}`` of one sweep run's records."""
    cells: dict[tuple[int, int], dict[str, dict]] = {}
    for record in records:
        cells.setdefault((record["width"], record["batch_size"]), {})[record["device_kind"]] = record
    return cells


def sweep_complete(records) -> bool:
    """Whether each device of a sweep run has every cell of the run's grid."""
    widths, batches = axes(records)
    cells, kinds = sweep_cells(records), {r["device_kind"] for r in records}
    return len(cells) == len(widths) * len(batches) and all(set(c) == kinds for c in cells.values())


def reference_run(part: str, path=None) -> list[dict]:
    """The records of ``part`` of the newest run with CPU and GPU records, a sweep only whole."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    return RECORDS.newest_run(path, part=part, complete=sweep_complete if part == "sweep" else None)


def page_runs(path=None) -> tuple:
    """Each part's reference run, the figures' (``figures``), or ``()`` when the file holds none."""
    runs = tuple(reference_run(part, path) for part in PARTS)
    return runs if any(runs) else ()


def figures(comparison, sweep):
    return comparison_figure(comparison), sweep_figure(sweep)


def sample_summary(record: dict | None, per: str = "n_rows") -> dict | None:
    """The time per sample of a sweep record (per step with ``per=STEPS``)."""
    return scale(RECORDS.epoch_summary(record), 1 / record[per]) if record else None


def speedup_text(found: Comparison | None) -> str:
    """``"0.4× (GPU 2.5× slower)"`` or ``"1.1× (no measurable difference)"``."""
    return f"{times_text(found.ratio)} ({verdict_words(found)})" if found else NOT_RECORDED


def verdict_words(found: Comparison) -> str:
    """"GPU 2.5× slower", or "no measurable difference" where the ranges overlap."""
    return f"GPU {found.sentence}" if found.measurable else found.sentence


def sweep_verdicts(records) -> dict[tuple[int, int], Comparison]:
    """``{(width, batch_size): the GPU against the CPU per sample}`` of the cells with both."""
    found = {key: RECORDS.gpu_against_cpu(pair.values(), sample_summary)
             for key, pair in sweep_cells(records).items()}
    return {key: v for key, v in found.items() if v is not None}


def describe_comparison(records) -> str:
    """The comparison in words: each device's epoch times, accuracy, and the speed-up."""
    if not records:
        return "No comparison run recorded."
    first, names = records[0], hardware(records)
    lines = [(f"Data: {data_label(records)}; {first['n_train']} training rows (a fifth of them for "
              f"validation), batch size {first['batch_size']}, {first['epochs']} epochs, "
              f"backend {first['backend']}.")]
    for record in sorted(records, key=is_gpu):
        kind = record["device_kind"].upper()
        lines.append(f"{kind} ({names[kind]}): first epoch {duration(record['first_epoch_seconds'])} "
                     f"(warm-up), then {summary_text(RECORDS.epoch_summary(record), duration)} per "
                     f"epoch; test accuracy {record['test_accuracy']:.3f}.")
    speedup = speedup_text(RECORDS.gpu_against_cpu(records))
    lines.append(f"Speed-up of the GPU per epoch (medians): {speedup}." if pick(records, True)
                 else "GPU: no run in these records.")
    return "\n".join(lines)


def _cell_text(found, between: str = " ", dash: str = "-") -> str:
    """A cell's median time per sample and the range of its timed epochs."""
    if not found:
        return "-"
    return duration(found["median"]) + between + (
        f"({duration(found['min'])}{dash}{duration(found['max'])})" if found["n"] > 1 else "(1 epoch)")


def sweep_table(records) -> str:
    """A text table of a sweep run: time per sample per device, and the speed-up, per cell."""
    if not records:
        return "No sweep recorded."
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    kinds = sorted({r["device_kind"] for r in records})
    header = f"{'width':>6} {'batch':>6} " + " ".join(f"{k.upper() + ' per sample':>24}" for k in kinds)
    header += f" {'speed-up':>9}  GPU against CPU" if verdicts else ""
    lines = [f"Data: {data_label(records)}; backend {records[0]['backend']}; per sample: median "
             "(fastest-slowest timed epoch).", header]
    for width, batch in itertools.product(*axes(records)):
        pair, found = cells.get((width, batch), {}), verdicts.get((width, batch))
        line = f"{width:6} {batch:6} " + " ".join(f"{_cell_text(sample_summary(pair.get(k))):>24}"
                                                  for k in kinds)
        if verdicts:
            line += f" {found.ratio:8.2f}x  {found.sentence}" if found else f" {'-':>9}"
        lines.append(line)
    if not verdicts:
        lines.append("Speed-up: not measured (no GPU records in this sweep).")
    return "\n".join(lines)


def describe(records) -> str:
    """The command's table of a run: each part it has."""
    return "\n".join(text([r for r in records if r["part"] == part]) for part, text in
                     (("comparison", describe_comparison), ("sweep", sweep_table))
                     if any(r["part"] == part for r in records))


def _comparison_drawn(records) -> list[dict]:
    """Per device recorded (CPU first), its epoch times and the summary of its timed epochs."""
    return [{"kind": name.upper(), "epochs": list(record["epoch_seconds"]),
             "summary": RECORDS.epoch_summary(record)}
            for name, record in by_device(records) if record and record.get("epoch_seconds")]


def comparison_alt(records) -> str:
    drawn = _comparison_drawn(records)
    if not drawn:
        return "Chart without lines: the run kept no epoch times."
    devices = " and ".join(d["kind"] for d in drawn)
    parts = [f"Line chart of the wall time of each of the {len(drawn[0]['epochs'])} training "
             f"epochs of the small network on the breast-cancer data on the {devices}, "
             + "; ".join(f"the {d['kind']} with {DEVICE_WORDS[d['kind']]}" for d in drawn)
             + "; the first epoch is circled and labelled as the warm-up. Right of the epochs, "
             "a whisker spans the fastest to the slowest timed epoch around the median, with "
             "the timed epochs as dots."]
    parts += [f"{d['kind']}: first epoch {duration(d['epochs'][0])}, then "
              f"{summary_text(d['summary'], duration, what='timed epochs')}." for d in drawn]
    if needs_log_axis([v for d in drawn for v in d["epochs"]]):
        parts.append(LOG_NOTE)
    return " ".join(parts)


def comparison_figure(records):
    """Each device's time per epoch, and right of them the median and range of its timed epochs."""
    need(records, f"run {COMMAND}")
    drawn = _comparison_drawn(records)
    need(drawn, "the comparison records keep no epoch times")
    names, found = hardware(records), {d["kind"]: d["epochs"] for d in drawn}
    fig = epoch_times(found.get("CPU"), found.get("GPU"), label=data_label(records),
                                    hardware={k: names[k] for k in found})
    ax = fig.axes[0]
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    longest = max(len(d["epochs"]) for d in drawn)
    where = longest + 1.5
    for i, d in enumerate(drawn):
        draw_spread(ax, [where + 0.6 * i], [d["summary"]], color=colours.get(d["kind"], "black"))
    ticks = [t for t in range(1, longest + 1) if longest <= 20 or t % 5 == 0 or t == 1]
    ax.set_xticks([*ticks, where + 0.3 * (len(drawn) - 1)], [*map(str, ticks), "timed\nepochs"])
    ax.set_xlabel(f"epoch; right: {SPREAD_NOTE.split('; ', 1)[1]}", fontsize=8)
    if "GPU" not in found:
        ax.text(0.98, 0.97, "no GPU run", transform=ax.transAxes, ha="right",
                va="top", fontsize=8, style="italic")
    ax.set_title(f"MLP {' -> '.join(map(str, EPISODE_MLP))}, "
                 f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}", fontsize=9)
    fig.tight_layout()
    return fig


def sweep_drawn(records) -> tuple[str, dict[tuple[int, int], tuple[float, str]]]:
    """What the grid draws: its kind ("speed-up", else the one device's "cpu" or "gpu") and each cell."""
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    if verdicts:
        drawn = {}
        for key, found in verdicts.items():
            # The speed-up's range: the CPU's fastest over the GPU's slowest epoch, and back.
            cpu, gpu = sample_summary(cells[key]["cpu"]), sample_summary(cells[key]["gpu"])
            words = f"GPU {found.sentence}" if found.measurable else "no measurable\ndifference"
            spread = f"{times_text(cpu['min'] / gpu['max'])}–{times_text(cpu['max'] / gpu['min'])}"
            drawn[key] = (found.ratio, f"{times_text(found.ratio)}\n{words}\n({spread})")
        return "speed-up", drawn
    kind = "cpu" if any("cpu" in pair for pair in cells.values()) else "gpu"
    found = {key: sample_summary(pair.get(kind)) for key, pair in cells.items()}
    return kind, {key: (summary["median"], _cell_text(summary, "\n", "–"))
                  for key, summary in found.items() if summary}


def sweep_alt(records) -> str:
    (kind, cells), (widths, batches) = sweep_drawn(records), axes(records)
    if not cells:
        return "Empty grid: the sweep run has no measured cells."
    parts = [f"Grid of {len(widths)} layer widths (rows, {widths[0]} to {widths[-1]} units) by "
             f"{len(batches)} batch sizes (columns, {batches[0]} to {batches[-1]})"]
    missing = len(widths) * len(batches) - len(cells)
    if kind == "speed-up":
        verdicts = sweep_verdicts(records)
        faster, slower = (sum(v.measurable and v.word == word for v in verdicts.values())
                          for word in ("faster", "slower"))
        best = max(verdicts, key=lambda k: verdicts[k].ratio)
        worst = min(verdicts, key=lambda k: verdicts[k].ratio)
        parts[0] += (", each cell coloured and labelled with the GPU's speed-up over the CPU per "
                     "sample (the CPU's median time over the GPU's), the verdict, and the range "
                     "of the speed-up from the timed epochs.")
        parts.append(f"The GPU was measurably faster in {faster} of {len(cells)} cells and "
                     f"measurably slower in {slower}; the others show no measurable difference. "
                     f"The speed-up was largest, {times_text(verdicts[best].ratio)}, at "
                     f"{cell_name(best)}, and smallest, {times_text(verdicts[worst].ratio)}, at "
                     f"{cell_name(worst)}.")
    else:
        low, high = min(cells, key=lambda k: cells[k][0]), max(cells, key=lambda k: cells[k][0])
        parts[0] += (f", each cell coloured and labelled with the {kind.upper()}'s median time per "
                     "sample and, in brackets, the range of the timed epochs.")
        parts.append(f"The median time per sample ranged from {duration(cells[low][0])} at "
                     f"{cell_name(low)} to {duration(cells[high][0])} at {cell_name(high)}.")
    if missing:
        parts.append(f"{missing} cells are labelled not measured.")
    return " ".join(parts)


def sweep_figure(records):
    """The grid of widths (rows) x batch sizes (columns): the GPU's speed-up (the colour centred on
    1), else the one device's time per sample; each cell's text gives the spread (no room for whiskers)."""
    import matplotlib.colors as mcolors

    need(records, f"run {COMMAND} --parts sweep")
    (kind, cells), (widths, batches) = sweep_drawn(records), axes(records)
    matrix = np.array([[cells[w, b][0] if (w, b) in cells else np.nan for b in batches] for w in widths])
    names = hardware(records)
    fig, (ax,) = panels(1, (7.5, 6.2))
    if kind == "speed-up":
        bound = max(2.0, float(np.nanmax(np.abs(np.log10(matrix)))) if np.isfinite(matrix).any() else 2.0)
        image = ax.imshow(matrix, cmap="RdBu", norm=mcolors.LogNorm(vmin=10 ** -bound, vmax=10 ** bound))
        fig.colorbar(image, ax=ax, label="speed-up: CPU median time / GPU median time (1 = equal)")
        what = "Speed-up of the GPU over the CPU, per sample"
        detail = (f"CPU: {names.get('CPU', NOT_RECORDED)}; GPU: {names['GPU']}\n"
                  "in brackets: the speed-up's range over the timed epochs")
    else:
        # One device only (normally the CPU): its time per sample, and why there is no speed-up.
        kind = kind.upper()
        other = "GPU" if kind == "CPU" else "CPU"
        matrix = matrix * 1e6
        image = ax.imshow(matrix, cmap="YlOrBr", norm=mcolors.LogNorm())
        fig.colorbar(image, ax=ax, label=f"{kind} median time per sample (µs, log scale)")
        what = f"{kind} time per sample (no {other} sweep in this run)"
        detail = (f"{kind}: {names[kind]}; no {other} sweep, so no speed-up can be shown\n"
                  "cell: median time per sample; in brackets: fastest–slowest timed epoch")
    for (i, width), (j, batch) in itertools.product(enumerate(widths), enumerate(batches)):
        if (width, batch) not in cells:
            ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=8)
            continue
        # Dark cells get white text: the number must be readable on every colour.
        red, green, blue, _ = image.cmap(image.norm(matrix[i, j]))
        dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
        ax.text(j, i, cells[width, batch][1], ha="center", va="center", fontsize=7,
                color="white" if dark else "black")
    ax.set_xticks(range(len(batches)), [str(b) for b in batches])
    ax.set_yticks(range(len(widths)), [f"{w} ({hidden_widths(w)[1]})" for w in widths])
    ax.set(xlabel="batch size", ylabel="hidden layer widths: first (second)")
    title(fig, what, records, detail, f"MLP 30 -> width -> width/2 -> 2; {records[0]['backend']} "
          f"backend; {records[0]['date'][:10]}", fontsize=10)
    fig.tight_layout()
    return fig


def cut_sweep_note(path, reference) -> str:
    """Why the page has no GPU sweep: a newer run stopped before its end (never the page's
    reference, so the note names the one shown), or none has been recorded."""
    runs = RECORDS.runs_in(path, part="sweep")
    shown = reference[0]["run_id"] if reference else None
    newer = list(runs.values())[list(runs).index(shown) + 1 if shown in runs else 0:]
    cut = next((run for run in reversed(newer) if not sweep_complete(run)), None)
    if not cut:
        return ("The GPU half of the sweep of batch size and layer width has not been recorded "
                f"yet; the next lease of {BUDGET} records it.")
    n, size = Counter(r["device_kind"] for r in cut), math.prod(map(len, axes(cut)))
    counts = [f"{n[kind]} of its {size} {kind.upper()} cells" if n[kind] else f"no {kind.upper()} cells"
              for kind in ("gpu", "cpu")]
    where = f" on {gpu['device']}" if (gpu := pick(cut, True)) else ""
    return ("The GPU half of the sweep of batch size and layer width is not completely recorded "
            f"yet: the sweep{where} (run {cut[0]['run_id']}, {cut[0]['date'][:10]}) stopped "
            f"before its end, with {' and '.join(counts)}. A sweep counts only when complete, so "
            "this page shows the last complete one"
            + (f" (run {shown})" if shown else "") + f"; the next lease of {BUDGET} records the rest.")


def sweep_dates(records) -> str:
    """When a sweep's cells were recorded: one day, or per device its days and whether the parts agree."""
    if not records:
        return NOT_RECORDED
    days = sorted({r["date"][:10] for r in records})
    if len(days) == 1:
        return f"on {days[0]}"
    dated = {kind: sorted(Counter(r["date"][:10] for r in records if r["device_kind"] == kind).items())
             for kind in ("gpu", "cpu")}
    parts = [f"the {kind.upper()}'s cells on " + " and ".join(f"{day} ({n})" for day, n in counted)
             for kind, counted in dated.items() if counted]
    same = len({(r.get("cpu_model"), r.get("cores_usable"), str(sorted(r.get("versions", {}).items())))
                for r in records}) == 1
    return (f"in parts of one run: {', '.join(parts)}; "
            + ("every part on the same machine with the same versions" if same
               else "the parts differ in machine or versions"))


def substitutions(path=RECORDS.results_file) -> dict[str, str]:
    comparison = reference_run("comparison", path)
    values = run_values("ref_mlp", comparison, "date", "backend", "cpu", "gpu", "batch_size",
                        "epochs", "n_train")  # n_train: 455, the breast-cancer data's
    values["ref_mlp_speedup"] = speedup_text(RECORDS.gpu_against_cpu(comparison))
    values["ref_mlp_fig_comparison_alt"] = comparison_alt(comparison) if comparison else NOT_RECORDED
    for name, record in by_device(comparison):
        values[f"ref_mlp_{name}_first_epoch"] = first_epoch(record)
        values[f"ref_mlp_{name}_epoch"] = median_text(RECORDS.epoch_summary(record), what="repeats")
        values[f"ref_mlp_{name}_accuracy"] = accuracy(record)

    # The sweep's values, NOT_RECORDED until a run has them: per device its total, its time per
    # sample at the grid's corners, a step at the smallest and its growth along the top row.
    records = reference_run("sweep", path)
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    widths, batches = axes(records)
    corners = {"small": (widths[0], batches[0]), "large": (widths[-1], batches[-1])} if records else {}
    values |= run_values("ref_mlp_sweep", records, "run", "cpu", "gpu") | {
        "ref_mlp_sweep_cut_note": cut_sweep_note(path, records),
        "ref_mlp_sweep_dates": sweep_dates(records),
        "ref_mlp_fig_sweep_alt": sweep_alt(records) if records else NOT_RECORDED,
        "ref_mlp_sweep_batches": listed(batches) if records else NOT_RECORDED,
        "ref_mlp_sweep_widths": listed(widths) if records else NOT_RECORDED,
        **{f"ref_mlp_sweep_{size}_cell": cell_name(corners[size]) if records else NOT_RECORDED
           for size in ("small", "large")}}
    for name in ("cpu", "gpu"):
        def timed(size, per="n_rows", name=name):
            found = cells.get(corners.get(size), {}).get(name)
            return median_text(sample_summary(found, per), what="repeats")

        mine = [r["total_seconds"] for r in records if r["device_kind"] == name]
        values[f"ref_mlp_sweep_{name}_total"] = duration(sum(mine)) if mine else NOT_RECORDED
        values[f"ref_mlp_sweep_{name}_small_sample"] = timed("small")
        values[f"ref_mlp_sweep_{name}_large_sample"] = timed("large")
        values[f"ref_mlp_sweep_{name}_small_step"] = timed("small", STEPS)
        # One step of the narrowest model at the smallest and at the largest batch: how much a
        # step's time grows along the top row of the grid.
        first, last = (sample_summary(cells.get((widths[0], batch), {}).get(name), STEPS)
                       for batch in (batches[0], batches[-1])) if records else (None, None)
        values[f"ref_mlp_sweep_{name}_row_steps"] = (
            f"from {duration(first['median'])} at batch size {batches[0]:,} to "
            f"{duration(last['median'])} at batch size {batches[-1]:,} (medians)"
            if len(batches) > 1 and first and last else NOT_RECORDED)

    def cell(key):
        if key is None:
            return NOT_RECORDED
        return f"{times_text(verdicts[key].ratio)} at {cell_name(key)} ({verdict_words(verdicts[key])})"

    paying = [v for v in verdicts.values() if v.measurable and v.word == "faster"]
    return values | {
        "ref_mlp_sweep_best": cell(max(verdicts, key=lambda key: verdicts[key].ratio, default=None)),
        "ref_mlp_sweep_worst": cell(min(verdicts, key=lambda key: verdicts[key].ratio, default=None)),
        "ref_mlp_sweep_paying": f"{len(paying)} of {len(verdicts)}" if verdicts else NOT_RECORDED}
