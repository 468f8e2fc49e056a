"""The ceiling on the page: episode 9's ``ref_ceil_*`` values, the figure and the command's
table. Each device's values come from its newest complete run, named by its run and machine."""

from __future__ import annotations

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.ceiling import records as cr
from gpulesson.experiments.common import SPREAD_NOTE, draw_spread, markdown_table, summary_text
from gpulesson.records import pagewords as words
from gpulesson.records import parts
from gpulesson.records.figkit import need, panels, run_title
from gpulesson.records.recordset import rate_summary
from gpulesson.records.results import NOT_RECORDED, data_label, hardware

NONE = words.none_yet("ceiling run", "python -m gpulesson.experiments.ceiling")
STREAMS = ("lesson-ahead", "lesson-grain")  # the lesson's streams: a reader thread, Grain's processes
GPU_COMMAND = "python -m gpulesson.experiments.ceiling --devices gpu"


def _name(backend: str) -> str:
    return cr.NAMES.get(backend, backend)


def rate_text(record: dict | None) -> str:
    return summary_text(rate_summary(record), cr.rate_number, what="epochs") if record else "not measured"


def rows(records) -> list[list[str]]:
    found = []
    for backend, device in cr.groups(records):
        top = cr.ceiling(records, backend, device)
        for name in cr.PIPELINES:
            if record := cr.find(records, backend, device, name):
                found.append([f"{_name(backend)}, {device.upper()}", name, rate_text(record),
                              cr.verdict(record, top) or ""])
    return found


def table(records) -> str:
    """The run as a Markdown table; the last column's header says which epochs it compares."""
    note = words.middle_note(*(rate_summary(r) for r in cr.shown(records)))
    return markdown_table(["Backend, device", "Fed from", "Images/s: median (range)",
                           words.headed("Against the ceiling", note)], rows(records))


def describe(records) -> str:
    if not records:
        return "No ceiling records."
    return "\n".join([*parts.run_labels(records),
                      *(f"  {where:16} {name:17} {rate:40} {said}"
                        for where, name, rate, said in rows(records))])


def goal_shares(records) -> str:
    """The generator's share of the ceiling on each backend, by device with its machine and date
    (the CPU's and the GPU's may be different machines and days), and the goal where it applies."""
    shares: dict[str, list[str]] = {}
    judged, hidden = [], []
    for backend, device in cr.groups(records):
        top, lesson = cr.ceiling(records, backend, device), cr.find(records, backend, device, "lesson")
        if top and lesson:
            shares.setdefault(device, []).append(
                f"{cr.share_text(cr.share(lesson, top))} on {_name(backend)}")
            if cr.has_goal(lesson):
                judged.append(cr.share(lesson, top) >= cr.TARGET_SHARE)
                own = cr.own_step_note(records, backend, device)
                if judged[-1] and own:
                    hidden.append(f"on {_name(backend)} ({device.upper()}) only "
                                  f"because {own} hides the reading")
    if not shares:
        return "The reference run has no record of the lesson's generator to compare with."
    runs = parts.part_runs(cr.shown(records))
    said = "With the do-nothing model, the lesson's generator reached these shares of the ceiling."
    for device, found in shares.items():
        part = [r for r in cr.shown(records) if r["device_kind"] == device
                and r["run_id"] == runs[device]]
        said += (f" On the {device.upper()} ({parts.machine(part)}, {part[0]['date'][:10]}): "
                 f"{words.listed(found)}.")
    if judged:
        how = ("missed" if not any(judged) else "met" if all(judged)
               else f"met in {sum(judged)} of {len(judged)} cases")
        said += f" The goal, where it applies, was {how}"
        said += (": " + "; ".join(hidden) + "." if hidden else ".")
    return said


def stream_goal(records) -> str:
    """Each of :data:`STREAMS` against ``ram`` on each backend of the GPU's run, or the command
    that records it."""
    run = parts.part_runs(cr.shown(records)).get("gpu")
    part = [r for r in cr.shown(records) if r["device_kind"] == "gpu" and r["run_id"] == run]
    said = []
    for backend, _ in cr.groups(part):
        ram = cr.find(part, backend, "gpu", "ram")
        for name in STREAMS:
            stream = cr.find(part, backend, "gpu", name)
            if stream and ram:
                ratio = cr.share(stream, ram)
                said.append(f"`{name}` {cr.share_text(ratio)} of `ram` on {_name(backend)} "
                            f"({words.met(ratio >= cr.TARGET_SHARE)})")
    goal = f"goal: at least {cr.TARGET_SHARE:.0%} of `ram`"
    if not said:
        return (f"With the do-nothing model, `{STREAMS[0]}` has no GPU record yet ({goal}): "
                f"`{GPU_COMMAND}` records it.")
    missing = [f"`{name}`" for name in STREAMS if not any(r["pipeline"] == name for r in part)]
    later = (f" {words.listed(missing)}: not yet recorded on the GPU." if missing else "")
    return (f"With the do-nothing model on the {parts.machine(part)} (run {part[0]['run_id']}), "
            f"{words.listed(said)}; {goal}.{later}")


def malloc_note(records) -> str:
    """Which malloc mode PyTorch was measured in: a reader compares only runs of the same mode."""
    torch = [r for r in cr.shown(records) if r.get("backend") == "torch"]
    if not torch:
        return ""
    if words.malloc_fixed(torch):
        return "PyTorch was measured with glibc malloc's thresholds fixed."
    return ("PyTorch was measured in glibc malloc's default mode, in which a fit can land in a "
            "fast or a slow mode by chance.")


def old_method_note(records) -> str:
    old = cr.old_method(records)
    if not old:
        return ""
    devices = " and ".join(d.upper() for d in ("cpu", "gpu") if any(r["device_kind"] == d for r in old))
    how = " (JAX's were eager slices)" if any(r["backend"] == "jax" for r in old) else ""
    return (f"The {devices}'s `device` rows predate their recorded method{how}: kept in the file, "
            "they are left out here, ceiling included.")


FILE = "feeding-ceiling.svg"
# In memory blue, the lesson's generator orange, reading ahead green, Grain's processes purple;
# without mixing (window=1) lighter.
COLOURS = {**dict.fromkeys(cr.IN_MEMORY, "#4c72b0"), "lesson-window1": "#f0b27a", "lesson": "#dd8452",
           "lesson-ahead-window1": "#8fbf8f", "lesson-ahead": "#55a868", "lesson-grain": "#8172b3"}


def _panels(records):
    for backend, device in cr.groups(records):
        drawn = [(name, r) for name in cr.PIPELINES if (r := cr.find(records, backend, device, name))]
        yield backend, device, drawn, cr.ceiling(records, backend, device)


def alt_text(records) -> str:
    if not records:
        return "No ceiling measurement is recorded yet."
    said = []
    for backend, device, drawn, top in _panels(records):
        bars = ", ".join(f"{name} {cr.rate_number(r['images_per_second'])}"
                         + ("" if r is top else f" ({cr.share_text(cr.share(r, top))})")
                         for name, r in drawn)
        said.append(f"{cr.NAMES.get(backend, backend)} on the {device.upper()}: {bars}")
    return ("Horizontal bars of the median images per second that fit reaches with a model "
            "that does almost nothing, one panel per backend and device, each on its own scale "
            "and titled with its run and machine, with whiskers from "
            f"the slowest to the fastest epoch and a dashed line at {cr.TARGET_SHARE:.0%} of the "
            "fastest in-memory bar (the ceiling). Medians, with shares of the ceiling in "
            f"brackets: {'; '.join(said)}.")


def figures(records):
    """A panel per backend and device, a bar per way of feeding ``fit``."""
    need(records, "run python -m gpulesson.experiments.ceiling")
    drawn_panels = list(_panels(records))
    bars = sum(len(drawn) for _, _, drawn, _ in drawn_panels)
    # Each panel on its own scale: the devices may be machines far apart in speed.
    fig, axes = panels(len(drawn_panels), (8, 1.4 + 0.24 * bars + 0.75 * len(drawn_panels)))
    for ax, (backend, device, drawn, top) in zip(axes, drawn_panels, strict=True):
        positions = list(range(len(drawn)))[::-1]
        rates = [rate_summary(r) for _, r in drawn]
        colours = [COLOURS.get(name, COLOURS["lesson"]) for name, _ in drawn]
        ax.barh(positions, [s["median"] for s in rates], color=colours, height=0.6)
        draw_spread(ax, positions, rates, horizontal=True)
        ax.set_yticks(positions, [name for name, _ in drawn])
        if top:
            ax.axvline(cr.TARGET_SHARE * top["images_per_second"], color="black",
                       linestyle="--", linewidth=1)
        run_title(ax, f"{cr.NAMES.get(backend, backend)}, {device.upper()}", [r for _, r in drawn])
    axes[-1].set_xlabel("images per second through fit (higher is better; each panel on "
                        "its own scale)")
    fig.suptitle(f"The ceiling of fit: blue in memory, orange the lesson's generator (light: "
                 f"window=1, not mixed);\ndashed line {cr.TARGET_SHARE:.0%} of the ceiling.\n"
                 f"{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)


def substitutions(path=cr.RESULTS_FILE) -> dict[str, str]:
    """Episode 9's ``ref_ceil_*`` values."""
    records = cr.reference_run(path)
    summary = (malloc_note(records), parts.provenance(records, file="results/ceiling.jsonl"),
               old_method_note(records))
    return {
        "ref_ceil_table": table(records) if records else NONE,
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_ceil_data": data_label(cr.shown(records)) if cr.shown(records) else LABELS[cr.DATA],
        "ref_ceil_summary": " ".join(filter(None, summary)) if records else words.NOTHING_YET,
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_ceil_gpu": hardware(records).get("GPU", NOT_RECORDED),
        "ref_ceil_shares": (goal_shares(records) if records else "No ceiling run has been "
                            "recorded yet to say how close the lesson's generator comes."),
        "ref_ceil_alt": alt_text(records),
        "ref_ceil_stream": stream_goal(records),
    }
