"""Episode 5's page: the ``ref_*`` values of the reference run (the newest with a GPU record),
its figures, epoch times and time bars (drawn by `make figures`), with alt texts read
from what they draw (:func:`drawn`), and its table. A value a record lacks (no GPU run, a record
made before it was kept) is :data:`NOT_RECORDED`; the evaluation and the total are single
measurements and are not compared."""

from dataclasses import dataclass

from gpulesson.experiments.cnn import gpu_use
from gpulesson.experiments.cnn.gpu_use import epoch_summary, full_training_seconds, steady_epoch_seconds
from gpulesson.experiments.cnn.measure import RECORDS
from gpulesson.machine.pinned import environment_note
from gpulesson.records import pagewords
from gpulesson.records.compare_plots import LOG_NOTE, STYLES, epoch_times, needs_log_axis, time_axis
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import by_device, first_epoch, given, listed, median_text, run_values
from gpulesson.records.recordset import epochs_summary
from gpulesson.records.results import NOT_RECORDED, data_label, duration, hardware, is_gpu, pick
from gpulesson.records.summaries import NO_DIFFERENCE, SPREAD_NOTE, draw_spread

WORKSHOP_EPOCHS = 3  # the episode's EPOCHS: what a learner's cell runs
RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.newest_run
FIGURES, FIGURE_FOLDER = ("reference-epoch-times.svg", "reference-time-bars.svg"), "fig/05-cpu-vs-gpu"
FIRST_EPOCH = "includes compiling"  # what the warm-up epoch's extra time includes, by default
# Marker names for the alt texts, for the markers of gpulesson.records.compare_plots' styles.
MARKER_NAMES = {"o": "round", "s": "square", "^": "triangular", "D": "diamond"}
BAR_GROUPS = ("epoch after the warm-up\n(median)", "evaluation\n(one run)",
              "training + evaluation\n(one run)")
SPREAD_LABEL = "after the warm-up:\nmedian, range"


@dataclass(frozen=True)
class Series:
    """One device as the figures draw it."""

    kind: str  # "CPU" or "GPU"
    name: str  # its hardware, for the title
    style: dict  # marker, line style, hatch, colour (gpulesson.records.compare_plots)
    epochs: list  # every epoch's seconds, the warm-up first
    summary: dict  # the epochs after the warm-up (summaries.summarise)
    evaluation: float
    total: float
    marker: str = ""  # its marker's name, for the alt texts

    @property
    def bar_values(self) -> list:  # the heights and whisker ends of its bars
        return [self.summary["min"], self.summary["max"], self.summary["median"],
                self.evaluation, self.total]


def _log_note(values) -> str:
    return f" {LOG_NOTE}" if needs_log_axis(values) else ""


def drawn(records, hardware_names=None) -> tuple[list[Series], object]:
    """``(series, comparison)``: one :class:`Series` per device that ran, CPU first, and the
    GPU against the CPU (None without both)."""
    need(records, "run the training first, or record a reference run")
    names = dict(hardware_names or hardware(records))
    ran = [(kind.upper(), record) for kind, record in by_device(records) if record]
    series = [Series(kind, names.get(kind, kind), STYLES[i], [float(s) for s in record["epoch_seconds"]],
                     epoch_summary(record), float(record["evaluation_seconds"]),
                     float(record["total_seconds"]), MARKER_NAMES.get(STYLES[i]["marker"], ""))
              for i, (kind, record) in enumerate(ran)]
    return series, RECORDS.gpu_against_cpu(records)


def epoch_times_alt(series, *, first_epoch: str = FIRST_EPOCH) -> str:
    warm = [s for s in series if s.summary["warmup"]]
    if len(series) == 1:
        (s,) = series
        text = (f"Line chart of the wall time of each training epoch on the {s.kind} ({s.name}): "
                f"{len(s.epochs)} epochs, {s.marker} markers.")
        if warm:
            text += (f" The first epoch, {duration(s.summary['warmup'][0])}, is circled and labelled as the "
                     f"warm-up ({first_epoch}).")
        text += (" To the right of the line, the median and range of the epochs after the "
                 f"warm-up, with each epoch as a dot: {median_text(s.summary)}.")
    else:
        text = ("Line chart of the wall time of each training epoch, one line per device: "
                + "; ".join(f"the {s.kind} ({s.name}), {len(s.epochs)} epochs, {s.marker} markers"
                            for s in series) + ".")
        if warm:
            text += (f" The first epoch of each is circled and labelled as the warm-up "
                     f"({first_epoch}): "
                     + listed(f"{duration(s.summary['warmup'][0])} on the {s.kind}" for s in warm) + ".")
        text += (" To the right of the lines, the median and range of each device's epochs after "
                 "the warm-up, with each epoch as a dot: "
                 + listed(f"{s.kind} {median_text(s.summary)}" for s in series) + ".")
    return text + _log_note([v for s in series for v in s.epochs])


def time_bars_alt(series, comparison=None) -> str:
    kinds = listed(f"the {s.kind}" for s in series)
    spread = ("with a whisker from the fastest to the slowest epoch after the warm-up and each "
              "of those epochs as a dot")
    if len(series) == 1:
        (s,) = series
        return (f"Bar chart of the training and evaluation time on {kinds}, one hatched bar per "
                f"group, each labelled with its value: an epoch after the warm-up, whose bar is "
                f"the median, {median_text(s.summary)}, {spread}; the evaluation on the "
                f"test images, {duration(s.evaluation)}; training and evaluation together, "
                f"{duration(s.total)}." + _log_note(s.bar_values))
    epoch = listed(f"{s.kind} {median_text(s.summary)}" for s in series)
    words = (f", the GPU's bar labelled \"{comparison.sentence}\"" if comparison is not None
             else "")
    return (f"Bar chart of the training and evaluation time on {kinds}, one hatched bar per "
            f"device in each group, each labelled with its value. An epoch after the warm-up "
            f"(the bars are the medians, {spread}): {epoch}{words}. The evaluation on the test "
            "images, one run each: " + listed(f"{s.kind} {duration(s.evaluation)}" for s in series)
            + ". Training and evaluation together: "
            + listed(f"{s.kind} {duration(s.total)}" for s in series) + "."
            + _log_note([v for s in series for v in s.bar_values]))


def alt_texts(records, *, first_epoch: str = FIRST_EPOCH, hardware_names=None) -> tuple[str, str]:
    """``(epoch times, time bars)``: the alt texts of :func:`figures`."""
    series, comparison = drawn(records, hardware_names)
    return epoch_times_alt(series, first_epoch=first_epoch), time_bars_alt(series, comparison)


def figures(records, *, first_epoch: str = FIRST_EPOCH, hardware_names=None):
    """``(epoch times, time bars)`` of one run's records, each with its ``alt_text``;
    ``first_epoch``: what the first epoch's extra time includes; ``hardware_names``: the
    devices' names in the titles (default the records')."""
    import numpy as np

    series, comparison = drawn(records, hardware_names)
    label = data_label(records)
    by_kind = {s.kind: s for s in series}
    # A device that did not run is said in words ("no GPU run"), not named "not recorded yet".
    detail = "; ".join([f"{s.kind}: {s.name}" for s in series]
                       + [f"no {kind} run" for kind in ("CPU", "GPU") if kind not in by_kind])
    fig = epoch_times(by_kind["CPU"].epochs if "CPU" in by_kind else None,
                      by_kind["GPU"].epochs if "GPU" in by_kind else None,
                      label=label, hardware=detail, first_epoch=first_epoch)
    ax = fig.axes[0]
    longest = max(len(s.epochs) for s in series)
    where = longest + 1  # the spreads' place, right of the lines
    for i, s in enumerate(series):
        x = where + (i - (len(series) - 1) / 2) * 0.3
        draw_spread(ax, [x], [s.summary], color=s.style["color"])
        ax.plot([x], [s.summary["median"]], marker=s.style["marker"], color=s.style["color"],
                linestyle="none", zorder=5)
    if longest <= 20:  # whole epochs only, as epoch_times numbers them
        ax.set_xticks([*range(1, longest + 1), where],
                      [*(str(e) for e in range(1, longest + 1)), SPREAD_LABEL])
    else:
        ax.annotate(SPREAD_LABEL, (where, 0), xytext=(0, 4), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8)
    ax.set_xlim(0.5, where + 0.7)
    fig.tight_layout()
    fig.alt_text = epoch_times_alt(series, first_epoch=first_epoch)

    bars_fig, (ax,) = panels(1, (8, 4.8))
    width = 0.8 / len(series)
    x = np.arange(len(BAR_GROUPS))
    for i, s in enumerate(series):
        where = x + (i - (len(series) - 1) / 2) * width
        values = [s.summary["median"], s.evaluation, s.total]
        bars = ax.bar(where, values, width, label=s.kind, color=s.style["color"],
                      hatch=s.style["hatch"], edgecolor="black")
        draw_spread(ax, [where[0]], [s.summary])
        tops = [max(s.summary["max"], values[0]), values[1], values[2]]
        for j, (bar, value, top) in enumerate(zip(bars, values, tops, strict=True)):
            text = duration(value)
            if j == 0 and s.kind == "GPU" and comparison is not None:
                text += f"\n{comparison.sentence}"
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, top), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, BAR_GROUPS)
    time_axis(ax, [v for s in series for v in s.bar_values], "seconds")
    ax.margins(y=0.25)
    ax.legend(title="device")
    title(bars_fig, "Training and evaluation time", label,
          "; ".join(f"{s.kind}: {s.name}" for s in series) + f"\n{SPREAD_NOTE}", fontsize="large")
    bars_fig.tight_layout()
    bars_fig.alt_text = time_bars_alt(series, comparison)
    return fig, bars_fig


def speedup_text(comparison) -> str:
    """The ratio of the median epochs, "8.0×", saying where the ranges do not tell the devices
    apart: "1.1× by the medians, no measurable difference by the ranges"."""
    if comparison.measurable:
        return f"{comparison.ratio:.1f}×"
    return f"{comparison.ratio:.1f}× by the medians, {NO_DIFFERENCE} by the ranges"


def describe(records, *, full_epochs: int = gpu_use.FULL_EPOCHS, full_n_train: int | None = None) -> str:
    """Each device's warm-up and timed epochs, the GPU against the CPU, the cost of full training."""
    if not records:
        return "No run recorded."
    lines = [f"Data: {data_label(records)}; {records[0]['n_train']:,} training images per epoch, "
             f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}."]
    names = hardware(records)
    for record in records:
        kind = "GPU" if is_gpu(record) else "CPU"
        summary = epoch_summary(record)
        warmup = ", ".join(duration(s) for s in summary["warmup"])
        lines.append(f"{kind} ({names[kind]}): " + (f"warm-up epoch {warmup}, then " if warmup else "")
                     + f"{median_text(summary)} per epoch; evaluation "
                     f"{duration(record['evaluation_seconds'])}; "
                     f"test accuracy {record['test_accuracy']:.3f}.")
    comparison = RECORDS.gpu_against_cpu(records)
    if comparison is not None:
        lines.append(f"Speed-up of the GPU over the CPU: {speedup_text(comparison)} per epoch "
                     "(the median epochs after the warm-up).")
    n_full = full_n_train or records[0]["n_train"]
    costs = " and ".join(f"{duration(full_training_seconds(r, full_epochs, n_full))} on the "
                         f"{'GPU' if is_gpu(r) else 'CPU'}" for r in records)
    lines.append(f"Training {full_epochs} epochs of {n_full:,} images would take about {costs}.")
    return "\n".join(lines)


def _optional(record: dict, key: str, show) -> str:
    return NOT_RECORDED if record.get(key) is None else show(record[key])


def _precision(found: dict) -> str:
    """How float32 products were computed: "TF32 matrix products, TF32 convolutions"."""
    return ", ".join(f"{gpu_use.PRECISION.get(found[part], found[part])} {words}" for part, words
                     in (("matmul", "matrix products"), ("convolution", "convolutions")))


def _load(record: dict) -> str:
    """The one-minute load average: "0.52 before and 1.98 after the training" (older records:
    after it only)."""
    before = record.get("load_average_before")
    after = record.get("load_average_after") or record.get("load_average")
    if not after:
        return NOT_RECORDED
    if before:
        return f"{before[0]:.2f} before and {after[0]:.2f} after the training"
    return f"{after[0]:.2f} after the training"


def _validation(record: dict) -> str:
    """The median and range of the timed epochs' validation passes; not where the work is
    queued (JAX, or a GPU) and the clock did not wait for it (before ``validation_synchronised``)."""
    if not record.get("validation_synchronised") and (record["backend"] == "jax" or is_gpu(record)):
        return NOT_RECORDED
    return given(record.get("validation_seconds"), lambda passes: median_text(epochs_summary(passes)))


# Each device's values, ``ref_{cpu,gpu}_KEY``, from its record.
PER_DEVICE = {
    "first_epoch": first_epoch,
    "epoch": lambda r: median_text(epoch_summary(r)),
    "full": lambda r: duration(full_training_seconds(r, gpu_use.FULL_EPOCHS, r["n_train"])),
    "accuracy": pagewords.accuracy,
    # what the episode's epochs take: the first epoch, then median epochs
    "workshop": lambda r: duration(r["first_epoch_seconds"]
                                   + (WORKSHOP_EPOCHS - 1) * steady_epoch_seconds(r)),
    "validation": _validation,
    "jit_compile": lambda r: _optional(r, "jit_compile", lambda on: "on" if on else "off"),
    "cores": lambda r: _optional(r, "cpu_cores_available", str),
    "load": _load,
    "epoch_summary": lambda r: median_text(epoch_summary(r)),
    "float32_precision": lambda r: _optional(r, "float32_precision", _precision),
}


def _validation_row(cells) -> str:
    return f"| of which validation | {' | '.join(cells)} |\n"


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    records = reference_run(path)
    comparison = RECORDS.gpu_against_cpu(records)
    values = {
        **run_values("ref", records, "date", "backend", "n_train", "batch_size", "cpu", "gpu"),
        "ref_data": data_label(records) if records else NOT_RECORDED,
        # The ratio of the median epochs, and where the ranges overlap, that they do.
        "ref_speedup": speedup_text(comparison) if comparison else NOT_RECORDED,
        # Which environment the run had: a GPU node's own, or the lesson's pinned one.
        "ref_environment": (environment_note(pick(records, True) or records[0], "The reference run")
                            if records else NOT_RECORDED),
    }
    values["ref_fig_epoch_times_alt"], values["ref_fig_time_bars_alt"] = (
        alt_texts(records) if records else (NOT_RECORDED, NOT_RECORDED))
    for name, record in by_device(records):
        values.update({f"ref_{name}_{key}": show(record) if record else NOT_RECORDED
                       for key, show in PER_DEVICE.items()})
    # The validation row of the page's tables, where the records timed it after a
    # synchronisation (a row, with its line break, or nothing: a table takes no empty line).
    cpu = values["ref_cpu_validation"]
    timed = [v for v in (cpu, values["ref_gpu_validation"]) if v != NOT_RECORDED]
    values["ref_validation_rows"] = (NOT_RECORDED if not records else
                                     _validation_row(timed) if len(timed) == 2 else "")
    values["ref_validation_row_cpu"] = (NOT_RECORDED if not records else
                                        _validation_row([cpu]) if cpu != NOT_RECORDED else "")
    values["ref_gpu_vs_cpu"] = pagewords.comparison_text(comparison)
    values.update(gpu_use.substitutions(records, path))
    return values
