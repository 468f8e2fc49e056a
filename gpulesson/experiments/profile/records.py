"""The profile's records (one per device) and the arithmetic a page takes from them.

A convolution makes one multiply-add (2 FLOP) per kernel weight for every output pixel and
channel, a dense layer one per weight (episode 9's ``flops_per_image``). A training step costs
about three forward passes (the forward pass and the backward pass's two products), so the
achieved rate is ``3 × forward × images per second`` of the timed epochs' median. On a GPU it is
set beside the card's published dense peak for the precision in force (TF32 or FP32).
"""

from __future__ import annotations

import statistics

from gpulesson.experiments.common import ORDER_FIELD, SUMMARY_KEY, summarise
from gpulesson.experiments.recordset import RecordSet
from gpulesson.machine.devices import keras_device_name
from gpulesson.machine.gpu_peaks import float32_key, peaks_for

EXPERIMENT = "profile"
TRAINING_PASSES = 3  # forward + the two products of the backward pass
# One record a device; a GPU node's run of the GPU alone leaves an older run's CPU record on
# the page (the reference run: for each device, the newest run that profiled it).
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), complete=bool)
RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.reference_run


def measurement_record(budget, *, run_id: str, device: str, batch_size: int, n_images: int,
                       steps: int, forward_flops: int, utilisation: dict, profile: dict,
                       extra: dict, data: str | None = None) -> dict:
    """One device's results-file record."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    if not data:
        from gpulesson.datasets.settings import get_settings

        data = get_settings().data
    median, warmups = statistics.median(timed), budget.seconds[:budget.warmup]
    per_image = TRAINING_PASSES * forward_flops
    return RECORDS.record(
        data=data, run_id=run_id, source="gpulesson.experiments.profile", device_kind=device,
        keras_device=keras_device_name(device), batch_size=batch_size, n_images=n_images,
        steps=steps, warmup_seconds=warmups, epoch_seconds=timed, median_epoch_seconds=median,
        images_per_second=n_images / median, step_seconds=median / steps,
        forward_flops_per_image=forward_flops, train_flops_per_image=per_image,
        achieved_tflops=per_image * n_images / median / 1e12, utilisation=utilisation,
        profile=profile, **{ORDER_FIELD: False, SUMMARY_KEY: summarise(timed, warmups)}, **extra)


def find(records, device: str) -> dict | None:
    return RECORDS.find(records, device_kind=device)


def gpu_name(record: dict) -> str | None:
    gpu = record.get("gpu") or {}
    return gpu.get("name") or (record.get("device") if record.get("device_kind") == "gpu" else None)


def peak(record: dict, tflops: float | None = None) -> dict | None:
    """A GPU record's published peak and the share of it of ``tflops`` (default the timed
    epochs' ``achieved_tflops``); None where the lesson has no table for the card."""
    name = gpu_name(record)
    peaks = peaks_for(name)
    if not peaks:
        return None
    key = float32_key(record)
    achieved = record["achieved_tflops"] if tflops is None else tflops
    return {"precision": key, "tflops": peaks[key], "card": name, "share": achieved / peaks[key]}


def profiled(record: dict | None) -> bool:
    """Whether ``record`` holds a profile (its trace was read; else ``profile["failed"]``)."""
    return bool(record) and "failed" not in record["profile"]


def batch_tflops(record: dict, seconds: float) -> float:
    """A batch's training arithmetic over ``seconds``, in TFLOP/s."""
    return record["train_flops_per_image"] * record["batch_size"] / seconds / 1e12


def profiled_tflops(record: dict) -> float | None:
    """The rate of the profiled step itself, so that a row showing that step's parts shows its
    rate too (the timed epochs' median step may differ); None without a profile."""
    return batch_tflops(record, record["profile"]["step"]) if profiled(record) else None


def largest_cut(record: dict) -> tuple[str, float]:
    """``(part, share of the step)`` to cut first: the kernels where the device computes at
    least half the step, else the host's largest part (the device waits for the host)."""
    found = record["profile"]
    step = found["step"]
    if found["device"]["kernels"] >= step / 2:
        return "kernels", found["device"]["kernels"] / step
    name, seconds = max(found["host"].items(), key=lambda item: item[1])
    return name, seconds / step


def factors(record: dict) -> dict | None:
    """The two factors of a GPU's share of its peak: ``while`` (the kernels' rate while they
    run, as a share of the peak) and the kernels' share of a step, profiled (``busy_profiled``)
    and timed (``busy_timed``: the same kernel time, as the profiler adds host work, not
    arithmetic), with their products; None without a profile, kernel time or published peak."""
    kernels = profiled(record) and record["profile"]["device"].get("kernels")
    if not kernels:
        return None
    kernel_tflops = batch_tflops(record, kernels)
    top = peak(record, kernel_tflops)
    if not top:
        return None
    busy_profiled = kernels / record["profile"]["step"]
    busy_timed = kernels / record["step_seconds"]
    return {"kernel_tflops": kernel_tflops, "kernels": kernels, "peak": top,
            "while": top["share"], "busy_profiled": busy_profiled, "busy_timed": busy_timed,
            "overall_profiled": top["share"] * busy_profiled,
            "overall_timed": top["share"] * busy_timed}


def overhead(record: dict) -> dict | None:
    """What profiling added to a step, and the least the host's dispatch takes without it (if
    the profiler made no part faster); None where the profiled step was not longer."""
    if not profiled(record):
        return None
    found = record["profile"]
    extra = found["step"] - record["step_seconds"]
    if extra <= 0:
        return None
    dispatch = found["host"].get("dispatch", 0.0)
    return {"profiled": found["step"], "timed": record["step_seconds"], "extra": extra,
            "ratio": found["step"] / record["step_seconds"], "dispatch": dispatch,
            "dispatch_at_least": max(0.0, dispatch - extra)}
