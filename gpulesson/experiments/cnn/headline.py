"""Episode 5's headline (``ref_head_*``): the speed-up as the range over every recorded run of
the same two devices, the CPU's training rate beside the fastest float32 matrix product
episode 6 recorded on that CPU (the baseline is the framework's code, not the CPU's best), and
the fastest epoch any run recorded there."""

from __future__ import annotations

from gpulesson.experiments import matmul as matmul_records
from gpulesson.experiments.cnn.gpu_use import achieved_tflops, epoch_summary, steady_epoch_seconds
from gpulesson.experiments.cnn.measure import RECORDS
from gpulesson.records.results import NOT_RECORDED, duration, is_gpu, pick

KEYS = tuple(f"ref_head_{key}" for key in (
    "speedups", "speedup_range", "gpu_epochs", "cpu_epochs", "compiler", "cpu_tflops",
    "cpu_matmul", "cpu_matmul_run", "cpu_share", "cpu_best"))
RESULTS_FILE, MATMUL_FILE = RECORDS.results_file, matmul_records.RESULTS_FILE
PRECISION = {"tf32": "TF32", "float32": "float32"}  # float32_precision's modes, in words


def _machine(record: dict) -> tuple:
    """What must match for two records to be the same CPU: its model and usable cores."""
    return record.get("cpu_model"), record.get("cores_usable")


def _trained(record: dict) -> bool:
    """A training record with timed epochs (not a prediction's record of the same run)."""
    return bool(record.get("n_train")) and epoch_summary(record) is not None


def same_runs(reference: list[dict], path=RESULTS_FILE) -> list[dict]:
    """``[{"run", "cpu", "gpu", "speedup"}]``, in file order, of the runs on the reference's
    GPU model, CPU and backend."""
    cpu, gpu = pick(reference, False), pick(reference, True)
    if not (cpu and gpu):
        return []
    found = []
    for run_id, group in RECORDS.runs_in(path).items():
        trained = [r for r in group if _trained(r)]
        c, g = pick(trained, False), pick(trained, True)
        if (c and g and g.get("device") == gpu.get("device") and _machine(c) == _machine(cpu)
                and c.get("backend") == cpu.get("backend")):
            found.append({"run": run_id[-6:], "cpu": c, "gpu": g,
                          "speedup": steady_epoch_seconds(c) / steady_epoch_seconds(g)})
    return found


def _by_run(found: list[dict], key: str) -> str:
    """Each run's median epoch of one device, fastest first: "328 ms (c1e6b0), 521 ms (fc5e18)"."""
    ordered = sorted(found, key=lambda f: steady_epoch_seconds(f[key]))
    return ", ".join(f"{duration(steady_epoch_seconds(f[key]))} ({f['run']})" for f in ordered)


def cpu_matmul(cpu: dict, path=MATMUL_FILE) -> dict | None:
    """``{"summary", "n", "run"}`` of the fastest size of the newest float32 matrix-product
    sweep on the same CPU model and cores, or None."""
    best = None
    for run_id, group in matmul_records.RECORDS.runs_in(path).items():
        sweep = matmul_records.find(group, "cpu", "float32")
        if not sweep or _machine(sweep) != _machine(cpu):
            continue
        rates = [(matmul_records.rate_summary(p), p["n"]) for p in sweep["points"]]
        rates = [(s, n) for s, n in rates if s]
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


def cpu_best(cpu: dict, path=RESULTS_FILE) -> str:
    """The fastest median epoch recorded on the reference's CPU, how and where, and whether it
    is the only kind recorded there."""
    candidates = [r for r in RECORDS.read(path)
                  if not is_gpu(r) and _trained(r) and _machine(r) == _machine(cpu)
                  and r.get("n_train") == cpu.get("n_train")]
    best = min(candidates, key=steady_epoch_seconds)
    kinds = {(_compiler(r), _precision(r)) for r in candidates}
    only = (": the only framework and precision the lesson has recorded on this CPU"
            if len(kinds) == 1 else "")
    return (f"{duration(steady_epoch_seconds(best))}, with {_compiler(best)} in "
            f"{_precision(best)} (run {best['run_id'][-6:]}){only}")


def substitutions(reference: list[dict], path=RESULTS_FILE, matmul_path=MATMUL_FILE) -> dict[str, str]:
    values = dict.fromkeys(KEYS, NOT_RECORDED)
    cpu = pick(reference, False)
    if not cpu or not _trained(cpu):
        return values
    values["ref_head_compiler"] = _compiler(cpu)
    values["ref_head_cpu_best"] = cpu_best(cpu, path)
    rate = achieved_tflops(cpu)
    values["ref_head_cpu_tflops"] = f"{rate:.2g} TFLOP/s"
    matmul = cpu_matmul(cpu, matmul_path)
    if matmul:
        peak = matmul["summary"]["median"] / 1e3
        values["ref_head_cpu_matmul"] = f"{peak:.2f} TFLOP/s (n = {matmul['n']:,})"
        values["ref_head_cpu_matmul_run"] = matmul["run"]
        values["ref_head_cpu_share"] = f"{100 * rate / peak:.0f} %"
    found = same_runs(reference, path)
    if found:
        ratios = sorted(f["speedup"] for f in found)
        values["ref_head_speedup_range"] = (f"{ratios[0]:.0f}× to {ratios[-1]:.0f}×"
                                            if len(ratios) > 1 else f"{ratios[0]:.0f}×")
        values["ref_head_speedups"] = ", ".join(f"{f['speedup']:.0f}× ({f['run']})"
                                                for f in sorted(found, key=lambda f: f["speedup"]))
        values["ref_head_gpu_epochs"] = _by_run(found, "gpu")
        values["ref_head_cpu_epochs"] = _by_run(found, "cpu")
    return values
