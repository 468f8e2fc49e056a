"""Episode 8's ``ref_torch_*`` values and figures from the reference run, set beside the pinned
environment and the notebook's epochs; the figures and the table are the CNN's, in PyTorch words."""

import math
import re
from pathlib import Path

from gpulesson.experiments import cnn
from gpulesson.experiments.cnn.page import alt_texts as cnn_alt_texts
from gpulesson.experiments.cnn.page import speedup_text
from gpulesson.experiments.torch_reference.measure import RECORDS
from gpulesson.machine.pinned import environment_note
from gpulesson.records.pagewords import accuracy, by_device, comparison_text, median_text, run_values
from gpulesson.records.results import NOT_RECORDED, data_label, duration, hardware, pick

reference_run, epoch_summary = RECORDS.newest_run, RECORDS.epoch_summary
FIGURES, FIGURE_FOLDER = ("reference-epoch-times.svg", "reference-time-bars.svg"), "fig/08-pytorch"
EPISODE = Path(__file__).resolve().parents[3] / "_episodes" / "08-pytorch.md"
NOTEBOOK_EPOCHS = re.compile(r"^EPOCHS = settings\.epochs\((\d+)\)", re.M)


def describe(records) -> str:
    """The CNN's table, its full training estimated at the run's own epochs."""
    return cnn.describe(records, full_epochs=max((r["epochs"] for r in records), default=1))


def _words(records) -> dict:
    """PyTorch runs eagerly (a first epoch without compiling); the CPU's name gives its threads."""
    names = hardware(records)
    cpu = pick(records, False)
    if cpu and (threads := cpu.get("torch_threads")):
        names["CPU"] += f", {threads} PyTorch thread{'s' if threads > 1 else ''}"
    return {"first_epoch": "one-off start-up costs", "hardware_names": names}


def figures(records):
    """The epoch-time plot and the time bar chart of one run's records, each with its ``alt_text``."""
    return cnn.figures(records, **_words(records))


def alt_texts(records) -> tuple[str, str]:
    """The alt texts of :func:`figures` of the same records, made from what they draw."""
    return cnn_alt_texts(records, **_words(records))


def _notebook_work(record: dict) -> str:
    """The epochs the episode's notebook trains on each device, against the reference run's."""
    match = NOTEBOOK_EPOCHS.search(EPISODE.read_text(encoding="utf-8"))
    if match is None:
        trains = "the notebook's cells train the epochs of their EPOCHS"
    elif int(match[1]) == record["epochs"]:
        trains = f"the notebook's cells train the same {match[1]} epochs on each device"
    else:
        trains = (f"the notebook's cells train {match[1]} epochs on each device, not the reference "
                  f"run's {record['epochs']}")
    return f"{trains}, and load the data first"


def substitutions(path=RECORDS.results_file) -> dict[str, str]:
    """The reference run as text for the episode page (placeholders ``ref_torch_*``)."""
    records = reference_run(path)
    first = records[0] if records else None
    cpu, gpu = pick(records, False), pick(records, True)
    comparison = RECORDS.gpu_against_cpu(records)
    epochs_alt, bars_alt = alt_texts(records) if records else (NOT_RECORDED, NOT_RECORDED)
    first_summary = epoch_summary(first)
    values = {
        **run_values("ref_torch", records, "date", "n_train", "batch_size", "epochs", "cpu", "gpu"),
        "ref_torch_version": first["versions"]["torch"] if first else NOT_RECORDED,
        "ref_torch_data": data_label(records) if first else NOT_RECORDED,
        "ref_torch_epochs_timed": (f"{len(first_summary['warmup'])} warm-up and "
                                   f"{first_summary['n']} timed" if first_summary else NOT_RECORDED),
        "ref_torch_cpu_threads": str(cpu["torch_threads"]) if cpu else NOT_RECORDED,
        # The ratio of the median epochs, and where the ranges overlap, that they do.
        "ref_torch_speedup": speedup_text(comparison) if comparison else NOT_RECORDED,
        # The GPU against the CPU in words: "8× faster", "no measurable difference".
        "ref_torch_gpu_vs_cpu": comparison_text(comparison),
        "ref_torch_fig_epoch_times_alt": epochs_alt,
        "ref_torch_fig_time_bars_alt": bars_alt,
        # The GPU's record also names its CUDA.
        "ref_torch_environment": (environment_note(gpu or first, "The reference run") if first
                                  else NOT_RECORDED),
        "ref_torch_notebook_work": _notebook_work(first) if first else NOT_RECORDED,
    }
    for name, record in by_device(records):
        for key in ("first_epoch", "evaluation", "total"):
            values[f"ref_torch_{name}_{key}"] = (duration(record[f"{key}_seconds"]) if record
                                                 else NOT_RECORDED)
        values[f"ref_torch_{name}_epoch"] = median_text(epoch_summary(record))
        values[f"ref_torch_{name}_accuracy"] = accuracy(record)
    # The GPU's epoch after the warm-up over its steps: for a network this small, mostly time
    # outside the arithmetic, which no record splits (no PyTorch profile was recorded).
    summary = epoch_summary(gpu)
    values["ref_torch_gpu_step"] = (
        duration(summary["median"] / math.ceil(gpu["n_train"] / gpu["batch_size"]))
        if summary else NOT_RECORDED)
    return values
