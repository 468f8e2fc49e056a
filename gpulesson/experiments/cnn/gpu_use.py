"""What the devices did in episode 5's reference run (``ref_use_*``): each one's arithmetic rate
(an epoch's operations, validation included, over the median epoch) beside the card's peak, the
share of a GPU step a do-nothing model already takes (episode 9's ceiling), the CNN's dispatch
(episode 9's profile), and why the speed-up per epoch is not that of a whole training."""

from __future__ import annotations

import math

from gpulesson.experiments.ceiling import RECORDS as CEILING
from gpulesson.experiments.cnn.measure import RECORDS
from gpulesson.experiments.profile import page as profile
from gpulesson.machine import flops, gpu_peaks
from gpulesson.records import results
from gpulesson.records.results import NOT_RECORDED, duration, is_gpu
from gpulesson.records.summaries import times_text

CEILING_FILE, PROFILE_FILE = CEILING.results_file, profile.RESULTS_FILE
FULL_EPOCHS = 30  # "what would full training cost?" is answered for this many epochs
epoch_summary = RECORDS.epoch_summary
IN_MEMORY = ("arrays", "ram", "device")  # the ceiling's pipelines that read nothing per step
KEYS = tuple(f"ref_use_{key}" for key in (
    "flops_per_image", "forward_flops", "cpu_tflops", "gpu_tflops", "gpu_peak", "gpu_share",
    "evaluation", "gpu_step", "host_step", "host_share", "host_run", "full_speedup", "gpu_warmup",
    "gpu_warmup_share", "gpu_full", "host_profile"))


def steady_epoch_seconds(record: dict) -> float:
    """The median timed epoch (the mean that old records without an epoch list keep)."""
    summary = epoch_summary(record)
    return summary["median"] if summary else record["mean_epoch_seconds"]


def full_training_seconds(record: dict, epochs: int = FULL_EPOCHS, n_train: int = 50_000) -> float:
    """What ``epochs`` epochs on ``n_train`` images would take: the median epoch scaled by the
    images (so a quick run still gives an estimate), plus the first epoch's extra time once."""
    steady = steady_epoch_seconds(record)
    warm_up = max(0.0, record["first_epoch_seconds"] - steady)
    return warm_up + epochs * steady * (n_train / record["n_train"])


def epoch_flops(record: dict) -> int:
    """Training images forward and backward, validation images forward."""
    return (record["n_train"] * flops.training_flops_per_image()
            + (record.get("n_validation") or 0) * flops.cnn_forward_flops())


def achieved_tflops(record: dict) -> float:
    """The arithmetic rate of the median timed epoch, in TFLOP/s."""
    return flops.tflops(epoch_flops(record), 1, steady_epoch_seconds(record))


def do_nothing_step(gpu_record: dict, path=CEILING_FILE) -> dict | None:
    """The newest run's fastest in-memory step of the ceiling's do-nothing model on the same GPU
    model and backend: ``{"seconds", "pipeline", "run_id"}``, or None."""
    found = None
    for run in CEILING.runs(CEILING.visible(CEILING.read(path))).values():  # no old device rows
        same = [r for r in run if is_gpu(r) and r.get("device") == gpu_record.get("device")
                and r.get("backend") == gpu_record.get("backend") and r.get("pipeline") in IN_MEMORY]
        if same:
            best = max(same, key=lambda r: r["images_per_second"])
            found = {"seconds": best["batch_size"] / best["images_per_second"],
                     "pipeline": best["pipeline"], "run_id": best["run_id"]}
    return found


def host_profile_text(gpu_record: dict, path=PROFILE_FILE) -> str:
    """The CNN's dispatch in episode 9's profile on the same GPU model, with the profiler's
    overhead in it, and the least it takes without."""
    record = profile.find(profile.reference_run(path), "gpu") if path.is_file() else None
    found = profile.overhead(record) if record and record.get("device") == gpu_record.get("device") \
        else None
    if not found:
        return NOT_RECORDED
    return (f"Episode 9's profile of this CNN (run {record['run_id']}) counts "
            f"{duration(found['dispatch'])} of dispatch in a step, with the profiler's overhead "
            f"in it: a profiled step took {duration(found['profiled'])}, a step of the same run "
            f"without the profiler {duration(found['timed'])}, so the dispatch alone takes at "
            f"least {duration(found['dispatch_at_least'])} without it")


def substitutions(records, ceiling_path=CEILING_FILE, profile_path=PROFILE_FILE) -> dict[str, str]:
    values = dict.fromkeys(KEYS, NOT_RECORDED)
    if not records:
        return values
    cpu, gpu = results.pick(records, False), results.pick(records, True)
    values["ref_use_flops_per_image"] = f"{flops.training_flops_per_image() / 1e6:.0f} MFLOP"
    values["ref_use_forward_flops"] = f"{flops.cnn_forward_flops() / 1e6:.1f} MFLOP"
    for name, record in (("cpu", cpu), ("gpu", gpu)):
        rate = achieved_tflops(record) if record else None
        if rate:
            values[f"ref_use_{name}_tflops"] = f"{rate:.3g} TFLOP/s"
    first = (gpu or {}).get("evaluation_first_seconds")
    values["ref_use_evaluation"] = (
        f"The evaluation is timed on a second call. The first call, which compiles the step for "
        f"the test set's last, smaller batch, took {duration(first)} on the GPU." if first else
        "The evaluation is timed on a second call, after a first that compiled its steps."
        if (gpu or {}).get("evaluation_warmed") else
        "The evaluation is one call, timed once. It includes compiling the evaluation step for "
        "the test set's last, smaller batch, so its bars are not compared.")
    if not gpu:
        return values
    peaks = gpu_peaks.peaks_for(gpu["device"])
    if peaks:
        key = gpu_peaks.float32_key(gpu)
        share = gpu_peaks.share_of_peak(achieved_tflops(gpu), gpu["device"], key)
        values["ref_use_gpu_peak"] = (f"{peaks[key]:g} TFLOP/s in {key.upper()} "
                                      f"({gpu_peaks.SOURCES[gpu_peaks.card(gpu['device'])]})")
        values["ref_use_gpu_share"] = f"{100 * share:.1f} %"
    step = steady_epoch_seconds(gpu) / math.ceil(gpu["n_train"] / gpu["batch_size"])
    values["ref_use_gpu_step"] = duration(step) if step else NOT_RECORDED
    idle = do_nothing_step(gpu, ceiling_path)
    if idle:
        values["ref_use_host_step"] = duration(idle["seconds"])
        values["ref_use_host_share"] = f"{100 * idle['seconds'] / step:.0f} %"
        values["ref_use_host_run"] = idle["run_id"]
    values["ref_use_host_profile"] = host_profile_text(gpu, profile_path)
    if cpu and epoch_summary(cpu) and epoch_summary(gpu):
        whole = {r["device_kind"]: full_training_seconds(r, FULL_EPOCHS, r["n_train"]) for r in (cpu, gpu)}
        warm = max(0.0, gpu["first_epoch_seconds"] - steady_epoch_seconds(gpu))
        values["ref_use_full_speedup"] = times_text(whole["cpu"] / whole["gpu"])
        values["ref_use_gpu_warmup"] = duration(warm)
        values["ref_use_gpu_warmup_share"] = f"{100 * warm / whole['gpu']:.0f} %"
        values["ref_use_gpu_full"] = duration(whole["gpu"])
    return values
