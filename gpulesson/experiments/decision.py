"""Should this job use a GPU? Time, energy and allocation cost of a training, from the records.

For the lesson's CNN (:mod:`gpulesson.experiments.cnn`) and the small MLP
(:mod:`gpulesson.experiments.small_models`), each device's reference record gives a training
of :data:`EPOCHS` epochs on the record's data:

- **time**: the warm-up epoch's extra time once, plus :data:`EPOCHS` epochs at the timed
  epochs' median and range (:func:`training_time`);
- **energy**: the measured joules per epoch times :data:`EPOCHS`, where the record has them;
- **cost**: that time charged at the site's rates (:mod:`gpulesson.charges`): the CPU job for
  the cores it had, the GPU job for one GPU (:func:`training_cost`).

The GPU against the CPU is said in the words of :func:`gpulesson.experiments.common.compare`:
where the ranges overlap, "no measurable difference". A value without a record is
:data:`~gpulesson.results.NOT_RECORDED`.

The site's rates are read from the ``_config.yml`` of the lesson the results file belongs to
(the folder above ``results/``), else from this lesson's.
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.charges import Rates, allocation_cost, read_rates
from gpulesson.experiments import small_models
from gpulesson.experiments.cnn import records as cnn
from gpulesson.experiments.common import compare, fmt_number, scale, summary_text
from gpulesson.experiments.energy import energy_summary, energy_text
from gpulesson.results import LESSON_ROOT, NOT_RECORDED, duration, pick

EXPERIMENT = cnn.EXPERIMENT  # the results file :func:`substitutions` is given
EPOCHS = cnn.FULL_EPOCHS


def training_time(summary: dict | None, first_epoch: float | None, epochs: int = EPOCHS) -> dict | None:
    """The time of an ``epochs``-epoch training: each timed epoch's time ``epochs`` times, plus
    the warm-up's extra time over the median epoch once (``first_epoch``: the warm-up)."""
    if not summary:
        return None
    if epochs < 1:
        raise ValueError(f"a training has at least one epoch, not {epochs}")
    total = scale(summary, epochs)
    extra = max(0.0, (first_epoch or summary["median"]) - summary["median"])
    return {**total, "median": total["median"] + extra, "min": total["min"] + extra,
            "max": total["max"] + extra, "samples": [v + extra for v in total["samples"]]}


def training_cost(time: dict | None, rates: Rates, *, cores: int = 0, gpus: int = 0) -> dict | None:
    """A training's time summary as the allocation units it is charged (:mod:`gpulesson.charges`)."""
    if not time:
        return None
    return scale(time, allocation_cost(1.0, rates, cores=cores, gpus=gpus), rates.unit)


def cost_sentence(gpu: dict | None, cpu: dict | None) -> str:
    """The GPU's cost against the CPU's: "3.2× cheaper", "costlier", "no measurable difference"."""
    if not gpu or not cpu:
        return NOT_RECORDED
    found = compare(gpu, cpu)
    return found.sentence.replace("faster", "cheaper").replace("slower", "costlier")


def _cores(record: dict) -> int:
    return int(record.get("cpu_cores_available") or record.get("cores_usable") or 1)


def _runs(path: Path) -> dict[str, tuple[dict | None, dict | None, object]]:
    """``{model: (cpu record, gpu record, epoch summary function)}`` of the reference runs."""
    mlp_path = Path(path).parent / f"{small_models.EXPERIMENT}.jsonl"
    found = {"cnn": (cnn.reference_run(path), cnn.epoch_summary),
             "mlp": (small_models.reference_run("comparison", mlp_path)
                     if mlp_path.is_file() else [], small_models.epoch_summary)}
    return {model: (pick(records, False), pick(records, True), summary)
            for model, (records, summary) in found.items()}


def rates_for(path) -> Rates:
    """The charging rates of the lesson the results file ``path`` belongs to (see above)."""
    config = Path(path).resolve().parent.parent / "_config.yml"
    return read_rates(config if config.is_file() else LESSON_ROOT / "_config.yml")


def _cost_text(summary: dict | None, charged: str) -> str:
    """A cost's median and range, and what was charged ("2 cores", "one GPU")."""
    if not summary:
        return NOT_RECORDED
    return f"{summary_text(summary, what='timed epochs')}, {charged}"


def substitutions(path=cnn.RESULTS_FILE) -> dict[str, str]:
    """The ``ref_dec_*`` values of the decision table: for each model and device, the time,
    energy and cost of :data:`EPOCHS` epochs, and the GPU against the CPU for each."""
    rates = rates_for(path)
    values = {"ref_dec_epochs": str(EPOCHS), "ref_dec_unit": rates.unit,
              "ref_dec_core_rate": fmt_number(rates.core_hour),
              "ref_dec_gpu_rate": fmt_number(rates.gpu_hour),
              "ref_dec_rates_note": rates.note}
    for model, (cpu, gpu, epoch_summary) in _runs(path).items():
        times, costs, energies = {}, {}, {}
        for name, record in (("cpu", cpu), ("gpu", gpu)):
            time = training_time(epoch_summary(record), (record or {}).get("first_epoch_seconds"))
            cost = (training_cost(time, rates, gpus=1) if name == "gpu" else
                    training_cost(time, rates, cores=_cores(record)) if record else None)
            times[name], costs[name] = time, cost
            energies[name] = energy_summary(record, factor=EPOCHS)
            values[f"ref_dec_{model}_{name}_time"] = (
                summary_text(time, duration, what="timed epochs") if time else NOT_RECORDED)
            values[f"ref_dec_{model}_{name}_cost"] = _cost_text(
                cost, "one GPU" if name == "gpu" else f"{_cores(record or {})} cores")
            values[f"ref_dec_{model}_{name}_energy"] = (
                energy_text(record, factor=EPOCHS, what="timed epochs") if record
                else NOT_RECORDED)
        both = times["cpu"] and times["gpu"]
        values[f"ref_dec_{model}_time_verdict"] = (compare(times["gpu"], times["cpu"]).sentence
                                                   if both else NOT_RECORDED)
        values[f"ref_dec_{model}_cost_verdict"] = cost_sentence(costs["gpu"], costs["cpu"])
        values[f"ref_dec_{model}_energy_verdict"] = (
            compare(energies["gpu"], energies["cpu"]).sentence.replace("faster", "less energy")
            .replace("slower", "more energy")
            if energies["gpu"] and energies["cpu"] else NOT_RECORDED)
    return values
