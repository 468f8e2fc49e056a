"""k copies of the lesson's CNN training at once, each a process of its own (:func:`worker`)
that sees no GPU; a worker that fails or runs past its time stops its condition unrecorded."""

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gpulesson.experiments import cli, contention
from gpulesson.machine.timing import available_cores
from gpulesson.records.recordset import check_earlier, split_epochs
from gpulesson.records.results import LESSON_ROOT
from gpulesson.records.summaries import summarise

WORKER = "gpulesson.experiments.contention.measure"
CLASS_NAMES = tuple(f"class {i}" for i in range(10))  # labels only: speed does not need names
# CUDA hidden for TensorFlow and PyTorch; JAX's CPU backend only (else it claims the GPU's memory).
GPU_HIDDEN = {"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
# Keras backends whose framework takes a CPU thread count per process, and how (JAX has none).
THREAD_SETTINGS = {"tensorflow": "tf.config.threading intra- and inter-op threads",
                   "torch": "torch.set_num_threads"}


class WorkerError(RuntimeError):
    """A training process failed or ran past its time; the message says which and why."""


def write_data(directory, n_images: int, batch_size: int) -> Path:
    """A lesson data file of ``n_images`` synthetic training images (chunks of a batch)."""
    from gpulesson.datasets.hdf5 import write_hdf5
    from gpulesson.datasets.synthetic import make_synthetic

    (x, y), test = make_synthetic(n_images, 16, seed=0, progress=False)
    path = Path(directory) / f"contention-{n_images}-{batch_size}.h5"
    return write_hdf5(path, (x, y), test, source="synthetic", class_names=CLASS_NAMES,
                      chunk_rows=batch_size, progress=False)


def _command(data, *, n_images, batch_size, epochs, threads, seed=42) -> list[str]:
    return [sys.executable, "-m", WORKER, str(data), "--n-images", str(n_images),
            "--batch-size", str(batch_size), "--epochs", str(epochs), "--seed", str(seed),
            *(("--threads", str(threads)) if threads else ())]


def keras_backend() -> str:
    """The Keras backend the workers inherit."""
    import keras

    return keras.backend.backend()


def threads_skipped(backend: str, threads) -> str | None:
    """Why the conditions with ``threads`` per copy are not run on ``backend`` (None: they are)."""
    threads = sorted(set(threads))
    if not threads or backend in THREAD_SETTINGS:
        return None
    return (f"the condition(s) with {' and '.join(map(str, threads))} thread(s) per copy were "
            f"skipped: Keras on {backend} has no per-process CPU thread setting (XLA's CPU "
            f"threads follow the cores); record them with KERAS_BACKEND=torch or tensorflow "
            f"({', '.join(f'{b}: {how}' for b, how in THREAD_SETTINGS.items())})")


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
                  batch_size: int, epochs: int, timeout: float = contention.TIMEOUT) -> dict:
    """Start ``copies`` trainings together and wait for all: their reports, the load average
    before and (each second) while they ran, the wall time."""
    command = _command(data, n_images=n_images, batch_size=batch_size, epochs=epochs, threads=threads)
    # The workers import this lesson's gpulesson, wherever they start, and see no GPU.
    env = {**os.environ, **GPU_HIDDEN}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LESSON_ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="gpulesson-contention-") as folder:
        files = [(Path(folder) / f"copy-{i}.out", Path(folder) / f"copy-{i}.err") for i in range(copies)]
        load_before = os.getloadavg()[0]
        started, processes = time.perf_counter(), []
        try:
            for out, err in files:
                with open(out, "wb") as o, open(err, "wb") as e:
                    processes.append(subprocess.Popen(command, stdout=o, stderr=e, env=env))
            samples = []
            while any(p.poll() is None for p in processes):
                elapsed = time.perf_counter() - started
                if elapsed > timeout:
                    raise WorkerError(f"{copies} training copies ran past the limit of {timeout:g} s "
                                      "and were stopped: give more time (--timeout), fewer images "
                                      "(--n-images) or fewer epochs (--epochs)")
                samples.append(round(os.getloadavg()[0], 2))
                time.sleep(min(1.0, max(timeout - elapsed, 0.01)))
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            for process in processes:
                process.wait()
        wall = time.perf_counter() - started
        for copy, (process, (_, err)) in enumerate(zip(processes, files, strict=True), start=1):
            if process.returncode != 0:
                raise WorkerError(f"training copy {copy} of {copies} failed (exit status "
                                  f"{process.returncode}); its error output:\n{_tail(err)}")
        reports = [_report(out, err, copy) for copy, (out, err) in enumerate(files, start=1)]
    return {"copies": copies, "threads": threads, "reports": reports, "gpu_hidden": True,
            "load_before": round(load_before, 2), "load_samples": samples, "wall_seconds": wall}


def copy_epochs(epoch_seconds, n_images: int) -> dict:
    """One copy's epochs: the first, the mean of the later ones (else the first), images/s."""
    first, later = epoch_seconds[0], epoch_seconds[1:]
    mean = statistics.fmean(later) if later else first
    return {"epoch_seconds": list(epoch_seconds), "first_epoch_seconds": first,
            "later_epoch_seconds": mean if later else None, "mean_epoch_seconds": mean,
            "images_per_second": n_images / mean,
            "first_epoch_fastest": bool(later) and first < min(later)}


def make_record(condition, *, run_id: str, n_images: int, batch_size: int, epochs: int,
                environment: dict | None = None, baseline: float | None = None, skipped=()) -> dict:
    """The record of one condition; ``slowdown``: its mean epoch over ``baseline``, one copy
    alone's; its summary: every copy's epochs after its warm-up."""
    reports, samples = condition["reports"], condition["load_samples"]
    copies = [copy_epochs(r["epoch_seconds"], n_images) for r in reports]
    warmup, timed = ([s for c in copies for s in split_epochs(c["epoch_seconds"])[i]] for i in (0, 1))
    starts, ends = [r["fit_start"] for r in reports], [r["fit_end"] for r in reports]
    mean = statistics.fmean(c["mean_epoch_seconds"] for c in copies)
    baseline = mean if (condition["copies"], condition["threads"]) == (1, None) else baseline
    seen = [r["devices_seen"]["gpu_count"] for r in reports if "devices_seen" in r]
    return contention.RECORDS.record(
        environment=environment, run_id=run_id,
        source="gpulesson.experiments.contention", device="CPU", device_kind="cpu",
        part="copies", watched=None, copies=condition["copies"], threads=condition["threads"],
        # None where the backend has no per-process thread setting (JAX).
        framework_threads=reports[0]["framework_threads"],
        # The trainings ran with every GPU hidden; the GPUs their framework still saw (0).
        gpu_hidden=condition.get("gpu_hidden"), gpus_seen=max(seen) if seen else None,
        skipped_conditions=list(skipped), n_images=n_images, batch_size=batch_size,
        epochs=epochs, per_copy=copies, summary=summarise(timed, warmup) if timed else None,
        mean_epoch_seconds=mean,
        first_epoch_seconds=statistics.fmean(c["first_epoch_seconds"] for c in copies),
        images_per_second=statistics.fmean(c["images_per_second"] for c in copies),
        images_per_second_total=sum(c["images_per_second"] for c in copies),
        slowdown=mean / baseline if baseline else None,
        first_epoch_fastest=sum(c["first_epoch_fastest"] for c in copies),
        # Seconds between the first and the last copy's start of training.
        start_spread_seconds=max(starts) - min(starts),
        overlap_seconds=max(0.0, min(ends) - max(starts)),
        load_before=condition["load_before"], load_samples=samples, load_max=max(samples, default=None),
        load_mean=statistics.fmean(samples) if samples else None,
        wall_seconds=condition["wall_seconds"], cpu_cores_available=available_cores(),
        cpu_cores_machine=os.cpu_count())


def measure(args, *, run_id, done):
    """Each number of copies with the framework's threads, then with every ``--cpu-threads``
    per copy, but the conditions ``done``, on one data file; a WorkerError stops the rest."""
    say = functools.partial(print, flush=True)
    size = {"n_images": args.n_images, "batch_size": args.batch_size, "epochs": args.epochs}
    threads, skipped = list(args.cpu_threads), []
    note = threads_skipped(keras_backend(), threads) if threads else None
    if note:
        say(f"Note: {note}.")
        threads, skipped = [], [note]
    # The (copies, threads) recorded already; a former watched part's records do not count.
    done = {(k, t) for k, t, watched in done if watched is None}
    earlier = contention.RECORDS.read(args.out, run_id=run_id, part="copies") if done else []
    try:
        check_earlier(earlier, **size)
    except ValueError as exc:
        cli.refuse(f"error: {exc}. Nothing was measured or written.")
    alone = contention.RECORDS.find(earlier, copies=1, threads=None)
    baseline = alone["mean_epoch_seconds"] if alone else None
    copies = sorted(set(args.copies))
    say(f"Run {run_id}: {size['n_images']:,} images, batch {size['batch_size']}, "
        f"{size['epochs']} epoch(s) per copy; copies {' '.join(map(str, copies))}"
        + "".join(f"; then {t} thread(s) each" for t in sorted(set(threads)))
        + (f"; going on: {len(done)} condition(s) recorded already" if done else ""))
    plan = [(k, None) for k in copies] + [(k, t) for t in sorted(set(threads)) for k in copies]
    todo = [c for c in plan if c not in done]
    if not todo:
        return
    with tempfile.TemporaryDirectory(prefix="gpulesson-contention-data-") as folder:
        data = write_data(args.data_dir or folder, size["n_images"], size["batch_size"])
        for made, (k, t) in enumerate(todo):
            try:
                condition = run_condition(data, k, t, timeout=args.timeout, **size)
            except WorkerError as exc:
                kept = (f" The {made} condition(s) finished before it are recorded; go on "
                        f"with --run-id {run_id}." if made else "")
                print(f"{exc}\nNothing was written to {args.out} for that condition.{kept}", file=sys.stderr)
                raise SystemExit(1) from None
            record = make_record(condition, run_id=run_id, baseline=baseline, skipped=skipped, **size)
            baseline = record["mean_epoch_seconds"] if (k, t) == (1, None) else baseline
            yield record
            say(f"{k} cop{'y' if k == 1 else 'ies'}, threads {t or 'default'}: epoch "
                f"{record['mean_epoch_seconds']:.1f} s each, load average up to "
                f"{max(condition['load_samples'], default=0):.2f}")


def worker(argv=None) -> int:
    """One training of a condition, in a process of its own: the lesson's CNN, generator and
    epoch timer on the first ``--n-images`` of a data file, reported as one JSON line."""
    parser = argparse.ArgumentParser(prog=f"python -m {WORKER}", description=worker.__doc__.splitlines()[0])
    parser.add_argument("data", help="lesson HDF5 data file")
    parser.add_argument("--n-images", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--threads", type=int, default=None, help="framework CPU threads (default: "
                        "the cores this process may use); TensorFlow and PyTorch only")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    import keras

    from gpulesson.machine.timing import set_cpu_threads

    backend = keras.backend.backend()
    threads = None
    if backend in THREAD_SETTINGS:
        # Before the framework runs anything: TensorFlow fixes its threads at its first operation.
        threads = set_cpu_threads(args.threads)
    elif args.threads is not None:
        parser.error(f"--threads: Keras on {backend} has no per-process CPU thread setting")
    from gpulesson import lesson
    from gpulesson.machine import devices

    train = lesson.HDF5Batches(args.data, "train", args.batch_size, stop=args.n_images,
                               shuffle=True, seed=1)
    keras.utils.set_random_seed(args.seed)
    model = lesson.compile_cnn(lesson.build_cnn())
    timer = lesson.EpochTimer(samples_per_epoch=train.n_images)
    started = time.time()
    model.fit(train, epochs=args.epochs, shuffle=False,
              callbacks=[lesson.DataEpoch(train), timer], verbose=0)
    ended = time.time()
    seen = devices.keras_device()  # after fit: what the framework trained with could see
    print(json.dumps({"epoch_seconds": timer.epoch_seconds, "framework_threads": threads,
                      "devices_seen": {"device": seen["device"], "gpu_count": seen["gpu_count"]},
                      "fit_start": started, "fit_end": ended}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(worker())
