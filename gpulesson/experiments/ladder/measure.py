"""Measuring the ladder's Keras rungs: the lesson's CNN from the same initial weights, one rung
after another, in one process start. Keras and JAX are imported when first needed.

Each epoch is timed from its start to the moment the device finished its last step (the
optimizer's step counter read back), before the test split is evaluated: the evaluation is left
out of the epochs and of the clock (``epoch_end_seconds``), which starts before ``fit`` and so
includes compiling. :class:`EpochWatch` keeps that clock and the meters of the timed epochs; the
plain-JAX limit (:mod:`~gpulesson.experiments.ladder.limit`) uses the same watch.
"""

from __future__ import annotations

import threading
import time

from gpulesson.experiments.common import IN_ORDER
from gpulesson.experiments.energy import start_intervals, stop_intervals
from gpulesson.experiments.ladder.records import (
    RUNGS,
    batch_size,
    learning_rate,
    warmup_rate,
    warmup_steps,
)

BUSY_INTERVAL = 0.05  # s between NVML samples: NVML itself averages over up to 1 s


class EpochWatch:
    """One rung's epochs: seconds, the clock at each end (evaluations left out), the test
    accuracy after each, NVML's busy % and the energy of the epochs after the first."""

    def __init__(self, device: str, n_images: int):
        self.device, self.n_images = device, n_images
        self.seconds, self.ends, self.accuracies, self.busy = [], [], [], []
        self.intervals, self._reason = start_intervals(device)
        self._evaluating, self._sampling = 0.0, threading.Event()
        self._stop = threading.Event()
        self._thread = None
        if device == "gpu":
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        self.started = time.perf_counter()

    def _sample(self):
        from gpulesson.lesson.feeding import gpu_utilisation

        while not self._stop.wait(BUSY_INTERVAL):
            if self._sampling.is_set() and (found := gpu_utilisation()) is not None:
                self.busy.append(found[0])

    def begin(self):
        self._begun = time.perf_counter()
        self.intervals.begin()
        if self.seconds:  # the first epoch compiles: not sampled
            self._sampling.set()

    def end(self):
        """Call once the device finished the epoch."""
        now = time.perf_counter()
        self._sampling.clear()
        self.intervals.end()
        self.seconds.append(now - self._begun)
        self.ends.append(now - self.started - self._evaluating)
        self._evaluated = now

    def evaluated(self, accuracy: float):
        self.accuracies.append(float(accuracy))
        self._evaluating += time.perf_counter() - self._evaluated

    def fields(self) -> dict:
        self._stop.set()
        if self._thread:
            self._thread.join()
        energy = stop_intervals(self.intervals, self._reason, warmup=1, images=self.n_images)
        timed = sum(self.seconds[1:])
        watts = (energy["joules"] / energy["seconds"] if energy.get("window") == "phase" else
                 sum(energy["summary"]["samples"]) / timed if energy.get("measured") else None)
        return {"epoch_seconds": self.seconds, "epoch_end_seconds": self.ends,
                "test_accuracies": self.accuracies, "energy": energy, "mean_watts": watts,
                "busy_percent": sum(self.busy) / len(self.busy) if self.busy else None,
                "busy_samples": len(self.busy)}


def schedule(peak: float, steps: int):
    """A Keras learning-rate schedule: :func:`~gpulesson.experiments.ladder.records.warmup_rate`."""
    import keras

    class Warmup(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return warmup_rate(keras.ops.cast(step, "float32"), peak, steps, keras.ops.minimum)

        def get_config(self):
            return {"peak": peak, "steps": steps}

    return Warmup() if steps else peak


def chosen(rung: dict, base: int, n_images: int) -> dict:
    """A rung's batch size, learning rate and warm-up at this data's base batch."""
    batch = batch_size(rung, base)
    return {"batch_size": batch, "learning_rate": learning_rate(batch, base),
            "warmup_steps": warmup_steps(batch, base, n_images)}


def build(rung: dict, options: dict, keras_device: str, seed: int):
    """The lesson's CNN for ``rung`` (its options), compiled as :func:`gpulesson.lesson.compile_cnn`
    does with the rung's precision, learning rate and steps per execution."""
    import keras

    from gpulesson import lesson
    from gpulesson.experiments.feeding.measure import precision_policy

    with keras.device(keras_device), precision_policy(rung["precision"]):
        keras.utils.set_random_seed(seed)
        model = lesson.build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(
                          schedule(options["learning_rate"], options["warmup_steps"])),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=True, steps_per_execution=rung["steps_per_execution"])
    return model


def watch_callback(watch: EpochWatch):
    import keras

    class Watched(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            watch.begin()

        def on_test_begin(self, logs=None):  # fit's validation: the epoch's steps are queued
            keras.ops.convert_to_numpy(self.model.optimizer.iterations)  # waits for them
            watch.end()

        def on_epoch_end(self, epoch, logs=None):
            watch.evaluated(logs["val_accuracy"])

    return Watched()


def feed(name: str, options: dict, *, data: dict, seed: int, epochs: int) -> tuple[dict, list]:
    """fit's data arguments and callbacks of rung ``name``."""
    from gpulesson import lesson

    kind, batch = RUNGS[name]["feed"], options["batch_size"]
    if kind == "grain":
        from gpulesson.experiments.feeding.pipelines import EpochsOf, grain_workers
        from gpulesson.lesson.feeding import grain_blocks

        dataset, steps = grain_blocks(data["path"], epochs, batch, seed=seed,
                                      workers=grain_workers(), stop=data["cut"])
        # Through a PyDataset: with steps_per_execution, Keras would take batches of the next
        # epoch into this one's last call (EpochsOf says how).
        return {"x": EpochsOf(dataset, steps), **IN_ORDER}, []
    if kind in ("stream", "read-ahead"):
        train = lesson.HDF5Batches(data["path"], "train", batch, stop=data["cut"], shuffle=True,
                                   seed=seed, read_ahead=kind == "read-ahead")
        return {"x": train, **IN_ORDER}, [lesson.DataEpoch(train)]
    if kind == "ram":
        return {"x": data["x"], "y": data["y"], "batch_size": batch}, []
    from gpulesson.lesson.feeding import DeviceBatches

    return {"x": DeviceBatches(*data["device"], batch, seed=seed), **IN_ORDER}, []


def train_rung(name: str, *, device: str, keras_device: str, data: dict, base: int,
               epochs: int, seed: int) -> tuple[dict, dict]:
    """Train rung ``name``; ``(chosen options, the watch's fields)``."""
    from gpulesson import lesson

    options = chosen(RUNGS[name], base, data["cut"])
    watch = EpochWatch(device, data["cut"])
    model = build(RUNGS[name], options, keras_device, seed)
    fit, callbacks = feed(name, options, data=data, seed=seed, epochs=epochs)
    test = lesson.HDF5Batches(data["path"], "test", data["test_batch"])
    import keras

    with keras.device(keras_device):
        model.fit(**fit, epochs=epochs, validation_data=test, verbose=0,
                  callbacks=[watch_callback(watch), *callbacks])
    return options, watch.fields()
