"""What a class's CNN runs show: the numbers in words and one figure, the reference marked.
:func:`class_view` decides once what is shown (runs of the setting most of the class used), and
the words, the figure and its alt text all read it.
"""

from collections import Counter
from dataclasses import dataclass, field

from gpulesson.datasets.settings import LABELS
from gpulesson.records.figkit import panels
from gpulesson.records.results import duration, is_gpu, pick
from gpulesson.records.summaries import (
    Comparison,
    compare,
    draw_spread,
    summarise,
    summary_of,
    summary_text,
    times_text,
)

REFERENCE = "the lesson's reference run"
KEY = ("dots: each run's median epoch after the warm-up, whiskers: its fastest to slowest epoch; "
       "star: the lesson's reference run; hollow: no measurable difference")


@dataclass(frozen=True)
class Point:
    """One device of one run (its epochs after the warm-up), or one run's GPU against its CPU
    (``comparison``; ``model`` is the GPU's)."""

    model: str
    gpu: bool
    summary: dict | None = None
    comparison: Comparison | None = None
    reference: bool = False

    @property
    def value(self) -> float:
        return self.comparison.ratio if self.comparison else self.summary["median"]


@dataclass(frozen=True)
class ClassView:
    runs: list  # the drawn runs (gpulesson.classroom.results.SharedRun)
    setting: tuple | None  # (data, n_train, batch_size) of the drawn runs
    left_out: int  # runs of other settings
    points: list = field(default_factory=list)  # Points of one device of one run
    speedups: list = field(default_factory=list)  # Points of one run's GPU against its CPU
    reference: list = field(default_factory=list)  # the reference's records, if drawn

    @property
    def label(self) -> str:
        if self.setting is None:
            return "no runs"
        data, n_train, batch_size = self.setting
        return f"{LABELS[data]}, {n_train:,} training images, batch size {batch_size}"

    def rows(self, speedups: bool = False) -> list[tuple[str, bool, list, list]]:
        """The figure's rows, CPUs first: (model, GPU or not, the class's points, the reference's)."""
        items, rows = self.speedups if speedups else self.points, []
        for gpu, model in sorted({(p.gpu, p.model) for p in items}):
            here = [p for p in items if (p.model, p.gpu) == (model, gpu)]
            rows.append((model, gpu, [p for p in here if not p.reference],
                         [p for p in here if p.reference]))
        return rows


def device_model(record: dict) -> str:
    """The device a record ran on, as the class figure groups it: the GPU's model, or the CPU's
    model and the cores the run could use."""
    if is_gpu(record):
        gpu = record.get("gpu") if isinstance(record.get("gpu"), dict) else {}
        return str(gpu.get("name") or record.get("device") or "GPU")
    return f"{record.get('cpu_model') or 'CPU'} ({record.get('cores_usable', '?')} cores)"


def setting_of(records) -> tuple:
    first = records[0]
    return first["data"], first["n_train"], first["batch_size"]


def _add_run(view: ClassView, records, reference: bool = False) -> None:
    for record in records:
        view.points.append(Point(device_model(record), is_gpu(record),
                                 summary_of(record, warmup_key=None), None, reference))
    cpu, gpu = pick(records, False), pick(records, True)
    if cpu and gpu:
        view.speedups.append(Point(device_model(gpu), True, None, compare(
            summary_of(gpu, warmup_key=None), summary_of(cpu, warmup_key=None)), reference))


def class_view(runs, reference=()) -> ClassView:
    """What the figure and the words show of ``runs`` and the ``reference`` run."""
    counts = Counter(setting_of(run.records) for run in runs)
    setting = min(counts, key=lambda s: (-counts[s], str(s))) if counts else None
    drawn = [run for run in runs if setting_of(run.records) == setting]
    view = ClassView(drawn, setting, len(runs) - len(drawn))
    for run in drawn:
        _add_run(view, run.records)
    reference = list(reference or [])
    if setting and reference and setting_of(reference)[1:] == setting[1:]:
        view.reference.extend(reference)
        _add_run(view, reference, reference=True)
    return view


def _spread_words(values, show) -> str:
    return summary_text(summarise(values), show, what="runs")


def _reference_words(view: ClassView) -> str:
    if not view.reference:
        return f"{REFERENCE.capitalize()} is not drawn (none recorded with the class's sizes)."
    first = view.reference[0]
    data = "" if first["data"] == view.setting[0] else f", on the {LABELS[first['data']]}"
    return (f"Star: {REFERENCE} ({first['date'][:10]}{data}).")


def describe(view: ClassView) -> str:
    """The class's numbers in words: per device the runs' medians, per GPU the runs' speed-ups."""
    if not view.runs:
        return "The class folder holds no run yet."
    lines = [f"The class: {len(view.runs)} run(s) of {view.label}"
             + (f"; {view.left_out} run(s) with other data or sizes left out." if view.left_out
                else ".")]
    lines.append("Epoch time after the warm-up (the runs' medians: median and range):")
    for model, _, own, reference in view.rows():
        if own:
            lines.append(f"  {model}: {_spread_words([p.value for p in own], duration)}")
        lines += [f"  {model}, {REFERENCE}: {summary_text(p.summary, duration, what='epochs')}"
                  for p in reference]
    lines.append("GPU over CPU in each run with both (speed-up of the median epoch):")
    for model, _, own, reference in view.rows(speedups=True):
        if own:
            measurable = sum(s.comparison.measurable for s in own)
            lines.append(f"  {model}: {_spread_words([s.value for s in own], times_text)}"
                         f"; measurable in {measurable} of {len(own)}")
        lines += [f"  {model}, {REFERENCE}: {s.comparison.sentence}" for s in reference]
    if not view.speedups:
        lines.append("  none yet: no run has both a CPU and a GPU record")
    names = sorted(run.nickname for run in view.runs if run.nickname)
    if names:
        lines.append(f"Shared by: {', '.join(names)}"
                     + (f" and {len(view.runs) - len(names)} without a nickname"
                        if len(names) < len(view.runs) else ""))
    lines.append(_reference_words(view))
    return "\n".join(lines)


def _values(values, show) -> str:
    if len(values) == 1:
        return f"1 run, {show(values[0])}"
    return f"{len(values)} runs, from {show(min(values))} to {show(max(values))}"


def alt_text(view: ClassView) -> str:
    """The figure's alt text, from the same view."""
    parts, speed = ("; ".join(f"{model}: {_values([p.value for p in own], show)}"
                              for model, _, own, _ in view.rows(speedups) if own)
                    for speedups, show in ((False, duration), (True, times_text)))
    runs = f"{len(view.runs)} CNN run" + ("" if len(view.runs) == 1 else "s")
    return (f"Two dot plots of {runs} of a class ({view.label}). Left, "
            f"the epoch time after the warm-up by device, log scale: {parts}. "
            f"Right, each run's speed-up of the GPU over the CPU by GPU model, log scale: "
            f"{speed or 'no run with both devices'}. {_reference_words(view)}")


def _draw(ax, rows, items) -> None:
    """Dots of ``items`` on the rows of their model, spread a little within the row."""
    labelled = set()
    for y, (model, gpu) in enumerate(rows):
        row = [item for item in items if (item.model, item.gpu) == (model, gpu)]
        for i, item in enumerate(row):
            where = y + (0 if len(row) == 1 else 0.5 * (i / (len(row) - 1) - 0.5))
            colour = "crimson" if item.reference else ("tab:orange" if gpu else "tab:blue")
            label = REFERENCE if item.reference else None
            if item.summary:
                draw_spread(ax, [where], [item.summary], horizontal=True, color=colour, samples=False)
            hollow = item.comparison is not None and not item.comparison.measurable
            ax.plot(item.value, where, linestyle="none", color=colour,
                    marker="*" if item.reference else "o", markersize=12 if item.reference else 6,
                    markerfacecolor="none" if hollow else colour,
                    label=label if label not in labelled else None, zorder=5)
            labelled.add(label)
    ax.set_yticks(range(len(rows)), [model for model, _ in rows])
    if rows:
        ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("log")
    ax.grid(axis="x", alpha=0.3)


def class_figure(view: ClassView, *, note: str = ""):
    """The class's figure: epoch times by device (left) and speed-ups by GPU (right); ``note``
    goes into the title."""
    rows, gpu_rows = ([(model, gpu) for model, gpu, *_ in view.rows(speedups)] for speedups in (False, True))
    fig, (left, right) = panels(2, (12, 1.8 + 0.45 * max(len(rows), len(gpu_rows), 2)),
                                across=True, gridspec_kw={"width_ratios": [3, 2]})
    _draw(left, rows, view.points)
    left.set_xlabel("seconds per epoch after the warm-up (log scale)")
    left.set_title("Epoch time by device")
    _draw(right, gpu_rows, view.speedups)
    right.axvline(1, color="grey", linewidth=1)
    right.set_xlabel("GPU speed-up over the CPU of the same run (×, log scale)")
    right.set_title("Speed-up by GPU")
    if not gpu_rows:
        right.text(0.5, 0.5, "no run with both\na CPU and a GPU", ha="center",
                   va="center", transform=right.transAxes)
    for ax in (left, right):
        if any(item.reference for item in (view.points if ax is left else view.speedups)):
            ax.legend(loc="best", fontsize=8)
    title = f"The class's CNN runs: {len(view.runs)} run(s), {view.label}"
    fig.suptitle(" | ".join(p for p in (title, note) if p) + "\n" + KEY, fontsize=10)
    fig.tight_layout()
    fig.alt_text = alt_text(view)
    return fig
