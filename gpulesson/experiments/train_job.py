"""Train the lesson's CNN as a batch job that loses at most one epoch when it is stopped.

Its files in one out folder: ``params.json``, ``history.csv``, ``best.keras``, ``model.keras``,
``record.json`` (also appended to ``--results-file``) and ``backup/``, to resume from.
"""

import csv
import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from gpulesson.datasets.settings import DATA_CHOICES, get_settings
from gpulesson.errors import DataFileError
from gpulesson.experiments import cli
from gpulesson.records.results import LESSON_ROOT, RESULTS_DIR

EXPERIMENT = "cnn-batch-job"
RESULTS_FILE = RESULTS_DIR / f"{EXPERIMENT}.jsonl"
JOBS_DIR = RESULTS_DIR / "jobs"
DEFAULT_EPOCHS = 10
DEFAULT_BATCH_SIZE = 256
DEFAULT_LEARNING_RATE = 1e-3  # the one compile_cnn uses
STOP_SIGNALS = (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT)  # Slurm, and Ctrl-C
PARAMS, RECORD, HISTORY = "params.json", "record.json", "history.csv"
BACKUP, BEST, MODEL = "backup", "best.keras", "model.keras"


class Stopped(BaseException):
    """A stop signal; a BaseException so that no library code swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def stop_on_signals() -> None:
    """Turn Slurm's warning signals and Ctrl-C into :class:`Stopped` at the current batch."""
    def stop(signum, frame):
        raise Stopped(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)


def stopped(stop: Stopped, kept: str) -> int:
    """Say what a stopped run keeps and how to resume it; the exit code."""
    print(f"Stopped by {stop}: {kept}; the epoch that was running is lost. Run the same command "
          "again to resume.", flush=True)
    return 128 + stop.signum


def job_id(environ=None) -> str:
    """The Slurm job's id (``<array job>_<task>`` for an array task), or "local"."""
    env = os.environ if environ is None else environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env.get("SLURM_JOB_ID") or "local"


def batch_delay() -> float:
    """Seconds to wait after every batch (``LESSON_BATCH_DELAY``), for the tests that stop a run."""
    return float(os.environ.get("LESSON_BATCH_DELAY") or 0)


def replace_atomically(path: Path, write) -> Path:
    """``write(file)`` into a temporary file, on disk before it is renamed to ``path``: never
    half a file."""
    partial = path.with_name(f".{path.name}.tmp")
    with open(partial, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    partial.replace(path)
    return path


def write_json(path: Path, obj) -> None:
    """Write ``obj`` whole or not at all: record.json marks a run as finished."""
    replace_atomically(path, lambda f: f.write((json.dumps(obj, indent=1) + "\n").encode()))


def refused_or_finished(out: Path, params: dict) -> int | None:
    """None where ``out`` can hold a run of ``params``; else the exit code, after saying why."""
    if (out / PARAMS).exists():
        old = json.loads((out / PARAMS).read_text())["params"]
        if old != params:
            changed = ", ".join(f"{k} {old.get(k)!r} -> {params.get(k)!r}"
                                for k in sorted(set(old) | set(params)) if old.get(k) != params.get(k))
            print(f"Refusing to train: {out} holds a run with other parameters ({changed}). A "
                  "restarted job must resume the same run: use the same arguments, another "
                  f"--out-dir, or delete {out} to start again.", file=sys.stderr)
            return 2
        if (out / RECORD).exists():
            print(f"The run in {out} is finished already ({RECORD} is there): nothing to do.")
            return 0
    elif out.exists() and any(out.iterdir()):
        print(f"Refusing to train: {out} already holds files but no {PARAMS}: it is not a folder "
              "of this command; choose another --out-dir", file=sys.stderr)
        return 2
    return None


def per_replica_batch(what: str):
    """``--per-replica-batch`` of a data-parallel training (:mod:`.torch_ddp`, :mod:`.parallel`)."""
    return cli.option("--per-replica-batch", type=cli.positive_int, default=64,
                      help=f"images per {what} and step (default 64)")


RESUME = "Run it again with the same arguments to resume after the last completed epoch."
LEARNING_RATE = cli.option("--learning-rate", type=cli.positive_float, default=0.01,
                           help="SGD learning rate for a global batch of --base-batch (default 0.01)")
BASE_BATCH = cli.option("--base-batch", type=cli.positive_int, default=64,
                        help="the batch the learning rate is tuned for; the rate is scaled "
                             "linearly to the global batch (default 64)")


def job_device(help: str):
    """``--device`` of a training job: auto (the GPU if one is visible), cpu or gpu."""
    return cli.option("--device", choices=("auto", "cpu", "gpu"), default="auto", help=help)


def start_run(out: Path, params: dict) -> str:
    """Make the out folder and its params.json (once); the run's id."""
    from gpulesson.records.results import new_run_id

    out.mkdir(parents=True, exist_ok=True)
    if not (out / PARAMS).exists():
        write_json(out / PARAMS, {"run_id": new_run_id(), "params": params})
    return json.loads((out / PARAMS).read_text())["run_id"]


COMMAND = cli.Command(
    "train_job", __doc__,
    cli.option("--epochs", type=cli.positive_int, default=DEFAULT_EPOCHS,
               help=f"epochs in all, resumed ones included (default {DEFAULT_EPOCHS})"),
    cli.option("--batch-size", type=cli.positive_int, default=None,
               help=f"images per batch (default {DEFAULT_BATCH_SIZE}; quick mode: 64)"),
    cli.option("--learning-rate", type=cli.positive_float, default=DEFAULT_LEARNING_RATE,
               help=f"Adam's learning rate (default {DEFAULT_LEARNING_RATE:g})"),
    cli.option("--seed", type=int, default=42, help="seed of the initial weights (default 42)"),
    cli.option("--data", default=None, help="cifar10, synthetic (the file the lesson's settings name) or "
               "the path of a lesson HDF5 file (default: LESSON_DATA, else cifar10)"),
    job_device("where to train (default: the GPU if one is visible, else the CPU)"),
    cli.option("--out-dir", type=Path, default=None,
               help="folder for this run's files (default results/jobs/<job id>/)"),
    cli.option("--results-file", type=Path, default=RESULTS_FILE,
               help=f"results file the run's record is appended to (default {RESULTS_FILE})"),
    epilog=RESUME)


def read_history(path) -> list[dict]:
    """The rows of a run's ``history.csv``, one per epoch (of an epoch trained again after a
    stop before its backup, the later row)."""
    by_epoch = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            epoch = int(row.pop("epoch"))
            by_epoch[epoch] = {"epoch": epoch, **{k: float(v) for k, v in row.items()}}
    return [by_epoch[e] for e in sorted(by_epoch)]


def _backed_up_epochs(out: Path) -> int | None:
    metadata = out / BACKUP / "training_metadata.json"
    return int(json.loads(metadata.read_text()).get("epoch", 0)) if metadata.exists() else None


def _callbacks(out: Path, epochs: int, learning_rate: float, delay: float):
    """The batch job's Keras callbacks, in the order their epoch ends must run."""
    import keras

    class EpochLog(keras.callbacks.Callback):
        """Logs each epoch's start; adds ``epoch_seconds`` to the logs, for history.csv."""

        first = True

        def on_epoch_begin(self, epoch, logs=None):
            if self.first and epoch > 0:
                print(f"Resuming from the backup after epoch {epoch}.", flush=True)
            self.first = False
            print(f"Epoch {epoch + 1}/{epochs} started at {time.strftime('%H:%M:%S')}.", flush=True)
            self.start = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            if delay:
                time.sleep(delay)

        def on_epoch_end(self, epoch, logs=None):
            logs["epoch_seconds"] = time.perf_counter() - self.start

    history = read_history(out / HISTORY) if (out / HISTORY).exists() else []
    return [
        keras.callbacks.LearningRateScheduler(lambda epoch, lr: learning_rate),
        EpochLog(),
        keras.callbacks.CSVLogger(str(out / HISTORY), append=True),
        # Saves only an epoch better than all before, those of earlier starts too.
        keras.callbacks.ModelCheckpoint(str(out / BEST), monitor="val_loss", save_best_only=True,
                                        initial_value_threshold=min(
                                            (row["val_loss"] for row in history), default=None)),
        # Last: once the backup says "epoch k done", the files above have epoch k.
        keras.callbacks.BackupAndRestore(str(out / BACKUP), save_freq="epoch", delete_checkpoint=False),
    ]


def main(argv=None) -> int:
    parser = COMMAND.parser()
    args = parser.parse_args(argv)
    # Before any training: the record would be lost at the end; Keras must be importable.
    from gpulesson.errors import cannot_write_file
    from gpulesson.machine.backends import missing_backend_message

    if problem := cannot_write_file(args.results_file):
        parser.error(f"argument --results-file: {problem}")
    if problem := missing_backend_message():  # before Keras is imported
        parser.exit(2, f"{parser.prog}: error: {problem}\n")
    from gpulesson.datasets.hdf5 import validate_hdf5

    settings = get_settings()
    if args.data in DATA_CHOICES:
        settings = dataclasses.replace(settings, data=args.data)  # keeps every other setting
    try:
        info = validate_hdf5(settings.hdf5_path if args.data in (None, *DATA_CHOICES)
                             else Path(args.data).expanduser())
    except DataFileError as exc:
        print(f"No usable data file. {exc}", file=sys.stderr)
        return 2
    path = Path(info.path).resolve()
    batch_size = args.batch_size or get_settings().batch_size(DEFAULT_BATCH_SIZE)
    params = {"epochs": args.epochs, "batch_size": batch_size, "learning_rate": args.learning_rate,
              "seed": args.seed, "data": str(path), "device": args.device}
    out = (args.out_dir or JOBS_DIR / job_id()).expanduser().resolve()
    if (code := refused_or_finished(out, params)) is not None:
        return code

    # Keras is imported only now: the checks above answer at once.
    from gpulesson import lesson
    from gpulesson.machine.devices import keras_device

    if args.device == "gpu" and not keras_device()["gpu_count"]:
        print("No GPU is visible to Keras: use --device cpu, or run on a GPU node.", file=sys.stderr)
        return 2
    try:
        batches = lesson.split_batches(path, batch_size)
    except ValueError as exc:
        print(f"Cannot split {path} into batches: {exc}", file=sys.stderr)
        return 2
    run_id = start_run(out, params)
    stop_on_signals()
    try:
        return _train(args, params, batches, info, out, run_id)
    except Stopped as stop:
        # A restart resumes from the backup, not history.csv: a stop between an epoch's row
        # and its backup leaves one row more than the backup holds.
        done = _backed_up_epochs(out) or 0
        return stopped(stop, f"the backup in {out / BACKUP} holds the {done} completed epoch(s)"
                       if done else "no epoch's backup was written yet")


def _train(args, params, batches, info, out: Path, run_id: str) -> int:
    import keras

    from gpulesson import lesson
    from gpulesson.experiments.cnn import run_record
    from gpulesson.machine.devices import keras_device
    from gpulesson.records.results import append_record

    device = "gpu:0" if keras_device()["gpu_count"] and args.device != "cpu" else "cpu"
    print(f"Data: {info.label} ({params['data']}); {batches[0].n_images:,} training images, "
          f"batch size {params['batch_size']}, learning rate {params['learning_rate']:g}, "
          f"{params['epochs']} epochs on {device}; files in {out}", flush=True)
    print("A backup exists: resuming." if (out / BACKUP).exists()
          else "No backup: starting at epoch 1.", flush=True)
    if (done := _backed_up_epochs(out)) is not None:
        # BackupAndRestore resumes at Keras' epoch number, and the generator's order follows
        # that number (lesson.DataEpoch): the batches are those of an uninterrupted run.
        print(f"The data order goes on from epoch {done + 1}.", flush=True)
    keras.utils.set_random_seed(args.seed)
    initial_weights = lesson.build_cnn().get_weights()
    callbacks = _callbacks(out, params["epochs"], params["learning_rate"], batch_delay())
    run = lesson.train_on(device, initial_weights, *batches, params["epochs"], verbose=2, callbacks=callbacks)
    run["model"].save(out / MODEL)

    # The whole run's epochs, over all starts, come from history.csv.
    history = read_history(out / HISTORY)
    timer = lesson.EpochTimer(samples_per_epoch=batches[0].n_images)
    timer.epoch_seconds = [row["epoch_seconds"] for row in history]
    run["timing"] = timer.summary()
    run["history"] = {key: [row[key] for row in history]
                      for key in history[0] if key not in ("epoch", "epoch_seconds")}
    record = run_record(run, data=info.source, run_id=run_id, batches=batches,
                        source="gpulesson.experiments.train_job")
    record.update(
        experiment=EXPERIMENT, learning_rate=params["learning_rate"], seed=params["seed"],
        best_val_accuracy=max(run["history"].get("val_accuracy") or [None]),
        best_val_loss=min(run["history"]["val_loss"]),
        job_id=os.environ.get("SLURM_JOB_ID"), array_job_id=os.environ.get("SLURM_ARRAY_JOB_ID"),
        array_task_id=os.environ.get("SLURM_ARRAY_TASK_ID"),
        restart_count=int(os.environ.get("SLURM_RESTART_COUNT") or 0),
        out_dir=str(out.relative_to(LESSON_ROOT) if out.is_relative_to(LESSON_ROOT) else out))
    write_json(out / RECORD, record)
    append_record(args.results_file, record)
    shutil.rmtree(out / BACKUP, ignore_errors=True)
    print(f"Finished {len(history)} epochs: test accuracy {run['test_accuracy']:.3f}, best "
          f"validation accuracy {record['best_val_accuracy']:.3f}. Record appended to "
          f"{args.results_file}; models in {out}.", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
