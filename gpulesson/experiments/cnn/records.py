"""The CNN's records: one per device of a run, the reference run, the comparison in words.

A run is what :func:`gpulesson.lesson.train_on` returns: a dict with ``device`` ("cpu",
"gpu:0"), ``timing`` (:meth:`gpulesson.lesson.EpochTimer.summary`), ``evaluation_seconds``,
``test_loss``, ``test_accuracy``, ``start_weights`` (fingerprint), ``jit_compile``, ``history``
and ``model``. Its record adds what decides a CPU timing (:func:`gpulesson.timing.cpu_settings`:
cores, framework threads, load average), read when the record is made, right after the run.
"""

from __future__ import annotations

from gpulesson import results
from gpulesson.results import data_label, duration, hardware, is_gpu, make_record, speedup
from gpulesson.timing import cpu_settings

EXPERIMENT = "cnn-cpu-vs-gpu"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
FULL_EPOCHS = 30  # "what would full training cost?" is answered for this many epochs
WORKSHOP_EPOCHS = 3  # the episode's EPOCHS: what a learner's cell runs


def run_record(run: dict, *, data: str, run_id: str, batches, source: str = "notebook") -> dict:
    """The results-file record of one device's run (see the module docstring for ``run``).

    ``batches``: the ``(train, validation, test)`` generators of the run (``HDF5Batches``),
    which give the batch size and the number of images of each part.

    ``device`` is the GPU's name as the framework reports it for a GPU run, and ``"CPU"`` for
    a CPU run (also on a machine that has a GPU). ``mean_epoch_seconds`` is the mean of the
    epochs after the first (the first alone when only one ran); ``total_seconds`` adds the
    evaluation to the training time. ``mean_validation_seconds`` is the part of a mean epoch
    spent on its validation pass (same epochs as the mean).
    """
    timing = dict(run["timing"])
    kind = "gpu" if str(run["device"]).lower().startswith(("gpu", "cuda")) else "cpu"
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    validation = timing.get("validation_seconds") or []
    validation = validation[1:] or validation
    fields = {
        "run_id": run_id,
        "source": source,
        "device_kind": kind,
        "keras_device": run["device"],
        "batch_size": batches[0].batch_size,
        "n_train": batches[0].n_images,
        "n_validation": batches[1].n_images,
        "n_test": batches[2].n_images,
        **timing,
        "mean_epoch_seconds": mean,
        "mean_validation_seconds": sum(validation) / len(validation) if validation else None,
        "jit_compile": run.get("jit_compile"),
        **cpu_settings(),
        "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "test_loss": run["test_loss"],
        "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"],
        "history": {key: [float(v) for v in values] for key, values in run["history"].items()},
    }
    if kind == "cpu":
        fields["device"] = "CPU"
    return make_record(EXPERIMENT, data=data, **fields)


def runs(records) -> dict[str, list[dict]]:
    """This experiment's records grouped by ``run_id`` (:func:`gpulesson.results.runs`)."""
    return results.runs(records, EXPERIMENT)


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The records of the reference run (:func:`gpulesson.results.reference_run`)."""
    return results.reference_run(path, EXPERIMENT)


def full_training_seconds(record: dict, epochs: int = FULL_EPOCHS, n_train: int = 50_000) -> float:
    """What ``epochs`` epochs on ``n_train`` images would take, scaled from the mean epoch.

    Time per epoch grows in proportion to the images in it, so a run on fewer images (quick
    mode) still gives an estimate; the first epoch's extra warm-up is added once.
    """
    scale = n_train / record["n_train"]
    warm_up = max(0.0, record["first_epoch_seconds"] - record["mean_epoch_seconds"])
    return warm_up + epochs * record["mean_epoch_seconds"] * scale


def workshop_seconds(record: dict, epochs: int = WORKSHOP_EPOCHS) -> float:
    """What the episode's ``epochs`` epochs take on the record's data: first epoch plus the rest."""
    return record["first_epoch_seconds"] + (epochs - 1) * record["mean_epoch_seconds"]


def describe(records, *, full_epochs: int = FULL_EPOCHS, full_n_train: int | None = None) -> str:
    """The comparison in words: each device's epoch times, the speed-up, the cost of full training."""
    if not records:
        return "No run recorded."
    lines = [f"Data: {data_label(records)}; {records[0]['n_train']:,} training images per epoch, "
             f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}."]
    names = hardware(records)
    for record in records:
        kind = "GPU" if is_gpu(record) else "CPU"
        rate = record.get("images_per_second")
        lines.append(
            f"{kind} ({names[kind]}): first epoch {duration(record['first_epoch_seconds'])} (warm-up), "
            f"then {duration(record['mean_epoch_seconds'])} per epoch"
            + (f" ({rate:,.0f} images/s)" if rate else "")
            + f"; evaluation {duration(record['evaluation_seconds'])}; "
            f"test accuracy {record['test_accuracy']:.3f}."
        )
    ratio = speedup(records)
    if ratio is not None:
        lines.append(f"Speed-up of the GPU over the CPU: {ratio:.1f}x per epoch (epochs after the first).")
    n_full = full_n_train or records[0]["n_train"]
    costs = " and ".join(
        f"{duration(full_training_seconds(r, full_epochs, n_full))} on the {'GPU' if is_gpu(r) else 'CPU'}"
        for r in records
    )
    lines.append(f"Training {full_epochs} epochs of {n_full:,} images would take about {costs}.")
    return "\n".join(lines)
