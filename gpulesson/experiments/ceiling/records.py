"""The ceiling's records: one per backend, device and way of feeding ``fit``, and what a page
takes from them.

A record is one condition (:data:`CONDITION`): its warm-up and timed epochs, their summary, the
cores, threads and load average it ran with. The ceiling of a backend and device is its fastest
in-memory condition (:data:`IN_MEMORY`, by median); a pipeline's share of it is the ratio of
the medians, and the words that compare the two come from
:func:`~gpulesson.experiments.common.compare_middle`, so a share inside the noise is not called a
difference, and one stray epoch does not decide it. The page's reference is, for each device,
the newest run whose part on it is complete (:func:`complete`). A ``device`` record made before
records said how that pipeline takes its batches (no ``method``: on JAX, eager slices of a
``jax.Array``; :func:`gpulesson.experiments.feeding.records.old_device_method`) stays in the
results file and counts for its part being complete, but no table, figure, share or ceiling
uses it (:func:`shown`). Imports no deep-learning framework.
"""

from __future__ import annotations

import math

from gpulesson.devices import BACKEND_TITLES, KERAS_BACKENDS
from gpulesson.experiments.common import MIDDLE_FROM, REPEATS, compare_middle, scale, summary_of
from gpulesson.experiments.recordset import RecordSet, rate_summary

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
# Pipelines that earlier runs measured and the lesson no longer has (a reading thread and a
# reading process of its own, which did not beat the generator with window=1): their records
# stay in the results file, as measured, and are left out of what the page and figure read.
RETIRED = ("lesson-readahead", "lesson-process")
IN_MEMORY = ("arrays", "ram", "device", "tfdata")
READ_AHEAD = ("lesson-ahead", "lesson-ahead-window1")  # the generator's own reader thread
PROCESSES = ("lesson-grain",)  # read outside the training process: no lock shared with it
GPU_ONLY = ("device",)  # on the CPU, device-resident data are the RAM case
TENSORFLOW_ONLY = ("tfdata",)  # a tf.data pipeline needs TensorFlow
CONDITION = ("backend", "device_kind", "pipeline", "batch_size")
NAMES = BACKEND_TITLES


def rate_number(value: float) -> str:
    """Images per second as a page writes them: 41,218."""
    return f"{value:,.0f}"


def pipelines_for(device: str, backend: str) -> list[str]:
    """Every pipeline measured on ``device`` ("cpu" or "gpu") with ``backend``."""
    return [name for name in PIPELINES if (device == "gpu" or name not in GPU_ONLY)
            and (backend == "tensorflow" or name not in TENSORFLOW_ONLY)]


def measurement_record(seconds: list[float], *, warmup: int, run_id: str, device: str,
                       pipeline: str, batch_size: int, n_images: int, extra: dict) -> dict:
    """One results-file record: ``seconds`` of every epoch, the first ``warmup`` of them the
    warm-up (recorded, never summarised)."""
    return RECORDS.epoch_record(
        seconds, warmup=warmup, run_id=run_id, device=device, n_images=n_images, extra=extra,
        own={"pipeline": pipeline, "pipeline_label": PIPELINES[pipeline], "batch_size": batch_size})


def complete(part: list[dict]) -> bool:
    """Whether one device's part of a run is complete: every backend it has measured every
    pipeline of :func:`pipelines_for` that device (those reading ahead, :data:`READ_AHEAD`, and
    in other processes, :data:`PROCESSES`, only in runs that measured them: runs before them
    stay complete)."""
    return all({r["pipeline"] for r in part if r["backend"] == backend}
               >= set(pipelines_for(part[0]["device_kind"], backend)) - set(READ_AHEAD)
               - set(PROCESSES)
               for backend in {r["backend"] for r in part})


def new_method(record: dict) -> bool:
    """Whether a table, figure, share or ceiling may use ``record``: not a ``device`` record
    made the old way (:func:`gpulesson.experiments.feeding.records.old_device_method`)."""
    # Imported here: the feeding benchmark's page imports this module.
    from gpulesson.experiments.feeding.records import old_device_method

    return not old_device_method(record)


# The reference: for each device, CPU first, the newest run complete on it (:func:`complete`),
# without the records of pipelines the lesson no longer has (:data:`RETIRED`).
RECORDS = RecordSet(EXPERIMENT, CONDITION, backends=BACKENDS, complete=complete, data=DATA,
                    kept=lambda r: r.get("pipeline") in PIPELINES, shown=new_method)
RESULTS_FILE, condition, groups, shown = (RECORDS.results_file, RECORDS.key, RECORDS.groups,
                                          RECORDS.visible)
reference_run = RECORDS.reference_run


def old_method(records) -> list[dict]:
    """The ``device`` records of ``records`` made the old way (:func:`new_method`)."""
    return [r for r in records if not new_method(r)]


def find(records, backend: str, device: str, pipeline: str) -> dict | None:
    """The :func:`shown` record of ``pipeline`` for ``backend`` on ``device``, or None."""
    return RECORDS.find(records, backend=backend, device_kind=device, pipeline=pipeline)


def ceiling(records, backend: str, device: str) -> dict | None:
    """The in-memory record with the highest median rate for ``backend`` on ``device``, of those
    :func:`shown` (never a ``device`` record of the old method)."""
    found = [r for name in IN_MEMORY if (r := find(records, backend, device, name))]
    return max(found, key=lambda r: r["images_per_second"], default=None)


def share(record: dict | None, top: dict | None) -> float | None:
    """``record``'s median rate over the ceiling's."""
    if not record or not top:
        return None
    return record["images_per_second"] / top["images_per_second"]


def against(record: dict | None, top: dict | None) -> str | None:
    """``record`` against the ceiling ``top``: its share, with the words of
    :func:`~gpulesson.experiments.common.compare_middle` ("89% of it, measurably slower",
    "71% of it, 1.4× slower", "94% of it, no measurable difference"); the table's header says
    which epochs were compared (:func:`middle_note`)."""
    ratio = share(record, top)
    if ratio is None:
        return None
    if record is top:
        step = step_summary(top)
        return f"the ceiling, {step['median'] * 1e3:.2g} ms a step" if step else "the ceiling"
    said = compare_middle(rate_summary(record), rate_summary(top), higher_is_better=True)
    return f"{share_text(ratio)} of it, {measurably(said)}"


def measurably(said) -> str:
    """A comparison's verdict (a :class:`~gpulesson.experiments.common.Comparison`) as a
    clause that says it is one: "1.4× slower", "measurably slower" (apart, but by less than
    the size the rule names), "no measurable difference"."""
    if said.measurable and "×" not in said.sentence:
        return f"measurably {said.sentence}"
    return said.sentence


_COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return _COUNTS[n] if 0 <= n < len(_COUNTS) else f"{n:,}"


def middle_note(*summaries, what: str = "epochs") -> str:
    """Which repeats a comparison of ``summaries`` reads, as the lesson's rule compares them
    (:func:`~gpulesson.experiments.common.compare_middle`), in words a reader can check
    against the ranges shown: "middle three of five epochs" (the fastest and the slowest of
    each left out), "all 2 epochs" where too few were timed to leave any out; '' without
    summaries."""
    counts = sorted({s["n"] for s in summaries if s})
    if not counts:
        return ""
    if counts[0] >= MIDDLE_FROM:
        if len(counts) == 1:
            return f"middle {_count(counts[0] - 2)} of {_count(counts[0])} {what}"
        return f"middle {what}: the fastest and the slowest of each left out"
    if counts[-1] < MIDDLE_FROM:
        return f"all {what}: too few to leave the fastest and slowest out"
    return (f"middle {what} where {_count(MIDDLE_FROM)} or more were timed (the fastest and the "
            f"slowest left out), all of them elsewhere")


def rough(record: dict) -> bool:
    """Whether ``record`` is too small a measurement to judge the goal by: fewer timed epochs
    than the lesson's rule asks for, or fewer images than the goal's epoch."""
    timed = record.get("repeats", len(record.get("epoch_seconds", ())))
    return timed < REPEATS or record["n_images"] < N_IMAGES


def has_goal(record: dict) -> bool:
    """Whether :data:`TARGET_SHARE` applies to ``record``: to the lesson's generator on JAX and
    PyTorch. On TensorFlow every ``PyDataset`` reaches ``fit`` through ``from_generator``, a
    Python call per batch, and the lesson's recipe there is the data in memory (``tfdata``)."""
    return record["pipeline"] not in IN_MEMORY and record["backend"] != "tensorflow"


def verdict(record: dict | None, top: dict | None) -> str | None:
    """:func:`against`, and, where the goal applies (:func:`has_goal`), whether the share meets
    :data:`TARGET_SHARE`; a rough measurement (:func:`rough`) is not judged, since a short run
    can put a pipeline level with a ceiling that the full run puts far above it."""
    said = against(record, top)
    if said is None or record is top or not has_goal(record):
        return said
    if rough(record) or rough(top):
        return (f"{said}; too rough to judge the {TARGET_SHARE:.0%} goal (the goal is judged on "
                f"{REPEATS} epochs of {N_IMAGES:,} images)")
    goal = "meets" if share(record, top) >= TARGET_SHARE else "misses"
    return f"{said}; {goal} the {TARGET_SHARE:.0%} goal"


def step_summary(record: dict | None) -> dict | None:
    """A record's seconds per training step (each epoch over its steps), as a summary: with
    the model that does almost nothing, what a step costs the backend's own loop. None without
    a batch size."""
    if not record or not record.get("batch_size"):
        return None
    steps = math.ceil(record["n_images"] / record["batch_size"])
    return scale(summary_of(record, "epoch_seconds"), 1 / steps)


def own_step_note(records, backend: str, device: str) -> str | None:
    """Where ``backend``'s ceiling on ``device`` is measurably slower than another backend's in
    the same run (:func:`~gpulesson.experiments.common.compare_middle` of their steps), a
    clause naming its own cost per step as its ceiling: "its own step (3.8 ms with the
    do-nothing model, 5.6× JAX's 0.67 ms)"; None otherwise."""
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
    """A share in percent, rounded to the nearest whole percent (0.617 is 62%), as every share
    on the page; where rounding would put it on the other side of ``goal`` than it is (0.8999
    would read 90%, at a 90% goal it misses), with the decimals it takes to read on its own
    side (89.99%)."""
    for digits in range(4):
        text = f"{ratio * 100:.{digits}f}"
        if goal is None or (float(text) / 100 >= goal) == (ratio >= goal):
            return f"{text}%"
    return f"{ratio * 100:.4f}%"
