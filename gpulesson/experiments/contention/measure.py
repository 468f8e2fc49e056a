"""Timing the lesson's CNN training on a shared CPU: k copies at once (:func:`run_benchmark`),
each training a process of its own.

The workers never see a GPU (:data:`GPU_HIDDEN`): on a GPU node they still train on the CPU,
which is what is measured. A worker that fails or runs past ``timeout`` stops its whole
condition with :class:`WorkerError`, so no record of an unfinished condition can be written.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpulesson.experiments.common import default_epochs
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


def _command(data, *, n_images, batch_size, epochs, threads, seed) -> list[str]:
    return [sys.executable, "-m", WORKER, str(data), "--n-images", str(n_images),
            "--batch-size", str(batch_size), "--epochs", str(epochs), "--seed", str(seed),
            *(("--threads", str(threads)) if threads else ())]


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
            samples = []
            while any(p.poll() is None for p in processes):
                elapsed = time.perf_counter() - started
                if elapsed > timeout:
                    raise WorkerError(
                        f"{copies} training copies ran past the limit of {timeout:g} s and were "
                        "stopped: give more time (--timeout), fewer images (--n-images) or "
                        "fewer epochs (--epochs)")
                samples.append(round(os.getloadavg()[0], 2))
                time.sleep(min(sample_every, max(timeout - elapsed, 0.01)))
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


def run_benchmark(copies=COPIES, *, threads=(), n_images: int = N_IMAGES,
                  batch_size: int = BATCH_SIZE, epochs: int = EPOCHS, timeout: float = TIMEOUT,
                  done=(), data_dir=None, progress=None, on_condition=None) -> list[dict]:
    """Each number of ``copies`` with the framework's threads, then with every number of
    ``threads`` per copy, but the ``(copies, threads)`` pairs ``done``, one after the other on
    one data file; the command has checked the sizes. Each condition goes to ``on_condition``
    as soon as it finishes, so that it is recorded at once; a WorkerError stops the rest."""
    copies = sorted(set(copies))
    plan = [(k, None) for k in copies] + [(k, t) for t in sorted(set(threads)) for k in copies]
    todo = [c for c in plan if c not in set(done)]
    conditions = []
    if not todo:
        return conditions
    with tempfile.TemporaryDirectory(prefix="gpulesson-contention-data-") as folder:
        data = write_data(data_dir or folder, n_images, batch_size)
        for k, t in todo:
            condition = run_condition(data, k, t, n_images=n_images, batch_size=batch_size,
                                      epochs=epochs, timeout=timeout)
            conditions.append(condition)
            if on_condition:
                on_condition(condition)
            if progress:
                times = [epoch_summary(r["epoch_seconds"], n_images)["mean_epoch_seconds"]
                         for r in condition["reports"]]
                progress(f"{k} cop{'y' if k == 1 else 'ies'}, threads {t or 'default'}: epoch "
                         f"{statistics.fmean(times):.1f} s each, load average up to "
                         f"{max(condition['load_samples'], default=0):.2f}")
    return conditions
