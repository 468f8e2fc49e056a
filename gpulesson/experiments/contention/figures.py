"""The figures of the two parts: epoch time and throughput against the number of trainings at
once, and the epochs of one training shown in a browser or not (drawn by
``fig/05-cpu-vs-gpu/contention.py``)."""

from __future__ import annotations

from gpulesson.experiments.contention.page import software
from gpulesson.experiments.contention.records import find_in, threads_text
from gpulesson.results import data_label, hardware

# Line style and marker, not only colour, tell the series apart.
_STYLE = {None: {"marker": "o", "linestyle": "-", "color": "tab:blue"},
          1: {"marker": "s", "linestyle": "--", "color": "tab:orange", "fillstyle": "none"}}
_OTHER = {"marker": "D", "linestyle": "-.", "color": "tab:green"}  # any other thread count


def _series(records, threads):
    return sorted((r for r in records if r["threads"] == threads), key=lambda r: r["copies"])


def figures(records):
    """One figure of one run's records, ``(fig,)``: left, the seconds per epoch of each copy
    (mean, bars from the fastest to the slowest copy) against the number of copies, with the
    time that a fair share of the machine would give (k times one copy alone); right, the
    images/s of all copies together. Each point is labelled with the highest load average
    seen while it ran."""
    import matplotlib.pyplot as plt

    if not records:
        raise ValueError("no records to plot: run python -m gpulesson.experiments.contention")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.6))
    copies = sorted({r["copies"] for r in records})
    for threads in sorted({r["threads"] for r in records}, key=lambda t: t or 0):
        series = _series(records, threads)
        k = [r["copies"] for r in series]
        mean = [r["mean_epoch_seconds"] for r in series]
        low = [m - min(c["mean_epoch_seconds"] for c in r["per_copy"])
               for m, r in zip(mean, series, strict=True)]
        high = [max(c["mean_epoch_seconds"] for c in r["per_copy"]) - m
                for m, r in zip(mean, series, strict=True)]
        label = f"each copy: {threads_text(threads)}"
        left.errorbar(k, mean, yerr=[low, high], capsize=3, linewidth=1.6, markersize=7,
                      label=label, **_STYLE.get(threads, _OTHER))
        right.plot(k, [r["images_per_second_total"] for r in series], linewidth=1.6,
                   markersize=7, label=label, **_STYLE.get(threads, _OTHER))
        for r, m in zip(series, mean, strict=True):
            if r.get("load_max") is not None:
                left.annotate(f"load {r['load_max']:.1f}", (r["copies"], m),
                              xytext=(6, 5 if threads is None else -12),
                              textcoords="offset points", fontsize=8)
    alone = find_in(records, 1, None)
    if alone:
        left.plot(copies, [k * alone["mean_epoch_seconds"] for k in copies], color="gray",
                  linestyle=":", marker="^", markersize=5,
                  label="fair share: k × one copy alone")
        right.axhline(alone["images_per_second_total"], color="gray", linestyle=":",
                      label="one copy alone")
    first = records[0]
    left.set_ylabel(f"seconds per epoch of {first['n_images']:,} images (per copy)")
    right.set_ylabel("images/s, all copies together")
    for ax in (left, right):
        ax.set_xticks(copies, [str(k) for k in copies])
        ax.set_xlim(min(copies) - 0.3, max(copies) + 0.5)
        ax.set_xlabel("trainings running at once (k)")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left" if ax is left else "lower right")
    cpu = hardware(records).get("CPU", "CPU")
    fig.suptitle(f"The lesson's CNN, k trainings at once on one CPU | {data_label(records)}\n"
                 f"{cpu} | batch {first['batch_size']} | {software(records[0])} | "
                 f"run {first['run_id']}", fontsize=9.5)
    fig.tight_layout()
    return (fig,)


# Per mode of the watched part: line style and marker as well as colour.
_WATCHED_STYLE = {
    "no browser": {"marker": "o", "linestyle": "-", "color": "tab:blue"},
    "browser, bar per step": {"marker": "s", "linestyle": "--", "color": "tab:red",
                              "fillstyle": "none"},
    "browser, line per epoch": {"marker": "^", "linestyle": ":", "color": "tab:green"},
}


def watched_figures(records):
    """``(fig,)``: the seconds of each epoch of one training, one line for each way its output
    was shown (no browser; in JupyterLab in Chromium with Keras' bar; with a line an epoch)."""
    import matplotlib.pyplot as plt

    if not records:
        raise ValueError("no records to plot: run python -m gpulesson.experiments.contention "
                         "--parts watched")
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for record in records:
        epochs = record["per_copy"][0]["epoch_seconds"]
        ax.plot(range(1, len(epochs) + 1), epochs, linewidth=1.6, markersize=7,
                label=record["watched"], **_WATCHED_STYLE.get(record["watched"], _OTHER))
    first = records[0]
    ax.set_xticks(range(1, first["epochs"] + 1))
    ax.set_xlabel("epoch")
    ax.set_ylabel(f"seconds for {first['n_images']:,} images")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    cpu = hardware(records).get("CPU", "CPU")
    ax.set_title(f"One training of the lesson's CNN, its output shown live or not\n"
                 f"{data_label(records)} | {cpu} | batch {first['batch_size']}\n"
                 f"{software(first)} | run {first['run_id']}", fontsize=9)
    fig.tight_layout()
    return (fig,)
