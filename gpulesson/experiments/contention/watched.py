"""One training watched in a browser: the lesson's CNN in a JupyterLab notebook open in headless
Chromium, as a learner runs it, with Keras' progress bar or with one line an epoch.

Keras' bar (``verbose=1``, a notebook's default) sends a new bar after every step and
JupyterLab redraws the cell's output each time; where the browser runs on the machine that
trains (a desktop; not a cluster, whose learners' browsers run on their laptops), that work
competes with the training for the cores. Needs Chromium, Playwright and JupyterLab here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from gpulesson.experiments.contention.measure import (
    WORKER,
    WorkerError,
    _environment,
    _stop,
    _tail,
    epoch_summary,
    run_each,
    sample_load,
)
from gpulesson.localhost import chromium_path, free_port

# The ways a training's output is shown: the name in the records, Keras' verbose, in a browser.
MODES = {
    "no browser": (1, False),
    "browser, bar per step": (1, True),
    "browser, line per epoch": (2, True),
}
START_TIMEOUT = 120.0  # seconds for JupyterLab and its page to be ready
ENABLE = ("the watched conditions need Chromium (apt-get install chromium, or set "
          "LESSON_CHROMIUM=/path) and Playwright (pip install -r requirements/dev.txt)")
ENABLE_HOW = ("to record it, add Chromium (sh tools/ensure_chromium.sh installs Debian's where it "
              "can; or set LESSON_CHROMIUM=/path/to/chromium) and Playwright and JupyterLab "
              "(pip install -r requirements/dev.txt), then run python -m "
              "gpulesson.experiments.contention --parts watched")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def missing() -> list[str]:
    """What the watched part needs and this machine lacks (empty: it can run)."""
    lacking = []
    if chromium_path() is None:
        lacking.append("Chromium")
    if not _installed("playwright"):
        lacking.append("Playwright")
    if not (_installed("jupyterlab") and _installed("nbformat")):
        lacking.append("JupyterLab")
    return lacking


def skip_note(lacking, skipped: bool = True) -> str:
    """One line: the watched part is skipped (or cannot run), what is missing, how to add it."""
    return (f"{'Skipped the' if skipped else 'The'} watched part (a training shown in JupyterLab "
            f"in Chromium){'' if skipped else ' cannot run'}: {' and '.join(lacking)} not found "
            f"here; {ENABLE_HOW}.")


def _notebook(path: Path, arguments: list[str]) -> None:
    """A notebook of one cell that runs the worker with ``arguments`` in its kernel."""
    import nbformat

    source = ("from gpulesson.experiments.contention import worker\n\n"
              f"worker.main({arguments!r})")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


def _wait_ready(url: str, lab: subprocess.Popen, log: Path, deadline: float) -> None:
    while time.perf_counter() < deadline:
        if lab.poll() is not None:
            raise WorkerError(f"JupyterLab stopped (exit status {lab.returncode}):\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise WorkerError(f"JupyterLab did not answer within {START_TIMEOUT:g} s:\n{_tail(log)}")


# True once the notebook's kernel is started and idle: the cells can be run from the page.
_KERNEL_IDLE = """() => {
    const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = widget && widget.sessionContext && widget.sessionContext.session
        && widget.sessionContext.session.kernel;
    return Boolean(kernel && kernel.status === 'idle');
}"""


def run_watched(data, mode: str, *, n_images: int, batch_size: int, epochs: int,
                timeout: float, seed: int = 42, sample_every: float = 1.0) -> dict:
    """One training in ``mode`` (a key of :data:`MODES`), a condition as
    :func:`~gpulesson.experiments.contention.measure.run_condition` gives it, with its mode."""
    verbose, in_browser = MODES[mode]
    with tempfile.TemporaryDirectory(prefix="gpulesson-watched-") as folder:
        folder = Path(folder)
        result = folder / "result.json"
        arguments = [str(data), "--n-images", str(n_images), "--batch-size", str(batch_size),
                     "--epochs", str(epochs), "--seed", str(seed), "--verbose", str(verbose),
                     "--result", str(result)]
        log = folder / "process.log"
        load_before = os.getloadavg()[0]
        watch = (_Browser(folder, arguments, log) if in_browser
                 else _Pipe([sys.executable, "-m", WORKER, *arguments], log))

        def running() -> bool:
            if result.exists():
                return False
            watch.check()
            return True

        try:
            watch.start(time.perf_counter() + START_TIMEOUT)
            started = time.perf_counter()
            samples = sample_load(running, timeout, f"the training '{mode}' ran past the limit "
                                  f"of {timeout:g} s and was stopped: give more time "
                                  "(--timeout) or fewer images", sample_every)
            wall = time.perf_counter() - started
        finally:
            watch.stop()
        report = json.loads(result.read_text(encoding="utf-8"))
    return {"copies": 1, "threads": None, "watched": mode, "reports": [report],
            "gpu_hidden": True, "load_before": round(load_before, 2), "load_samples": samples,
            "wall_seconds": wall}


class _Pipe:
    """The training in a process of its own, its output going to a file (no browser)."""

    def __init__(self, command, log: Path):
        self.command, self.log, self.process = command, log, None

    def start(self, deadline: float) -> None:
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(self.command, stdout=out, stderr=subprocess.STDOUT,
                                            env=_environment())

    def check(self) -> None:
        if self.process.poll() is not None:
            # The result file may have appeared just before the process ended.
            time.sleep(0.2)
            if self.process.returncode != 0:
                raise WorkerError(f"the training failed (exit status {self.process.returncode}):"
                                  f"\n{_tail(self.log)}")

    def stop(self) -> None:
        if self.process:
            _stop([self.process])


class _Browser:
    """JupyterLab on the notebook, the notebook open in headless Chromium, all cells run."""

    def __init__(self, folder: Path, arguments: list[str], log: Path):
        self.folder, self.log = folder, log
        self.notebook = folder / "watched.ipynb"
        _notebook(self.notebook, arguments)
        self.lab = self.playwright = self.chromium = self.page = None

    def start(self, deadline: float) -> None:
        executable = chromium_path()
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise WorkerError(ENABLE + " [Playwright is not installed]") from None
        if executable is None:
            raise WorkerError(ENABLE + " [no Chromium found]")
        port, token = free_port(), secrets.token_hex(16)
        home = self.folder / "home"
        env = _environment()
        # Jupyter's own folders in the temporary one: the user's settings and kernels stay
        # untouched, and JupyterLab opens without a saved workspace.
        env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / "config"),
                   JUPYTER_DATA_DIR=str(home / "data"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"))
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
                   f"--port={port}", f"--IdentityProvider.token={token}",
                   f"--ServerApp.root_dir={self.folder}", "--LabApp.expose_app_in_browser=True",
                   "--allow-root"]
        with open(self.log, "wb") as out:
            self.lab = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        base = f"http://127.0.0.1:{port}"
        _wait_ready(f"{base}/api/status?token={token}", self.lab, self.log, deadline)
        self.playwright = sync_playwright().start()
        # --no-sandbox: as root (containers, test machines) Chromium's sandbox will not start.
        self.chromium = self.playwright.chromium.launch(executable_path=executable,
                                                        headless=True, args=["--no-sandbox"])
        page = self.chromium.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{base}/lab/tree/{self.notebook.name}?token={token}")
        try:
            page.wait_for_function(_KERNEL_IDLE, timeout=max(deadline - time.perf_counter(), 1)
                                   * 1000)
        except Exception as exc:  # Playwright's TimeoutError and friends
            raise WorkerError(f"the notebook's kernel was not ready in JupyterLab ({exc}):\n"
                              f"{_tail(self.log)}") from None
        # Started, not awaited: the command's promise ends with the cells, and meanwhile the
        # caller samples the load and watches for errors.
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        self.page = page

    def check(self) -> None:
        if self.lab.poll() is not None:
            raise WorkerError(f"JupyterLab stopped (exit status {self.lab.returncode}):\n"
                              f"{_tail(self.log)}")
        # The page stays open and redraws the cell's output; an error shows there too.
        errors = self.page.evaluate(
            "() => [...document.querySelectorAll('.jp-OutputArea-output[data-mime-type="
            "\"application/vnd.jupyter.stderr\"]')].map(e => e.innerText)"
            ".filter(t => t.includes('Error'))")
        if errors:
            raise WorkerError("the training failed in the notebook:\n" + errors[-1][-2000:])

    def stop(self) -> None:
        if self.chromium:
            self.chromium.close()
        if self.playwright:
            self.playwright.stop()
        if self.lab and self.lab.poll() is None:
            self.lab.terminate()
            try:
                self.lab.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.lab.kill()
                self.lab.wait()


def run_watched_benchmark(modes=tuple(MODES), *, n_images: int, batch_size: int, epochs: int,
                          timeout: float, done=(), **each) -> list[dict]:
    """One training in each of ``modes`` but those ``done``, one after the other (:func:`run_each`)."""
    def said(mode, condition):
        times = condition["reports"][0]["epoch_seconds"]
        summary = epoch_summary(times, n_images)
        return (f"{mode}: epochs {', '.join(f'{t:.1f}' for t in times)} s "
                f"({summary['images_per_second']:,.0f} images/s after the first), "
                f"load average up to {max(condition['load_samples'], default=0):.2f}"
                f"; mean {statistics.fmean(times):.1f} s")

    return run_each([m for m in modes if m not in set(done)],
                    lambda data, mode: run_watched(data, mode, n_images=n_images,
                                                   batch_size=batch_size, epochs=epochs,
                                                   timeout=timeout),
                    said, n_images=n_images, batch_size=batch_size, **each)
