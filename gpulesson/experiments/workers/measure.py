"""Measuring Grain's worker processes: the ceiling's do-nothing model, so that an epoch's time
is what the input path costs, fed the stored blocks as they are or augmented, by no worker or by
N processes; each epoch split where its time goes (:class:`EpochSplitter`)."""

import gc
import os
import statistics
import tempfile
import time
from functools import partial
from importlib.metadata import version

import keras
import numpy as np

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling.measure import rule, synthetic_file, timed_fit
from gpulesson.experiments.workers.page import METHOD, RECORDS, WORK
from gpulesson.lesson import HDF5Batches
from gpulesson.lesson.feeding import flip_crop, grain_blocks
from gpulesson.machine.devices import keras_device_name
from gpulesson.machine.timing import Budget, available_cores, synced_epoch_timer
from gpulesson.records.summaries import fit_progress

COST_BLOCKS = 20  # blocks read and augmented alone for block_costs


def default_workers(cores: int) -> list[int]:
    """0, then 1, 2, 4, ... up to the cores this process may use, at most 8."""
    return [0, *(n for n in (1, 2, 4, 8) if n <= cores)]


def block_costs(path, batch_size: int, *, seed: int = 0) -> dict:
    """Median ms to read one stored block and to augment one, alone in this process: what each
    worker has to do."""
    blocks, rng = HDF5Batches(path, "train", batch_size, window=1), np.random.default_rng(seed)
    read, work = [], []
    for index in range(min(COST_BLOCKS, len(blocks))):
        started = time.perf_counter()
        block = blocks[index]
        read.append(time.perf_counter() - started)
        started = time.perf_counter()
        flip_crop(block, rng)
        work.append(time.perf_counter() - started)
    return {"read_ms": 1e3 * statistics.median(read), "work_ms": 1e3 * statistics.median(work)}


class EpochSplitter(keras.callbacks.Callback):
    """Where each epoch's seconds go, read on ``clock``: to its first batch's end, to its last
    batch's end, after it (the end of the data) and its longest gap between batches."""

    def __init__(self, clock=time.perf_counter):
        super().__init__()
        self.clock, self.splits, self.ended = clock, [], None

    def on_epoch_begin(self, epoch, logs=None):
        self._begin = self._last = self.clock()
        self._first, self._gap, self._gap_at, self._batch = None, 0.0, None, 0

    def on_train_batch_end(self, batch, logs=None):
        now = self.clock()
        if self._first is None:
            self._first = now - self._begin
        elif now - self._last > self._gap:
            self._gap, self._gap_at = now - self._last, self._batch
        self._last, self._batch = now, self._batch + 1

    def on_epoch_end(self, epoch, logs=None):
        self.ended = self.clock()
        self.splits.append({"first_batch": self._first or 0.0,
                            "to_last_batch": self._last - self._begin,
                            "after_last_batch": self.ended - self._last,
                            "longest_gap": self._gap, "longest_gap_at": self._gap_at,
                            "batches": self._batch})


def _fit(model, path, *, work: str, workers: int, batch_size: int, warmup: int,
         repeats: int) -> tuple[list[float], dict]:
    """Every epoch's seconds of one fit fed by ``grain_blocks``, warm-up first; each epoch's split,
    and the seconds until ``fit`` returned (``exit_seconds``) and to drop the dataset."""
    epochs = warmup + repeats
    dataset, steps = grain_blocks(path, epochs, batch_size, seed=1, workers=workers,
                                  augment=flip_crop if work == "augment" else None)
    budget, splitter = Budget(warmup, repeats), EpochSplitter()
    # the splitter first: its epoch ends before the timer waits for the device
    model.fit(dataset, epochs=epochs, steps_per_epoch=steps, shuffle=False, verbose=0,
              callbacks=[splitter, synced_epoch_timer(budget)])
    returned = time.perf_counter()
    del dataset
    gc.collect()  # the workers stop here at the latest, before the next condition starts
    return budget.seconds, {"epoch_splits": splitter.splits,
                            "exit_seconds": returned - splitter.ended,
                            "teardown_seconds": time.perf_counter() - returned}


def measure(args, *, run_id: str, done):
    """Yield a record of every ``--works`` x ``--workers`` (default :func:`default_workers`) on
    each device with the current Keras backend, but the conditions in ``done``."""
    devices, size = cli.devices_here(args.devices), rule(args)
    batch_size, warmup, repeats = size["batch_size"], size["warmup"], size["repeats"]
    backend = keras.backend.backend()
    counts = default_workers(available_cores()) if args.workers is None else sorted(set(args.workers))
    with tempfile.TemporaryDirectory(prefix="gpulesson-workers-") as folder:
        path = synthetic_file(folder, size["n_images"], batch_size)[0]
        costs = block_costs(path, batch_size)
        for device in devices:
            keras_device = keras_device_name(device)
            for work in args.works or WORK:
                for n in counts:
                    if (backend, device, work, n, batch_size) in done:
                        continue
                    (seconds, split), extra = timed_fit(keras_device, partial(
                        _fit, path=path, work=work, workers=n, batch_size=batch_size,
                        warmup=warmup, repeats=repeats))
                    record = RECORDS.epoch_record(
                        seconds, warmup=warmup, run_id=run_id, device=device,
                        n_images=size["n_images"], method={"method": METHOD},
                        own={"work": work, "work_label": WORK[work], "workers": n,
                             "batch_size": batch_size},
                        extra={**costs, **split, **extra, "grain": version("grain"),
                               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")})
                    print(f"{backend} {device} {work}, {n} worker(s): "
                          + fit_progress(size["n_images"], record["summary"]), flush=True)
                    yield record
