"""What a class's CNN runs show: the numbers in words and one figure, the reference marked.
:func:`class_view` decides once what is shown (runs of the setting most of the class used), and
the words, the figure and its alt text all read it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gpulesson.datasets.settings import LABELS
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
MINE = "your run"
KEY = ("dots: each run's median epoch after the warm-up, whiskers: its fastest to slowest epoch; "
       "star: the lesson's reference run; hollow: no measurable difference")


@dataclass(frozen=True)
class Point:
    """One device of one run: its model and the summary of its epochs after the warm-up."""

    model: str
    gpu: bool
    summary: dict
    reference: bool = False
    mine: bool = False  # the learner's own run


@dataclass(frozen=True)
class Speedup:
    """One run's GPU against its CPU."""

    model: str  # the GPU's
    comparison: Comparison
    reference: bool = False
    mine: bool = False


@dataclass(frozen=True)
class ClassView:
    runs: list  # the drawn runs (gpulesson.classroom.results.SharedRun)
    setting: tuple | None  # (data, n_train, batch_size) of the drawn runs
    left_out: int  # runs of other settings
    points: list = field(default_factory=list)
    speedups: list = field(default_factory=list)
    reference: list = field(default_factory=list)  # the reference's records, if drawn
    mine: object = None  # the learner's own run (class_results.SharedRun), if drawn

    @property
    def label(self) -> str:
        if self.setting is None:
            return "no runs"
        data, n_train, batch_size = self.setting
        return f"{LABELS[data]}, {n_train:,} training images, batch size {batch_size}"

    def models(self, gpu: bool) -> list[str]:
        return sorted({p.model for p in self.points if p.gpu == gpu})


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


def _add_run(view: ClassView, records, reference: bool = False, mine: bool = False) -> None:
    for record in records:
        view.points.append(Point(device_model(record), is_gpu(record),
                                 summary_of(record, warmup_key=None), reference, mine))
    cpu, gpu = pick(records, False), pick(records, True)
    if cpu and gpu:
        view.speedups.append(Speedup(device_model(gpu), compare(
            summary_of(gpu, warmup_key=None), summary_of(cpu, warmup_key=None)), reference,
            mine))


def class_view(runs, reference=(), mine=None) -> ClassView:
    """What the figure and the words show of ``runs`` and the ``reference`` run, the learner's own marked."""
    counts = Counter(setting_of(run.records) for run in runs)
    setting = min(counts, key=lambda s: (-counts[s], str(s))) if counts else None
    drawn = [run for run in runs if setting_of(run.records) == setting]
    own = [run for run in drawn if mine and run.path.resolve() == Path(mine).resolve()]
    view = ClassView(drawn, setting, len(runs) - len(drawn), mine=own[0] if own else None)
    for run in drawn:
        _add_run(view, run.records, mine=run in own)
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


def _class_medians(view: ClassView, model: str, gpu: bool) -> list[float]:
    """The class's own runs' median epochs on ``model`` (the reference left out)."""
    return [p.summary["median"] for p in view.points
            if p.model == model and p.gpu == gpu and not p.reference]


def describe(view: ClassView) -> str:
    """The class's numbers in words: per device the runs' medians, per GPU the runs' speed-ups."""
    if not view.runs:
        return "The class folder holds no run yet."
    lines = [f"The class: {len(view.runs)} run(s) of {view.label}"
             + (f"; {view.left_out} run(s) with other data or sizes left out." if view.left_out
                else ".")]
    lines.append("Epoch time after the warm-up (the runs' medians: median and range):")
    for gpu in (False, True):
        for model in view.models(gpu):
            medians = _class_medians(view, model, gpu)
            if medians:
                lines.append(f"  {model}: {_spread_words(medians, duration)}")
            for p in view.points:
                if p.reference and p.model == model and p.gpu == gpu:
                    lines.append(f"  {model}, {REFERENCE}: "
                                 f"{summary_text(p.summary, duration, what='epochs')}")
    lines.append("GPU over CPU in each run with both (speed-up of the median epoch):")
    for model in sorted({s.model for s in view.speedups}):
        mine = [s for s in view.speedups if s.model == model and not s.reference]
        if mine:
            measurable = sum(s.comparison.measurable for s in mine)
            lines.append(f"  {model}: {_spread_words([s.comparison.ratio for s in mine], times_text)}"
                         f"; measurable in {measurable} of {len(mine)}")
        for s in view.speedups:
            if s.reference and s.model == model:
                lines.append(f"  {model}, {REFERENCE}: {s.comparison.sentence}")
    if not view.speedups:
        lines.append("  none yet: no run has both a CPU and a GPU record")
    names = sorted(run.nickname for run in view.runs if run.nickname)
    if names:
        lines.append(f"Shared by: {', '.join(names)}"
                     + (f" and {len(view.runs) - len(names)} without a nickname"
                        if len(names) < len(view.runs) else ""))
    if view.mine:
        lines.append(f"Diamond: your run ({view.mine.path.name}).")
    lines.append(_reference_words(view))
    return "\n".join(lines)


def _values(values, show) -> str:
    if len(values) == 1:
        return f"1 run, {show(values[0])}"
    return f"{len(values)} runs, from {show(min(values))} to {show(max(values))}"


def alt_text(view: ClassView) -> str:
    """The figure's alt text, from the same view."""
    parts = []
    for gpu in (False, True):
        for model in view.models(gpu):
            medians = _class_medians(view, model, gpu)
            if medians:
                parts.append(f"{model}: {_values(medians, duration)}")
    ratios = {}
    for s in view.speedups:
        if not s.reference:
            ratios.setdefault(s.model, []).append(s.comparison.ratio)
    speed = "; ".join(f"{model}: {_values(r, times_text)}" for model, r in sorted(ratios.items()))
    runs = f"{len(view.runs)} CNN run" + ("" if len(view.runs) == 1 else "s")
    return (f"Two dot plots of {runs} of a class ({view.label}). Left, "
            f"the epoch time after the warm-up by device, log scale: {'; '.join(parts)}. "
            f"Right, each run's speed-up of the GPU over the CPU by GPU model, log scale: "
            f"{speed or 'no run with both devices'}. {_reference_words(view)}"
            + (" Diamond: your run." if view.mine else ""))


def _draw(ax, rows, items, value) -> None:
    """Dots of ``items`` on the rows of their model, spread a little within the row."""
    labelled = set()
    for y, (model, gpu) in enumerate(rows):
        mine = [item for item in items if (item.model, getattr(item, "gpu", True)) == (model, gpu)]
        for i, item in enumerate(mine):
            where = y + (0 if len(mine) == 1 else 0.5 * (i / (len(mine) - 1) - 0.5))
            colour = "crimson" if item.reference else ("tab:orange" if gpu else "tab:blue")
            if item.mine:
                colour = "black"
            label = REFERENCE if item.reference else MINE if item.mine else None
            summary = getattr(item, "summary", None)
            if summary:
                draw_spread(ax, [where], [summary], horizontal=True, color=colour, samples=False)
            hollow = isinstance(item, Speedup) and not item.comparison.measurable
            ax.plot(value(item), where, linestyle="none", color=colour,
                    marker="*" if item.reference else "D" if item.mine else "o",
                    markersize=12 if item.reference else 8 if item.mine else 6,
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
    import matplotlib.pyplot as plt

    rows = [(m, False) for m in view.models(False)] + [(m, True) for m in view.models(True)]
    gpu_rows = [(m, True) for m in sorted({s.model for s in view.speedups})]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, 1.8 + 0.45 * max(len(rows), len(gpu_rows), 2)),
        gridspec_kw={"width_ratios": [3, 2]})
    _draw(left, rows, view.points, lambda p: p.summary["median"])
    left.set_xlabel("seconds per epoch after the warm-up (log scale)")
    left.set_title("Epoch time by device")
    _draw(right, gpu_rows, view.speedups, lambda s: s.comparison.ratio)
    right.axvline(1, color="grey", linewidth=1)
    right.set_xlabel("GPU speed-up over the CPU of the same run (×, log scale)")
    right.set_title("Speed-up by GPU")
    if not gpu_rows:
        right.text(0.5, 0.5, "no run with both\na CPU and a GPU", ha="center",
                   va="center", transform=right.transAxes)
    for ax in (left, right):
        if any(item.reference or item.mine
               for item in (view.points if ax is left else view.speedups)):
            ax.legend(loc="best", fontsize=8)
    title = f"The class's CNN runs: {len(view.runs)} run(s), {view.label}"
    key = KEY + ("; diamond: your run" if view.mine else "")
    fig.suptitle(" | ".join(p for p in (title, note) if p) + "\n" + key, fontsize=10)
    fig.tight_layout()
    fig.alt_text = alt_text(view)
    return fig
