"""The episode's ``ref_*`` values from the reference run; a value a record lacks (no GPU run, a
record made before it was kept) is :data:`NOT_RECORDED`."""

from __future__ import annotations

from pathlib import Path

from gpulesson.experiments.cnn import gpu_use, headline
from gpulesson.experiments.cnn.figures import alt_texts
from gpulesson.experiments.cnn.records import (
    FULL_EPOCHS,
    RESULTS_FILE,
    epoch_summary,
    full_training_seconds,
    gpu_comparison,
    reference_run,
    speedup_text,
    workshop_seconds,
)
from gpulesson.experiments.common import summarise
from gpulesson.machine.pinned import environment_note
from gpulesson.records.pagewords import (
    accuracy,
    by_device,
    comparison_text,
    first_epoch,
    median_text,
    run_values,
)
from gpulesson.records.recordset import split_epochs
from gpulesson.records.results import NOT_RECORDED, data_label, duration, pick


def _optional(record: dict, key: str, show) -> str:
    return NOT_RECORDED if record.get(key) is None else show(record[key])


def _precision(record: dict) -> str:
    """How float32 products were computed: "TF32 matrix products, TF32 convolutions"."""
    found = record.get("float32_precision")
    if not isinstance(found, dict) or not found.get("matmul"):
        return NOT_RECORDED
    matmul, convolution = found["matmul"], found.get("convolution", found["matmul"])
    return (f"{headline.PRECISION.get(matmul, str(matmul))} matrix products, "
            f"{headline.PRECISION.get(convolution, str(convolution))} convolutions")


def _load(record: dict) -> str:
    """The one-minute load average: "0.52 before and 1.98 after the training" (older records:
    after it only)."""
    before = record.get("load_average_before")
    after = record.get("load_average_after") or record.get("load_average")
    if not after:
        return NOT_RECORDED
    if before:
        return f"{before[0]:.2f} before and {after[0]:.2f} after the training"
    return f"{after[0]:.2f} after the training"


def _validation(record: dict) -> str:
    """The median and range of the timed epochs' validation passes (the mean for records that
    kept only that); not where the work is queued (JAX, or a GPU) and the clock did not wait
    for it (before ``validation_synchronised``)."""
    if not record.get("validation_synchronised") and (record.get("backend") == "jax"
                                                      or record.get("device_kind") == "gpu"):
        return NOT_RECORDED
    passes = record.get("validation_seconds")
    if passes and len(passes) == len(record.get("epoch_seconds") or []):
        return median_text(summarise(split_epochs(passes)[1]))
    return _optional(record, "mean_validation_seconds", duration)


# Each device's values, ``ref_{cpu,gpu}_KEY``, from its record.
PER_DEVICE = {
    "first_epoch": first_epoch,
    "epoch": lambda r: median_text(epoch_summary(r)),
    "full": lambda r: duration(full_training_seconds(r, FULL_EPOCHS, r["n_train"])),
    "accuracy": accuracy,
    "workshop": lambda r: duration(workshop_seconds(r)),
    "validation": _validation,
    "jit_compile": lambda r: _optional(r, "jit_compile", lambda on: "on" if on else "off"),
    "cores": lambda r: _optional(r, "cpu_cores_available", str),
    "load": _load,
    "epoch_summary": lambda r: median_text(epoch_summary(r)),
    "float32_precision": _precision,
}


def _validation_row(cells) -> str:
    return f"| of which validation | {' | '.join(cells)} |\n"


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    records = reference_run(path)
    comparison = gpu_comparison(records)
    values = {
        **run_values("ref", records, "date", "backend", "n_train", "batch_size", "cpu", "gpu"),
        "ref_data": data_label(records) if records else NOT_RECORDED,
        # The ratio of the median epochs, and where the ranges overlap, that they do.
        "ref_speedup": speedup_text(comparison) if comparison else NOT_RECORDED,
        # Which environment the run had: a GPU node's own, or the lesson's pinned one.
        "ref_environment": (environment_note(pick(records, True) or records[0], "The reference run")
                            if records else NOT_RECORDED),
    }
    values["ref_fig_epoch_times_alt"], values["ref_fig_time_bars_alt"] = (
        alt_texts(records) if records else (NOT_RECORDED, NOT_RECORDED))
    for name, record in by_device(records):
        values.update({f"ref_{name}_{key}": show(record) if record else NOT_RECORDED
                       for key, show in PER_DEVICE.items()})
    # The validation row of the page's tables, where the records timed it after a
    # synchronisation (a row, with its line break, or nothing: a table takes no empty line).
    cpu = values["ref_cpu_validation"]
    timed = [v for v in (cpu, values["ref_gpu_validation"]) if v != NOT_RECORDED]
    values["ref_validation_rows"] = (NOT_RECORDED if not records else
                                     _validation_row(timed) if len(timed) == 2 else "")
    values["ref_validation_row_cpu"] = (NOT_RECORDED if not records else
                                        _validation_row([cpu]) if cpu != NOT_RECORDED else "")
    values["ref_gpu_vs_cpu"] = comparison_text(comparison)
    values.update(gpu_use.substitutions(records, Path(path).with_name(gpu_use.CEILING_FILE.name)))
    values.update(headline.substitutions(records, path,
                                         Path(path).with_name(headline.MATMUL_FILE.name)))
    return values
