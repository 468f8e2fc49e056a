"""Values for the page: the episode's ``ref_*`` placeholders from the reference run."""

from __future__ import annotations

from gpulesson.experiments.cnn.records import (
    FULL_EPOCHS,
    RESULTS_FILE,
    full_training_seconds,
    reference_run,
    workshop_seconds,
)
from gpulesson.experiments.common import compare, summary_of, summary_text
from gpulesson.results import NOT_RECORDED, data_label, duration, hardware, speedup
from gpulesson.results import pick as _pick


def _backend(record: dict) -> str:
    """The Keras backend of a record and its version, e.g. ``"tensorflow 2.21.0"``."""
    return f"{record['backend']} {record['versions'].get(record['backend'], '')}".strip()


def _optional(record: dict | None, key: str, show) -> str:
    """A record's value as text, or :data:`NOT_RECORDED` (records made before it was kept)."""
    if not record or record.get(key) is None:
        return NOT_RECORDED
    return show(record[key])


def epoch_summary(record: dict | None) -> dict | None:
    """The summary of a record's epoch times: the epochs after the first, the first kept apart
    as the warm-up (:func:`gpulesson.experiments.common.summary_of`)."""
    return summary_of(record) if record else None


def _precision(record: dict | None) -> str:
    """How float32 matrix products and convolutions were computed, e.g. "TF32 matrix products,
    TF32 convolutions"; NOT_RECORDED for records made before it was kept."""
    found = (record or {}).get("float32_precision")
    if not isinstance(found, dict) or not found.get("matmul"):
        return NOT_RECORDED

    def name(mode):
        return {"tf32": "TF32", "float32": "float32"}.get(mode, str(mode))

    return (f"{name(found['matmul'])} matrix products, "
            f"{name(found.get('convolution', found['matmul']))} convolutions")


def _epoch_range(record: dict | None) -> str:
    """The shortest and the longest of all of a record's epochs, warm-up included."""
    if not record or not record.get("epoch_seconds"):
        return NOT_RECORDED
    epochs = record["epoch_seconds"]
    return f"{duration(min(epochs))} to {duration(max(epochs))}"


def gpu_comparison(records) -> tuple[dict, dict] | None:
    """(GPU epoch summary, CPU epoch summary) of a run with both, or None."""
    cpu, gpu = epoch_summary(_pick(records, False)), epoch_summary(_pick(records, True))
    return (gpu, cpu) if cpu and gpu else None


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference run for the episode pages (MyST substitutions ``ref_*``)."""
    records = reference_run(path)
    cpu, gpu = _pick(records, False), _pick(records, True)
    ratio = speedup(records)
    values = {
        "ref_run": records[0]["run_id"] if records else NOT_RECORDED,
        "ref_date": records[0]["date"][:10] if records else NOT_RECORDED,
        "ref_backend": _backend(records[0]) if records else NOT_RECORDED,
        "ref_data": data_label(records) if records else NOT_RECORDED,
        "ref_n_train": f"{records[0]['n_train']:,}" if records else NOT_RECORDED,
        "ref_batch_size": str(records[0]["batch_size"]) if records else NOT_RECORDED,
        "ref_cpu": hardware([cpu])["CPU"] if cpu else NOT_RECORDED,
        "ref_gpu": gpu["device"] if gpu else NOT_RECORDED,
        "ref_speedup": f"{ratio:.1f}x" if ratio else NOT_RECORDED,
    }
    for name, record in (("cpu", cpu), ("gpu", gpu)):
        values[f"ref_{name}_first_epoch"] = (duration(record["first_epoch_seconds"]) if record
                                             else NOT_RECORDED)
        values[f"ref_{name}_epoch"] = duration(record["mean_epoch_seconds"]) if record else NOT_RECORDED
        values[f"ref_{name}_full"] = (duration(full_training_seconds(record, FULL_EPOCHS, record["n_train"]))
                                      if record else NOT_RECORDED)
        values[f"ref_{name}_accuracy"] = f"{record['test_accuracy']:.3f}" if record else NOT_RECORDED
        values[f"ref_{name}_workshop"] = duration(workshop_seconds(record)) if record else NOT_RECORDED
        values[f"ref_{name}_validation"] = _optional(record, "mean_validation_seconds", duration)
        values[f"ref_{name}_jit_compile"] = _optional(record, "jit_compile",
                                                      lambda on: "on" if on else "off")
        values[f"ref_{name}_cores"] = _optional(record, "cpu_cores_available", str)
        values[f"ref_{name}_load"] = _optional(record, "load_average", lambda load: f"{load[0]:.2f}")
        summary = epoch_summary(record)
        values[f"ref_{name}_epoch_summary"] = (summary_text(summary, duration, what="epochs")
                                               if summary else NOT_RECORDED)
        values[f"ref_{name}_epoch_range"] = _epoch_range(record)
        values[f"ref_{name}_float32_precision"] = _precision(record)
    pair = gpu_comparison(records)
    # The GPU against the CPU in words (common.compare): "3.1× faster", "no measurable difference".
    values["ref_gpu_vs_cpu"] = compare(*pair).sentence if pair else NOT_RECORDED
    return values
