"""The feeding benchmark's records (``results/feeding.jsonl``): one pipeline, setting and device
in mode "train" (``model.fit``) or "loader" (the batches alone), and which of them a page shows
(not those of a pipeline that delivered wrong data: :func:`presented`).
"""

from __future__ import annotations

import statistics

from gpulesson.experiments.common import (
    MIN_RANKED,
    NO_DIFFERENCE,
    ORDER_FIELD,
    SUMMARY_KEY,
    as_rate,
    middle,
    rank,
    scale,
    summarise,
)
from gpulesson.machine.devices import keras_device_name as check_device
from gpulesson.records.pagewords import listed, middle_note
from gpulesson.records.recordset import RecordSet
from gpulesson.records.summaries import fmt_number as rate_text  # noqa: F401 (the pages' name for it)

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
# A device's part of a run is complete when these pipelines have both modes.
REQUIRED = ("lesson", "ram", "device")
WORKER_PIPELINES = ("lesson-workers", "lesson-gzip-workers")
# The generator's own reader thread: name -> the generator's options beside it.
READ_AHEAD = {"lesson-ahead": {"read_ahead": True},
              "lesson-ahead-window1": {"read_ahead": True, "window": 1}}

# Backends on which Keras' own workers deliver wrong data: batches read ahead before an epoch
# ended are handed out in the next one (Keras 3.15.1; episode 9 shows the code path).
WRONG_DATA_WITH_WORKERS = ("jax", "torch")
# How the "device" pipeline takes its batches, by backend (a record's "method"); its records
# without one sliced jax.Arrays eagerly, and no page compares them with these.
DEVICE_METHODS = {"jax": "compiled take", "torch": "slice view", "tensorflow": "eager slice"}


def check_pipelines(names, backend: str | None = None) -> list[str]:
    """``names`` without repeats, checked; with ``backend``, also refuses the pipelines that
    deliver wrong data there, saying what to do."""
    names = list(names)
    if not names:
        raise ValueError("no pipelines given")
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise ValueError(f"unknown pipeline(s) {', '.join(map(repr, unknown))}: "
                         f"choose from {', '.join(PIPELINES)}")
    wrong = [n for n in names if n in WORKER_PIPELINES]
    if wrong and backend in WRONG_DATA_WITH_WORKERS:
        raise ValueError(
            f"pipeline(s) {', '.join(map(repr, wrong))} use Keras worker processes, which "
            f"deliver batches of earlier epochs with the {backend} backend: leave them out "
            "(the default), or measure them with KERAS_BACKEND=tensorflow")
    return list(dict.fromkeys(names))


def pipelines_for(backend: str) -> list[str]:
    """Every pipeline that delivers the right data on ``backend`` (the command's default)."""
    wrong = WORKER_PIPELINES if backend in WRONG_DATA_WITH_WORKERS else ()
    return [name for name in PIPELINES if name not in wrong]


def delivered_wrong_data(record: dict) -> bool:
    """Whether ``record`` was measured with Keras workers where they deliver earlier epochs'
    batches."""
    return bool(record.get("workers")) and record.get("backend", "") in WRONG_DATA_WITH_WORKERS


def old_device_method(record: dict) -> bool:
    """Whether ``record`` is of the ``device`` pipeline from before its ``method`` was recorded."""
    return record.get("pipeline") == "device" and not record.get("method")


def presented(record: dict) -> bool:
    return not delivered_wrong_data(record) and not old_device_method(record)


def measurement_record(budget, *, run_id: str, device: str, pipeline: str, mode: str,
                       batch_size: int, steps: int, full_steps: int, n_images: int,
                       precision: str | None, jit_compile: bool | None,
                       steps_per_execution: int | None, group: str, extra: dict) -> dict:
    """One record from ``budget``'s epochs: ``steps`` timed batches an epoch of the
    ``full_steps`` a whole epoch of ``n_images`` has."""
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


# What makes a measurement distinct within a run (``--run-id`` skips the conditions it has).
CONDITION = ("device_kind", "pipeline", "mode", "group", "precision", "jit_compile",
             "steps_per_execution", "batch_size", "layout")


def complete_pipelines(part: list[dict]) -> bool:
    """Whether one device's part of a run has :data:`REQUIRED` in both modes, and every
    pipeline it trained also loaded alone (a run cut short between the two is not complete)."""
    have = {(r["pipeline"], r["mode"]) for r in part if r.get("group") == "pipelines"}
    trained = {p for p, mode in have if mode == "train"}
    return (all((p, m) in have for p in REQUIRED for m in ("train", "loader"))
            and all((p, "loader") in have for p in trained))


# Records of older settings sweeps (groups other than "pipelines") stay in the file, not shown.
RECORDS = RecordSet(EXPERIMENT, CONDITION, complete=complete_pipelines, data=DATA,
                    kept=lambda r: r.get("group") == "pipelines", shown=presented)
RESULTS_FILE, condition, shown = RECORDS.results_file, RECORDS.key, RECORDS.visible
reference_run, epoch_summary = RECORDS.reference_run, RECORDS.epoch_summary


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary of the images its epochs timed."""
    summary = epoch_summary(record)
    return as_rate(summary, record["images_per_epoch"]) if summary else None


def full_epoch_summary(record: dict | None) -> dict | None:
    """Seconds for an epoch of all ``n_images``: partial epochs scaled up (an estimate)."""
    summary = epoch_summary(record)
    return scale(summary, record["n_images"] / record["images_per_epoch"]) if summary else None


def find(records, device: str, pipeline: str, mode: str = "train") -> dict | None:
    """The shown record of ``pipeline`` on ``device`` in ``mode``, training in the base setting."""
    return RECORDS.find(records, device_kind=device, mode=mode, pipeline=pipeline,
                        group="pipelines", **(BASE if mode == "train" else {}))


def _base_training(records, device: str, names=None) -> list[dict]:
    return [r for r in shown(records) if r.get("device_kind") == device
            and r.get("mode") == "train" and r.get("group") == "pipelines"
            and (names is None or r.get("pipeline") in names)]


def base_rates(records, device: str, names=None) -> dict[str, dict]:
    """Pipeline -> training rate summary on ``device``, in the order of :data:`PIPELINES`."""
    found = {r["pipeline"]: rate_summary(r) for r in _base_training(records, device, names)}
    return {name: found[name] for name in PIPELINES if found.get(name)}


def ranking(records, device: str, names=None) -> list[list[str]]:
    """The pipelines in places by training rate, best first, by the rule's
    :func:`~gpulesson.experiments.common.rank` of their middle epochs: the one ranking that the
    page's table, the reading exercise and the figure's alt text take "the fastest" from."""
    rates = {name: middle(rate) for name, rate in base_rates(records, device, names).items()}
    return rank(rates, higher_is_better=True) if rates else []


def best_pipeline(records, device: str) -> str | None:
    """The pipeline with the highest median training rate (a choice, not a ranking)."""
    rates = base_rates(records, device)
    return max(rates, key=lambda name: rates[name]["median"]) if rates else None


def _best(records, device: str, names) -> dict | None:
    found = _base_training(records, device, names)
    return max(found, key=lambda r: rate_summary(r)["median"]) if found else None


def best_hdf5(records, device: str) -> dict | None:
    return _best(records, device, HDF5_PIPELINES)


def fastest_in_memory(records, device: str) -> dict | None:
    """The fastest training record from memory on ``device``: the reference of the 90 % goal."""
    return _best(records, device, IN_MEMORY)


def targets(records) -> dict | None:
    """The lesson's goals checked on the GPU: the fastest HDF5 pipeline's share of the fastest
    path from memory, and its time for an epoch of all images; None without both."""
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


def quoted(name: str) -> str:
    return f"`{name}`"


SHORT_PRECISION = {"float32": "f32", "mixed_bfloat16": "bf16", "mixed_float16": "f16"}


def short_setting(record) -> str:
    """A record's setting for a narrow table: "loader", "f32 jit", "bf16 no-jit spe 4"."""
    if record["mode"] == "loader":
        return "loader"
    parts = [SHORT_PRECISION.get(record["precision"], str(record["precision"])),
             "jit" if record["jit_compile"] else "no-jit"]
    if record["steps_per_execution"] != 1:
        parts.append(f"spe {record['steps_per_execution']}")
    return " ".join(parts)


def basis(*summaries, what: str = "epochs") -> str:
    """Which repeats the rule compared: "middle three of five epochs", or "all epochs"."""
    note = middle_note(*summaries, what=what)
    return f"all {what}" if note.startswith("all ") else note


def apart(*summaries) -> str:
    return f"{basis(*summaries)} apart"


def _why(*summaries, many: bool = False) -> str:
    """Why the rule cannot tell ``summaries`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in summaries)
    if least < MIN_RANKED:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    said = basis(*summaries)
    return "their ranges overlap" if said.startswith("all ") else f"the ranges of their {said} overlap"


def fastest_text(records, device: str, quote=quoted) -> str:
    """The first place of :func:`~gpulesson.experiments.feeding.records.ranking` in the rule's
    words: one name, or several with the note that the rule cannot tell them apart."""
    places = ranking(records, device)
    if not places:
        return "not measured"
    first = places[0]
    if len(first) == 1:
        return quote(first[0])
    rates = base_rates(records, device)
    chosen = [rates[n] for n in first]
    why = (_why(*chosen, many=True) if min(r["n"] for r in chosen) < MIN_RANKED
           else basis(*chosen))
    return (f"{listed(map(quote, first))} ({NO_DIFFERENCE} from {quote(first[0])}, the highest "
            f"median; {why})")
