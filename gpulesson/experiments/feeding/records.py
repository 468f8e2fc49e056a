"""The feeding benchmark's records: what each pipeline is, one record per measurement, and the
choice of records that the page and the figures show.

A record is one pipeline, one setting, one device, in mode "train" (``model.fit``) or "loader"
(the batches alone), appended as one line to ``results/feeding.jsonl``. :func:`shown` is the
rule that keeps records of a pipeline that delivered wrong data off the page: they stay in the
file, as measured, but no table, value or figure presents them as valid.

Every record follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`): its
warm-up epoch(s) (``warmup_seconds``), every timed epoch (``epoch_seconds``) and their summary
(``summary``), the load average before and after. Records made before the rule have no summary:
:func:`epoch_summary` builds one from their epochs (a run with one timed epoch per condition
shows "1 repeat, no range", and nothing of it is ranked). Choices and words that rank
conditions (:func:`ranking`, :func:`fastest`) go through
:func:`~gpulesson.experiments.common.rank` of the middle epochs
(:func:`~gpulesson.experiments.common.middle`), as every comparison of the page does
(:func:`~gpulesson.experiments.common.compare_middle`).
"""

from __future__ import annotations

import statistics

from gpulesson.devices import keras_device_name as check_device
from gpulesson.experiments.common import (
    ORDER_FIELD,
    SUMMARY_KEY,
    as_rate,
    middle,
    rank,
    scale,
    summarise,
)
from gpulesson.experiments.recordset import RecordSet

EXPERIMENT = "feeding"
DATA = "synthetic"
N_IMAGES = 50_000  # the full benchmark, and the size the lesson's goals are stated for
TARGET_SHARE = 0.90  # the lesson's HDF5 pipeline: at least 90 % of the fastest in-memory path
TARGET_EPOCH_SECONDS = 1.0  # and one epoch of 50,000 images in at most 1 s on the GPU
BASE = {"precision": "float32", "jit_compile": True, "steps_per_execution": 1}

# name -> what it is (for tables, figure labels and records)
PIPELINES: dict[str, str] = {
    "classic": "classic tutorial: chunks=True + gzip, reads all to count (the mistake)",
    "lesson": "lesson generator, batch chunks, uncompressed",
    "lesson-ahead": "lesson generator, uncompressed, reading ahead (read_ahead=True)",
    "lesson-ahead-window1": "lesson generator, uncompressed, reading ahead, window=1",
    "lesson-lzf": "lesson generator, batch chunks + lzf",
    "lesson-gzip": "lesson generator, batch chunks + gzip",
    "lesson-workers": "lesson generator, uncompressed, worker processes",
    "lesson-gzip-workers": "lesson generator, gzip, worker processes",
    "ram": "whole data set in RAM (uint8 array)",
    "device": "whole data set resident on the device",
}
# The data file each pipeline reads (None: no file), by its compression in the lesson format.
FILES: dict[str, str | None] = {
    "classic": "classic", "lesson": "none", "lesson-ahead": "none",
    "lesson-ahead-window1": "none", "lesson-lzf": "lzf", "lesson-gzip": "gzip",
    "lesson-workers": "none", "lesson-gzip-workers": "gzip", "ram": None, "device": None,
}
HDF5_PIPELINES = tuple(name for name, kind in FILES.items() if kind and kind != "classic")
# The data in memory: the fastest of them, on a device, is the reference of the 90 % goal.
IN_MEMORY = ("ram", "device")
# A device's part of a run is complete when these pipelines have both modes (``device`` is
# measured last: a run cut short lacks it).
REQUIRED = ("lesson", "ram", "device")
WORKER_PIPELINES = ("lesson-workers", "lesson-gzip-workers")
# The generator's own reader thread (read_ahead=True): right on every backend, as a batch
# depends only on (seed, epoch, index). name -> the generator's options beside it.
READ_AHEAD = {"lesson-ahead": {"read_ahead": True},
              "lesson-ahead-window1": {"read_ahead": True, "window": 1}}

# Backends on which Keras' own workers (a PyDataset's ``workers``) deliver wrong data: batches
# read ahead before an epoch ended are handed out in the next one (found with Keras 3.15.1;
# episode 9 shows the code path). TensorFlow's trainer delivers every batch once.
WRONG_DATA_WITH_WORKERS = ("jax", "torch")
# How the "device" pipeline takes its batches, by backend (a record's "method"). Its records made
# before it have no method: they sliced jax.Arrays eagerly, one dispatch and one copy of the
# start from the host per batch. They stay in the file; no page compares them with these.
DEVICE_METHODS = {"jax": "compiled take", "torch": "slice view", "tensorflow": "eager slice"}


def workers_deliver_right_data(backend: str) -> bool:
    """Whether a PyDataset with Keras workers gives ``fit`` every batch once on ``backend``."""
    return backend not in WRONG_DATA_WITH_WORKERS


def check_pipelines(names, backend: str | None = None) -> list[str]:
    """``names`` without repeats, checked; with ``backend``, also refuses the pipelines that
    deliver wrong data there (Keras workers on JAX and PyTorch), saying what to do."""
    names = list(names)
    if not names:
        raise ValueError("no pipelines given")
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise ValueError(f"unknown pipeline(s) {', '.join(map(repr, unknown))}: "
                         f"choose from {', '.join(PIPELINES)}")
    wrong = [n for n in names if n in WORKER_PIPELINES]
    if backend is not None and wrong and not workers_deliver_right_data(backend):
        raise ValueError(
            f"pipeline(s) {', '.join(map(repr, wrong))} use Keras worker processes, which "
            f"deliver batches of earlier epochs with the {backend} backend: leave them out "
            "(the default), or measure them with KERAS_BACKEND=tensorflow")
    return list(dict.fromkeys(names))


def pipelines_for(backend: str) -> list[str]:
    """Every pipeline that delivers the right data on ``backend`` (the command's default)."""
    if workers_deliver_right_data(backend):
        return list(PIPELINES)
    return [name for name in PIPELINES if name not in WORKER_PIPELINES]


def delivered_wrong_data(record: dict) -> bool:
    """Whether ``record`` was measured with Keras workers on a backend where they deliver
    batches of earlier epochs (kept in the file; never shown as a valid rate)."""
    return bool(record.get("workers")) and not workers_deliver_right_data(
        record.get("backend", ""))


def old_device_method(record: dict) -> bool:
    """Whether ``record`` is of the ``device`` pipeline as it was before its ``method`` was
    recorded (eager slices of a ``jax.Array``, :data:`DEVICE_METHODS`)."""
    return record.get("pipeline") == "device" and not record.get("method")


def presented(record: dict) -> bool:
    """Whether a page or figure may present ``record``: not :func:`delivered_wrong_data` nor
    :func:`old_device_method`."""
    return not delivered_wrong_data(record) and not old_device_method(record)


def measurement_record(budget, *, run_id: str, device: str, pipeline: str, mode: str,
                       batch_size: int, steps: int, full_steps: int, n_images: int,
                       precision: str | None, jit_compile: bool | None,
                       steps_per_execution: int | None, group: str, extra: dict) -> dict:
    """One results-file record from ``budget`` (its warm-up and timed epoch seconds): one
    pipeline, one setting, one device, ``mode`` "train" (model.fit) or "loader" (batches
    only). ``steps`` timed batches per epoch of the ``full_steps`` a whole epoch of
    ``n_images`` has."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    images = min(steps * batch_size, n_images)
    median = statistics.median(timed)
    fields = {
        "run_id": run_id, "source": "gpulesson.experiments.feeding", "device_kind": device,
        "keras_device": check_device(device), "pipeline": pipeline,
        "pipeline_label": PIPELINES[pipeline], "mode": mode, "group": group,
        "precision": precision, "jit_compile": jit_compile,
        "steps_per_execution": steps_per_execution, "batch_size": batch_size,
        "n_images": n_images, "steps": steps, "full_epoch_steps": full_steps,
        "images_per_epoch": images, "partial_epoch": steps < full_steps,
        "warmup_epochs": budget.warmup, "repeats": len(timed),
        "warmup_seconds": budget.seconds[:budget.warmup], "epoch_seconds": timed,
        "median_epoch_seconds": median, "min_epoch_seconds": min(timed),
        "max_epoch_seconds": max(timed), "images_per_second": images / median,
        "images_per_second_low": images / max(timed),
        "images_per_second_high": images / min(timed),
        "full_epoch_seconds": n_images / (images / median),
        SUMMARY_KEY: summarise(timed, budget.seconds[:budget.warmup]), ORDER_FIELD: False,
        **extra,
    }
    return RECORDS.record(**fields)


# What makes a measurement distinct within a run: a run that goes on (``--run-id``) skips the
# conditions it has (the chunks' layout too). A run's sizes (images, steps, workers) are the same for
# all its records.
CONDITION = ("device_kind", "pipeline", "mode", "group", "precision", "jit_compile",
             "steps_per_execution", "batch_size", "layout")


def complete_pipelines(part: list[dict]) -> bool:
    """Whether one device's part of a run compares the pipelines completely: ``lesson``, ``ram``
    and ``device`` (:data:`REQUIRED`) trained and loaded alone, and every pipeline it trained
    also loaded alone (a run cut short between the two is not)."""
    base = [r for r in part if r.get("group") == "pipelines"]
    have = {(r["pipeline"], r["mode"]) for r in base}
    trained = {p for p, mode in have if mode == "train"}
    return (all((p, m) in have for p in REQUIRED for m in ("train", "loader"))
            and all((p, "loader") in have for p in trained))


# The page's records: for each device, CPU first, the pipelines of the newest run that compares
# them completely there (:func:`complete_pipelines`); a partial run never replaces a complete
# part. Records of the settings sweeps that runs before the speed ladder made (groups other than
# "pipelines") stay in the file and are not shown, nor are those :func:`presented` refuses.
RECORDS = RecordSet(EXPERIMENT, CONDITION, complete=complete_pipelines, data=DATA,
                    kept=lambda r: r.get("group") == "pipelines", shown=presented)
RESULTS_FILE, condition, shown, runs = (RECORDS.results_file, RECORDS.key, RECORDS.visible,
                                        RECORDS.runs)
reference_run, epoch_summary = RECORDS.reference_run, RECORDS.epoch_summary


# --- summaries ---------------------------------------------------------------------------------


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary (:func:`~gpulesson.experiments.common.as_rate`
    of its timed epochs: the images an epoch timed over each epoch's seconds)."""
    summary = epoch_summary(record)
    return as_rate(summary, record["images_per_epoch"]) if summary else None


def full_epoch_summary(record: dict | None) -> dict | None:
    """The summary of an epoch of all ``n_images`` in seconds: the timed epochs themselves, or,
    for partial epochs, each scaled up from the steps it timed (an estimate)."""
    summary = epoch_summary(record)
    return scale(summary, record["n_images"] / record["images_per_epoch"]) if summary else None


# --- choosing records -------------------------------------------------------------------------

def find(records, device: str, pipeline: str | None = None, mode: str = "train",
         **setting) -> dict | None:
    """The shown record of ``device`` and ``pipeline`` in ``mode`` with the base setting
    (float32, jit, one step per execution) updated by ``setting`` and, unless given, the
    run's base batch size."""
    wanted = {**BASE, **setting} if mode == "train" else dict(setting)
    for record in shown(records):
        if (record.get("device_kind") == device and record.get("mode") == mode
                and (pipeline is None or record.get("pipeline") == pipeline)
                and all(record.get(k) == v for k, v in wanted.items())
                and ("batch_size" in setting or record.get("group") == "pipelines")):
            return record
    return None


def _base_training(records, device: str) -> list[dict]:
    return [r for r in shown(records) if r.get("device_kind") == device
            and r.get("mode") == "train" and r.get("group") == "pipelines"]


def base_rates(records, device: str, names=None) -> dict[str, dict]:
    """Pipeline -> training rate summary (:func:`rate_summary`) with the base setting on
    ``device`` (only ``names``, when given), in the order of :data:`PIPELINES`."""
    found = {r["pipeline"]: rate_summary(r) for r in _base_training(records, device)
             if names is None or r["pipeline"] in names}
    return {name: found[name] for name in PIPELINES if found.get(name)}


def ranking(records, device: str, names=None) -> list[list[str]]:
    """The pipelines in places, best first, by training rate with the base setting on
    ``device``: :func:`~gpulesson.experiments.common.rank` of their middle epochs
    (:func:`~gpulesson.experiments.common.middle`), the lesson's rule for every comparison. A
    place holds the pipeline with the highest median left and those the rule cannot tell from
    it. The one ranking that the page's table, the reading exercise's answer and the figure's
    alt text take "the fastest pipeline" from; [] without records."""
    rates = {name: middle(rate) for name, rate in base_rates(records, device, names).items()}
    return rank(rates, higher_is_better=True) if rates else []


def fastest(records, device: str, names=None) -> list[str]:
    """The pipelines in first place of :func:`ranking`: one name where its middle epochs lie
    apart from the others', several where the rule cannot tell them apart; [] without
    records."""
    places = ranking(records, device, names)
    return places[0] if places else []


def best_pipeline(records, device: str) -> str | None:
    """The pipeline with the highest median images/s in training with the base setting (a
    choice, not a ranking: :func:`fastest` says whether the rule can tell it from the
    others)."""
    rates = base_rates(records, device)
    return max(rates, key=lambda name: rates[name]["median"]) if rates else None


def best_hdf5(records, device: str) -> dict | None:
    """The training record of the lesson's generator reading an HDF5 file with the highest
    median images/s."""
    found = [r for r in _base_training(records, device) if r.get("pipeline") in HDF5_PIPELINES]
    return max(found, key=lambda r: rate_summary(r)["median"]) if found else None


def fastest_in_memory(records, device: str) -> dict | None:
    """The training record of the data in memory (:data:`IN_MEMORY`) with the highest median
    images/s on ``device``: the reference of the 90 % goal."""
    found = [r for r in _base_training(records, device) if r.get("pipeline") in IN_MEMORY]
    return max(found, key=lambda r: rate_summary(r)["median"]) if found else None


def targets(records) -> dict | None:
    """The lesson's goals checked on the GPU records; None without them.

    ``share``: images/s of the fastest lesson HDF5 pipeline over those of the fastest path
    from memory of the same run and device (:func:`fastest_in_memory`; goal >= 90 %);
    ``epoch_seconds``: its time for an epoch of all images (goal <= 1 s; extrapolated from the
    timed steps when the epochs were partial); ``record``: the pipeline's record.
    """
    lesson, top = best_hdf5(records, "gpu"), fastest_in_memory(records, "gpu")
    if lesson is None or top is None:
        return None
    share = lesson["images_per_second"] / top["images_per_second"]
    epoch = lesson["full_epoch_seconds"]
    return {"pipeline": lesson["pipeline"], "reference": top["pipeline"], "share": share,
            "share_ok": share >= TARGET_SHARE,
            "epoch_seconds": epoch, "epoch_estimated": lesson["partial_epoch"],
            "epoch_ok": epoch <= TARGET_EPOCH_SECONDS, "n_images": lesson["n_images"],
            "full_size": lesson["n_images"] >= N_IMAGES, "record": lesson}


# --- how the page, the figures and the command write a record's parts -------------------------

def quoted(name: str) -> str:
    return f"`{name}`"


def rate_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def setting_text(record) -> str:
    if record["mode"] == "loader":
        return "loader only"
    parts = [record["precision"], "jit" if record["jit_compile"] else "no jit"]
    if record["steps_per_execution"] != 1:
        parts.append(f"{record['steps_per_execution']} steps/execution")
    return ", ".join(parts)


SHORT_PRECISION = {"float32": "f32", "mixed_bfloat16": "bf16", "mixed_float16": "f16"}


def short_setting(record) -> str:
    """:func:`setting_text` for a narrow table: "loader", "f32 jit", "bf16 no-jit spe 4"."""
    if record["mode"] == "loader":
        return "loader"
    parts = [SHORT_PRECISION.get(record["precision"], str(record["precision"])),
             "jit" if record["jit_compile"] else "no-jit"]
    if record["steps_per_execution"] != 1:
        parts.append(f"spe {record['steps_per_execution']}")
    return " ".join(parts)
