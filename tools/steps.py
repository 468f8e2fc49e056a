"""The steps, state and pack shared by the reference run's stages and the budgeted run.

It imports neither ``tools/reference.py`` nor ``tools/budget.py``: both import it.
"""

import contextlib
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
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the lesson's package, wherever this Python is
    sys.path.insert(0, str(ROOT))

from gpulesson.machine.timing import process_stat  # noqa: E402

STATE_DIR = ROOT / "_build" / "reference"
PACK_LIMIT = 12 * 2**20  # bytes of the packed run: under a 16 MiB file limit, with room
PACKED = ("results", "fig", "notebooks", "executed")
MODULE = "gpulesson.experiments."
GRACE = 15.0  # seconds a stopped step has to end before it is killed
say_now = functools.partial(print, flush=True)
GPU_FIRST = ("--devices", "gpu", "cpu")  # the GPU first: the scarce measurement


@dataclass
class Step:
    """One thing a stage does: ``argv`` after this Python (``None``: the pack); one ``run``, one run id."""

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


# PyTorch's CPU threads spin while they wait for work (OpenMP's default): on a machine that is
# busy with anything else a step took 169 ms against 26 ms with passive waits.
TORCH_ENV = (("OMP_WAIT_POLICY", "PASSIVE"),)
KERAS = ("keras", "numpy", "h5py", "matplotlib", "tqdm")
NOTEBOOK = (*KERAS, "nbclient", "nbformat", "ipykernel", "jupytext")
FIGURES = ("matplotlib", "numpy")


def experiment(name: str, *args: str, needs=KERAS, with_gpu=GPU_FIRST, step: str | None = None,
               gpu_only: bool = False, env=()) -> Step:
    """A step that runs ``python -m gpulesson.experiments.NAME``, one run across its steps."""
    return Step(step or name, ["-m", MODULE + name, *args], needs, resumable=True, run=name,
                with_gpu=with_gpu, gpu_only=gpu_only, env=env)


REFRESH = [Step("figures", ["tools/reference.py", "--figures"], FIGURES),
           Step("notebooks", ["tools/make_notebooks.py"], ("jupytext", "nbformat"))]
# CPU epochs of the feeding benchmark are capped so that five repeats of every pipeline fit
# (gpulesson.experiments.feeding.measure.REFERENCE_CPU_STEPS says how it was chosen).
FEEDING_CPU_STEPS = "12"
# Episode 10's PyTorch route on the node's GPUs under torchrun: a check that records nothing.
DDP_CHECK = Step("DDP on the GPUs (NCCL)",
                 ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node=gpu",
                  "-m", MODULE + "torch_ddp", "--device", "gpu", "--epochs", "2",
                  "--out-dir", str(STATE_DIR.relative_to(ROOT) / "torch-ddp")],
                 ("torch", "numpy"), gpu_only=True, env=TORCH_ENV)


def check_data_chosen() -> None:
    """A reference run records one data set, chosen on purpose: never a default."""
    from gpulesson.datasets.settings import explicit_data
    from gpulesson.errors import SettingsError

    try:
        explicit_data(os.environ.get("LESSON_DATA", ""))
    except SettingsError as exc:
        raise StageStopped(f"{exc}; e.g. LESSON_DATA=synthetic python tools/reference.py core") from None


class StageStopped(RuntimeError):
    """A step failed or the stage reached its time limit; the message says what to do."""


def gpu_present() -> bool:
    """An NVIDIA GPU on this machine, asked of the driver, not of a slow-starting framework."""
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
    """Arguments added from ``REFERENCE_ARGS_<RUN>``, for a shared node or a short rehearsal."""
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
    from gpulesson.datasets.settings import parse_bool

    return parse_bool("LESSON_QUICK", os.environ.get("LESSON_QUICK", ""))


def pack(out: Path | None = None, limit: int = PACK_LIMIT, say=say_now, state: dict | None = None,
         folders=None, logs=None, logs_under: str = "reference-logs") -> Path:
    """Pack ``folders``, the stages' logs and ``state`` into one ``.tar.gz`` atomically."""
    out = out or STATE_DIR / "reference-run.tar.gz"
    folders = PACKED if folders is None else folders
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    with tarfile.open(partial, "w:gz") as archive:
        for name in folders:
            archive.add(ROOT / name, arcname=name,
                        filter=lambda info: None if "__pycache__" in info.name else info)
        for extra in sorted(STATE_DIR.glob("*.log")) if logs is None else logs:
            archive.add(extra, arcname=f"{logs_under}/{extra.name}")
        if state is not None:  # the state as a file of its own
            data = (json.dumps(state, indent=1) + "\n").encode("utf-8")
            info = tarfile.TarInfo("reference-logs/state.json")
            info.size, info.mtime, info.mode = len(data), int(time.time()), 0o644
            archive.addfile(info, io.BytesIO(data))
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


class StopRequested(Exception):
    """This process was asked to stop (SIGTERM, as ``timeout`` sends, or SIGINT)."""


@contextlib.contextmanager
def stop_on_signals():
    """SIGTERM and SIGINT raise :class:`StopRequested`, so the step's process group is stopped too."""
    def stop(signum, _frame):
        for sig in previous:  # one stop: a second signal must not cut the group's stop short
            signal.signal(sig, signal.SIG_IGN)
        raise StopRequested(signal.Signals(signum).name)

    previous = {}
    previous.update({sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)})
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_step(argv: list[str], deadline: float, log, env=()) -> int:
    """Run ``argv`` in its own process group until it ends or ``deadline`` passes (TimeoutError),
    its output also to ``log``; the group is stopped on any way out."""
    env = {**dict(env), **os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    os.set_blocking(process.stdout.fileno(), False)
    try:
        while True:
            chunk = process.stdout.read()
            if chunk:
                text = chunk.decode(errors="replace")
                sys.stdout.write(text)
                sys.stdout.flush()
                log.write(text)
                log.flush()
            if process.poll() is not None and not chunk:
                return process.returncode
            if time.monotonic() > deadline:
                raise TimeoutError
            time.sleep(0.2)
    finally:
        if process.poll() is None:
            _stop_group(process)


def _group_alive(group: int) -> bool:
    """Whether a process of process group ``group`` still runs (zombies do not count)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():  # no /proc: a group that takes signals is alive
        return True
    for entry in proc.iterdir():
        fields = process_stat(entry.name) if entry.name.isdigit() else None
        if fields and int(fields[2]) == group and fields[0] != "Z":  # state, ppid, pgrp
            return True
    return False


def _stop_group(process: subprocess.Popen) -> None:
    """Stop the step's process group: SIGTERM, then SIGKILL after :data:`GRACE` seconds."""
    group = process.pid  # start_new_session: the step leads its own group
    for sig, grace in ((signal.SIGTERM, GRACE), (signal.SIGKILL, GRACE)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if process.poll() is not None and not _group_alive(group):
                return
            time.sleep(0.1)
    process.wait()
