"""Values for the page: the episode's ``ref_*`` placeholders from the reference run.

Epoch times follow the lesson's measurement rule (:mod:`gpulesson.experiments.common`): an
epoch after the warm-up is shown as the median and the range of the timed epochs
(:func:`~gpulesson.experiments.common.summary_text`), the GPU against the CPU in the words of
:func:`~gpulesson.experiments.common.compare`, and the alt texts of the figures come from the
code that draws them (:func:`gpulesson.experiments.cnn.figures.alt_texts`). A value a record
does not have (no GPU run, a record made before it was kept) is :data:`NOT_RECORDED`.

Energy per epoch and per image come from the records' ``energy``
(:func:`gpulesson.experiments.energy.energy_text`: "not measurable on this machine" with the
reason where no counter could be read), and the prediction's values from its records
(:func:`gpulesson.experiments.cnn.inference.substitutions`, ``ref_inf_*``).
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.experiments.cnn import gpu_use, headline, inference
from gpulesson.experiments.cnn.figures import alt_texts
from gpulesson.experiments.cnn.records import (
    FULL_EPOCHS,
    RESULTS_FILE,
    epoch_summary,
    full_training_seconds,
    gpu_comparison,
    reference_run,
    speedup_text,
    split_epochs,
    workshop_seconds,
)
from gpulesson.experiments.common import summarise
from gpulesson.experiments.energy import energy_text
from gpulesson.experiments.pagewords import (
    accuracy,
    by_device,
    comparison_text,
    first_epoch,
    median_text,
    run_values,
)
from gpulesson.pinned import environment_note
from gpulesson.results import NOT_RECORDED, data_label, duration, pick


def _optional(record: dict | None, key: str, show) -> str:
    """A record's value as text, or :data:`NOT_RECORDED` (records made before it was kept)."""
    if not record or record.get(key) is None:
        return NOT_RECORDED
    return show(record[key])


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


def _load(record: dict | None) -> str:
    """The load average over the last minute before and after the training ("0.52 before and
    1.98 after the training"); records made before the first was kept have only the one read
    after it ("1.20 after the training")."""
    if not record:
        return NOT_RECORDED
    before = record.get("load_average_before")
    after = record.get("load_average_after") or record.get("load_average")
    if not after:
        return NOT_RECORDED
    if before:
        return f"{before[0]:.2f} before and {after[0]:.2f} after the training"
    return f"{after[0]:.2f} after the training"


def _validation(record: dict | None) -> str:
    """The validation pass of an epoch after the warm-up: the median and range of the timed
    epochs' passes (:func:`~gpulesson.experiments.cnn.records.split_epochs`); the mean for
    records that kept only that, NOT_RECORDED for records made before either was kept, and for
    records whose clock did not wait for the queued training steps first where the work is
    queued (JAX, or a GPU) before ``validation_synchronised``: that clock ran the training on."""
    if not record or (not record.get("validation_synchronised")
                      and (record.get("backend") == "jax" or record.get("device_kind") == "gpu")):
        return NOT_RECORDED
    passes = (record or {}).get("validation_seconds")
    if passes and len(passes) == len(record.get("epoch_seconds") or []):
        return median_text(summarise(split_epochs(passes)[1]))
    return _optional(record, "mean_validation_seconds", duration)


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference run for the episode pages (MyST substitutions ``ref_*``)."""
    records = reference_run(path)
    gpu = pick(records, True)
    comparison = gpu_comparison(records)
    values = {
        **run_values("ref", records, "run", "date", "backend", "n_train", "batch_size", "cpu", "gpu"),
        "ref_data": data_label(records) if records else NOT_RECORDED,
        # The ratio of the median epochs, and where the ranges overlap, that they do.
        "ref_speedup": speedup_text(comparison) if comparison else NOT_RECORDED,
        # Which environment the run had: a GPU node's own, or the lesson's pinned one.
        "ref_environment": (environment_note(gpu or records[0], "The reference run") if records
                            else NOT_RECORDED),
    }
    epochs_alt, bars_alt = alt_texts(records) if records else (NOT_RECORDED, NOT_RECORDED)
    values["ref_fig_epoch_times_alt"] = epochs_alt
    values["ref_fig_time_bars_alt"] = bars_alt
    for name, record in by_device(records):
        values[f"ref_{name}_first_epoch"] = first_epoch(record)
        values[f"ref_{name}_epoch"] = median_text(epoch_summary(record))
        values[f"ref_{name}_full"] = (duration(full_training_seconds(record, FULL_EPOCHS, record["n_train"]))
                                      if record else NOT_RECORDED)
        values[f"ref_{name}_accuracy"] = accuracy(record)
        values[f"ref_{name}_workshop"] = duration(workshop_seconds(record)) if record else NOT_RECORDED
        values[f"ref_{name}_validation"] = _validation(record)
        values[f"ref_{name}_jit_compile"] = _optional(record, "jit_compile",
                                                      lambda on: "on" if on else "off")
        values[f"ref_{name}_cores"] = _optional(record, "cpu_cores_available", str)
        values[f"ref_{name}_load"] = _load(record)
        values[f"ref_{name}_epoch_summary"] = values[f"ref_{name}_epoch"]
        values[f"ref_{name}_epoch_range"] = _epoch_range(record)
        values[f"ref_{name}_float32_precision"] = _precision(record)
        values[f"ref_{name}_epoch_energy"] = energy_text(record) if record else NOT_RECORDED
        values[f"ref_{name}_image_energy"] = (energy_text(record, per_image=True) if record
                                              else NOT_RECORDED)
    # The validation row of the page's tables, where the records timed it after a
    # synchronisation (a row, with its line break, or nothing: a table takes no empty line).
    timed = [values[f"ref_{n}_validation"] for n in ("cpu", "gpu")
             if values[f"ref_{n}_validation"] != NOT_RECORDED]
    values["ref_validation_rows"] = (NOT_RECORDED if not records else
                                     f"| of which validation | {' | '.join(timed)} |\n"
                                     if len(timed) == 2 else "")
    values["ref_validation_row_cpu"] = (NOT_RECORDED if not records else
                                        f"| of which validation | {values['ref_cpu_validation']} |\n"
                                        if values["ref_cpu_validation"] != NOT_RECORDED else "")
    # The GPU against the CPU in words (common.compare): "3.1× faster", "no measurable difference".
    values["ref_gpu_vs_cpu"] = comparison_text(comparison)
    values.update(inference.substitutions(path, records[0]["run_id"] if records else None))
    values.update(gpu_use.substitutions(records, Path(path).with_name(gpu_use.CEILING_FILE.name)))
    values.update(headline.substitutions(records, path,
                                         Path(path).with_name(headline.MATMUL_FILE.name)))
    return values
