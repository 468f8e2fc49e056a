"""The ceiling's records (one per backend, device and way of feeding ``fit``) and what a page
takes from them. The ceiling of a backend and device is its fastest in-memory condition."""

from __future__ import annotations

import math

from gpulesson.experiments.common import REPEATS, compare_middle, scale, summary_of
from gpulesson.machine.devices import BACKEND_TITLES, KERAS_BACKENDS
from gpulesson.records.pagewords import measurably
from gpulesson.records.recordset import RecordSet, rate_summary

EXPERIMENT = "ceiling"
DATA = "synthetic"  # speed does not depend on the pixel values
N_IMAGES = 50_000  # episode 9's epoch: the size its 1-s goal is stated for
TARGET_SHARE = 0.90  # the lesson's pipeline: at least this share of the in-memory ceiling
BACKENDS = KERAS_BACKENDS

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
# Pipelines earlier runs measured and the lesson no longer has: kept in the file, not read.
RETIRED = ("lesson-readahead", "lesson-process")
IN_MEMORY = ("arrays", "ram", "device", "tfdata")
READ_AHEAD = ("lesson-ahead", "lesson-ahead-window1")  # the generator's own reader thread
PROCESSES = ("lesson-grain",)  # read outside the training process: no lock shared with it
GPU_ONLY = ("device",)  # on the CPU, device-resident data are the RAM case
TENSORFLOW_ONLY = ("tfdata",)  # a tf.data pipeline needs TensorFlow
CONDITION = ("backend", "device_kind", "pipeline", "batch_size")
NAMES = BACKEND_TITLES


def rate_number(value: float) -> str:
    return f"{value:,.0f}"


def pipelines_for(device: str, backend: str) -> list[str]:
    return [name for name in PIPELINES if (device == "gpu" or name not in GPU_ONLY)
            and (backend == "tensorflow" or name not in TENSORFLOW_ONLY)]


def measurement_record(seconds: list[float], *, warmup: int, run_id: str, device: str,
                       pipeline: str, batch_size: int, n_images: int, extra: dict) -> dict:
    return RECORDS.epoch_record(
        seconds, warmup=warmup, run_id=run_id, device=device, n_images=n_images, extra=extra,
        own={"pipeline": pipeline, "pipeline_label": PIPELINES[pipeline], "batch_size": batch_size})


def complete(part: list[dict]) -> bool:
    """Whether every backend of one device's part measured all its pipelines; those reading
    ahead or in other processes count only where measured, so older runs stay complete."""
    return all({r["pipeline"] for r in part if r["backend"] == backend}
               >= set(pipelines_for(part[0]["device_kind"], backend)) - set(READ_AHEAD)
               - set(PROCESSES)
               for backend in {r["backend"] for r in part})


def new_method(record: dict) -> bool:
    """Not a ``device`` record made before its method was recorded (JAX's eager slices): it
    completes its part, but nothing shown uses it."""
    # Imported here: the feeding benchmark's page imports this module.
    from gpulesson.experiments.feeding.records import old_device_method

    return not old_device_method(record)


# The reference: for each device, the newest run complete on it, without RETIRED pipelines.
RECORDS = RecordSet(EXPERIMENT, CONDITION, backends=BACKENDS, complete=complete, data=DATA,
                    kept=lambda r: r.get("pipeline") in PIPELINES, shown=new_method)
RESULTS_FILE, condition, groups, shown = (RECORDS.results_file, RECORDS.key, RECORDS.groups,
                                          RECORDS.visible)
reference_run = RECORDS.reference_run


def old_method(records) -> list[dict]:
    return [r for r in records if not new_method(r)]


def find(records, backend: str, device: str, pipeline: str) -> dict | None:
    return RECORDS.find(records, backend=backend, device_kind=device, pipeline=pipeline)


def ceiling(records, backend: str, device: str) -> dict | None:
    found = [r for name in IN_MEMORY if (r := find(records, backend, device, name))]
    return max(found, key=lambda r: r["images_per_second"], default=None)


def share(record: dict | None, top: dict | None) -> float | None:
    if not record or not top:
        return None
    return record["images_per_second"] / top["images_per_second"]


def against(record: dict | None, top: dict | None) -> str | None:
    """``record`` against the ceiling ``top``: "89% of it, measurably slower", in the words of
    ``compare_middle``, so a share inside the noise is not called a difference."""
    ratio = share(record, top)
    if ratio is None:
        return None
    if record is top:
        step = step_summary(top)
        return f"the ceiling, {step['median'] * 1e3:.2g} ms a step" if step else "the ceiling"
    said = compare_middle(rate_summary(record), rate_summary(top), higher_is_better=True)
    return f"{share_text(ratio)} of it, {measurably(said)}"


def rough(record: dict) -> bool:
    """Too small a measurement to judge the goal by: fewer timed epochs or images than the rule's."""
    timed = record.get("repeats", len(record.get("epoch_seconds", ())))
    return timed < REPEATS or record["n_images"] < N_IMAGES


def has_goal(record: dict) -> bool:
    """The goal is the generator's on JAX and PyTorch: on TensorFlow every ``PyDataset`` reaches
    ``fit`` through ``from_generator``, a Python call per batch, and the lesson's recipe there
    is the data in memory (``tfdata``)."""
    return record["pipeline"] not in IN_MEMORY and record["backend"] != "tensorflow"


def verdict(record: dict | None, top: dict | None) -> str | None:
    """:func:`against`, and whether it meets the goal where one applies; a rough measurement is
    not judged, since a short run can put a pipeline level with a ceiling far above it."""
    said = against(record, top)
    if said is None or record is top or not has_goal(record):
        return said
    if rough(record) or rough(top):
        return (f"{said}; too rough to judge the {TARGET_SHARE:.0%} goal (the goal is judged on "
                f"{REPEATS} epochs of {N_IMAGES:,} images)")
    goal = "meets" if share(record, top) >= TARGET_SHARE else "misses"
    return f"{said}; {goal} the {TARGET_SHARE:.0%} goal"


def step_summary(record: dict | None) -> dict | None:
    """Seconds a training step: with the do-nothing model, what a step costs the backend's loop."""
    if not record or not record.get("batch_size"):
        return None
    steps = math.ceil(record["n_images"] / record["batch_size"])
    return scale(summary_of(record, "epoch_seconds"), 1 / steps)


def own_step_note(records, backend: str, device: str) -> str | None:
    """Where ``backend``'s ceiling steps are measurably slower than another backend's of the same
    run: "its own step (3.8 ms with the do-nothing model, 5.6× JAX's 0.67 ms)"; None otherwise."""
    top = ceiling(records, backend, device)
    if not top:
        return None
    others = [c for b in {r["backend"] for r in records} - {backend}
              if (c := ceiling(records, b, device)) and c["run_id"] == top["run_id"]]
    if not others:
        return None
    fastest = max(others, key=lambda r: r["images_per_second"])
    mine, theirs = step_summary(top), step_summary(fastest)
    if not mine or not theirs:
        return None
    said = compare_middle(mine, theirs)
    if not said.measurable or said.word != "slower":
        return None
    return (f"its own step ({_ms(mine['median'])} with the do-nothing model, "
            f"{1 / said.ratio:.2g}× {NAMES.get(fastest['backend'], fastest['backend'])}'s "
            f"{_ms(theirs['median'])})")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2g} ms"


def share_text(ratio: float, goal: float | None = TARGET_SHARE) -> str:
    """A share to the nearest whole percent (0.617 is 62%), with the decimals it takes where
    rounding would put it on the other side of ``goal`` (0.8999 is 89.99%, not 90%)."""
    for digits in range(4):
        text = f"{ratio * 100:.{digits}f}"
        if goal is None or (float(text) / 100 >= goal) == (ratio >= goal):
            return f"{text}%"
    return f"{ratio * 100:.4f}%"
