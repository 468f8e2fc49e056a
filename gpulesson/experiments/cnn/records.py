"""The CNN's records: one per device of a run, the reference run, the comparison in words.

A run is what :func:`gpulesson.lesson.train_on` returns: a dict with ``device`` ("cpu",
"gpu:0"), ``timing`` (:meth:`gpulesson.lesson.EpochTimer.summary`), ``evaluation_seconds``,
``test_loss``, ``test_accuracy``, ``start_weights`` (fingerprint), ``jit_compile``, ``history``
and ``model``. Its record adds what decides a CPU timing (:func:`gpulesson.timing.cpu_settings`:
cores, framework threads, load average), read when the record is made, right after the run.

**The measurement rule** (:mod:`gpulesson.experiments.common`): a device's first
:data:`~gpulesson.experiments.common.WARMUP` epoch(s) are its warm-up, recorded but not
averaged; the epochs after them are its timed repeats. A record keeps every epoch's seconds
(``epoch_seconds``, the warm-up first) and their summary under ``summary``
(:func:`~gpulesson.experiments.common.summarise`: median, range, the samples, the warm-up
apart). Records made before the rule have no summary: :func:`epoch_summary` builds one from
their ``epoch_seconds`` in the same way (:func:`~gpulesson.experiments.common.summary_of`).
"""

from __future__ import annotations

from gpulesson.experiments.common import NO_DIFFERENCE, summary_text
from gpulesson.experiments.recordset import (  # split_epochs: the page's, kept here
    RecordSet,
    epochs_summary,
    load_fields,
    split_epochs,  # noqa: F401
)
from gpulesson.results import data_label, duration, hardware, is_gpu
from gpulesson.timing import cpu_settings

EXPERIMENT = "cnn-cpu-vs-gpu"
FULL_EPOCHS = 30  # "what would full training cost?" is answered for this many epochs
WORKSHOP_EPOCHS = 3  # the episode's EPOCHS: what a learner's cell runs
# One record a device; the page's run is the newest with both devices. A record made before
# the rule took its first epoch as the warm-up.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
RESULTS_FILE, runs, epoch_summary = RECORDS.results_file, RECORDS.runs, RECORDS.epoch_summary
reference_run, gpu_comparison = RECORDS.newest_run, RECORDS.gpu_against_cpu


def steady_epoch_seconds(record: dict) -> float:
    """The time of an epoch after the warm-up: the median of the timed epochs (the mean that
    old records keep when they have no epoch list)."""
    summary = epoch_summary(record)
    return summary["median"] if summary else record["mean_epoch_seconds"]


def run_record(run: dict, *, data: str, run_id: str, batches, source: str = "notebook",
               load_before=None, load_after=None, energy: dict | None = None) -> dict:
    """The results-file record of one device's run (see the module docstring for ``run``).

    ``batches``: the ``(train, validation, test)`` generators of the run (``HDF5Batches``),
    which give the batch size and the number of images of each part.

    ``device`` is the GPU's name as the framework reports it for a GPU run, and ``"CPU"`` for
    a CPU run (also on a machine that has a GPU). ``summary`` is the summary of the timed
    epochs, the warm-up apart (:func:`split_epochs`); ``mean_epoch_seconds`` is their mean
    (the first epoch alone when only one ran); ``total_seconds`` adds the evaluation to the
    training time. ``mean_validation_seconds`` is the part of a mean epoch spent on its
    validation pass (same epochs as the mean). ``load_before`` and ``load_after``: the load
    average (``os.getloadavg()``) right before and right after the training, kept as
    ``load_average_before`` and ``load_average_after`` when given, so that a run on a busy
    machine can be recognised (``load_average`` is read when the record is made). ``energy``:
    the joules of each epoch or why they could not be read
    (:mod:`gpulesson.experiments.energy`), kept as ``energy`` when given.
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
        # the training generator reads ahead (episode 4): records before it have no field
        "read_ahead": bool(getattr(batches[0], "read_ahead", False)),
        **timing,
        "mean_epoch_seconds": mean,
        "mean_validation_seconds": sum(validation) / len(validation) if validation else None,
        "summary": epochs_summary(timing["epoch_seconds"]),
        "jit_compile": run.get("jit_compile"),
        **cpu_settings(),
        "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "test_loss": run["test_loss"],
        "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"],
        "history": {key: [float(v) for v in values] for key, values in run["history"].items()},
        **load_fields(load_before, load_after),
    }
    if energy is not None:
        fields["energy"] = energy
    return RECORDS.record(data=data, **fields)


def full_training_seconds(record: dict, epochs: int = FULL_EPOCHS, n_train: int = 50_000) -> float:
    """What ``epochs`` epochs on ``n_train`` images would take, scaled from the median epoch
    after the warm-up (:func:`steady_epoch_seconds`).

    Time per epoch grows in proportion to the images in it, so a run on fewer images (quick
    mode) still gives an estimate; the first epoch's extra warm-up is added once.
    """
    scale = n_train / record["n_train"]
    steady = steady_epoch_seconds(record)
    warm_up = max(0.0, record["first_epoch_seconds"] - steady)
    return warm_up + epochs * steady * scale


def workshop_seconds(record: dict, epochs: int = WORKSHOP_EPOCHS) -> float:
    """What the episode's ``epochs`` epochs take on the record's data: the first epoch, plus
    the median epoch after the warm-up for each of the rest."""
    return record["first_epoch_seconds"] + (epochs - 1) * steady_epoch_seconds(record)


def speedup_text(comparison) -> str:
    """The speed-up of the GPU per epoch, the ratio of the median epochs: "8.0×"; where the
    ranges do not tell the devices apart (:attr:`~gpulesson.experiments.common.Comparison.measurable`),
    it says so: "1.1× by the medians, no measurable difference by the ranges"."""
    if comparison.measurable:
        return f"{comparison.ratio:.1f}×"
    return f"{comparison.ratio:.1f}× by the medians, {NO_DIFFERENCE} by the ranges"


def describe(records, *, full_epochs: int = FULL_EPOCHS, full_n_train: int | None = None) -> str:
    """The comparison in words: each device's epoch times (the warm-up, then the median and
    range of the timed epochs), the GPU against the CPU (:func:`gpu_comparison`), the cost of
    full training."""
    if not records:
        return "No run recorded."
    lines = [f"Data: {data_label(records)}; {records[0]['n_train']:,} training images per epoch, "
             f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}."]
    names = hardware(records)
    for record in records:
        kind = "GPU" if is_gpu(record) else "CPU"
        summary = epoch_summary(record)
        warmup = ", ".join(duration(s) for s in summary["warmup"]) if summary else ""
        lines.append(
            f"{kind} ({names[kind]}): "
            + (f"warm-up epoch {warmup}, then " if warmup else "")
            + f"{summary_text(summary, duration, what='epochs')} per epoch; "
            f"evaluation {duration(record['evaluation_seconds'])}; "
            f"test accuracy {record['test_accuracy']:.3f}."
        )
    comparison = gpu_comparison(records)
    if comparison is not None:
        lines.append(f"Speed-up of the GPU over the CPU: {speedup_text(comparison)} per epoch "
                     "(the median epochs after the warm-up).")
    n_full = full_n_train or records[0]["n_train"]
    costs = " and ".join(
        f"{duration(full_training_seconds(r, full_epochs, n_full))} on the {'GPU' if is_gpu(r) else 'CPU'}"
        for r in records
    )
    lines.append(f"Training {full_epochs} epochs of {n_full:,} images would take about {costs}.")
    return "\n".join(lines)
