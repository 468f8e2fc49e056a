"""The ladder on the page: episode 9's ``ref_ladder_*`` values and the command's table, from the
ladder's newest run, the profile's GPU record (the kernels-only row) and the card's published
peak (the FLOP floor); without GPU records the GPU values say
:data:`~gpulesson.records.results.NOT_RECORDED`, so that the page shows the command that records them."""

from __future__ import annotations

import math
from pathlib import Path

from gpulesson.experiments.common import markdown_table, summary_text
from gpulesson.experiments.energy import energy_summary
from gpulesson.experiments.ladder import records as lr
from gpulesson.experiments.ladder.figures import alt_text
from gpulesson.experiments.pagewords import met
from gpulesson.machine import flops, gpu_peaks
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software

COMMAND = "KERAS_BACKEND=jax python -m gpulesson.experiments.ladder"
PROFILE_FILE = lr.RESULTS_FILE.with_name("profile.jsonl")


def _limit_ratio(records, name: str) -> str:
    limit = lr.limit_for(records, name)
    if not limit:
        return "no limit at its batch and precision"
    return f"{lr.summary(records, name)['median'] / lr.summary(records, limit)['median']:.2f}x"


def _to_target(records, name: str, target: float | None) -> str:
    if target is None:
        return NOT_RECORDED
    first = lr.starts(records, name)[0]
    reached = lr.time_to(first, target)
    cold = "" if first["cache"]["files_added"] else " (compiled programs from the cache)"
    return (duration(reached) + cold if reached is not None else
            f"not reached in {len(first['epoch_seconds'])} epochs")


def _joules(record: dict) -> str:
    found = energy_summary(record)
    if found:
        return f"{found['median']:.3g}"
    energy = record.get("energy") or {}
    return "below the meter's resolution" if energy.get("below_resolution") else "not measured"


def _mean(records, name: str, key: str, fmt: str) -> str:
    value = lr.mean_of(records, name, key)
    return "not measured" if value is None else format(value, fmt)


def rows(records) -> list[list[str]]:
    target = lr.target_accuracy(records)
    found = []
    for name in lr.ORDER:
        runs = lr.starts(records, name)
        if not runs:
            continue
        label = f"`{name}`" + (" (pre-release)" if lr.RUNGS[name]["part"] == "nightly" else
                               " (a loop of steps: XLA:CPU)" if runs[0].get("limit_method") == "loop"
                               else "")
        found.append([
            label, summary_text(lr.summary(records, name), duration, what="epochs")
            + f", {len(runs)} starts",
            _mean(records, name, "achieved_tflops", ".3g"), _limit_ratio(records, name),
            _mean(records, name, "busy_percent", ".0f"), _mean(records, name, "mean_watts", ".0f"),
            _joules(runs[0]), _mean(records, name, "test_accuracy", ".3f"),
            _to_target(records, name, target)])
    return found


def table(records) -> str:
    head = ["Rung", "Epoch: median (range)", "TFLOP/s (whole epoch)", "x the limit", "Busy %",
            "Watts", "Joules an epoch (start 1)", "Test accuracy", "To the default's accuracy"]
    return markdown_table(head, rows(records))


def rungs_text() -> str:
    """What each rung removes, as a list; the combinations in one item."""
    said = [f"- `{name}` removes {lr.RUNGS[name]['removes']}." for name in ("taught", "read-ahead",
                                                                         "ram", "device")]
    said.append(f"- `device+...` and `read-ahead+...` add every combination of `bf16`, `spe` "
                f"({lr.SPE} steps a call) and `batch` ({lr.LARGE_FACTOR}× the batch).")
    said.append(f"- `grain` removes {lr.RUNGS['grain']['removes']}; `grain+bf16+spe+batch` "
                "reads so at those settings, and `ram+bf16+spe+batch` feeds them from RAM.")
    scans = [name for name in lr.ORDER if lr.RUNGS[name]["part"] == "nightly"]
    said.append(" and ".join(f"`{name}`" for name in scans).join(("- ", " remove "))
                + lr.RUNGS[scans[0]]["removes"] + ".")
    said += [f"- `{name}` removes {lr.RUNGS[name]['removes']}." for name in lr.rungs_of("limit")]
    return "\n".join(said)


def computed_text(profile_path=PROFILE_FILE, n_images: int = 45_000) -> str:
    """The two rows computed, not measured: the profile's kernels alone over an epoch's steps,
    and the FLOP floor (an epoch's arithmetic at the card's published peak)."""
    from gpulesson.experiments.profile.records import find, gpu_name, profiled
    from gpulesson.experiments.profile.records import reference_run as profile_run

    gpu = find(profile_run(profile_path), "gpu") if Path(profile_path).is_file() else None
    if not profiled(gpu):
        return NOT_RECORDED
    found, steps = gpu["profile"], math.ceil(n_images / gpu["batch_size"])
    kernels = found["device"]["kernels"]
    peaks = gpu_peaks.peaks_for(gpu_name(gpu))
    work = flops.training_flops_per_image() * n_images
    key = gpu_peaks.float32_key(gpu)
    said = [f"Computed, not measured, from the profile (run {gpu['run_id']}, batch "
            f"{gpu['batch_size']}): the kernels alone would take {duration(kernels * steps)} an "
            f"epoch ({duration(kernels)} a step, {steps} steps)."]
    if peaks:
        floor = {p: work / (peaks[p] * 1e12) for p in (key, "bf16")}
        said.append(f"The FLOP floor, an epoch's arithmetic at the published peak, is "
                    f"{duration(floor[key])} in {key.upper()} and {duration(floor['bf16'])} in "
                    "BF16.")
    return " ".join(said)


def goals_text(records) -> str:
    found = lr.goals(records)
    if not found:
        return (f"Its goals, not yet recorded: the best rung of released Keras from the HDF5 "
                f"stream within {lr.RATIO_GOAL}x of the plain-JAX limit at its batch and "
                "precision, and the default's test accuracy sooner than the default, compiling "
                "included.")
    ratio = ("not yet recorded (no limit at its batch and precision: "
             f"`{COMMAND} --part limit`)" if found["ratio"] is None else
             f"{found['ratio']:.2f}x: {met(found['ratio_met'])}")
    mine = (duration(found["time"]) if found["time"] is not None else "not reached in its epochs")
    return (f"The best rung of released Keras from the HDF5 stream is `{found['rung']}`. Within "
            f"{lr.RATIO_GOAL}x of the plain-JAX limit at the same batch and precision: {ratio}. "
            f"The default's test accuracy ({found['target']:.3f}) sooner than the default, "
            f"compiling included: {mine} against {duration(found['default_time'])}: "
            f"{met(found['time_met'])}. " + ram_goals_text(records))


def ram_goals_text(records) -> str:
    said = []
    for goal in lr.ram_goals(records):
        if goal["share"] is None:
            said.append(f"The stream against `{goal['ram']}`: not yet recorded.")
            continue
        ranges = "; their epochs' ranges overlap" if goal["overlap"] else ""
        said.append(f"`{goal['rung']}` against `{goal['ram']}`: {goal['share']:.2f}x as fast as "
                    f"from RAM{ranges} (goal {lr.RAM_GOAL}x: {met(goal['met'])}).")
    return " ".join(said) or (f"The stream at least {lr.RAM_GOAL}x as fast as the same settings "
                              "fed from RAM: not yet recorded.")


def cache_text(records) -> str:
    """What the persistent compilation cache did to the default's first epoch."""
    runs = lr.starts(records, "taught")
    if len(runs) < 2:
        return NOT_RECORDED
    first, second = (r["epoch_seconds"][0] for r in runs[:2])
    return (f"The default's first epoch took {duration(first)} with an empty compilation cache "
            f"and {duration(second)} with the first start's; a later epoch "
            f"{duration(lr.summary(records, 'taught')['median'])}.")


def best_gpu_text(records) -> str:
    """Episode 5's sentence on the GPU's best rung beside its default."""
    best, gpu = lr.best_stream(records), [r for r in records if r["device_kind"] == "gpu"]
    if not best or not gpu:
        return NOT_RECORDED
    mine, default = (lr.summary(records, n)["median"] for n in (best, "taught"))
    return (f"the ladder's best rung from the HDF5 stream, `{best}`, trains an epoch in "
            f"{duration(mine)} against the default's {duration(default)} on the "
            f"{hardware(gpu)['GPU']} (episode 9, run {gpu[0]['run_id']})")


def describe(records) -> str:
    if not records:
        return "No records of the ladder."
    return "\n".join([f"The ladder, run {records[0]['run_id']} ({software(records)}):",
                      table(records), goals_text(records)])


def substitutions(path=lr.RESULTS_FILE) -> dict[str, str]:
    """Episode 9's ``ref_ladder_*`` values (and episode 5's ``ref_ladder_best_gpu``)."""
    gpu = [r for r in lr.reference_run(path) if r["device_kind"] == "gpu"]
    return {
        "ref_ladder_gpu": hardware(gpu)["GPU"] if gpu else NOT_RECORDED,
        "ref_ladder_when": f"run {gpu[0]['run_id']}, {software(gpu)}" if gpu else NOT_RECORDED,
        "ref_ladder_table": table(gpu) if gpu else NOT_RECORDED,
        "ref_ladder_goals": goals_text(gpu),
        "ref_ladder_cache": cache_text(gpu) if gpu else NOT_RECORDED,
        "ref_ladder_alt": alt_text(gpu),
        "ref_ladder_rungs": rungs_text(),
        "ref_ladder_computed": computed_text(Path(path).with_name(PROFILE_FILE.name)),
        "ref_ladder_best_gpu": best_gpu_text(gpu),
    }
