"""Timing the lesson's CNN training on a shared CPU, each training a process of its own.

Part "copies": k copies at once (:func:`run_benchmark`). Part "watched": one training in a
JupyterLab notebook open in headless Chromium, as a learner runs it, with Keras' progress bar
or one line an epoch, and one with no browser (:func:`run_watched_benchmark`). Keras' bar
(``verbose=1``, a notebook's default) sends a new bar after every step and JupyterLab redraws
the cell's output each time; where the browser runs on the machine that trains (a desktop; not
a cluster, whose learners' browsers run on their laptops), that work competes for the cores.

The workers never see a GPU (:data:`GPU_HIDDEN`): on a GPU node they still train on the CPU,
which is what is measured. A worker that fails or runs past ``timeout`` stops its whole
condition with :class:`WorkerError`, so no record of an unfinished condition can be written.
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

from gpulesson.experiments.common import default_epochs
from gpulesson.machine.localhost import chromium_path, free_port
from gpulesson.records.results import LESSON_ROOT

# The measurement rule: every copy trains a warm-up epoch and the rule's timed ones.
N_IMAGES, EPOCHS, BATCH_SIZE = 10_000, default_epochs(False), 256
QUICK_N_IMAGES, QUICK_EPOCHS, QUICK_BATCH_SIZE = 256, default_epochs(True), 64
COPIES = (1, 2, 3)
TIMEOUT = 1800.0  # seconds one condition may take, all copies together
WORKER = "gpulesson.experiments.contention.worker"
CLASS_NAMES = tuple(f"class {i}" for i in range(10))  # labels only: speed does not need names
# CUDA hidden for TensorFlow and PyTorch; JAX told to start its CPU backend only (it would
# otherwise claim most of the GPU's memory at start).
GPU_HIDDEN = {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
# Keras backends whose framework takes a CPU thread count per process, and how. JAX has none:
# XLA's CPU threads follow the cores (only XLA_FLAGS, read at start, touch some of them).
THREAD_SETTINGS = {"tensorflow": "tf.config.threading intra- and inter-op threads",
                   "torch": "torch.set_num_threads"}


class WorkerError(RuntimeError):
    """A training process failed or ran past its time; the message says which and why."""


def write_data(directory, n_images: int, batch_size: int, seed: int = 0) -> Path:
    """A lesson data file of ``n_images`` synthetic training images (chunks of a batch)."""
    from gpulesson.datasets.hdf5 import write_hdf5
    from gpulesson.datasets.synthetic import make_synthetic

    (x, y), test = make_synthetic(n_images, 16, seed=seed, progress=False)
    path = Path(directory) / f"contention-{n_images}-{batch_size}.h5"
    return write_hdf5(path, (x, y), test, source="synthetic", class_names=CLASS_NAMES,
                      chunk_rows=batch_size, progress=False)


def _arguments(data, n_images, batch_size, epochs, seed, *more) -> list[str]:
    return [str(data), "--n-images", str(n_images), "--batch-size", str(batch_size),
            "--epochs", str(epochs), "--seed", str(seed), *map(str, more)]


def _command(data, *, n_images, batch_size, epochs, threads, seed) -> list[str]:
    return [sys.executable, "-m", WORKER, *_arguments(data, n_images, batch_size, epochs, seed,
                                                      *(("--threads", threads) if threads else ()))]


def _environment() -> dict:
    # The workers import this lesson's gpulesson, wherever they start, and see no GPU.
    env = {**os.environ, **GPU_HIDDEN}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LESSON_ROOT), env.get("PYTHONPATH")]))
    return env


def threads_honoured(backend: str) -> bool:
    return backend in THREAD_SETTINGS


def keras_backend() -> str:
    """The Keras backend the workers will use (they inherit this process's settings)."""
    import keras

    return keras.backend.backend()


def threads_skipped(backend: str, threads) -> str | None:
    """Why the conditions with ``threads`` per copy are not run on ``backend`` (None: they are)."""
    threads = sorted(set(threads))
    if not threads or threads_honoured(backend):
        return None
    return (f"the condition(s) with {' and '.join(map(str, threads))} thread(s) per copy were "
            f"skipped: Keras on {backend} has no per-process CPU thread setting (XLA's CPU "
            f"threads follow the cores); record them with KERAS_BACKEND=torch or tensorflow "
            f"({', '.join(f'{b}: {how}' for b, how in THREAD_SETTINGS.items())})")


def _stop(processes) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
    for process in processes:
        process.wait()


def _tail(path: Path, lines: int = 8) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return "\n".join(text[-lines:]) or "(no error output)"


def sample_load(running, timeout: float, late: str, sample_every: float) -> list[float]:
    """The load average every ``sample_every`` s while ``running()``; WorkerError(``late``)
    once ``timeout`` s have passed."""
    started, samples = time.perf_counter(), []
    while running():
        elapsed = time.perf_counter() - started
        if elapsed > timeout:
            raise WorkerError(late)
        samples.append(round(os.getloadavg()[0], 2))
        time.sleep(min(sample_every, max(timeout - elapsed, 0.01)))
    return samples


def _report(out: Path, err: Path, copy: int) -> dict:
    lines = [line for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        report = json.loads(lines[-1])
        if not report["epoch_seconds"]:
            raise ValueError("no epoch")
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        raise WorkerError(f"training copy {copy} ended without its timings ({exc}); its "
                          f"error output:\n{_tail(err)}") from None
    return report


def run_condition(data, copies: int, threads: int | None = None, *, n_images: int,
                  batch_size: int, epochs: int, timeout: float = TIMEOUT, seed: int = 42,
                  sample_every: float = 1.0) -> dict:
    """Start ``copies`` trainings together and wait for all: their worker reports, the load
    average before and while they ran, the wall time."""
    command = _command(data, n_images=n_images, batch_size=batch_size, epochs=epochs,
                       threads=threads, seed=seed)
    with tempfile.TemporaryDirectory(prefix="gpulesson-contention-") as folder:
        outs = [Path(folder) / f"copy-{i}.out" for i in range(copies)]
        errs = [Path(folder) / f"copy-{i}.err" for i in range(copies)]
        load_before = os.getloadavg()[0]
        started, processes = time.perf_counter(), []
        try:
            for out, err in zip(outs, errs, strict=True):
                with open(out, "wb") as o, open(err, "wb") as e:
                    processes.append(subprocess.Popen(command, stdout=o, stderr=e,
                                                      env=_environment()))
            samples = sample_load(
                lambda: any(p.poll() is None for p in processes), timeout,
                f"{copies} training copies ran past the limit of {timeout:g} s and were "
                "stopped: give more time (--timeout), fewer images (--n-images) or fewer "
                "epochs (--epochs)", sample_every)
        finally:
            _stop(processes)
        wall = time.perf_counter() - started
        for copy, (process, err) in enumerate(zip(processes, errs, strict=True), start=1):
            if process.returncode != 0:
                raise WorkerError(f"training copy {copy} of {copies} failed (exit status "
                                  f"{process.returncode}); its error output:\n{_tail(err)}")
        reports = [_report(out, err, copy)
                   for copy, (out, err) in enumerate(zip(outs, errs, strict=True), start=1)]
    return {"copies": copies, "threads": threads, "reports": reports, "gpu_hidden": True,
            "load_before": round(load_before, 2), "load_samples": samples, "wall_seconds": wall}


def epoch_summary(epoch_seconds, n_images: int) -> dict:
    """One copy's epochs: the first, the mean of the later ones (the first alone if only one
    ran), images/s by that mean, and whether the first epoch was the fastest."""
    first, later = epoch_seconds[0], epoch_seconds[1:]
    mean = statistics.fmean(later) if later else first
    return {"epoch_seconds": list(epoch_seconds), "first_epoch_seconds": first,
            "later_epoch_seconds": mean if later else None, "mean_epoch_seconds": mean,
            "images_per_second": n_images / mean,
            "first_epoch_fastest": bool(later) and first < min(later)}


def run_each(todo, run_one, said, *, n_images: int, batch_size: int, data_dir=None,
             progress=None, on_condition=None) -> list[dict]:
    """``run_one(data, item)`` for each of ``todo``, one after the other, on one data file;
    each condition goes to ``on_condition`` as soon as it finishes (so that it is recorded at
    once) and ``said(item, condition)`` to ``progress``. A WorkerError stops the rest."""
    conditions = []
    if not todo:
        return conditions
    with tempfile.TemporaryDirectory(prefix="gpulesson-contention-data-") as folder:
        data = write_data(data_dir or folder, n_images, batch_size)
        for item in todo:
            condition = run_one(data, item)
            conditions.append(condition)
            if on_condition:
                on_condition(condition)
            if progress:
                progress(said(item, condition))
    return conditions


def run_benchmark(copies=COPIES, *, threads=(), n_images: int = N_IMAGES,
                  batch_size: int = BATCH_SIZE, epochs: int = EPOCHS, timeout: float = TIMEOUT,
                  done=(), **each) -> list[dict]:
    """Each number of ``copies`` with the framework's threads, then with every number of
    ``threads`` per copy, but the ``(copies, threads)`` pairs ``done`` (:func:`run_each`);
    the command has checked the sizes."""
    copies = sorted(set(copies))
    plan = [(k, None) for k in copies] + [(k, t) for t in sorted(set(threads)) for k in copies]

    def said(item, condition):
        k, t = item
        times = [epoch_summary(r["epoch_seconds"], n_images)["mean_epoch_seconds"]
                 for r in condition["reports"]]
        return (f"{k} cop{'y' if k == 1 else 'ies'}, threads {t or 'default'}: epoch "
                f"{statistics.fmean(times):.1f} s each, load average up to "
                f"{max(condition['load_samples'], default=0):.2f}")

    return run_each([c for c in plan if c not in set(done)],
                    lambda data, c: run_condition(data, *c, n_images=n_images,
                                                  batch_size=batch_size, epochs=epochs,
                                                  timeout=timeout),
                    said, n_images=n_images, batch_size=batch_size, **each)


# --- the watched part: one training shown in a browser or not ---------------------------------

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
    found = {"Chromium": chromium_path() is not None, "Playwright": _installed("playwright"),
             "JupyterLab": _installed("jupyterlab") and _installed("nbformat")}
    return [name for name, here in found.items() if not here]


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
        arguments = _arguments(data, n_images, batch_size, epochs, seed, "--verbose", verbose,
                               "--result", result)
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
