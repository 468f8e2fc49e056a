"""The figures: time per epoch of the comparison, and the sweep's grid of speed-ups
(drawn by ``fig/07-small-models/figures.py``)."""

from __future__ import annotations

import numpy as np

from gpulesson.experiments.small_models.measure import hidden_widths
from gpulesson.experiments.small_models.records import (
    EPISODE_WIDTHS,
    N_CLASSES,
    N_FEATURES,
    SmallModelsError,
    _axes,
    sweep_cells,
    sweep_speedups,
)
from gpulesson.results import NOT_RECORDED, data_label, hardware
from gpulesson.results import duration as short_time
from gpulesson.results import pick as _pick


def comparison_figure(records):
    """Time per epoch of the comparison run, per device (the GPU line only when recorded)."""
    from gpulesson import compare_plots

    if not records:
        raise SmallModelsError("no comparison records to plot: "
                               "run python -m gpulesson.experiments.small_models")
    cpu, gpu = _pick(records, False), _pick(records, True)
    names = hardware(records)
    for kind in ("CPU", "GPU"):
        names.setdefault(kind, NOT_RECORDED)
    fig = compare_plots.epoch_times(cpu["epoch_seconds"] if cpu else None,
                                    gpu["epoch_seconds"] if gpu else None,
                                    label=data_label(records), hardware=names)
    fig.axes[0].set_title(f"MLP {' -> '.join(map(str, [N_FEATURES, *EPISODE_WIDTHS, N_CLASSES]))}, "
                          f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}",
                          fontsize=9)
    fig.tight_layout()
    return fig


def _grid_values(records, value) -> tuple[list[int], list[int], np.ndarray]:
    widths, batches = _axes(records)
    matrix = np.full((len(widths), len(batches)), np.nan)
    for i, width in enumerate(widths):
        for j, batch in enumerate(batches):
            found = value(width, batch)
            if found is not None:
                matrix[i, j] = found
    return widths, batches, matrix


def sweep_figure(records):
    """The sweep as a grid of widths (rows) x batch sizes (columns), every cell annotated.

    With GPU records: the GPU's speed-up over the CPU (the colour centred on 1, where the two
    are equal; each cell says "GPU n× faster" or "GPU n× slower"). Without: the CPU's time per
    sample, and a note that the GPU sweep is not recorded yet.
    """
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    if not records:
        raise SmallModelsError("no sweep records to plot: "
                               "run python -m gpulesson.experiments.small_models --parts sweep")
    cells, ratios = sweep_cells(records), sweep_speedups(records)
    names = hardware(records)
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    if ratios:
        widths, batches, matrix = _grid_values(records, lambda w, b: ratios.get((w, b)))
        bound = max(2.0, float(np.nanmax(np.abs(np.log10(matrix)))) if np.isfinite(matrix).any() else 2.0)
        norm = mcolors.LogNorm(vmin=10 ** -bound, vmax=10 ** bound)
        image = ax.imshow(matrix, cmap="RdBu", norm=norm)
        fig.colorbar(image, ax=ax, label="speed-up: CPU time / GPU time (1 = equal)")

        def text(value):
            if value >= 1:
                return f"{value:.2g}×\nGPU faster"
            return f"{value:.2g}×\nGPU {1 / value:.2g}× slower"
        title = "Speed-up of the GPU over the CPU, per sample"
        detail = f"CPU: {names.get('CPU', NOT_RECORDED)}; GPU: {names['GPU']}"
    else:
        # One device only (normally the CPU): its time per sample, and why there is no speed-up.
        kind = "cpu" if "CPU" in names else "gpu"
        widths, batches, matrix = _grid_values(
            records, lambda w, b: cells.get((w, b), {}).get(kind, {}).get("seconds_per_sample"))
        matrix = matrix * 1e6
        image = ax.imshow(matrix, cmap="YlOrBr", norm=mcolors.LogNorm())
        fig.colorbar(image, ax=ax, label=f"{kind.upper()} time per sample (µs, log scale)")

        def text(value):
            return short_time(value / 1e6)
        if kind == "cpu":
            title = "CPU time per sample (GPU sweep: not recorded yet)"
            detail = f"CPU: {names['CPU']}; GPU: {NOT_RECORDED}, so no speed-up can be shown"
        else:
            title = "GPU time per sample (no CPU sweep in this run)"
            detail = f"GPU: {names['GPU']}; CPU: {NOT_RECORDED}, so no speed-up can be shown"
    for i in range(len(widths)):
        for j in range(len(batches)):
            value = matrix[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=8)
                continue
            # Dark cells get white text: the number must be readable on every colour.
            red, green, blue, _ = image.cmap(image.norm(value))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(j, i, text(value), ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_xticks(range(len(batches)), [str(b) for b in batches])
    ax.set_yticks(range(len(widths)), [f"{w} ({hidden_widths(w)[1]})" for w in widths])
    ax.set_xlabel("batch size")
    ax.set_ylabel("hidden layer widths: first (second)")
    first = records[0]
    fig.suptitle(f"{title} | {data_label(records)}\n{detail}\n"
                 f"MLP 30 -> width -> width/2 -> 2; {first['backend']} backend; {first['date'][:10]}",
                 fontsize=10)
    fig.tight_layout()
    return fig
