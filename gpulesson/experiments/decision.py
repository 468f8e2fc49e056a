"""Should this job use a GPU? The time and allocation cost of :data:`EPOCHS` epochs of the CNN,
from each device's reference record: the warm-up's extra time once plus the timed epochs'
median and range, and that time charged at the site's rates (the CPU job for the cores it had,
the GPU job for one GPU).

The site's rates are read from the ``_config.yml`` of the lesson the results file belongs to
(the folder above ``results/``), else from this lesson's.
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.classroom.charges import Rates, allocation_cost, read_rates
from gpulesson.experiments.cnn import page as cnn
from gpulesson.records.results import LESSON_ROOT, NOT_RECORDED, duration, pick
from gpulesson.records.summaries import compare, scale, summary_text

EXPERIMENT = cnn.RECORDS.experiment  # the results file :func:`substitutions` is given
EPOCHS = cnn.FULL_EPOCHS


def training_time(summary: dict | None, first_epoch: float | None, epochs: int = EPOCHS) -> dict | None:
    """Each timed epoch's time ``epochs`` times, plus the warm-up's (``first_epoch``) extra time
    over the median epoch once."""
    if not summary:
        return None
    if epochs < 1:
        raise ValueError(f"a training has at least one epoch, not {epochs}")
    total = scale(summary, epochs)
    extra = max(0.0, (first_epoch or summary["median"]) - summary["median"])
    return {**total, "median": total["median"] + extra, "min": total["min"] + extra,
            "max": total["max"] + extra, "samples": [v + extra for v in total["samples"]]}


def training_cost(time: dict | None, rates: Rates, *, cores: int = 0, gpus: int = 0) -> dict | None:
    """A training's time summary as the allocation units it is charged."""
    if not time:
        return None
    return scale(time, allocation_cost(1.0, rates, cores=cores, gpus=gpus), rates.unit)


def _in_words(gpu: dict | None, cpu: dict | None, faster: str = "faster", slower: str = "slower") -> str:
    """The GPU against the CPU in :func:`compare`'s words, "faster" and "slower" said otherwise."""
    if not gpu or not cpu:
        return NOT_RECORDED
    return compare(gpu, cpu).sentence.replace("faster", faster).replace("slower", slower)


def cost_sentence(gpu: dict | None, cpu: dict | None) -> str:
    """The GPU's cost against the CPU's: "3.2× cheaper", "costlier", "no measurable difference"."""
    return _in_words(gpu, cpu, "cheaper", "costlier")


def _cores(record: dict) -> int:
    return int(record.get("cpu_cores_available") or record.get("cores_usable") or 1)


def rates_for(path) -> Rates:
    config = Path(path).resolve().parent.parent / "_config.yml"
    return read_rates(config if config.is_file() else LESSON_ROOT / "_config.yml")


def substitutions(path=cnn.RESULTS_FILE) -> dict[str, str]:
    """The ``ref_dec_*`` values: for each device the time and cost of :data:`EPOCHS` epochs of
    the CNN, and the GPU against the CPU for each."""
    rates = rates_for(path)
    values = {"ref_dec_epochs": str(EPOCHS), "ref_dec_rates_note": rates.note}
    records = cnn.reference_run(path)
    times, costs = {}, {}
    for name, record in (("cpu", pick(records, False)), ("gpu", pick(records, True))):
        key = f"ref_dec_cnn_{name}"
        time = times[name] = training_time(cnn.epoch_summary(record),
                                           (record or {}).get("first_epoch_seconds"))
        charged = "one GPU" if name == "gpu" else f"{_cores(record or {})} cores"
        costs[name] = (training_cost(time, rates, gpus=1) if name == "gpu" else
                       training_cost(time, rates, cores=_cores(record)) if record else None)
        values[f"{key}_time"] = (summary_text(time, duration, what="timed epochs") if time
                                 else NOT_RECORDED)
        values[f"{key}_cost"] = (f"{summary_text(costs[name], what='timed epochs')}, {charged}"
                                 if costs[name] else NOT_RECORDED)
    values["ref_dec_cnn_time_verdict"] = _in_words(times["gpu"], times["cpu"])
    values["ref_dec_cnn_cost_verdict"] = cost_sentence(costs["gpu"], costs["cpu"])
    return values
