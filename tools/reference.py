"""Record the lesson's reference run in stages, each bounded in time and able to go on.

    python tools/reference.py --list                      # the stages, their steps and estimates
    LESSON_DATA=synthetic python tools/reference.py core   # one stage (or several, in order)
    LESSON_DATA=synthetic python tools/reference.py all    # every stage, as `make reference`
    LESSON_DATA=synthetic python tools/reference.py budget --deadline 480 --out DIR
                                                           # what the run lacks, by a deadline
                                                           # (tools/budget.py), packed into DIR

Each stage stops itself at ``--time-limit`` (default 480 s, to fit a 10-minute job step); run it
again to go on, as each experiment keeps its run id and skips what it has. The last stage packs
``results/``, ``fig/``, ``notebooks/`` and ``executed/`` into one archive to carry back.
"""

import argparse
import datetime
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import steps
from steps import KERAS, ROOT, STATE_DIR, StageStopped, Step, StopRequested, experiment, say_now

from gpulesson.machine.preflight import MissingPackage, require

TIME_LIMIT = 480.0  # seconds a stage may take: a 10-minute job step, less its start-up


@dataclass
class Stage:
    name: str
    what: str
    estimate: str  # full size, one H100 and 16 cores, CPU-side costs (budget.PLAN: step by step)
    steps: list[Step] = field(default_factory=list)


def _notebooks(*numbers: str) -> list[Step]:
    return [Step(f"notebook {n}", ["tools/record_run.py", "--only", n], steps.NOTEBOOK, quick_option=True)
            for n in numbers]


# Beside a GPU, the CPU's side of the comparison: the pipelines episode 9 sets against the GPU's
# (the slow classic one, the lesson's, gzip's and data in memory).
FEEDING_CPU_WITH_GPU = ("--pipelines", "classic", "lesson", "lesson-gzip", "ram")

STAGES = {stage.name: stage for stage in (
    Stage("core", "episode 5's CNN, episode 6's matrix multiplication, episode 8's PyTorch",
          "3-5 min", [
              experiment("cnn"),
              experiment("matmul"),
              experiment("torch_reference", needs=("torch", "torchvision", "numpy", "h5py"),
                         env=steps.TORCH_ENV),
              steps.DDP_CHECK,
          ]),
    Stage("small-models", "episode 7's small MLP and its sweep", "3-5 min",
          [experiment("small_models", needs=(*KERAS, "sklearn"))]),
    # Episode 9's pipelines in two stages of one run: the GPU's full epochs, then the CPU's capped;
    # the classic pipeline (a few hundred images a second) is capped everywhere.
    Stage("feeding-gpu", "episode 9's input pipelines on the GPU (nothing without one)",
          "about 3 min", [experiment("feeding", "--devices", "gpu", "--chunks",
                                    "--classic-max-steps", steps.FEEDING_CPU_STEPS, with_gpu=(),
                                     gpu_only=True, step="pipelines on the GPU")]),
    Stage("feeding-cpu", f"episode 9's input pipelines on the CPU, {steps.FEEDING_CPU_STEPS} steps an "
          "epoch", "about 2 min",
          [experiment("feeding", "--devices", "cpu", "--cpu-max-steps", steps.FEEDING_CPU_STEPS,
                      "--classic-max-steps", steps.FEEDING_CPU_STEPS, with_gpu=FEEDING_CPU_WITH_GPU,
                      step="pipelines on the CPU")]),
    Stage("ceiling", "episode 9's ceiling of fit, one process per installed backend", "3-5 min",
          [experiment("ceiling")]),
    Stage("workers", "episode 9's Grain worker processes, JAX and PyTorch (beside a GPU: JAX, "
          "training on the GPU)", "about 5 min",
          [experiment("workers", needs=(*KERAS, "grain"),
                      with_gpu=("--backends", "jax", "--devices", "gpu"))]),
    Stage("contention", "episode 5's CPU epochs on a shared node (CPU only: not part of a GPU "
          "node's run)", "CPU only", [experiment("contention", with_gpu=())]),
    # Three stages of notebooks: on 2 cores (executed/*.ipynb) 01-06 took 478 s, 07, 08 and 10 389 s,
    # 09 290 s; notebooks-1 is at the default time limit there (such a machine uses --time-limit 0).
    Stage("notebooks-1", "figures and notebooks refilled, then episodes 1 and 3 to 6 recorded",
          "about 3 min", [*steps.REFRESH, *_notebooks("01", "03", "04", "05", "06")]),
    Stage("notebooks-2", "episodes 7, 8 and 10 recorded", "about 3 min", _notebooks("07", "08", "10")),
    Stage("notebooks-3", "episode 9 recorded", "about 2 min", _notebooks("09")),
    Stage("pack", "figures and notebooks refilled, everything packed into one archive",
          "under 1 min", [*steps.REFRESH, Step("pack", None)]),
)}
# What a GPU node records: all but the CPU-only contention experiment.
GPU_NODE = ("core", "small-models", "feeding-gpu", "feeding-cpu", "ceiling",
            "workers", "notebooks-1", "notebooks-2", "notebooks-3", "pack")


def expand(name: str) -> list[str]:
    """A stage's name, or 'all', 'gpu-node', 'auto' (gpu-node where there is a GPU, else all)."""
    if name == "auto":
        name = "gpu-node" if steps.gpu_present() else "all"
    return {"all": list(STAGES), "gpu-node": list(GPU_NODE)}.get(name, [name])


def run_stage(stage: Stage, *, time_limit: float, state_file: Path, fresh: bool = False,
              gpu: bool | None = None, say=say_now) -> None:
    """Run the steps of ``stage`` that it has not finished, within ``time_limit`` seconds."""
    state = steps.load_state(state_file)
    runs = state.setdefault("runs", {})  # run key -> run id, shared by the stages
    if fresh:
        state.setdefault("stages", {}).pop(stage.name, None)
        for step in stage.steps:
            runs.pop(step.run_key, None)
    mine = state.setdefault("stages", {}).setdefault(stage.name, {"done": []})
    gpu = steps.gpu_present() if gpu is None else gpu
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
                from gpulesson.records.results import new_run_id

                runs[step.run_key] = new_run_id()
                steps.save_state(state_file, state)  # before it runs: a re-run goes on with this run
            began = time.monotonic()
            say(f"[{stage.name}] {step.name} ...")
            try:
                if step.argv is None:
                    steps.pack(say=say, state=unpacked(state, stage))
                    status = 0
                else:
                    status = steps.run_step(steps.command(step, runs.get(step.run_key), gpu), deadline, log,
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
            steps.save_state(state_file, state)
            say(f"[{stage.name}] {step.name} done in {time.monotonic() - began:.0f} s")
    say(f"Stage {stage.name} done in {time.monotonic() - started:.0f} s.")
    if stage.name == "pack":
        # The run is complete: the next stage run starts a new one. Its state stays for reading.
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        state_file.replace(state_file.with_name(f"state-{stamp}.json"))


def draw_figures(say=say_now) -> None:
    """Every figure: the schematics' scripts in ``fig/``, each in a process of its own, then the
    declared experiments' figures, as `make figures`."""
    drawers = {str(script.relative_to(ROOT)): [str(script)]
               for script in sorted(ROOT.glob("fig/*/*.py"))}
    # The declared experiments' figures, which need no script (gpulesson.experiments.registry).
    drawers["the declared experiments"] = [
        "-c", "from pathlib import Path; from gpulesson.experiments.registry import draw_declared; "
              "print(*draw_declared(Path.cwd()), sep='\\n')"]
    for what, arguments in drawers.items():
        done = subprocess.run([sys.executable, *arguments], cwd=ROOT)
        if done.returncode != 0:
            raise StageStopped(f"{what} failed (exit status {done.returncode})")
    say("figures redrawn")


def unpacked(state: dict, stage: Stage) -> dict:
    """``state`` with its pack stage not begun, so that a restored run packs again whole."""
    kept = json.loads(json.dumps(state))
    kept.get("stages", {}).pop(stage.name, None)
    return kept


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
            require(steps.FIGURES, what="the figures")
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
            steps.check_data_chosen()
        with steps.stop_on_signals():
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
