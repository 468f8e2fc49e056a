"""Measuring the ladder in one process start: the lesson's CNN from the same initial weights,
one rung after another (imported by a process start only). Each epoch is timed until the
device finished its last step, before the test split is evaluated: the evaluations are left out
of the epochs and of the clock (``epoch_end_seconds``), which includes compiling."""

import math
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import keras
from jax.experimental.compilation_cache import compilation_cache

from gpulesson import lesson
from gpulesson.datasets.hdf5 import read_hdf5, validate_hdf5
from gpulesson.datasets.load import prepare
from gpulesson.datasets.settings import get_settings
from gpulesson.experiments.cli import devices_here
from gpulesson.experiments.feeding.measure import precision_policy
from gpulesson.experiments.feeding.pipelines import EpochsOf, grain_workers, to_device
from gpulesson.experiments.ladder import LARGE_FACTOR, RECORDS, RUNGS, rungs_of
from gpulesson.experiments.ladder.page import limit_options
from gpulesson.lesson.feeding import DeviceBatches, GpuWatch, grain_blocks
from gpulesson.machine import flops
from gpulesson.machine.devices import keras_device, keras_device_name
from gpulesson.machine.timing import BusyMeter
from gpulesson.records.energy import start_intervals, stop_intervals
from gpulesson.records.pagewords import IN_ORDER, ORDER_FIELD
from gpulesson.records.recordset import epochs_summary, split_epochs
from gpulesson.records.results import append_record
from gpulesson.records.summaries import SUMMARY_KEY

BASE_LEARNING_RATE = 1e-3
WARMUP_EPOCHS = 2  # a scaled learning rate is reached linearly over the first two epochs' steps
EPOCHS = {"base": 6, "large": 12}  # the default's 6 epochs; 4 times fewer updates need more
QUICK_EPOCHS = {"base": 3, "large": 4}
BUSY_INTERVAL = 0.05  # s between NVML samples: NVML itself averages over up to 1 s


def measurement_record(*, run_id: str, rung: str, start: int, device: str, watched: dict,
                       chosen: dict, n_images: int, data: str, extra: dict) -> dict:
    """One rung in one process start; ``watched``: the epochs' fields (:class:`EpochWatch`)."""
    epochs = epochs_summary(watched["epoch_seconds"])  # the first compiles: the warm-up
    return RECORDS.record(data=data, **{
        "run_id": run_id, "source": "gpulesson.experiments.ladder", "rung": rung, "start": start,
        "device_kind": device, "keras_device": keras_device_name(device), **RUNGS[rung], **chosen,
        "n_images": n_images, **watched, "median_epoch_seconds": epochs["median"],
        "achieved_tflops": flops.tflops(flops.training_flops_per_image(), n_images, epochs["median"]),
        "test_accuracy": watched["test_accuracies"][-1],
        SUMMARY_KEY: epochs, ORDER_FIELD: False, **extra})


class EpochWatch(keras.callbacks.Callback):
    """One rung's epochs (fit's, or the limit's calling the same methods): seconds, the clock at
    each end, the test accuracy after each, NVML's busy % and the energy of the epochs after
    the first."""

    def __init__(self, device: str, n_images: int):
        super().__init__()
        self.n_images, self.seconds, self.ends, self.accuracies = n_images, [], [], []
        self.intervals, self._reason = start_intervals(device)
        self.busy = GpuWatch(BUSY_INTERVAL) if device == "gpu" else None  # samples NVML's busy %
        self._evaluating, self.started = 0.0, time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        self._begun = time.perf_counter()
        self.intervals.begin()
        if self.busy and self.seconds:  # the first epoch compiles: not sampled
            self.busy.on_train_begin()

    def end(self):
        """Call once the device finished the epoch."""
        now = time.perf_counter()
        if self.busy and self.seconds:
            self.busy.on_train_end()
        self.intervals.end()
        self.seconds.append(now - self._begun)
        self.ends.append(now - self.started - self._evaluating)
        self._evaluated = now

    def on_test_begin(self, logs=None):  # fit's validation: the epoch's steps are queued
        keras.ops.convert_to_numpy(self.model.optimizer.iterations)  # waits for them
        self.end()

    def on_epoch_end(self, epoch, logs=None):  # after the test split's evaluation
        self.accuracies.append(float(logs["val_accuracy"]))
        self._evaluating += time.perf_counter() - self._evaluated

    def fields(self) -> dict:
        busy = self.busy.samples if self.busy else []
        energy = stop_intervals(self.intervals, self._reason, warmup=1, images=self.n_images)
        timed = sum(split_epochs(self.seconds)[1])  # the warm-up apart, as the summary has it
        watts = (energy["joules"] / energy["seconds"] if energy.get("window") == "phase" else
                 sum(energy["summary"]["samples"]) / timed if energy.get("measured") else None)
        return {"epoch_seconds": self.seconds, "epoch_end_seconds": self.ends,
                "test_accuracies": self.accuracies, "energy": energy, "mean_watts": watts,
                "busy_percent": sum(busy) / len(busy) if busy else None, "busy_samples": len(busy)}


def schedule(peak: float, steps: int):
    """The rate at optimizer step ``step``: linear from ``peak / steps`` to ``peak`` over
    ``steps`` steps, then ``peak``, as a Keras schedule; ``peak`` itself without steps."""
    class Warmup(keras.optimizers.schedules.LearningRateSchedule):
        def __call__(self, step):
            return peak * keras.ops.minimum(1.0, (keras.ops.cast(step, "float32") + 1) / steps)

    return Warmup() if steps else peak


def chosen(rung: dict, base: int, n_images: int) -> dict:
    """A rung's batch size, learning rate (the linear scaling rule: times the batch's factor)
    and warm-up (:data:`WARMUP_EPOCHS` epochs' steps; none at the base batch)."""
    batch = base * (LARGE_FACTOR if rung["batch"] == "large" else 1)
    return {"batch_size": batch, "learning_rate": BASE_LEARNING_RATE * batch / base,
            "warmup_steps": 0 if batch == base else WARMUP_EPOCHS * math.ceil(n_images / batch)}


def build(rung: dict, options: dict, keras_device: str, seed: int):
    """The lesson's CNN compiled as ``lesson.compile_cnn`` does, with the rung's settings."""
    with keras.device(keras_device), precision_policy(rung["precision"]):
        keras.utils.set_random_seed(seed)
        model = lesson.build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(
                          schedule(options["learning_rate"], options["warmup_steps"])),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=True, steps_per_execution=rung["steps_per_execution"])
    return model


def feed(name: str, options: dict, *, data: dict, seed: int, epochs: int) -> tuple[dict, list]:
    """fit's data arguments and callbacks of rung ``name``."""
    kind, batch = RUNGS[name]["feed"], options["batch_size"]
    if kind == "grain":
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
    return {"x": DeviceBatches(*data["device"], batch, seed=seed), **IN_ORDER}, []


def train_rung(name: str, rung: dict, *, device: str, keras_device: str, data: dict, base: int,
               epochs: int, seed: int) -> tuple[dict, dict]:
    """``(chosen options, the watch's fields)`` of rung ``name`` trained with options ``rung``."""
    options, watch = chosen(rung, base, data["cut"]), EpochWatch(device, data["cut"])
    model = build(rung, options, keras_device, seed)
    if rung["part"] == "limit":
        options.update(precision=rung["precision"], batch=rung["batch"])
        method = train_limit(watch=watch, model=model, options=options, data=data,
                             epochs=epochs, seed=seed)
        return options, {**watch.fields(), "limit_method": method}
    fit, callbacks = feed(name, options, data=data, seed=seed, epochs=epochs)
    test = lesson.HDF5Batches(data["path"], "test", data["test_batch"])
    with keras.device(keras_device):
        model.fit(**fit, epochs=epochs, validation_data=test, verbose=0,
                  callbacks=[watch, *callbacks])
    return options, watch.fields()


# --- the card's limit: the same model, weights and optimizer, one compiled call an epoch in plain
# JAX (jax.lax.scan over Keras's pure stateless_call and stateless_apply), full batches only.

def loss_function(model, training: bool = True):
    """``loss(trainable, non_trainable, x, y) -> (loss, non_trainable)``, as ``fit`` minimises."""
    cross_entropy = keras.losses.SparseCategoricalCrossentropy()

    def loss(trainable, non_trainable, x, y):
        out, non_trainable = model.stateless_call(trainable, non_trainable, x, training=training)
        return cross_entropy(y, out), non_trainable

    return loss


def epoch_function(model, optimizer, batch: int, steps: int, scan: bool = True):
    """A compiled ``epoch(state, x, y, key) -> (state, mean loss)``: ``steps`` batches of a new
    order in one ``jax.lax.scan``; with ``scan=False`` a Python loop of a compiled step, as
    XLA:CPU runs convolutions in a scan about 50x slower (the records say which)."""
    grad = jax.value_and_grad(loss_function(model), has_aux=True)

    def step(state, rows, x, y):
        trainable, non_trainable, slots = state
        (loss, non_trainable), grads = grad(trainable, non_trainable, x[rows], y[rows])
        trainable, slots = optimizer.stateless_apply(slots, grads, trainable)
        return (trainable, non_trainable, slots), loss

    def order(key, n):
        return jax.random.permutation(key, n)[:steps * batch].reshape(steps, batch)

    def epoch(state, x, y, key):
        state, losses = jax.lax.scan(lambda s, rows: step(s, rows, x, y), state,
                                     order(key, len(x)))
        return state, losses.mean()

    if scan:
        return jax.jit(epoch, donate_argnums=0)
    one, rows_of = jax.jit(step, donate_argnums=0), jax.jit(order, static_argnums=1)

    def looped(state, x, y, key):
        losses = []
        for rows in rows_of(key, len(x)):
            state, loss = one(state, rows, x, y)
            losses.append(loss)
        return state, sum(losses) / len(losses)

    return looped


def train_limit(*, watch, model, options: dict, data: dict, epochs: int, seed: int):
    """Train ``model`` for ``epochs`` epochs timed by ``watch``; "scan", or "loop" on a CPU."""
    @jax.jit
    def accuracy(state, x, y):  # over the test images, in batches of the test batch
        trainable, non_trainable, _ = state
        whole = len(x) // data["test_batch"] * data["test_batch"]

        def one(_, rows):
            out, _ = model.stateless_call(trainable, non_trainable, x[rows], training=False)
            return None, jnp.sum(jnp.argmax(out, axis=-1) == y[rows])

        _, right = jax.lax.scan(one, None, jnp.arange(whole).reshape(-1, data["test_batch"]))
        return right.sum() / whole

    (x, y), batch, optimizer = data["device"], options["batch_size"], model.optimizer
    optimizer.build(model.trainable_variables)
    state = tuple([v.value for v in variables] for variables in (
        model.trainable_variables, model.non_trainable_variables, optimizer.variables))
    scan = jax.default_backend() != "cpu"
    run = epoch_function(model, optimizer, batch, len(x) // batch, scan=scan)
    key = jax.random.key(seed)
    for epoch in range(epochs):
        key, draw = jax.random.split(key)
        watch.on_epoch_begin(epoch)
        state, loss = run(state, x, y, draw)
        float(loss)  # waits for the epoch's last step
        watch.end()
        watch.on_epoch_end(epoch, {"val_accuracy": accuracy(state, *data["test_device"])})
    return "scan" if scan else "loop"


def _cache_files(folder: Path | None) -> int:
    return sum(len(files) for _, _, files in os.walk(folder)) if folder and folder.is_dir() else 0


def one_start(args) -> int:
    """One process start: the data read once, then a record of each rung of the part that this
    start lacks; 1 if a rung failed."""
    if keras.backend.backend() != "jax":
        raise SystemExit("the ladder runs on JAX: set KERAS_BACKEND=jax")
    config = get_settings()
    devices = devices_here(args.devices or (["gpu"] if keras_device()["gpu_count"] else ["cpu"]))
    path = prepare(config)
    n_rows = validate_hdf5(path).n_train
    cut = n_rows - n_rows // 10  # as lesson.split_batches: the last tenth validates
    base = config.batch_size(256)
    earlier = RECORDS.read(args.out, run_id=args.run_id)
    done = {RECORDS.key(r) for r in earlier}
    (x, y), (test_x, test_y) = read_hdf5(path, "train", stop=cut), read_hdf5(path, "test")
    y, test, failed = y.astype("int32"), (test_x, test_y.astype("int32")), 0
    for device in devices:
        kd = keras_device_name(device)
        data = {"path": path, "cut": cut, "x": x, "y": y, "test_batch": 4 * base,
                "device": to_device(x, y, kd), "test_device": to_device(*test, kd)}
        for name in args.rungs or rungs_of(args.part):
            if (device, name, args.start) in done:
                continue
            if cache := args.cache and args.cache / f"{device}-{name}":  # the rung's own, from now on
                jax.config.update("jax_compilation_cache_dir", str(cache))
                compilation_cache.reset_cache()
            before, began, meter = _cache_files(cache), time.perf_counter(), BusyMeter()
            rung = dict(RUNGS[name])
            if name == "limit+best":  # at the batch and precision of the run's best stream rung
                rung.update(limit_options(earlier))
            epochs = (QUICK_EPOCHS if config.quick else EPOCHS)[rung["batch"]]
            try:
                options, watched = train_rung(name, rung, device=device, keras_device=kd, data=data,
                                              base=base, epochs=epochs, seed=args.seed)
            except Exception as exc:  # one rung the device cannot run: the others still can
                print(f"{device} {name}: skipped, {type(exc).__name__}: {str(exc)[:300]}",
                      flush=True)
                failed += 1
                continue
            record = measurement_record(
                run_id=args.run_id, rung=name, start=args.start, device=device, watched=watched,
                chosen=options, n_images=cut, data=config.data,
                extra={"cache": {"files_before": before, "files_added": _cache_files(cache) - before},
                       "rung_wall_seconds": time.perf_counter() - began, "quick": config.quick,
                       **({"grain_workers": grain_workers()}
                          if rung["feed"] == "grain" else {}), **meter.read()})
            append_record(args.out, record)
            print(f"start {args.start} {device} {name:28} first {watched['epoch_seconds'][0]:.2f} s, "
                  f"median {record['median_epoch_seconds']:.3f} s, test accuracy "
                  f"{record['test_accuracy']:.3f}", flush=True)
            keras.backend.clear_session()
    return int(failed > 0)
