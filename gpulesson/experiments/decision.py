"""Should this job use a GPU? The time and allocation cost of :data:`EPOCHS` epochs of the CNN,
from each device's reference record: the warm-up's extra time once plus the timed epochs'
median and range, charged at the site's rates (the CPU job for the cores it had, the GPU job for
one GPU), read from the ``_config.yml`` of the lesson the results file belongs to (the folder
above ``results/``), else from this lesson's."""

from pathlib import Path

from gpulesson.classroom.charges import allocation_cost, read_rates
from gpulesson.experiments.cnn import page as cnn
from gpulesson.records.pagewords import by_device, comparison_text, median_text
from gpulesson.records.recordset import gpu_against_cpu
from gpulesson.records.results import LESSON_ROOT, NOT_RECORDED, duration
from gpulesson.records.summaries import scale, summary_text

EXPERIMENT = cnn.RECORDS.experiment  # the results file :func:`substitutions` is given
EPOCHS = cnn.gpu_use.FULL_EPOCHS


def training_time(summary: dict | None, first_epoch: float | None, epochs: int = EPOCHS) -> dict | None:
    """Each timed epoch's time ``epochs`` times, plus the warm-up's (``first_epoch``) extra time
    over the median epoch once."""
    if not summary:
        return None
    total = scale(summary, epochs)
    extra = max(0.0, (first_epoch or summary["median"]) - summary["median"])
    return {**total, "median": total["median"] + extra, "min": total["min"] + extra,
            "max": total["max"] + extra, "samples": [v + extra for v in total["samples"]]}


def substitutions(path=cnn.RESULTS_FILE) -> dict[str, str]:
    """The ``ref_dec_*`` values: for each device the time and cost of :data:`EPOCHS` epochs of
    the CNN, and the GPU against the CPU for each."""
    config = Path(path).resolve().parent.parent / "_config.yml"
    rates = read_rates(config if config.is_file() else LESSON_ROOT / "_config.yml")
    values = {"ref_dec_epochs": str(EPOCHS), "ref_dec_rates_note": rates.note}
    times, costs = {}, {}
    for name, record in by_device(cnn.reference_run(path)):
        record = record or {}
        cores = int(record.get("cpu_cores_available") or record.get("cores_usable") or 1)
        if name == "gpu":
            charged, words = {"gpus": 1}, "one GPU"
        else:
            charged, words = {"cores": cores}, f"{cores} cores"
        times[name] = training_time(cnn.epoch_summary(record), record.get("first_epoch_seconds"))
        costs[name] = scale(times[name], allocation_cost(1.0, rates, **charged), rates.unit)
        values[f"ref_dec_cnn_{name}_time"] = median_text(times[name], duration, "timed epochs")
        values[f"ref_dec_cnn_{name}_cost"] = (f"{summary_text(costs[name], what='timed epochs')}, {words}"
                                              if costs[name] else NOT_RECORDED)
    values["ref_dec_cnn_time_verdict"] = comparison_text(gpu_against_cpu(times["cpu"], times["gpu"]))
    cost = comparison_text(gpu_against_cpu(costs["cpu"], costs["gpu"]))  # compare's words, of cost
    values["ref_dec_cnn_cost_verdict"] = cost.replace("faster", "cheaper").replace("slower", "costlier")
    return values
