"""The profile's records: one per device, and what a page takes from them.

A record keeps the device's timed epochs (the rule of :mod:`gpulesson.experiments.common`), the
arithmetic of one training image, the achieved TFLOP/s, the GPU's utilisation through an epoch
(or why it was not sampled), and the profiled steps split into the host's and the device's parts
(:func:`gpulesson.experiments.profile.trace.breakdown`), with the hardware and versions of every
record (:func:`gpulesson.results.make_record`).

**The arithmetic.** A convolution makes one multiply-add (2 FLOP) per weight of its kernel for
every output pixel and channel, a dense layer one per weight (episode 9's
``flops_per_image``: ``2·H·W·C_out·k_h·k_w·C_in`` per Conv2D, ``2·n_in·n_out`` per Dense). A
training step costs about three forward passes (the forward pass, and the two products of the
backward pass), so a training image costs ``3 × forward``, and the achieved rate is
``3 × forward × images per second`` (of the timed epochs' median). On a GPU it is set beside
the card's published dense peak (:mod:`gpulesson.gpu_peaks`) for the precision the record
computed in: TF32 where float32 matrix products ran as TF32, else FP32.

Imports no deep-learning framework.
"""

from __future__ import annotations

import statistics

from gpulesson.devices import keras_device_name
from gpulesson.experiments.common import ORDER_FIELD, SUMMARY_KEY, summarise
from gpulesson.experiments.recordset import RecordSet
from gpulesson.gpu_peaks import float32_key, peaks_for

EXPERIMENT = "profile"
TRAINING_PASSES = 3  # forward + the two products of the backward pass
# One record a device; a GPU node's run of the GPU alone leaves an older run's CPU record on
# the page (the reference run: for each device, the newest run that profiled it).
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), complete=bool)
RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.reference_run


def data_source() -> str:
    from gpulesson.settings import get_settings

    return get_settings().data


def measurement_record(budget, *, run_id: str, device: str, batch_size: int, n_images: int,
                       steps: int, forward_flops: int, utilisation: dict, profile: dict,
                       extra: dict, data: str | None = None) -> dict:
    """One results-file record of one device (see the module's text)."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    median = statistics.median(timed)
    per_image = TRAINING_PASSES * forward_flops
    fields = {
        "run_id": run_id, "source": "gpulesson.experiments.profile", "device_kind": device,
        "keras_device": keras_device_name(device), "batch_size": batch_size,
        "n_images": n_images, "steps": steps, "warmup_seconds": budget.seconds[:budget.warmup],
        "epoch_seconds": timed, "median_epoch_seconds": median,
        "images_per_second": n_images / median, "step_seconds": median / steps,
        "forward_flops_per_image": forward_flops, "train_flops_per_image": per_image,
        "achieved_tflops": per_image * n_images / median / 1e12,
        "utilisation": utilisation, "profile": profile, ORDER_FIELD: False,
        SUMMARY_KEY: summarise(timed, budget.seconds[:budget.warmup]), **extra,
    }
    return RECORDS.record(data=data or data_source(), **fields)


def find(records, device: str) -> dict | None:
    return RECORDS.find(records, device_kind=device)


def gpu_name(record: dict) -> str | None:
    gpu = record.get("gpu") or {}
    return gpu.get("name") or (record.get("device") if record.get("device_kind") == "gpu" else None)


def peak(record: dict, tflops: float | None = None) -> dict | None:
    """``{"precision", "tflops" (the published peak), "share" (achieved / peak), "card"}`` of a
    GPU record whose card the lesson has a table for; None otherwise (a CPU, an unknown card).
    The share is of ``tflops`` where given (e.g. :func:`profiled_tflops`), else of the rate of
    the timed epochs (``achieved_tflops``)."""
    name = gpu_name(record)
    peaks = peaks_for(name)
    if not peaks:
        return None
    key = float32_key(record)
    achieved = record["achieved_tflops"] if tflops is None else tflops
    return {"precision": key, "tflops": peaks[key], "card": name, "share": achieved / peaks[key]}


def profiled_tflops(record: dict) -> float | None:
    """The TFLOP/s of the profiled steps: a batch's training arithmetic over the profiled
    step's time, so that a row that shows the profiled step and its parts shows the rate of
    that same step (the timed epochs' rate, ``achieved_tflops``, comes from their median
    step, ``step_seconds``, which may differ). None without a profile."""
    if not profiled(record):
        return None
    return record["train_flops_per_image"] * record["batch_size"] / record["profile"]["step"] / 1e12


def profiled(record: dict | None) -> bool:
    """Whether ``record`` holds a profile (its trace was read; else ``profile["failed"]``)."""
    return bool(record) and "failed" not in record["profile"]


def parts(record: dict) -> dict[str, float]:
    """The six parts of a profiled step, seconds per step: ``host: input``, ... ``device: idle``."""
    found = record["profile"]
    return {**{f"host: {k}": v for k, v in found["host"].items()},
            **{f"device: {k}": v for k, v in found["device"].items()}}


def largest_cut(record: dict) -> tuple[str, float]:
    """``(part, share of the step)`` that one would cut first: where the device computes less
    than half of the step, the largest part of the host's timeline (the device waits for the
    host); else the kernels themselves."""
    found = record["profile"]
    step = found["step"]
    if found["device"]["kernels"] >= step / 2:
        return "kernels", found["device"]["kernels"] / step
    name, seconds = max(found["host"].items(), key=lambda item: item[1])
    return name, seconds / step


def factors(record: dict) -> dict | None:
    """The two factors of a GPU's share of its peak, from one profiled record: ``while``, the
    kernels' rate while they run (a batch's training arithmetic over the device's kernel time
    of a step) as a share of the peak, and ``busy``, the kernels' share of a step, of the
    profiled step (``busy_profiled``) and of the timed epochs' step (``busy_timed``, the same
    kernel time: the profiler adds host work, not arithmetic). Their products are the shares of
    the peak of the profiled step (``overall_profiled``) and of the timed epochs
    (``overall_timed``). ``kernel_tflops`` and ``peak`` (:func:`peak`) come with them; None
    without a profile, a kernel time or a published peak."""
    if not profiled(record) or not record["profile"]["device"].get("kernels"):
        return None
    kernels = record["profile"]["device"]["kernels"]
    kernel_tflops = record["train_flops_per_image"] * record["batch_size"] / kernels / 1e12
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
    """What profiling added to a step: the profiled step against the timed epochs' median step
    of the same record (``profiled``, ``timed``, ``extra`` seconds, ``ratio``), and the least
    the host's dispatch can take without the profiler (``dispatch``, less ``extra``, if the
    profiler made no part faster: ``dispatch_at_least``). None without a profile, or where the
    profiled step was not longer."""
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
