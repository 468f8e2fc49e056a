"""Running one step of a reference run: in a process group of its own, its output logged, stopped
with every process it started at a deadline or when this process is asked to stop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gpulesson.timing import process_stat

ROOT = Path(__file__).resolve().parents[1]
GRACE = 15.0  # seconds a stopped step has to end before it is killed


class StopRequested(Exception):
    """This process was asked to stop (SIGTERM, as ``timeout`` sends, or SIGINT)."""


@contextlib.contextmanager
def stop_on_signals():
    """SIGTERM and SIGINT raise :class:`StopRequested` inside the ``with``, so that the step in
    progress is stopped with its whole process group (:func:`run_step`) instead of outliving
    this process in its own session."""
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
    """Run ``argv`` in its own process group until it ends or ``deadline`` (monotonic) passes;
    its output goes to this process's and to ``log``; ``env``: (name, value) pairs set where
    this process's environment has no value. Raises :class:`TimeoutError` at the deadline, and
    passes on any other exception (:class:`StopRequested`), after stopping the whole group
    (the step and any processes it started)."""
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
    """Whether a process of process group ``group`` still runs (zombies, already ended, do not
    count: only their parent's wait removes them)."""
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
    """Stop the step and every process it started (its process group): SIGTERM, and SIGKILL to
    whatever of the group still runs after :data:`GRACE` seconds. Returns when the step has
    ended and no process of its group runs any more."""
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
