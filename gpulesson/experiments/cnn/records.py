"""The CNN's records, one per device of a run (what :func:`gpulesson.lesson.train_on` returns,
with the CPU settings read right after it), the reference run and the comparison in words."""

from __future__ import annotations

from gpulesson.experiments.common import NO_DIFFERENCE, summary_text
from gpulesson.machine.timing import cpu_settings
from gpulesson.records.recordset import RecordSet, epochs_summary, load_fields
from gpulesson.records.results import data_label, duration, hardware, is_gpu

EXPERIMENT = "cnn-cpu-vs-gpu"
FULL_EPOCHS = 30  # "what would full training cost?" is answered for this many epochs
WORKSHOP_EPOCHS = 3  # the episode's EPOCHS: what a learner's cell runs
# One record a device; the page's run is the newest with both devices. A record made before
# the rule took its first epoch as the warm-up.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
RESULTS_FILE, epoch_summary = RECORDS.results_file, RECORDS.epoch_summary
reference_run, gpu_comparison = RECORDS.newest_run, RECORDS.gpu_against_cpu


def steady_epoch_seconds(record: dict) -> float:
    """The median timed epoch (the mean that old records without an epoch list keep)."""
    summary = epoch_summary(record)
    return summary["median"] if summary else record["mean_epoch_seconds"]


def run_record(run: dict, *, data: str, run_id: str, batches, source: str = "notebook",
               load_before=None, load_after=None, energy: dict | None = None) -> dict:
    """The record of one device's run; ``batches``: its ``(train, validation, test)``
    generators. ``mean_validation_seconds`` leaves out the warm-up's pass, as the mean epoch
    does; the load averages and ``energy`` are kept when given."""
    timing = dict(run["timing"])
    kind = "gpu" if str(run["device"]).lower().startswith(("gpu", "cuda")) else "cpu"
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    validation = timing.get("validation_seconds") or []
    validation = validation[1:] or validation
    fields = {
        "run_id": run_id, "source": source, "device_kind": kind, "keras_device": run["device"],
        "batch_size": batches[0].batch_size, "n_train": batches[0].n_images,
        "n_validation": batches[1].n_images, "n_test": batches[2].n_images,
        # the training generator reads ahead (episode 4): records before it have no field
        "read_ahead": bool(getattr(batches[0], "read_ahead", False)),
        **timing, "mean_epoch_seconds": mean,
        "mean_validation_seconds": sum(validation) / len(validation) if validation else None,
        "summary": epochs_summary(timing["epoch_seconds"]), "jit_compile": run.get("jit_compile"),
        **cpu_settings(), "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "test_loss": run["test_loss"], "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"],
        "history": {key: [float(v) for v in values] for key, values in run["history"].items()},
        **load_fields(load_before, load_after),
    }
    if energy is not None:
        fields["energy"] = energy
    return RECORDS.record(data=data, **fields)


def full_training_seconds(record: dict, epochs: int = FULL_EPOCHS, n_train: int = 50_000) -> float:
    """What ``epochs`` epochs on ``n_train`` images would take: the median epoch scaled by the
    images (so a quick run still gives an estimate), plus the first epoch's extra time once."""
    steady = steady_epoch_seconds(record)
    warm_up = max(0.0, record["first_epoch_seconds"] - steady)
    return warm_up + epochs * steady * (n_train / record["n_train"])


def workshop_seconds(record: dict, epochs: int = WORKSHOP_EPOCHS) -> float:
    """What the episode's ``epochs`` epochs take: the first epoch, then median epochs."""
    return record["first_epoch_seconds"] + (epochs - 1) * steady_epoch_seconds(record)


def speedup_text(comparison) -> str:
    """The ratio of the median epochs, "8.0×", saying where the ranges do not tell the devices
    apart: "1.1× by the medians, no measurable difference by the ranges"."""
    if comparison.measurable:
        return f"{comparison.ratio:.1f}×"
    return f"{comparison.ratio:.1f}× by the medians, {NO_DIFFERENCE} by the ranges"


def describe(records, *, full_epochs: int = FULL_EPOCHS, full_n_train: int | None = None) -> str:
    """Each device's warm-up and timed epochs, the GPU against the CPU, the cost of full training."""
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
