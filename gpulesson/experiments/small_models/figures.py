"""The figures, time per epoch of the comparison and the sweep's grid of speed-ups
(``fig/07-small-models/figures.py``), and their alt texts, which read what the figure draws
(``_comparison_drawn``, :func:`sweep_drawn`) so that they name only what is drawn."""

from __future__ import annotations

import numpy as np

from gpulesson.experiments.common import SPREAD_NOTE, draw_spread, summary_text, times_text
from gpulesson.experiments.figkit import title as figure_title
from gpulesson.experiments.small_models.measure import hidden_widths
from gpulesson.experiments.small_models.records import (
    EPISODE_WIDTHS,
    N_CLASSES,
    N_FEATURES,
    SmallModelsError,
    axes,
    cell_name,
    epoch_summary,
    sample_summary,
    sweep_cells,
    sweep_verdicts,
)
from gpulesson.records.compare_plots import LOG_NOTE, needs_log_axis
from gpulesson.records.results import NOT_RECORDED, data_label, hardware
from gpulesson.records.results import duration as short_time
from gpulesson.records.results import pick as _pick

_DEVICE_WORDS = {"CPU": "round markers and a solid line", "GPU": "square markers and a dashed line"}


def _comparison_drawn(records) -> list[dict]:
    """Per device recorded (CPU first), its epoch times and the summary of its timed epochs."""
    return [{"kind": kind, "epochs": list(record["epoch_seconds"]), "summary": epoch_summary(record)}
            for kind, record in (("CPU", _pick(records, False)), ("GPU", _pick(records, True)))
            if record and record.get("epoch_seconds")]


def comparison_alt(records) -> str:
    drawn = _comparison_drawn(records)
    if not drawn:
        return "Chart without lines: the run kept no epoch times."
    devices = " and ".join(d["kind"] for d in drawn)
    parts = [f"Line chart of the wall time of each of the {len(drawn[0]['epochs'])} training "
             f"epochs of the small network on the breast-cancer data on the {devices}, "
             + "; ".join(f"the {d['kind']} with {_DEVICE_WORDS[d['kind']]}" for d in drawn)
             + "; the first epoch is circled and labelled as the warm-up. Right of the epochs, "
             "a whisker spans the fastest to the slowest timed epoch around the median, with "
             "the timed epochs as dots."]
    parts += [f"{d['kind']}: first epoch {short_time(d['epochs'][0])}, then "
              f"{summary_text(d['summary'], short_time, what='timed epochs')}." for d in drawn]
    if needs_log_axis([v for d in drawn for v in d["epochs"]]):
        parts.append(LOG_NOTE)
    return " ".join(parts)


def comparison_figure(records):
    """Time per epoch of the comparison run per device, and at the right the median and range
    of each device's timed epochs."""
    from gpulesson.records import compare_plots

    if not records:
        raise SmallModelsError("no comparison records to plot: "
                               "run python -m gpulesson.experiments.small_models")
    drawn = _comparison_drawn(records)
    if not drawn:
        raise SmallModelsError("the comparison records keep no epoch times to plot")
    names = hardware(records)
    found = {d["kind"]: d for d in drawn}
    fig = compare_plots.epoch_times(found["CPU"]["epochs"] if "CPU" in found else None,
                                    found["GPU"]["epochs"] if "GPU" in found else None,
                                    label=data_label(records),
                                    hardware={k: names.get(k, NOT_RECORDED) for k in found})
    ax = fig.axes[0]
    colours = {line.get_label(): line.get_color() for line in ax.get_lines()}
    longest = max(len(d["epochs"]) for d in drawn)
    where = longest + 1.5
    for i, d in enumerate(drawn):
        draw_spread(ax, [where + 0.6 * i], [d["summary"]], color=colours.get(d["kind"], "black"))
    ticks = [t for t in range(1, longest + 1) if longest <= 20 or t % 5 == 0 or t == 1]
    ax.set_xticks([*ticks, where + 0.3 * (len(drawn) - 1)],
                  [*map(str, ticks), "timed\nepochs"])
    ax.set_xlabel(f"epoch; right: {SPREAD_NOTE.split('; ', 1)[1]}", fontsize=8)
    if "GPU" not in found:
        ax.text(0.98, 0.97, "no GPU run", transform=ax.transAxes, ha="right",
                va="top", fontsize=8, style="italic")
    ax.set_title(f"MLP {' -> '.join(map(str, [N_FEATURES, *EPISODE_WIDTHS, N_CLASSES]))}, "
                 f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}",
                 fontsize=9)
    fig.tight_layout()
    return fig


def sweep_drawn(records) -> dict:
    """``kind`` ("speed-up" with both devices, else the one device's "cpu" or "gpu" time per
    sample), ``widths``, ``batches`` and per cell its ``value`` (the speed-up, or seconds per
    sample), ``text`` and ``verdict``."""
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    widths, batches = axes(records)
    drawn = {"widths": widths, "batches": batches, "cells": {}}
    if verdicts:
        drawn["kind"] = "speed-up"
        for key, found in verdicts.items():
            # The speed-up's range: the CPU's fastest over the GPU's slowest epoch, and back.
            cpu, gpu = sample_summary(cells[key]["cpu"]), sample_summary(cells[key]["gpu"])
            low, high = cpu["min"] / gpu["max"], cpu["max"] / gpu["min"]
            words = f"GPU {found.sentence}" if found.measurable else "no measurable\ndifference"
            drawn["cells"][key] = {"value": found.ratio, "verdict": found,
                                   "text": f"{times_text(found.ratio)}\n{words}\n"
                                           f"({times_text(low)}–{times_text(high)})"}
        return drawn
    kind = drawn["kind"] = "cpu" if any("cpu" in pair for pair in cells.values()) else "gpu"
    for key, pair in cells.items():
        summary = sample_summary(pair.get(kind))
        if summary:
            spread = (f"({short_time(summary['min'])}–{short_time(summary['max'])})"
                      if summary["n"] >= 2 else "(1 epoch)")
            drawn["cells"][key] = {"value": summary["median"], "verdict": None, "summary": summary,
                                   "text": f"{short_time(summary['median'])}\n{spread}"}
    return drawn


def sweep_alt(records) -> str:
    drawn = sweep_drawn(records)
    widths, batches, cells = drawn["widths"], drawn["batches"], drawn["cells"]
    if not cells:
        return "Empty grid: the sweep run has no measured cells."
    parts = [f"Grid of {len(widths)} layer widths (rows, {widths[0]} to {widths[-1]} units) by "
             f"{len(batches)} batch sizes (columns, {batches[0]} to {batches[-1]})"]
    missing = len(widths) * len(batches) - len(cells)
    if drawn["kind"] == "speed-up":
        verdicts = {key: cell["verdict"] for key, cell in cells.items()}
        faster = sum(v.measurable and v.word == "faster" for v in verdicts.values())
        slower = sum(v.measurable and v.word == "slower" for v in verdicts.values())
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
        device = drawn["kind"].upper()
        values = {key: cell["value"] for key, cell in cells.items()}
        low, high = min(values, key=values.get), max(values, key=values.get)
        parts[0] += (f", each cell coloured and labelled with the {device}'s median time per "
                     "sample and, in brackets, the range of the timed epochs.")
        parts.append(f"The median time per sample ranged from {short_time(values[low])} at "
                     f"{cell_name(low)} to {short_time(values[high])} at {cell_name(high)}.")
    if missing:
        parts.append(f"{missing} cells are labelled not measured.")
    return " ".join(parts)


def sweep_figure(records):
    """The sweep as a grid of widths (rows) x batch sizes (columns): the GPU's speed-up over
    the CPU (the colour centred on 1, where the two are equal), else the one device's time per
    sample. The spread of the repeats is written in each cell: a grid has no room for whiskers."""
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    if not records:
        raise SmallModelsError("no sweep records to plot: "
                               "run python -m gpulesson.experiments.small_models --parts sweep")
    drawn = sweep_drawn(records)
    widths, batches = drawn["widths"], drawn["batches"]
    matrix = np.array([[drawn["cells"].get((w, b), {}).get("value", np.nan) for b in batches]
                       for w in widths], dtype=float)
    names = hardware(records)
    fig, ax = plt.subplots(figsize=(7.5, 6.2))
    if drawn["kind"] == "speed-up":
        bound = max(2.0, float(np.nanmax(np.abs(np.log10(matrix)))) if np.isfinite(matrix).any() else 2.0)
        norm = mcolors.LogNorm(vmin=10 ** -bound, vmax=10 ** bound)
        image = ax.imshow(matrix, cmap="RdBu", norm=norm)
        fig.colorbar(image, ax=ax, label="speed-up: CPU median time / GPU median time (1 = equal)")
        what = "Speed-up of the GPU over the CPU, per sample"
        detail = (f"CPU: {names.get('CPU', NOT_RECORDED)}; GPU: {names['GPU']}\n"
                  "in brackets: the speed-up's range over the timed epochs")
    else:
        # One device only (normally the CPU): its time per sample, and why there is no speed-up.
        kind = drawn["kind"].upper()
        other = "GPU" if kind == "CPU" else "CPU"
        matrix = matrix * 1e6
        image = ax.imshow(matrix, cmap="YlOrBr", norm=mcolors.LogNorm())
        fig.colorbar(image, ax=ax, label=f"{kind} median time per sample (µs, log scale)")
        what = f"{kind} time per sample (no {other} sweep in this run)"
        detail = (f"{kind}: {names[kind]}; no {other} sweep, so no speed-up can be shown\n"
                  "cell: median time per sample; in brackets: fastest–slowest timed epoch")
    for i, width in enumerate(widths):
        for j, batch in enumerate(batches):
            value = matrix[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=8)
                continue
            # Dark cells get white text: the number must be readable on every colour.
            red, green, blue, _ = image.cmap(image.norm(value))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(j, i, drawn["cells"][(width, batch)]["text"], ha="center", va="center",
                    fontsize=7, color="white" if dark else "black")
    ax.set_xticks(range(len(batches)), [str(b) for b in batches])
    ax.set_yticks(range(len(widths)), [f"{w} ({hidden_widths(w)[1]})" for w in widths])
    ax.set_xlabel("batch size")
    ax.set_ylabel("hidden layer widths: first (second)")
    first = records[0]
    figure_title(fig, what, records, detail, f"MLP 30 -> width -> width/2 -> 2; {first['backend']} "
                 f"backend; {first['date'][:10]}", fontsize=10)
    fig.tight_layout()
    return fig
