"""Record the lesson's reference run in stages, each bounded in time and able to go on.

    python tools/reference.py --list                      # the stages, their steps and estimates
    LESSON_DATA=synthetic python tools/reference.py core   # one stage (or several, in order)
    LESSON_DATA=synthetic python tools/reference.py all    # every stage, as `make reference`
    LESSON_DATA=synthetic python tools/reference.py budget --deadline 480 --out DIR
                                                           # what the run lacks, by a deadline
                                                           # (tools/budget.py), packed into DIR

A stage is a few steps: an experiment's command, the figures and notebooks, one notebook's
recorded run, the final pack. Each stage stops itself at ``--time-limit`` seconds (default 480,
so that it fits a 10-minute job step with room to start): the step in progress is stopped and
what the finished steps and conditions recorded stays. Run the same stage again to go on: each
experiment is given the run id it had (``--run-id``) and skips the conditions that run already
has, finished steps are skipped, so nothing is recorded twice. ``--fresh`` starts a stage anew.
A run ends with its pack: after it, the next stage starts a new run.
``REFERENCE_ARGS_<EXPERIMENT>`` adds arguments to one experiment's command (e.g.
``REFERENCE_ARGS_FEEDING="--pipelines lesson classic"``).

The state of each stage lives in ``_build/reference/state.json``, the log of each stage in
``_build/reference/STAGE.log``. The last stage, ``pack``, redraws the figures, refills the
notebooks and packs ``results/``, ``fig/``, ``notebooks/`` and ``executed/`` into one archive,
``_build/reference/reference-run.tar.gz`` (at most :data:`PACK_LIMIT` bytes), so that a run's
whole output can be carried back as one file.

It runs with the Python that runs it and installs nothing: on a machine without the lesson's
environment (a cluster's GPU node), run it with a Python that has the packages; a missing one
is named, with how to add it, before anything runs.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import io
import json
import os
import shlex
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the lesson's package, wherever this Python is
    sys.path.insert(0, str(ROOT))

from steprun import StopRequested, run_step, stop_on_signals  # noqa: E402

from gpulesson.preflight import MissingPackage, require  # noqa: E402

STATE_DIR = ROOT / "_build" / "reference"
TIME_LIMIT = 480.0  # seconds a stage may take: a 10-minute job step, less its start-up
PACK_LIMIT = 12 * 2**20  # bytes of the packed run: under a 16 MiB file limit, with room
PACKED = ("results", "fig", "notebooks", "executed")
MODULE = "gpulesson.experiments."
_say = functools.partial(print, flush=True)


GPU_FIRST = ("--devices", "gpu", "cpu")  # the GPU first: the scarce measurement


@dataclass
class Step:
    """One thing a stage does: ``argv`` after this Python (``None`` for the pack), what it
    needs installed, and how it runs.

    ``resumable``: it takes ``--run-id``; steps with the same ``run`` (default: the name)
    share one run, also across stages, so that one experiment recorded in two steps is one
    run. ``with_gpu``: arguments added where a GPU is present. ``gpu_only``: skipped, with a
    note, where none is."""

    name: str
    argv: list[str] | None
    needs: tuple[str, ...] = ()
    resumable: bool = False
    run: str | None = None
    with_gpu: tuple[str, ...] = ()
    gpu_only: bool = False
    quick_option: bool = False  # takes --quick (a recorded notebook refuses LESSON_QUICK alone)
    env: tuple[tuple[str, str], ...] = ()  # environment it needs, unless already set

    @property
    def run_key(self) -> str:
        return self.run or self.name


@dataclass
class Stage:
    name: str
    what: str
    # Full size, one H100 and 16 cores, CPU-side costs only: tools/budget.py's PLAN estimates the
    # same steps one by one, with their basis (core, small-models and ceiling from there).
    estimate: str
    steps: list[Step] = field(default_factory=list)


# PyTorch's CPU threads spin while they wait for work (OpenMP's default): on a machine that is
# busy with anything else a step took 169 ms against 26 ms with passive waits.
TORCH_ENV = (("OMP_WAIT_POLICY", "PASSIVE"),)
KERAS = ("keras", "numpy", "h5py", "matplotlib", "tqdm")
NOTEBOOK = (*KERAS, "nbclient", "nbformat", "ipykernel", "jupytext")
FIGURES = ("matplotlib", "numpy")


def _experiment(name: str, *args: str, needs=KERAS, with_gpu=GPU_FIRST, step: str | None = None,
                gpu_only: bool = False, env=()) -> Step:
    return Step(step or name, ["-m", MODULE + name, *args], needs, resumable=True, run=name,
                with_gpu=with_gpu, gpu_only=gpu_only, env=env)


def _notebooks(*numbers: str) -> list[Step]:
    return [Step(f"notebook {n}", ["tools/record_run.py", "--only", n], NOTEBOOK, quick_option=True)
            for n in numbers]


REFRESH = [Step("figures", ["tools/reference.py", "--figures"], FIGURES),
           Step("notebooks", ["tools/make_notebooks.py"], ("jupytext", "nbformat"))]
# Three stages of notebooks. Full size on this lesson's 2-core machine (no GPU, TensorFlow) they
# took, by the wall times executed/*.ipynb record: 01-06 478 s (05 alone 363 s), 07, 08 and 10
# 389 s (07 alone 318 s), 09 290 s; notebooks-1 is at the default time limit there, so such a
# machine records them with --time-limit 0.
# CPU epochs of the feeding benchmark are capped so that five repeats of every pipeline fit
# (gpulesson.experiments.feeding.measure.REFERENCE_CPU_STEPS says how it was chosen).
FEEDING_CPU_STEPS = "12"
# Beside a GPU, the CPU's side of the comparison: the pipelines episode 9 sets against the GPU's
# (the slow classic one, the lesson's, gzip's and data in memory).
FEEDING_CPU_WITH_GPU = ("--pipelines", "classic", "lesson", "lesson-gzip", "ram")
NOTEBOOKS_1 = ("01", "03", "04", "05", "06")
NOTEBOOKS_2 = ("07", "08", "10")
NOTEBOOKS_3 = ("09",)

# Episode 10's PyTorch route on the node's GPUs: one process per GPU under torchrun, NCCL. A
# check that it runs, not a measurement: it records nothing (its files stay out of the pack).
DDP_CHECK = Step("DDP on the GPUs (NCCL)",
                 ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=gpu",
                  "-m", MODULE + "torch_ddp", "--device", "gpu", "--epochs", "2",
                  "--out-dir", str(STATE_DIR.relative_to(ROOT) / "torch-ddp")],
                 ("torch", "numpy"), gpu_only=True, env=TORCH_ENV)

STAGES = {stage.name: stage for stage in (
    Stage("core", "episode 5's CNN, episode 6's matrix multiplication, episode 8's PyTorch",
          "3-5 min", [
              _experiment("cnn"),
              _experiment("matmul"),
              _experiment("torch_reference", needs=("torch", "torchvision", "numpy", "h5py"),
                          env=TORCH_ENV),
              DDP_CHECK,
          ]),
    Stage("small-models", "episode 7's small MLP and its sweep", "3-5 min",
          [_experiment("small_models", needs=(*KERAS, "sklearn"))]),
    # Episode 9's pipelines in two stages of one run: the GPU's full epochs, then the CPU's epochs
    # capped (the settings are the speed ladder's). The classic pipeline is capped everywhere: it
    # reads a few hundred images a second, so a full epoch of it would take minutes on any device.
    Stage("feeding-gpu", "episode 9's input pipelines on the GPU (nothing without one)",
          "about 3 min", [_experiment("feeding", "--devices", "gpu", "--chunks",
                                      "--classic-max-steps", FEEDING_CPU_STEPS, with_gpu=(),
                                      gpu_only=True, step="pipelines on the GPU")]),
    Stage("feeding-cpu", f"episode 9's input pipelines on the CPU, {FEEDING_CPU_STEPS} steps an "
          "epoch", "about 2 min",
          [_experiment("feeding", "--devices", "cpu", "--cpu-max-steps", FEEDING_CPU_STEPS,
                       "--classic-max-steps", FEEDING_CPU_STEPS, with_gpu=FEEDING_CPU_WITH_GPU,
                       step="pipelines on the CPU")]),
    Stage("ceiling", "episode 9's ceiling of fit, one process per installed backend", "3-5 min",
          [_experiment("ceiling")]),
    Stage("workers", "episode 9's Grain worker processes, JAX and PyTorch (beside a GPU: JAX, "
          "training on the GPU)", "about 5 min",
          [_experiment("workers", needs=(*KERAS, "grain"),
                       with_gpu=("--backends", "jax", "--devices", "gpu"))]),
    Stage("contention", "episode 5's CPU epochs on a shared node (CPU only: not part of a GPU "
          "node's run)", "CPU only", [_experiment("contention", with_gpu=())]),
    Stage("notebooks-1", "figures and notebooks refilled, then episodes 1 and 3 to 6 recorded",
          "about 3 min", [*REFRESH, *_notebooks(*NOTEBOOKS_1)]),
    Stage("notebooks-2", "episodes 7, 8 and 10 recorded", "about 3 min", _notebooks(*NOTEBOOKS_2)),
    Stage("notebooks-3", "episode 9 recorded", "about 2 min", _notebooks(*NOTEBOOKS_3)),
    Stage("pack", "figures and notebooks refilled, everything packed into one archive",
          "under 1 min", [*REFRESH, Step("pack", None)]),
)}
# What a GPU node records: all but the CPU-only contention experiment.
GPU_NODE = ("core", "small-models", "feeding-gpu", "feeding-cpu", "ceiling",
            "workers", "notebooks-1", "notebooks-2", "notebooks-3", "pack")


def expand(name: str) -> list[str]:
    """A stage's name, or an alias: 'all', 'gpu-node', 'auto' (a GPU node's stages where the
    driver shows a GPU, else all)."""
    if name == "auto":
        name = "gpu-node" if gpu_present() else "all"
    return {"all": list(STAGES), "gpu-node": list(GPU_NODE)}.get(name, [name])


def check_data_chosen() -> None:
    """A reference run records one data set, chosen on purpose: never a default."""
    from gpulesson.errors import SettingsError
    from gpulesson.settings import explicit_data

    try:
        explicit_data(os.environ.get("LESSON_DATA", ""))
    except SettingsError as exc:
        raise StageStopped(f"{exc}; e.g. LESSON_DATA=synthetic python tools/reference.py core") from None


class StageStopped(RuntimeError):
    """A step failed or the stage reached its time limit; the message says what to do."""


def gpu_present() -> bool:
    """An NVIDIA GPU on this machine, asked of the driver, not of a framework (seconds, not
    the minute a framework may take to start)."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def load_state(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise StageStopped(f"{path} is damaged ({exc}): delete it to start every stage anew") from None


def save_state(path: Path, state: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(state, indent=1) + "\n", encoding="utf-8")
    partial.replace(path)  # a reader never sees half a state


def extra_arguments(step: Step, environ=os.environ) -> list[str]:
    """Arguments added to an experiment's command from ``REFERENCE_ARGS_<RUN>`` (e.g.
    ``REFERENCE_ARGS_FEEDING="--pipelines lesson classic"``): fewer conditions on a node shared
    with others, or a rehearsal that must be short. The records say what was measured."""
    return shlex.split(environ.get(f"REFERENCE_ARGS_{step.run_key.upper()}", "")) \
        if step.resumable else []


def command(step: Step, run_id: str | None, gpu: bool, python: str = sys.executable) -> list[str]:
    argv = [python, *step.argv, *extra_arguments(step)]
    if step.resumable and run_id:
        argv += ["--run-id", run_id]
    if gpu:
        argv += step.with_gpu
    if step.quick_option and quick_mode():
        argv.append("--quick")
    return argv


def quick_mode() -> bool:
    """LESSON_QUICK as the lesson reads it: a rehearsal at tiny sizes, labelled quick."""
    from gpulesson.settings import parse_bool

    return parse_bool("LESSON_QUICK", os.environ.get("LESSON_QUICK", ""))


def run_stage(stage: Stage, *, time_limit: float, state_file: Path, fresh: bool = False,
              gpu: bool | None = None, say=_say) -> None:
    """Run the steps of ``stage`` that it has not finished, within ``time_limit`` seconds."""
    state = load_state(state_file)
    runs = state.setdefault("runs", {})  # run key -> run id, shared by the stages
    if fresh:
        state.setdefault("stages", {}).pop(stage.name, None)
        for step in stage.steps:
            runs.pop(step.run_key, None)
    mine = state.setdefault("stages", {}).setdefault(stage.name, {"done": []})
    gpu = gpu_present() if gpu is None else gpu
    todo = [step for step in stage.steps if step.name not in mine["done"]]
    # A GPU-only step is never marked done without a GPU: a state carried to a GPU node runs it.
    waiting = [step.name for step in todo if step.gpu_only and not gpu]
    if len(waiting) == len(todo):
        left = f"; left for a machine with a GPU: {', '.join(waiting)}" if waiting else ""
        say(f"Stage {stage.name}: already done (all of "
            f"{', '.join(s.name for s in stage.steps if s.name not in waiting)}){left}; "
            "--fresh records it anew.")
        return
    for step in todo:
        require(step.needs, what=f"stage {stage.name} ({step.name})")
    started = time.monotonic()
    deadline = started + time_limit if time_limit > 0 else float("inf")
    limit = f"{time_limit:g} s" if time_limit > 0 else "no time limit"
    say(f"Stage {stage.name}: {stage.what}; {len(todo)} of {len(stage.steps)} step(s) to do, "
        f"{limit}, {'a GPU' if gpu else 'no GPU'} on this machine.")
    state_file.parent.mkdir(parents=True, exist_ok=True)
    with open(state_file.with_name(f"{stage.name}.log"), "a", encoding="utf-8") as log:
        log.write(f"--- {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} "
                  f"stage {stage.name}\n")
        for step in todo:
            if step.gpu_only and not gpu:
                say(f"[{stage.name}] {step.name}: skipped, no GPU on this machine (not marked "
                    "done: a machine with a GPU runs it)")
                continue
            if step.resumable and step.run_key not in runs:
                from gpulesson.results import new_run_id

                runs[step.run_key] = new_run_id()
                save_state(state_file, state)  # before it runs: a re-run goes on with this run
            began = time.monotonic()
            say(f"[{stage.name}] {step.name} ...")
            try:
                if step.argv is None:
                    pack(say=say, state=unpacked(state, stage))
                    status = 0
                else:
                    status = run_step(command(step, runs.get(step.run_key), gpu), deadline, log,
                                      step.env)
            except TimeoutError:
                raise StageStopped(
                    f"stage {stage.name} reached its time limit of {limit} during {step.name}, "
                    f"which was stopped; what finished is kept. Run the stage again to go on: "
                    f"python tools/reference.py {stage.name}") from None
            if status != 0:
                raise StageStopped(f"stage {stage.name}: {step.name} failed (exit status "
                                   f"{status}); what finished is kept. Fix the cause above, "
                                   f"then run the stage again: python tools/reference.py "
                                   f"{stage.name}")
            mine["done"].append(step.name)
            save_state(state_file, state)
            say(f"[{stage.name}] {step.name} done in {time.monotonic() - began:.0f} s")
    say(f"Stage {stage.name} done in {time.monotonic() - started:.0f} s.")
    if stage.name == "pack":
        # The run is complete: the next stage run starts a new one. Its state stays for reading.
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        state_file.replace(state_file.with_name(f"state-{stamp}.json"))


def draw_figures(say=_say) -> None:
    """Every figure script in ``fig/``, each in a process of its own, as `make figures`."""
    for script in sorted(ROOT.glob("fig/*/*.py")):
        done = subprocess.run([sys.executable, str(script)], cwd=ROOT)
        if done.returncode != 0:
            raise StageStopped(f"{script.relative_to(ROOT)} failed (exit status {done.returncode})")
    say("figures redrawn")


def unpacked(state: dict, stage: Stage) -> dict:
    """``state`` as the pack keeps it: ``stage`` (the pack's) not begun, so that a run restored
    from the pack packs again whole, redrawing the figures and refilling the notebooks from
    the records it then has, instead of finding them done."""
    kept = json.loads(json.dumps(state))
    kept.get("stages", {}).pop(stage.name, None)
    return kept


def add_text(archive: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode("utf-8")
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
    archive.addfile(info, io.BytesIO(data))


def pack(out: Path | None = None, limit: int = PACK_LIMIT, say=_say, state: dict | None = None,
         folders=PACKED, logs=None, logs_under: str = "reference-logs") -> Path:
    """Pack ``folders`` (:data:`PACKED`), the stages' logs and ``state`` (as
    ``reference-logs/state.json``) into one ``.tar.gz``, atomically: ``out`` is the whole
    archive or absent."""
    out = out or STATE_DIR / "reference-run.tar.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    with tarfile.open(partial, "w:gz") as archive:
        for name in folders:
            archive.add(ROOT / name, arcname=name,
                        filter=lambda info: None if "__pycache__" in info.name else info)
        for extra in sorted(STATE_DIR.glob("*.log")) if logs is None else logs:
            archive.add(extra, arcname=f"{logs_under}/{extra.name}")
        if state is not None:
            add_text(archive, "reference-logs/state.json", json.dumps(state, indent=1) + "\n")
    size = partial.stat().st_size
    if size > limit:
        partial.unlink()
        raise StageStopped(f"the packed run would be {size / 2**20:.1f} MiB, over its limit of "
                           f"{limit / 2**20:.0f} MiB: record fewer or smaller figures")
    partial.replace(out)
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    say(f"packed {', '.join(folders)} and the logs into {shown} "
        f"({size / 2**20:.1f} MiB, limit {limit / 2**20:.0f} MiB)")
    return out


def describe() -> str:
    lines = ["Stages of the reference run (estimates: full size, one H100, 16 cores):"]
    for stage in STAGES.values():
        lines.append(f"  {stage.name:16} {stage.estimate:12} {stage.what}")
        for step in stage.steps:
            extra = (" (GPU only)" if step.gpu_only else
                     f" (with a GPU: {' '.join(step.with_gpu)})" if step.with_gpu else "")
            lines.append(f"  {'':16} {'':12} - {step.name}"
                         + (f": python {' '.join(step.argv)}" if step.argv else "") + extra)
    lines.append(f"'all' runs: {', '.join(STAGES)}; a GPU node: {', '.join(GPU_NODE)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["budget"]:  # the budgeted run: what the run lacks, by a deadline, packed
        import budget

        return budget.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python tools/reference.py",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("stages", nargs="*", metavar="STAGE",
                        help=f"stages to run in order: {', '.join(STAGES)}, 'gpu-node' "
                             f"({', '.join(GPU_NODE)}), 'all', or 'auto' (gpu-node where "
                             f"a GPU is present, else all)")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help=f"seconds each stage may take (default {TIME_LIMIT:g}; 0: no limit)")
    parser.add_argument("--fresh", action="store_true",
                        help="start the stages anew instead of going on with their last run")
    parser.add_argument("--list", action="store_true", help="list the stages and their steps")
    parser.add_argument("--figures", action="store_true", help="only redraw every figure")
    args = parser.parse_args(argv)
    if args.list:
        print(describe())
        return 0
    try:
        if args.figures:
            require(FIGURES, what="the figures")
            draw_figures()
            return 0
        names = []
        for name in args.stages or parser.error("name a stage (or --list)"):
            names += expand(name)
        unknown = [n for n in names if n not in STAGES]
        if unknown:
            parser.error(f"unknown stage(s) {', '.join(unknown)}: use {', '.join(STAGES)}, "
                         "gpu-node, all or auto")
        if args.time_limit < 0:
            parser.error("--time-limit must be 0 (no limit) or more")
        if set(names) - {"pack"}:
            check_data_chosen()
        with stop_on_signals():
            for name in names:
                run_stage(STAGES[name], time_limit=args.time_limit,
                          state_file=STATE_DIR / "state.json", fresh=args.fresh)
    except StopRequested as exc:
        print(f"reference: stopped by {exc}; the step in progress was stopped with every process "
              "it started, what finished is kept: run the same stage again to go on",
              file=sys.stderr)
        return 128 + getattr(signal, str(exc)).value
    except MissingPackage as exc:
        print(exc, file=sys.stderr)
        return 2
    except StageStopped as exc:
        print(f"reference: {exc}", file=sys.stderr)
        return 124 if "time limit" in str(exc) else 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
