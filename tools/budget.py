"""A budgeted reference run: what the lesson's records still lack, in order of value, by a deadline,
always packed.

    LESSON_DATA=synthetic python tools/reference.py budget --deadline 480 --out DIR
    python tools/reference.py budget --list        # the plan: its steps, leases and estimates

One call runs the steps of :data:`PLAN` the run lacks while it has time, stops at the deadline
(or on SIGTERM/SIGINT) and ALWAYS packs ``records.tar.gz``, ``pages.tar.gz`` and ``budget.json``
into ``--out``. Its state in ``results/`` lets the next call, on another machine, go on with the
run, on the same GPU model (``--fresh`` starts anew). It installs nothing.
"""

import argparse
import datetime
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import steps
from steps import ROOT, StageStopped, Step, StopRequested

from gpulesson.classroom.check import example as check_example
from gpulesson.classroom.check.login import kernel_env_expected
from gpulesson.classroom.share import CLASS_ENV
from gpulesson.machine.preflight import MissingPackage, require

STATE_FILE = ROOT / "results" / "reference-run.json"
LOG_DIR = steps.STATE_DIR
# s kept for the pack: 27-57 s in the stand-in on 2 busy cores (the figures most of it).
PACK_RESERVE = 40.0
TAR_RESERVE = 10.0  # s of the pack kept for the archives once the figures are being redrawn
MIN_START = 30.0  # s a resumable step needs to be worth starting: its start and one condition
FILES = ("records.tar.gz", "pages.tar.gz", "budget.json")
RECORDS, PAGES = ("results",), ("fig", "notebooks", "executed")

# The estimates: the seconds results/reference-run.json keeps from the H200 node (16-core Xeon,
# JAX 0.11.2, PyTorch 2.11); else CPU costs measured in the node's 2-core stand-in (a CNN step
# 0.75 CPU-s, its first 5 s, importing JAX and Keras 3.7 s, PyTorch 1.8 s) times 8 to 16 cores.
BASIS = ("seconds measured on the H200 node (2026-11-27, 2026-11-28) where a step ran there; "
         "else CPU costs from the 2-core stand-in, 16 cores at 50-100 % use, GPU compute not "
         "estimated")


@dataclass(frozen=True)
class Planned:
    """A step of the plan: its lease, its estimate in s (low, high; full size, one H200), its basis.

    ``method``: the version of its instrument; a step done with an older one is recorded again.
    """

    step: Step
    lease: int
    estimate: tuple[int, int]
    basis: str
    beside_gpu: bool = False  # records what the machine has, its GPU too (a notebook's run)
    method: int = 1

    @property
    def name(self) -> str:
        return self.step.name

    @property
    def gpu_part(self) -> bool:
        return self.beside_gpu or self.step.gpu_only or bool(self.step.with_gpu)


_x = steps.experiment
TORCH = ("torch", "torchvision", "numpy", "h5py")
# The readiness check's job part on the node, its record the guide's example of the GPU items;
# with the kernel's settings and the node's /tmp as the class folder.
CHECK_GPU = Step("readiness check on the GPU",
                 ["-m", "gpulesson.classroom.check", "--inside-job",
                  "--json", str(LOG_DIR.relative_to(ROOT) / "check-gpu.json"),
                  "--record", str(check_example.RESULTS_FILE.relative_to(ROOT))],
                 ("keras", "numpy", "h5py", "yaml"), gpu_only=True,
                 env=(*kernel_env_expected().items(), *steps.TORCH_ENV, (CLASS_ENV, "/tmp")))
# Grain's workers beside the node's GPU: JAX, the backend the node's lessons run.
WORKERS_GPU = ("--backends", "jax", "--devices", "gpu")
GRAIN = (*steps.KERAS, "grain")
JAX_ENV = (("KERAS_BACKEND", "jax"),)
LEASE_STEPS = 490  # s of steps in one call of about 9 minutes: the first call's deadline of 546 s
#                    left 491 s for its steps (results/reference-run.json), the pack after them
PLAN = [
    # The headline of the next call: episode 9's ladder, each part in two process starts (each
    # rung's second reads the compilation cache of its own that its first filled), in one run.
    Planned(_x("ladder", "--devices", "gpu", with_gpu=(), gpu_only=True, env=JAX_ENV,
               step="ladder on the GPU"), 3, (425, 470),
            "231.7 s on the H200 node (2026-11-28, run 1be871): 36 trainings, two starts, one "
            "cache shared by the rungs; with a cache for each rung, 14 more first starts compile, "
            "9-18 s each (first start minus second of the rung that compiled at the same batch and "
            "precision there): 200 s more, by arithmetic, not yet run on the node", method=2),
    Planned(_x("ladder", "--part", "limit", "--devices", "gpu", with_gpu=(), gpu_only=True,
               env=JAX_ENV, step="ladder's limit on the GPU"), 4, (45, 55),
            "49.5 s on the H200 node (2026-11-28, run 1be871)", method=2),
    Planned(_x("ladder", "--part", "nightly", "--nightly", ".whl/nightly", "--devices", "gpu",
               with_gpu=(), gpu_only=True, env=JAX_ENV, step="ladder with keras-nightly"), 4,
            (80, 95), "62.3 s on the H200 node (2026-11-28, run 1be871), the wheel's install in it; "
            "with a cache for each rung, `scan:device+bf16+spe+batch` compiles too, 24 s as its "
            "twin did there: by arithmetic, not yet run on the node", method=2),
    Planned(_x("profile", "--devices", "gpu", with_gpu=(), gpu_only=True, env=JAX_ENV,
               step="profile on the GPU"), 2, (20, 40),
            "21.6 s on the H200 node (2026-11-28, run dc8913), read ahead as episode 4 teaches",
            method=3),
    # The stream read by Grain's worker processes (the reader thread did not overlap the CNN's
    # host-bound step on the node), with the RAM rung at the best settings: the same run.
    Planned(_x("ladder", "--devices", "gpu", "--rungs", "grain", "grain+bf16+spe+batch",
               "ram+bf16+spe+batch", with_gpu=(), gpu_only=True, env=JAX_ENV,
               step="ladder's stream through Grain"), 1, (120, 150),
            "the ladder's rungs on the H200 node (2026-11-28, run 1be871): 36 trainings in "
            "231.7 s, about 6 s each over two starts; these 3 also start Grain's workers "
            "(about 5 s a start) and their 2 processes import JAX and Keras (about 8 s each); "
            "each compiles in a cache of its own, 13-18 s as the rungs at its batch and precision "
            "did there: by arithmetic, not yet run on the node", method=2),
    Planned(_x("feeding", "--devices", "gpu", "--pipelines", "classic",
               "lesson", "lesson-ahead", "lesson-ahead-window1", "lesson-gzip", "ram", "device",
               "--classic-max-steps", steps.FEEDING_CPU_STEPS, "--chunks", with_gpu=(),
               gpu_only=True, step="feeding on the GPU"),
            4, (150, 160), "154.3 s on the H200 node (2026-11-28, run b4865c) in two calls",
            method=4),
    Planned(_x("ceiling", "--devices", "gpu", with_gpu=(), gpu_only=True,
               step="ceiling on the GPU"), 1, (95, 115), "88.5 s on the H200 node (2026-11-28, "
            "run 712420) for eight pipelines on two backends; Grain's processes on each, about "
            "8 s with their start", method=4),
    Planned(_x("small_models", "--parts", "sweep", step="small models' sweep"), 4, (25, 60),
            "on the H200 node 15 of its 16 GPU cells took 46.6 s before the deadline stopped it "
            "(2026-11-27); left: one GPU cell (about 3 s) and the CPU half, 16 cells that took 2 "
            "minutes on 2 CPU cores (15-45 s on 16), a start and a compile, 10 s"),
    Planned(_x("cnn"), 1, (190, 210),
            "195.4 s on the H200 node (2026-11-28), the CPU half most of it (6 epochs of 25.6 s)",
            method=3),
    Planned(_x("workers", *WORKERS_GPU, "--works", "augment", "--workers", "0", "4", needs=GRAIN,
               with_gpu=(), gpu_only=True, step="Grain's workers beside the GPU"), 2, (50, 65),
            "55.1 s on the H200 node (2026-11-28, run 842b96); each epoch now split in its parts, "
            "and the 4 workers' last epoch meets the end of the data (1.68 s in run 412e0e)",
            method=3),
    Planned(_x("matmul"), 2, (200, 240),
            "68 s on the H200 node (2026-11-28) with windows of a few calls; now every window "
            "lasts at least 0.5 s: 60 sizes x 5 windows add about 150 s (arithmetic, not "
            "rehearsed on the node)", method=3),
    Planned(Step("notebook 05", ["tools/record_run.py", "--only", "05"], steps.NOTEBOOK,
                 quick_option=True), 2, (125, 140),
            "132 s on the H200 node (2026-11-28)", beside_gpu=True, method=3),
    Planned(_x("torch_reference", needs=TORCH, env=steps.TORCH_ENV), 4, (40, 50),
            "42.0 s on the H200 node (2026-11-27)"),
    Planned(_x("small_models", "--parts", "comparison", step="small model"), 3, (10, 20),
            "11.4 s on the H200 node (2026-11-27)"),
    Planned(steps.DDP_CHECK, 4, (10, 20), "12.6 s on the H200 node (2026-11-27)"),
    Planned(CHECK_GPU, 4, (30, 40), "33.2 s on the H200 node (2026-11-27)"),
]
PLAN.sort(key=lambda planned: planned.lease)  # lease by lease, in the list's order within one
LEASES = {1: "the stream read by Grain's worker processes (the ladder's rungs, the ceiling's "
             "pipeline), the CPU half of episode 5's CNN (its GPU half recorded)",
          2: "Grain's workers with each epoch split in its parts, episode 5's notebook (after "
             "the CNN, whose run it prints), episode 6's throughput over windows of at least "
             "0.5 s; the profile of a step with the generator reading ahead (recorded "
             "2026-11-28)",
          3: "episode 9's speed ladder, released Keras's rungs, each rung's first start "
             "compiling into a cache of its own (recorded 2026-11-28 with one cache for all), "
             "and the small model",
          4: "the ladder's plain-JAX limit and keras-nightly's scan, after its rungs; what "
             "the GPU runs recorded with an unchanged method (the small models' sweep, PyTorch, "
             "the DDP check); the feeding benchmark reading ahead (recorded "
             "2026-11-28), and last the readiness check beside every GPU record"}


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def gpu_model() -> str | None:
    """The first NVIDIA GPU's model, as the driver names it (None without one)."""
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("Model:"):
                return line.split(":", 1)[1].strip()
    return "NVIDIA GPU" if steps.gpu_present() else None


def settings_now() -> dict:
    return {"data": os.environ.get("LESSON_DATA", ""), "quick": steps.quick_mode()}


def open_run(path: Path, gpu: str | None, fresh: bool) -> dict:
    """The run's state, new or going on; refuses a run of other data, size or GPU model."""
    state = {} if fresh else steps.load_state(path)
    if not state:
        return {"about": "the budgeted reference run (tools/budget.py): what is done, on which "
                         "GPU, and each experiment's run id", **settings_now(), "gpu": gpu,
                "runs": {}, "done": {}, "calls": []}
    for key, value in settings_now().items():
        if state.get(key) != value:
            raise StageStopped(f"{path.name} holds a run with {key}={state.get(key)!r}, this call "
                               f"has {value!r}: set it as the run had it, or pass --fresh")
    if state.get("gpu") and state["gpu"] != gpu:
        raise StageStopped(f"the run in {path.name} is recorded on {state['gpu']}; this machine "
                           f"has {gpu or 'no GPU'}. Ask for the same GPU model (a run that goes on "
                           "must not change cards), or pass --fresh to start a new run")
    return state


def lacking(state: dict, gpu: str | None, lease: int) -> list[Planned]:
    """The planned steps (up to ``lease``) this machine can do that the run has not done."""
    left = []
    for planned in PLAN:
        done = state["done"].get(planned.name)
        if planned.lease > lease or (planned.step.gpu_only and not gpu):
            continue
        if (done is None or (planned.gpu_part and gpu and not done.get("gpu"))
                or done.get("method", 1) < planned.method):
            left.append(planned)
    return left


def fits(planned: Planned, left_s: float, quick: bool) -> bool:
    """Whether to start a step with ``left_s`` to go: a notebook, run whole, needs its high estimate."""
    need = MIN_START if planned.step.resumable or quick else max(MIN_START, planned.estimate[1])
    return left_s >= need


class Call:
    """One call of the budgeted run: its deadline, its log, what it did."""

    def __init__(self, args, say=steps.say_now):
        self.started = time.monotonic()
        self.deadline = self.started + args.deadline
        self.args, self.say, self.did = args, say, []
        self.gpu = gpu_model() if args.gpu is None else (args.gpu or None)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log_path = LOG_DIR / f"budget-{stamp}.log"
        self.stopped = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def note(self, text: str, log) -> None:
        self.say(text)
        log.write(text + "\n")
        log.flush()

    def record(self, state: dict, log) -> None:
        """Run what the run lacks until the steps' deadline (the pack's reserve before it)."""
        steps_end = self.deadline - self.args.pack_reserve - steps.GRACE
        quick = steps.quick_mode()
        todo = lacking(state, self.gpu, self.args.lease)
        self.note(f"budget: {len(todo)} step(s) lacking ({', '.join(p.name for p in todo) or 'none'})"
                  f"; {self.args.deadline:g} s in all, steps until {steps_end - self.started:.0f} s; "
                  f"{self.gpu or 'no GPU'}", log)
        for planned in todo:
            left_s = steps_end - time.monotonic()
            if not fits(planned, left_s, quick):
                self.did.append({"step": planned.name, "result": "not started",
                                 "why": f"{left_s:.0f} s left"})
                self.note(f"[budget] {planned.name}: not started, {left_s:.0f} s left", log)
                continue
            self.run_one(planned, state, steps_end, log)

    def run_one(self, planned: Planned, state: dict, steps_end: float, log) -> None:
        step, began = planned.step, time.monotonic()
        begun_on = state.setdefault("run_gpus", {})  # run key -> the GPU its run began beside
        methods = state.setdefault("run_methods", {})  # run key -> the method its run began with
        if self.gpu and step.run_key in state["runs"] and not begun_on.get(step.run_key):
            state["runs"].pop(step.run_key)  # begun without a GPU: the GPU's is a new run
        if step.run_key in state["runs"] and methods.get(step.run_key, 1) < planned.method:
            state["runs"].pop(step.run_key)  # begun with an older instrument: a new run
        if step.resumable and step.run_key not in state["runs"]:
            from gpulesson.records.results import new_run_id

            state["runs"][step.run_key] = new_run_id()
            begun_on[step.run_key] = self.gpu
            methods[step.run_key] = planned.method
        steps.save_state(self.args.state, state)  # before it runs: a re-run goes on with it
        self.note(f"[budget] {planned.name} at {self.elapsed():.0f} s (estimate on the node "
                  f"{planned.estimate[0]}-{planned.estimate[1]} s) ...", log)
        entry = {"step": planned.name, "run_id": state["runs"].get(step.run_key)}
        self.did.append(entry)
        try:
            if step.quick_option:  # a notebook's run: its notebook refilled from the records first
                entry["notes"] = self.refresh(log, steps_end, names=("notebooks",))
            status = steps.run_step(
                steps.command(step, state["runs"].get(step.run_key), bool(self.gpu)),
                steps_end, log, step.env)
        except TimeoutError:
            status = "stopped at the deadline"
        except StopRequested as exc:
            self.stopped = status = f"stopped by {exc}"
        entry["seconds"] = round(time.monotonic() - began, 1)
        if status == 0:
            entry["result"] = "done"
            state["done"][planned.name] = {"gpu": self.gpu, "date": now_iso(),
                                           "seconds": entry["seconds"], "method": planned.method}
        else:
            entry["result"] = status if isinstance(status, str) else f"failed (exit {status})"
        steps.save_state(self.args.state, state)
        self.note(f"[budget] {planned.name}: {entry['result']} in {entry['seconds']:.0f} s", log)
        if self.stopped:
            raise StopRequested(self.stopped)

    def refresh(self, log, end: float, names=("figures", "notebooks")) -> list[str]:
        """Redraw the figures and refill the notebooks (or those of ``names``) by ``end``."""
        notes = []
        for step in (step for step in steps.REFRESH if step.name in names):
            if end - time.monotonic() < 2:
                notes.append(f"{step.name}: not redone, no time left")
                continue
            try:
                status = steps.run_step(steps.command(step, None, False), end, log)
            except TimeoutError:
                status = "stopped at the deadline"
            if status != 0:
                notes.append(f"{step.name}: " + (status if isinstance(status, str)
                                                 else f"failed (exit {status})"))
        return notes

    def pack(self, state: dict, log, refresh: bool) -> dict:
        """Records first (seconds), then the pages, then the records again with the final log."""
        out = self.args.out
        out.mkdir(parents=True, exist_ok=True)
        files, notes = {}, []

        def archive(name, folders):
            try:
                path = steps.pack(out / name, say=lambda *a: None, folders=folders,
                                  logs=[self.log_path] if name == FILES[0] else [],
                                  logs_under="_build/reference")
                files[name] = path.stat().st_size
            except (StageStopped, OSError) as exc:
                notes.append(f"{name}: {exc}")

        archive(FILES[0], RECORDS)
        end = self.deadline - min(TAR_RESERVE, self.args.pack_reserve / 4)
        notes += self.refresh(log, end) if refresh else ["figures and notebooks not redone: stopped"]
        archive(FILES[1], PAGES)
        self.note(f"budget: packed at {self.elapsed():.0f} s"
                  + (f" ({'; '.join(notes)})" if notes else ""), log)
        log.flush()
        archive(FILES[0], RECORDS)
        return {"files": files, "pack_notes": notes}


def summary(call: Call, state: dict, packed: dict) -> dict:
    left = [p.name for p in lacking(state, call.gpu, 3)]
    waiting = [p.name for p in PLAN if p.step.gpu_only and not call.gpu]
    return {"date": now_iso(), "machine": {"gpu": call.gpu, "cores": os.cpu_count()},
            "settings": settings_now(), "deadline_s": call.args.deadline,
            "seconds": round(call.elapsed(), 1), "stopped": call.stopped, "steps": call.did,
            "left": left, "left_for_a_gpu": waiting, **packed}


def run(args, say=steps.say_now) -> int:
    call = Call(args, say)
    state = open_run(args.state, call.gpu, args.fresh)
    if state.get("gpu") is None and call.gpu:
        state["gpu"] = call.gpu
    for planned in lacking(state, call.gpu, args.lease):
        require(planned.step.needs, what=f"the budgeted run ({planned.name})")
    with open(call.log_path, "a", encoding="utf-8") as log:
        try:
            with steps.stop_on_signals():
                call.record(state, log)
        except StopRequested as exc:
            call.stopped = call.stopped or f"stopped by {exc}"
            call.note(f"budget: {call.stopped}; the step in progress was stopped, packing", log)
        # The pack is not interrupted: the caller's hard limit (timeout -k) is the last word.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        packed = {}
        try:
            about = summary(call, state, {})
            state["calls"] = [*state.get("calls", []), {
                **{k: about[k] for k in ("date", "machine", "deadline_s", "stopped", "left")},
                "steps_seconds": about["seconds"]}]  # the pack's time is in budget.json
            steps.save_state(args.state, state)
            packed = call.pack(state, log, refresh=call.stopped is None)
        finally:
            about = summary(call, state, packed)
            (args.out / FILES[2]).write_text(json.dumps(about, indent=1) + "\n", encoding="utf-8")
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, signal.SIG_DFL)
    say(f"budget: {len(about['left'])} step(s) left ({', '.join(about['left']) or 'none'}); "
        f"{', '.join(f'{n} {s / 2**20:.1f} MiB' for n, s in packed.get('files', {}).items())} "
        f"in {args.out}")
    return 143 if call.stopped else 0


def describe() -> str:
    lines = [f"The budgeted reference run, step by step in this order (estimates on the node: full "
             f"size, one H200, 16 cores; {BASIS}):"]
    for lease, what in LEASES.items():
        planned = [p for p in PLAN if p.lease == lease]
        low, high = sum(p.estimate[0] for p in planned), sum(p.estimate[1] for p in planned)
        lines.append(f"lease {lease}: {what} ({low}-{high} s + GPU compute)")
        for p in planned:
            lines.append(f"  {p.name:28} {p.estimate[0]:4}-{p.estimate[1]:<4} s"
                         f"{'  GPU only' if p.step.gpu_only else ''}  {p.basis}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python tools/reference.py budget",
                                description=__doc__.splitlines()[0] + " " + __doc__.splitlines()[1])
    p.add_argument("--deadline", type=float, help="seconds from now by which this call has "
                   "stopped and packed (the pack's reserve included)")
    p.add_argument("--out", type=Path, help=f"folder for the three files ({', '.join(FILES)})")
    p.add_argument("--lease", type=int, choices=sorted(LEASES), default=max(LEASES),
                   help="record only what leases up to this one plan (default: all, in order)")
    p.add_argument("--pack-reserve", type=float, default=PACK_RESERVE,
                   help=f"seconds kept for the pack before the deadline (default {PACK_RESERVE:g})")
    p.add_argument("--state", type=Path, default=STATE_FILE,
                   help="the run's state (default results/reference-run.json, committed)")
    p.add_argument("--fresh", action="store_true", help="start a new run")
    p.add_argument("--gpu", default=None, help=argparse.SUPPRESS)  # tests: a GPU model, '' none
    p.add_argument("--list", action="store_true", help="show the plan and its estimates")
    return p


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.list:
        print(describe())
        return 0
    if args.deadline is None or args.out is None:
        p.error("give --deadline SECONDS and --out DIR (or --list)")
    if args.deadline < args.pack_reserve + steps.GRACE:
        p.error(f"--deadline must leave room for the pack: at least "
                f"{args.pack_reserve + steps.GRACE:g} s")
    try:
        steps.check_data_chosen()
        return run(args)
    except MissingPackage as exc:
        print(exc, file=sys.stderr)
        return 2
    except StageStopped as exc:
        print(f"budget: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
