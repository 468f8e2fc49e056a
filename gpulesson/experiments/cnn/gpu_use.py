"""Episode 5's values beyond the reference run's times, with the results files beside its own.
What the devices did (``ref_use_*``): each one's arithmetic rate beside the card's peak, the
share of a GPU step a do-nothing model already takes (episode 9's ceiling), the CNN's dispatch
(episode 9's profile), and why the speed-up per epoch is not that of a whole training. The
headline (``ref_head_*``): the speed-up's range over every run of the same two devices, the
CPU's rate beside episode 6's fastest float32 matrix product on that CPU (the baseline is the
framework's code, not the CPU's best), and the fastest run's median epoch there."""

import math
from pathlib import Path

from gpulesson.experiments.ceiling import RECORDS as CEILING
from gpulesson.experiments.cnn.measure import RECORDS
from gpulesson.experiments.feeding import measure as fm
from gpulesson.experiments.matmul import measure as matmul
from gpulesson.experiments.profile import RECORDS as PROFILE
from gpulesson.experiments.profile.page import overhead
from gpulesson.machine import flops, gpu_peaks
from gpulesson.machine.devices import BACKEND_TITLES
from gpulesson.records import pagewords, parts, summaries
from gpulesson.records.recordset import epochs_summary
from gpulesson.records.results import NOT_RECORDED, data_label, duration, is_gpu, pick
from gpulesson.records.summaries import fmt_number, times_text

FULL_EPOCHS = 30  # "what would full training cost?" is answered for this many epochs
epoch_summary = RECORDS.epoch_summary
IN_MEMORY = ("arrays", "ram", "device")  # the ceiling's pipelines that read nothing per step
PRECISION = {"tf32": "TF32", "float32": "float32"}  # float32_precision's modes, in words
KEYS = (*(f"ref_use_{key}" for key in (
    "flops_per_image", "forward_flops", "cpu_tflops", "gpu_tflops", "gpu_peak", "gpu_share",
    "evaluation", "gpu_step", "host_step", "host_share", "host_run", "full_speedup", "gpu_warmup",
    "gpu_warmup_share", "gpu_full", "host_profile")), *(f"ref_head_{key}" for key in (
    "speedups", "speedup_range", "gpu_epochs", "cpu_epochs", "compiler", "cpu_tflops",
    "cpu_matmul", "cpu_matmul_run", "cpu_share", "cpu_best")))


def steady_epoch_seconds(record: dict) -> float:
    return epoch_summary(record)["median"]


def full_training_seconds(record: dict, epochs: int = FULL_EPOCHS, n_train: int = 50_000) -> float:
    """What ``epochs`` epochs on ``n_train`` images would take: the median epoch scaled by the
    images (so a quick run still gives an estimate), plus the first epoch's extra time once."""
    steady = steady_epoch_seconds(record)
    warm_up = max(0.0, record["first_epoch_seconds"] - steady)
    return warm_up + epochs * steady * (n_train / record["n_train"])


def achieved_tflops(record: dict) -> float:
    """The arithmetic rate of the median timed epoch: training images forward and backward,
    validation images forward, in TFLOP/s."""
    operations = (record["n_train"] * flops.training_flops_per_image()
                  + (record.get("n_validation") or 0) * flops.cnn_forward_flops())
    return flops.tflops(operations, 1, steady_epoch_seconds(record))


def _machine(record: dict) -> tuple:
    """What must match for two records to be the same CPU: its model and usable cores."""
    return record.get("cpu_model"), record.get("cores_usable")


def _by_run(found: list[dict], key: str) -> str:
    """Each run's median epoch of one device, fastest first: "328 ms (c1e6b0), 521 ms (fc5e18)"."""
    ordered = sorted(found, key=lambda f: steady_epoch_seconds(f[key]))
    return ", ".join(f"{duration(steady_epoch_seconds(f[key]))} ({f['run']})" for f in ordered)


def cpu_matmul(cpu: dict, path) -> dict | None:
    """``{"summary", "n", "run"}`` of the fastest size of the newest float32 matrix-product
    sweep on the same CPU model and cores, or None."""
    best = None
    for run_id, group in matmul.RECORDS.runs_in(path).items():
        sweep = matmul.find(group, "cpu", "float32")
        if not sweep or _machine(sweep) != _machine(cpu):
            continue
        rates = [(s, p["n"]) for p in sweep["points"] if (s := matmul.rate_summary(p))]
        if rates:
            summary, n = max(rates, key=lambda item: item[0]["median"])
            best = {"summary": summary, "n": n, "run": run_id[-6:]}
    return best


def _compiler(record: dict) -> str:
    """What ran the CPU's arithmetic: XLA:CPU with JAX or with XLA on, else the framework."""
    if record.get("backend") == "jax" or record.get("jit_compile"):
        return f"XLA:CPU through {record['backend'].replace('jax', 'JAX')}"
    return f"{record['backend']} without XLA"


def _precision(record: dict) -> str:
    return PRECISION.get((record.get("float32_precision") or {}).get("matmul"), "float32")


def _headline(values: dict, cpu: dict, gpu: dict | None, path: Path) -> None:
    """The ``ref_head_*`` values of the reference's CPU (and GPU) record."""
    rate = achieved_tflops(cpu)
    values["ref_head_compiler"] = _compiler(cpu)
    # The fastest median epoch recorded on the reference's CPU, how and where, and whether it
    # is the only kind recorded there.
    candidates = [r for r in RECORDS.read(path) if not is_gpu(r) and _machine(r) == _machine(cpu)
                  and r.get("n_train") == cpu.get("n_train")]
    best = min(candidates, key=steady_epoch_seconds)
    only = (": the only framework and precision the lesson has recorded on this CPU"
            if len({(_compiler(r), _precision(r)) for r in candidates}) == 1 else "")
    values["ref_head_cpu_best"] = (f"{duration(steady_epoch_seconds(best))}, with {_compiler(best)} "
                                   f"in {_precision(best)} (run {best['run_id'][-6:]}){only}")
    values["ref_head_cpu_tflops"] = f"{rate:.2g} TFLOP/s"
    found = cpu_matmul(cpu, path.with_name(matmul.RECORDS.results_file.name))
    if found:
        peak = found["summary"]["median"] / 1e3
        values["ref_head_cpu_matmul"] = f"{peak:.2f} TFLOP/s (n = {found['n']:,})"
        values["ref_head_cpu_matmul_run"] = found["run"]
        values["ref_head_cpu_share"] = f"{100 * rate / peak:.0f} %"
    # The runs on the reference's GPU model, CPU and backend, in file order.
    found = [{"run": run_id[-6:], "cpu": c, "gpu": g,
              "speedup": steady_epoch_seconds(c) / steady_epoch_seconds(g)}
             for run_id, group in RECORDS.runs_in(path).items()
             if gpu and (c := pick(group, False)) and (g := pick(group, True))
             and g.get("device") == gpu.get("device") and _machine(c) == _machine(cpu)
             and c.get("backend") == cpu.get("backend")]
    if found:
        ratios = sorted(f["speedup"] for f in found)
        values["ref_head_speedup_range"] = (f"{ratios[0]:.0f}× to {ratios[-1]:.0f}×"
                                            if len(ratios) > 1 else f"{ratios[0]:.0f}×")
        values["ref_head_speedups"] = ", ".join(f"{f['speedup']:.0f}× ({f['run']})"
                                                for f in sorted(found, key=lambda f: f["speedup"]))
        values["ref_head_gpu_epochs"] = _by_run(found, "gpu")
        values["ref_head_cpu_epochs"] = _by_run(found, "cpu")


def substitutions(records, path) -> dict[str, str]:
    """The ``ref_use_*`` and ``ref_head_*`` values of the reference run ``records`` of the
    results file ``path``, the other episodes' records read beside it."""
    values = {**dict.fromkeys(KEYS, NOT_RECORDED), "ref_use_feeding": feeding_note(path)}
    if not records:
        return values
    path = Path(path)
    cpu, gpu = pick(records, False), pick(records, True)
    values["ref_use_flops_per_image"] = f"{flops.training_flops_per_image() / 1e6:.0f} MFLOP"
    values["ref_use_forward_flops"] = f"{flops.cnn_forward_flops() / 1e6:.1f} MFLOP"
    for name, record in (("cpu", cpu), ("gpu", gpu)):
        if record:
            values[f"ref_use_{name}_tflops"] = f"{achieved_tflops(record):.3g} TFLOP/s"
    if cpu:
        _headline(values, cpu, gpu, path)
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
        values["ref_use_gpu_peak"] = (f"{peaks[key]:g} TFLOP/s in {key.upper()} "
                                      f"({gpu_peaks.SOURCES[gpu_peaks.card(gpu['device'])]})")
        values["ref_use_gpu_share"] = f"{100 * achieved_tflops(gpu) / peaks[key]:.1f} %"
    step = steady_epoch_seconds(gpu) / math.ceil(gpu["n_train"] / gpu["batch_size"])
    values["ref_use_gpu_step"] = duration(step)
    # The newest run's fastest in-memory step of the ceiling's do-nothing model on the same GPU
    # model and backend (no old device rows: visible).
    ceiling = CEILING.runs(CEILING.visible(CEILING.read(path.with_name(CEILING.results_file.name))))
    same = [kept for run in ceiling.values() if (kept := [
        r for r in run if is_gpu(r) and r.get("device") == gpu.get("device")
        and r.get("backend") == gpu.get("backend") and r.get("pipeline") in IN_MEMORY])]
    if same:
        idle = max(same[-1], key=lambda r: r["images_per_second"])
        seconds = idle["batch_size"] / idle["images_per_second"]
        values["ref_use_host_step"] = duration(seconds)
        values["ref_use_host_share"] = f"{100 * seconds / step:.0f} %"
        values["ref_use_host_run"] = idle["run_id"]
    # The CNN's dispatch in the newest profile on the same GPU model that read its batches as
    # this run did (records from before read-ahead have no field), with the profiler's overhead.
    ahead = bool(gpu.get("read_ahead"))
    record = next((r for r in reversed(PROFILE.read(path.with_name(PROFILE.results_file.name)))
                   if is_gpu(r) and r.get("device") == gpu.get("device")
                   and bool(r.get("read_ahead")) == ahead), None)
    found = overhead(record) if record else None
    if found:
        values["ref_use_host_profile"] = (
            f"Episode 9's profile of this CNN (run {record['run_id']}) reads its batches "
            f"{'ahead' if ahead else 'without reading ahead'}, as this run does, and trains without "
            f"the validation that this run's step of {duration(step)} includes. It counts "
            f"{duration(found['dispatch'])} of dispatch in a step, with the profiler's overhead "
            f"in it: a profiled step took {duration(found['profiled'])}, a step of the same run "
            f"without the profiler {duration(found['timed'])}, so the dispatch alone takes at "
            f"least {duration(found['dispatch_at_least'])} without it")
    if cpu:
        whole = {r["device_kind"]: full_training_seconds(r, FULL_EPOCHS, r["n_train"]) for r in (cpu, gpu)}
        warm = max(0.0, gpu["first_epoch_seconds"] - steady_epoch_seconds(gpu))
        values["ref_use_full_speedup"] = times_text(whole["cpu"] / whole["gpu"])
        values["ref_use_gpu_warmup"] = duration(warm)
        values["ref_use_gpu_warmup_share"] = f"{100 * warm / whole['gpu']:.0f} %"
        values["ref_use_gpu_full"] = duration(whole["gpu"])
    return values


def feeding_note(path) -> str:
    """Episode 5's run on the GPU, backend and batch of episode 9's ``lesson`` pipeline beside it,
    in the rule's words (``ref_use_feeding``, on episode 9's page); ``path``: episode 5's file."""
    path = Path(path)
    lesson = fm.find(fm.RECORDS.reference_run(path.with_name(fm.RECORDS.results_file.name)),
                     "gpu", "lesson")
    if not lesson:
        return ""
    theirs = next((r for r in RECORDS.newest_run(path) if r.get("device_kind") == "gpu"
                   and (r.get("gpu") or {}).get("name") == (lesson.get("gpu") or {}).get("name")
                   and r.get("backend") == lesson.get("backend")
                   and r.get("batch_size") == lesson.get("batch_size")), None)
    summary = RECORDS.epoch_summary(theirs)
    if not summary:
        return ""
    rate, ours = summaries.as_rate(summary, theirs["n_train"]), fm.rate_summary(lesson)
    said = summaries.compare_middle(rate, ours, higher_is_better=True)
    same = parts.machine([theirs]) == parts.machine([lesson])
    data = "" if data_label([theirs]) == data_label([lesson]) else f" on the {data_label([theirs])}"
    measured = (f"Episode 5's run of the same model and generator "
                f"{'on the same hardware' if same else f'on {parts.machine([theirs])}'}{data} "
                f"({BACKEND_TITLES.get(theirs['backend'], theirs['backend'])}, batch "
                f"{theirs['batch_size']}, run {theirs['run_id']}) measured "
                f"{fmt_number(rate['median'])} images/s (epochs of {theirs['n_train']:,} images, "
                f"median {duration(summary['median'])})")
    if not said.measurable:
        return f"{measured}: {summaries.NO_DIFFERENCE} from `lesson` here ({fm.why_unclear(rate, ours)})."
    known = ["This run's `fit` reordered the generator's batches, episode 5's did not"] * (
        pagewords.reordered_by_fit(lesson))
    if passes := theirs.get("validation_seconds"):  # timed apart once the clock waited for it
        timed = (f" (median {duration(epochs_summary(passes)['median'])})"
                 if theirs.get("validation_synchronised") else "")
        known.append(f"Only episode 5's epochs include a validation pass{timed}")
    cause = (" ".join(f"{k}." for k in known)
             or "Both kept the generator's order; no other difference in method is known.")
    # The comparison's words give its size only from a certain size on; else say it here.
    factor = max(said.ratio, 1 / said.ratio)
    by = "" if said.text != f"{said.word} than" else f", by a factor of {factor:.2g}"
    return f"{measured}: {said.text} `lesson` here{by} ({fm.basis(rate, ours)} apart). {cause}"
