"""Measuring the ceiling of ``fit`` with this process's Keras backend: a model that does almost
nothing, fed each way in turn, so that an epoch's time is what ``fit`` and the data path cost."""

import math
import tempfile
import time
from functools import partial

from gpulesson.experiments import cli
from gpulesson.experiments.ceiling import page as cp
from gpulesson.machine import allocator
from gpulesson.machine.timing import Budget, BusyMeter, cpu_settings, synced_epoch_timer
from gpulesson.records.results import new_run_id
from gpulesson.records.summaries import WARMUP, fit_progress, repeats_for

# The epoch's size, full and quick, as the command line takes it (cli.sizes); 256: episode 9's batch.
SIZES = {"n_images": cp.N_IMAGES, "batch_size": 256, "quick_n_images": 1_024, "quick_batch_size": 64}


def tiny_model(keras_device: str, **compile_options):
    """Bytes scaled to [0, 1], the mean of each channel, one Dense layer: almost no work."""
    import keras

    from gpulesson.lesson import JIT_COMPILE

    with keras.device(keras_device):
        model = keras.Sequential([
            keras.Input((32, 32, 3)), keras.layers.Rescaling(1 / 255),
            keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(10)])
        model.compile(**{"optimizer": "sgd", "loss": "sparse_categorical_crossentropy",
                         "jit_compile": JIT_COMPILE, **compile_options})
    return model


def tf_batches(x, y, batch_size: int, *, seed: int):
    """The ``ram`` pipeline in ``tf.data``, read ahead by ``prefetch``; autotuning off, as it made
    training wait at the start of some epochs while a new iterator replaced the last one."""
    import tensorflow as tf

    with tf.device("/CPU:0"):  # host memory, as the arrays path: tf.data runs there
        images, labels = tf.constant(x), tf.constant(y)
    n_batches = math.ceil(len(y) / batch_size)

    def batch(index):
        start = index * batch_size
        return images[start:start + batch_size], labels[start:start + batch_size]

    options = tf.data.Options()
    options.autotune.enabled = False
    return (tf.data.Dataset.range(n_batches)
            .shuffle(n_batches, seed=seed, reshuffle_each_iteration=True)
            .map(batch).prefetch(2).with_options(options))


def _fit(model, feed: dict, *, warmup: int, repeats: int) -> list[float]:
    """Seconds of every epoch of ``model.fit(**feed)``, warm-up first."""
    budget = Budget(warmup, repeats)
    callbacks = [synced_epoch_timer(budget), *feed.pop("callbacks", [])]
    model.fit(**feed, epochs=warmup + repeats, callbacks=callbacks, verbose=0)
    return budget.seconds


def _feeds(names, *, x, y, path, batch_size: int, keras_device: str, epochs: int | None = None):
    """``(name, fit's arguments)`` of each pipeline, made when its turn comes; ``epochs``: those
    ``fit`` trains (Grain's dataset repeats itself that often)."""
    from gpulesson.experiments.feeding.pipelines import READ_AHEAD, grain_workers, make_pipeline, to_device
    from gpulesson.lesson import DataEpoch, HDF5Batches
    from gpulesson.lesson.feeding import grain_blocks

    for name in names:
        if name == "lesson-grain":
            dataset, steps = grain_blocks(path, epochs, batch_size, seed=1, workers=grain_workers())
            feed = {"x": dataset, "steps_per_epoch": steps}
        elif name == "arrays":  # the one that fit shuffles
            feed = {"x": x, "y": y, "batch_size": batch_size, "shuffle": True}
        elif name in ("ram", "device"):
            # The feeding benchmark's pipelines: on JAX, `device` is DeviceBatches (one compiled
            # take a batch, nothing from host to device a step); its record says how (device_method).
            on_device = to_device(x, y, keras_device) if name == "device" else None
            feed = {"x": make_pipeline(name, batch_size=batch_size, seed=1, arrays=(x, y),
                                       device_arrays=on_device)}
        elif name == "tfdata":  # fit's shuffle does not apply to a tf.data.Dataset
            feed = {"x": tf_batches(x, y, batch_size, seed=1)}
        else:  # the generator's default window, or window=1; reading ahead or not
            options = {"window": 1} if name == "lesson-window1" else READ_AHEAD.get(name, {})
            batches = HDF5Batches(path, "train", batch_size, shuffle=True, seed=1, **options)
            feed = {"x": batches, "callbacks": [DataEpoch(batches)]}
        yield name, {"shuffle": False, **feed}  # the others shuffle themselves


def synthetic_file(folder, n_images: int, batch_size: int):
    """``(path, x, y)``: synthetic images and labels, and an HDF5 file of them chunked by batch."""
    from gpulesson.datasets.hdf5 import write_hdf5
    from gpulesson.datasets.synthetic import make_synthetic

    if not 1 <= batch_size <= n_images:
        raise ValueError(f"batch_size must be from 1 to n_images ({n_images}), not {batch_size}")
    (x, y), _ = make_synthetic(n_images, 10, seed=0, progress=False)
    y = y.astype("int32")
    path = write_hdf5(f"{folder}/train.h5", (x, y), (x[:16], y[:16]), source=cp.DATA,
                      class_names=[f"class {i}" for i in range(10)],
                      chunk_rows=batch_size, progress=False)
    return path, x, y


def rule(args) -> dict:
    """The command's epoch (``--n-images``, ``--batch-size``, quick mode's where asked) and the
    rule's warm-up and timed epochs."""
    size = "quick_" if args.quick else ""
    return {"n_images": args.n_images or SIZES[f"{size}n_images"], "warmup": WARMUP,
            "batch_size": args.batch_size or SIZES[f"{size}batch_size"],
            "repeats": repeats_for(args.quick)}


def timed_fit(keras_device: str, fit):
    """``fit(model)`` of a new do-nothing model on ``keras_device``, and what every record keeps
    beside it: how busy the machine was, its cores, threads, allocator mode and wall time."""
    import keras

    model = tiny_model(keras_device)
    meter, started = BusyMeter(), time.perf_counter()
    with keras.device(keras_device):
        result = fit(model)
    return result, {**meter.read(), "cpu_settings": cpu_settings(), **allocator.mode(),
                    "wall_seconds": time.perf_counter() - started}


def measure(args=None, *, run_id: str | None = None, done=(), **options):
    """The records of each pipeline (default: all the device and backend have) on each device but
    those ``done``: yielded to the command (its ``args``), a list to a notebook (its ``options``)."""
    if args is None:
        return list(measured(run_id=run_id or new_run_id(), done=done, **options))
    return measured(devices=cli.devices_here(args.devices), pipelines=args.pipelines,
                    run_id=run_id, done=done, progress=partial(print, flush=True), **rule(args))


def measured(*, devices, n_images: int, batch_size: int, repeats: int, warmup: int = WARMUP,
             pipelines=None, run_id: str, done=(), progress=print):
    import keras

    from gpulesson.experiments.feeding.pipelines import device_method, grain_workers
    from gpulesson.machine.devices import keras_device_name

    backend, made = keras.backend.backend(), []
    with tempfile.TemporaryDirectory(prefix="gpulesson-ceiling-") as folder:
        path, x, y = synthetic_file(folder, n_images, batch_size)
        for device in devices:
            keras_device = keras_device_name(device)
            offered = cp.pipelines_for(device, backend)
            names = [n for n in (pipelines or offered) if n in offered
                     and (backend, device, n, batch_size) not in done]
            for name, feed in _feeds(names, x=x, y=y, path=path, batch_size=batch_size,
                                     keras_device=keras_device, epochs=warmup + repeats):
                seconds, extra = timed_fit(
                    keras_device, partial(_fit, feed=feed, warmup=warmup, repeats=repeats))
                record = cp.RECORDS.epoch_record(
                    seconds, warmup=warmup, run_id=run_id, device=device, n_images=n_images,
                    own={"pipeline": name, "pipeline_label": cp.PIPELINES[name],
                         "batch_size": batch_size},
                    extra={**extra, **device_method(name),
                           **({"grain_workers": grain_workers()} if name == "lesson-grain"
                              else {})})
                made.append(record)  # each record keeps the fastest in-memory way so far
                top = max((r for r in made if r["pipeline"] in cp.IN_MEMORY
                           and r["device_kind"] == device),
                          key=lambda r: r["images_per_second"], default=None)
                record["ceiling"] = top and {k: top[k] for k in ("pipeline", "images_per_second")}
                progress(f"{backend} {device} {name}: "
                         + fit_progress(n_images, record["summary"]))
                yield record
