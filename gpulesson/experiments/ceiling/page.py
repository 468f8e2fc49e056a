"""The ceiling's records (one per backend, device and way of feeding ``fit``), episode 9's
``ref_ceil_*`` values, figure and the command's table. A backend and device's ceiling is its
fastest in-memory condition; each device's values come from its newest complete run."""

import math
from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.feeding.measure import RECORDS as FEEDING
from gpulesson.experiments.ladder import RECORDS as LADDER
from gpulesson.machine.devices import BACKEND_TITLES, KERAS_BACKENDS
from gpulesson.records import pagewords as words
from gpulesson.records import parts
from gpulesson.records.figkit import need, panels, run_title
from gpulesson.records.recordset import RecordSet, rate_summary
from gpulesson.records.results import NOT_RECORDED, data_label, hardware
from gpulesson.records.summaries import REPEATS, SPREAD_NOTE, compare_middle, draw_spread, scale, summary_text

DATA = "synthetic"  # speed does not depend on the pixel values
N_IMAGES = 50_000  # episode 9's epoch: the size its 1-s goal is stated for
TARGET_SHARE = 0.90  # the lesson's pipeline: at least this share of the in-memory ceiling

# name -> what it is (tables, figure labels, records)
PIPELINES: dict[str, str] = {
    "arrays": "arrays in memory, given to fit (Keras' own array path)",
    "ram": "arrays in memory, batches sliced by a PyDataset",
    "device": "arrays resident on the GPU, batches sliced there",
    "tfdata": "arrays in memory, batches sliced by tf.data, its autotuning off (TensorFlow only)",
    "lesson": "lesson generator (HDF5Batches), batch chunks",
    "lesson-window1": "lesson generator, window=1: stored batches in a new order, not mixed",
    "lesson-ahead": "lesson generator reading ahead (read_ahead=True), its default window",
    "lesson-ahead-window1": "lesson generator reading ahead, window=1",
    "lesson-grain": "the stored blocks read by Grain's worker processes (grain_blocks)",
}
IN_MEMORY = ("arrays", "ram", "device", "tfdata")
NONE = words.none_yet("ceiling run", "python -m gpulesson.experiments.ceiling")
STREAMS = ("lesson-ahead", "lesson-grain")  # the lesson's streams: a reader thread, Grain's processes
GPU_COMMAND = "python -m gpulesson.experiments.ceiling --devices gpu"


def _name(backend: str) -> str:
    return BACKEND_TITLES.get(backend, backend)


def pipelines_for(device: str, backend: str) -> list[str]:
    """On the CPU, device-resident data are the RAM case; a tf.data pipeline needs TensorFlow."""
    return [name for name in PIPELINES if (device == "gpu" or name != "device")
            and (backend == "tensorflow" or name != "tfdata")]


def complete(part: list[dict]) -> bool:
    """Whether every backend of one device's part measured all its pipelines; those reading
    ahead or in other processes count only where measured, so older runs stay complete."""
    later = {"lesson-ahead", "lesson-ahead-window1", "lesson-grain"}
    return all({r["pipeline"] for r in part if r["backend"] == backend}
               >= set(pipelines_for(part[0]["device_kind"], backend)) - later
               for backend in {r["backend"] for r in part})


# The reference: for each device, the newest run complete on it, without the pipelines the lesson
# no longer has; a ``device`` record that predates its methods (the feeding benchmark's, whose
# pipelines it uses) completes its part, unshown. The file keeps both.
RECORDS = RecordSet("ceiling", ("backend", "device_kind", "pipeline", "batch_size"),
                    backends=KERAS_BACKENDS, complete=complete, data=DATA,
                    kept=lambda r: r.get("pipeline") in PIPELINES, shown=lambda r: not RECORDS.predates(r),
                    methods=FEEDING.methods, method_applies=FEEDING.method_applies)
groups, shown, reference_run = RECORDS.groups, RECORDS.visible, RECORDS.reference_run


def find(records, backend: str, device: str, pipeline: str) -> dict | None:
    return RECORDS.find(records, backend=backend, device_kind=device, pipeline=pipeline)


def ceiling(records, backend: str, device: str) -> dict | None:
    found = [r for name in IN_MEMORY if (r := find(records, backend, device, name))]
    return max(found, key=lambda r: r["images_per_second"], default=None)


def share(record: dict, top: dict) -> float:
    return record["images_per_second"] / top["images_per_second"]


def has_goal(record: dict) -> bool:
    """The goal is the generator's on JAX and PyTorch: on TensorFlow every ``PyDataset`` reaches
    ``fit`` through ``from_generator``, a Python call per batch (the recipe there: ``tfdata``)."""
    return record["pipeline"] not in IN_MEMORY and record["backend"] != "tensorflow"


def verdict(record: dict, top: dict | None) -> str | None:
    """``record`` against the ceiling ``top`` ("89% of it, measurably slower") and the goal where
    one applies; not judged if rough: a short run can put a pipeline level with a far ceiling."""
    if top is None:
        return None
    if record is top:
        return f"the ceiling, {_ms(step_summary(top)['median'])} a step"
    said = compare_middle(rate_summary(record), rate_summary(top), higher_is_better=True)
    said = f"{share_text(share(record, top))} of it, {words.measurably(said)}"
    if not has_goal(record):
        return said
    if any(r["repeats"] < REPEATS or r["n_images"] < N_IMAGES for r in (record, top)):  # rough
        return (f"{said}; too rough to judge the {TARGET_SHARE:.0%} goal (the goal is judged on "
                f"{REPEATS} epochs of {N_IMAGES:,} images)")
    goal = "meets" if share(record, top) >= TARGET_SHARE else "misses"
    return f"{said}; {goal} the {TARGET_SHARE:.0%} goal"


def step_summary(record: dict) -> dict:
    """Seconds a training step: with the do-nothing model, what a step costs the backend's loop."""
    steps = math.ceil(record["n_images"] / record["batch_size"])
    return scale(RECORDS.epoch_summary(record), 1 / steps)


def own_step_note(records, backend: str, device: str) -> str | None:
    """Where ``backend``'s ceiling steps are measurably slower than another backend's of the same
    run: "its own step (3.8 ms with the do-nothing model, 5.6× JAX's 0.67 ms)"; None otherwise."""
    top = ceiling(records, backend, device)
    others = [c for b in {r["backend"] for r in records} - {backend}
              if (c := ceiling(records, b, device)) and c["run_id"] == top["run_id"]]
    if not others:
        return None
    fastest = max(others, key=lambda r: r["images_per_second"])
    mine, theirs = step_summary(top), step_summary(fastest)
    said = compare_middle(mine, theirs)
    if not said.measurable or said.word != "slower":
        return None
    return (f"its own step ({_ms(mine['median'])} with the do-nothing model, "
            f"{1 / said.ratio:.2g}× {_name(fastest['backend'])}'s {_ms(theirs['median'])})")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2g} ms"


def share_text(ratio: float) -> str:
    return words.share_text(ratio, TARGET_SHARE)


def rate_text(record: dict) -> str:
    return summary_text(rate_summary(record), "{:,.0f}".format, what="epochs")


def _panels(records):
    """``(backend, device, [(pipeline, record)], ceiling)`` of each backend and device."""
    for backend, device in groups(records):
        drawn = [(name, r) for name in PIPELINES if (r := find(records, backend, device, name))]
        yield backend, device, drawn, ceiling(records, backend, device)


def rows(records) -> list[list[str]]:
    return [[f"{_name(backend)}, {device.upper()}", name, rate_text(r), verdict(r, top) or ""]
            for backend, device, drawn, top in _panels(records) for name, r in drawn]


def table(records) -> str:
    """The run as a Markdown table; the last column's header says which epochs it compares."""
    note = words.middle_note(*(rate_summary(r) for r in shown(records)))
    return words.markdown_table(["Backend, device", "Fed from", "Images/s: median (range)",
                                 words.headed("Against the ceiling", note)], rows(records))


def describe(records) -> str:
    return parts.run_table(records, rows(records), "  {:16} {:17} {:40} {}", "ceiling")


def goal_shares(records) -> str:
    """The generator's share of the ceiling on each backend, by device with its machine and date
    (the CPU's and the GPU's may be different machines and days), and the goal where it applies."""
    shares: dict[str, list[str]] = {}
    judged, hidden = [], []
    for backend, device in groups(records):
        top, lesson = ceiling(records, backend, device), find(records, backend, device, "lesson")
        if top and lesson:
            shares.setdefault(device, []).append(f"{share_text(share(lesson, top))} on {_name(backend)}")
            if has_goal(lesson):
                judged.append(share(lesson, top) >= TARGET_SHARE)
                own = own_step_note(records, backend, device)
                if judged[-1] and own:
                    hidden.append(f"on {_name(backend)} ({device.upper()}) only "
                                  f"because {own} hides the reading")
    if not shares:
        return "The reference run has no record of the lesson's generator to compare with."
    said = "With the do-nothing model, the lesson's generator reached these shares of the ceiling."
    for device, found in shares.items():
        first = next(r for r in shown(records) if r["device_kind"] == device)
        said += (f" On the {device.upper()} ({parts.machine([first])}, {words.day(first)}): "
                 f"{words.listed(found)}.")
    if judged:
        how = ("missed" if not any(judged) else "met" if all(judged)
               else f"met in {sum(judged)} of {len(judged)} cases")
        which = ": " + "; ".join(hidden) if hidden else ""
        said += f" The goal, where it applies, was {how}{which}."
    return said


def stream_goal(records) -> str:
    """Each of :data:`STREAMS` against ``ram`` on each backend of the GPU's run, or how to record it."""
    part = [r for r in shown(records) if r["device_kind"] == "gpu"]  # the GPU's reference run
    said = []
    for backend, _ in groups(part):
        ram = find(part, backend, "gpu", "ram")
        for name in STREAMS:
            stream = find(part, backend, "gpu", name)
            if stream and ram:
                ratio = share(stream, ram)
                said.append(f"`{name}` {share_text(ratio)} of `ram` on {_name(backend)} "
                            f"({words.met(ratio >= TARGET_SHARE)})")
    goal = f"goal: at least {TARGET_SHARE:.0%} of `ram`"
    if not said:
        return (f"With the do-nothing model, `{STREAMS[0]}` has no GPU record yet ({goal}): "
                f"`{GPU_COMMAND}` records it.")
    missing = [f"`{name}`" for name in STREAMS if not any(r["pipeline"] == name for r in part)]
    later = (f" {words.listed(missing)}: not yet recorded on the GPU (`{GPU_COMMAND}`)."
             if missing else "")
    return (f"With the do-nothing model on the {parts.machine(part)} (run {part[0]['run_id']}), "
            f"{words.listed(said)}; {goal}.{later}")


def malloc_note(records) -> str:
    """Which malloc mode PyTorch was measured in: a reader compares only runs of the same mode."""
    torch = [r for r in shown(records) if r.get("backend") == "torch"]
    if not torch:
        return ""
    return ("PyTorch was measured with glibc malloc's thresholds fixed." if words.malloc_fixed(torch)
            else "PyTorch was measured in glibc malloc's default mode, in which a fit can land in "
            "a fast or a slow mode by chance.")


def old_method_note(records) -> str:
    old = [r for r in records if RECORDS.predates(r)]
    how = " (JAX's were eager slices)" if any(r["backend"] == "jax" for r in old) else ""
    return (f"The {' and '.join(RECORDS.predating_devices(old))}'s `device` rows predate their "
            f"recorded method{how}: kept in the file, they are left out here, ceiling included."
            if old else "")


def grain_note(records, ladder=None) -> str:
    """The stream read by Grain's processes on the GPU: the runs of the ladder's ``grain`` rungs
    and the ceiling's ``lesson-grain``, or the commands of the whole runs that record them."""
    rungs = [r for r in LADDER.read(ladder, device_kind="gpu") if r["rung"].startswith("grain")]
    said = {"measured": [], "not yet recorded": []}
    for what, found, command in (
            ("the ladder's `grain` rungs", rungs and rungs[-1],
             "KERAS_BACKEND=jax python -m gpulesson.experiments.ladder"),
            ("the ceiling's `lesson-grain`",
             RECORDS.find(records, device_kind="gpu", pipeline="lesson-grain"), GPU_COMMAND)):
        said["measured" if found else "not yet recorded"].append(
            f"{what} (run {found['run_id']})" if found else f"{what} (`{command}`)")
    return "Grain's stream on the GPU, " + "; ".join(
        f"{how}: {words.listed(items)}" for how, items in said.items() if items) + "."


FIGURES, FIGURE_FOLDER = ("feeding-ceiling.svg",), "fig/09-feeding-the-gpu"
# The colours in words, each said where its pipeline is drawn; without mixing (window=1) lighter.
KEY = {"ram": "blue in memory", "lesson": "orange the lesson's generator",
       "lesson-ahead": "green it reading ahead", "lesson-grain": "purple Grain's processes"}
COLOURS = {**dict.fromkeys(IN_MEMORY, "#4c72b0"), "lesson-window1": "#f0b27a", "lesson": "#dd8452",
           "lesson-ahead-window1": "#8fbf8f", "lesson-ahead": "#55a868", "lesson-grain": "#8172b3"}


def alt_text(records) -> str:
    if not records:
        return "No ceiling measurement is recorded yet."
    said = []
    for backend, device, drawn, top in _panels(records):
        bars = ", ".join(f"{name} {r['images_per_second']:,.0f}"
                         + ("" if r is top else f" ({share_text(share(r, top))})")
                         for name, r in drawn)
        said.append(f"{_name(backend)} on the {device.upper()}: {bars}")
    return ("Horizontal bars of the median images per second that fit reaches with a model that does "
            "almost nothing, one panel per backend and device, each on its own scale and titled with "
            f"its run and machine, with whiskers from the slowest to the fastest epoch and a dashed line "
            f"at {TARGET_SHARE:.0%} of the fastest in-memory bar (the ceiling). Medians, with shares of "
            f"the ceiling in brackets: {'; '.join(said)}.")


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
        colours = [COLOURS[name] for name, _ in drawn]
        ax.barh(positions, [s["median"] for s in rates], color=colours, height=0.6)
        draw_spread(ax, positions, rates, horizontal=True)
        ax.set_yticks(positions, [name for name, _ in drawn])
        if top:
            ax.axvline(TARGET_SHARE * top["images_per_second"], color="black",
                       linestyle="--", linewidth=1)
        run_title(ax, f"{_name(backend)}, {device.upper()}", [r for _, r in drawn])
    axes[-1].set_xlabel("images per second through fit (higher is better; each panel on its own scale)")
    names = {name for _, _, drawn, _ in drawn_panels for name, _ in drawn}
    fig.suptitle(f"The ceiling of fit: {', '.join(w for n, w in KEY.items() if n in names)};\n"
                 f"light: window=1, not mixed; dashed line {TARGET_SHARE:.0%} of the ceiling.\n"
                 f"{SPREAD_NOTE}", fontsize=8.5)
    fig.tight_layout()
    return (fig,)


def substitutions(path=None) -> dict[str, str]:
    """Episode 9's ``ref_ceil_*`` values."""
    records = reference_run(path)
    summary = (malloc_note(records), parts.provenance(records, file="results/ceiling.jsonl"),
               old_method_note(records))
    return {
        "ref_ceil_table": table(records) if records else NONE,
        # The data the table's rates were measured on, named where the table is introduced.
        "ref_ceil_data": data_label(shown(records)) if shown(records) else LABELS[DATA],
        "ref_ceil_summary": " ".join(filter(None, summary)) if records else words.NOTHING_YET,
        # The GPU the run measured on: the episode's note on what is missing tests it.
        "ref_ceil_gpu": hardware(records).get("GPU", NOT_RECORDED),
        "ref_ceil_shares": (goal_shares(records) if records else "No ceiling run has been "
                            "recorded yet to say how close the lesson's generator comes."),
        "ref_ceil_alt": alt_text(records),
        "ref_ceil_stream": stream_goal(records),
        "ref_ceil_grain": grain_note(records, path and Path(path).with_name(LADDER.results_file.name)),
    }
