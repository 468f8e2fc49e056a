"""Measuring: time ``model.fit`` and the loader alone on each pipeline.

One model per device is built and compiled once (float32, XLA, one step per execution) and
trained with ``model.fit`` from every pipeline in turn (its weights go on training: the speed
does not depend on them). The settings (precision, steps per execution, batch size) are the
speed ladder's (:mod:`gpulesson.experiments.ladder`), not this benchmark's. Each condition
follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`): :data:`WARMUP`
warm-up epoch(s) (compiling, worker start-up, caches), recorded but not averaged, then
``repeats`` timed epochs, by default :data:`REPEATS`
(:func:`~gpulesson.experiments.common.repeats_for`; fewer in quick mode). No time budget cuts
them short: a condition too slow for that is made smaller with ``max_steps`` (partial epochs),
never with fewer repeats. :func:`~gpulesson.experiments.common.synced_epoch_timer` reads the
clock only after the epoch's last step has finished on the device: it converts the epoch's loss
to a Python number, which waits for the work behind it (JAX and PyTorch return from a step
before the GPU has done it). The loader alone (no model) is timed the same way: one epoch of
batches as Keras fetches them, each converted to a tensor on the device, waiting for the last
one.

A slow device may time only the first ``max_steps`` batches of each epoch: the record says so
(``partial_epoch``, ``steps``), and its images/s come from those steps. (The classic
pipeline's whole-file read at the end of each epoch then weighs more per step than in a whole
epoch: a partial epoch makes it look somewhat slower than it is.) Each record keeps every epoch,
their summary and the load average before and after the condition.

Keras and the pipelines are imported when first needed: importing this module imports no
deep-learning framework.
"""

from __future__ import annotations

import contextlib
import tempfile
import time

from gpulesson.devices import keras_device_name as check_device
from gpulesson.experiments import allocator
from gpulesson.experiments.common import (  # noqa: F401 (QUICK_REPEATS: the command's)
    IN_ORDER,
    QUICK_REPEATS,
    REPEATS,
    WARMUP,
    Budget,
    BusyMeter,
    summary_text,
    synced_epoch_timer,
)
from gpulesson.experiments.feeding.records import (
    FILES,
    WORKER_PIPELINES,
    check_pipelines,
    condition,
    measurement_record,
    rate_text,
    short_setting,
)
from gpulesson.experiments.recordset import check_earlier
from gpulesson.results import new_run_id

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
QUICK_N_IMAGES = 1_024
BATCH_SIZE, QUICK_BATCH_SIZE = 256, 64
# The reference's CPU epochs (--cpu-max-steps, --classic-max-steps): every pipeline's training
# and loader alone, a warm-up and REPEATS timed epochs each, in about 6 minutes on an idle
# 2-core machine (extrapolated from a committed run's epochs: see __main__'s docstring).
REFERENCE_CPU_STEPS = 12


# --- checks -----------------------------------------------------------------------------------
def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    return precision


def _whole(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


# --- timing -----------------------------------------------------------------------------------

def _keras():
    import keras

    return keras


def _device_tensor(x, keras_device: str):
    keras = _keras()
    with keras.device(keras_device):
        return keras.ops.convert_to_tensor(x)


def _wait(tensor) -> None:
    """Wait for ``tensor`` by fetching one of its elements to the host (as
    :func:`gpulesson.experiments.matmul.measure.wait`)."""
    keras = _keras()
    keras.ops.convert_to_numpy(keras.ops.reshape(tensor, (-1,))[:1])


def _batches(dataset):
    """The batches of one epoch of ``dataset`` as ``model.fit`` fetches them: with its worker
    threads or processes when it has any (Keras' own adapter, the one ``fit`` uses)."""
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    adapter = PyDatasetAdapter(dataset, shuffle=False)
    adapter.on_epoch_begin()
    try:
        if adapter.enqueuer is None:
            for index in range(len(dataset)):
                yield dataset[index]
        else:
            yield from adapter._get_iterator()
    finally:
        adapter.on_epoch_end()


def time_loader(dataset, keras_device: str, *, warmup: int = WARMUP,
                repeats: int = REPEATS) -> Budget:
    """Time epochs of ``dataset`` without a model: every batch is fetched as ``fit`` fetches it
    and converted to a tensor on ``keras_device`` (as the model would receive it); the clock
    stops once the last one is there. ``warmup`` epochs, then ``repeats`` timed ones."""
    budget = Budget(warmup, repeats)
    while not budget.done():
        start = time.perf_counter()
        last = None
        for x, y in _batches(dataset):
            last = (_device_tensor(x, keras_device), _device_tensor(y, keras_device))
        _wait(last[0])
        _wait(last[1])
        budget.seconds.append(time.perf_counter() - start)
    return budget


def time_training(model, dataset, *, warmup: int = WARMUP, repeats: int = REPEATS) -> Budget:
    """Train ``model`` on ``dataset`` with ``fit``: ``warmup`` epochs, then ``repeats`` timed
    epochs."""
    budget = Budget(warmup, repeats)
    model.fit(dataset, epochs=warmup + repeats, callbacks=[synced_epoch_timer(budget)],
              verbose=0, **IN_ORDER)
    return budget


@contextlib.contextmanager
def precision_policy(precision: str):
    """Build layers in ``precision`` (a Keras dtype policy) inside the block; the previous
    global policy is restored afterwards, even after an error."""
    keras = _keras()
    check_precision(precision)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def build_model(keras_device: str, *, precision: str = "float32", jit_compile: bool = True,
                steps_per_execution: int = 1):
    """The lesson's CNN (:func:`gpulesson.lesson.build_cnn`), compiled as
    :func:`gpulesson.lesson.compile_cnn` does (Adam, sparse categorical cross-entropy,
    accuracy) with the benchmark's ``jit_compile`` and ``steps_per_execution``."""
    keras = _keras()
    from gpulesson.lesson import build_cnn

    _whole("steps_per_execution", steps_per_execution)
    with keras.device(keras_device), precision_policy(precision):
        model = build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=jit_compile, steps_per_execution=steps_per_execution)
    return model


def _seconds(value: float) -> str:
    return f"{value:.3f} s"


# --- the benchmark ----------------------------------------------------------------------------

def _arrays(n_images: int, seed: int = 0):
    from gpulesson.synthetic import make_synthetic

    (x, y), _ = make_synthetic(n_images, 10, seed=seed, progress=False)
    return x, y


def run_benchmark(*, devices, pipelines, batch_size: int, n_images: int, repeats: int,
                  warmup: int = WARMUP, max_steps=None, cpu_max_steps=None,
                  classic_max_steps=None, workers: int = 2, chunks: bool = False,
                  data_dir=None, run_id: str | None = None, earlier=(), on_record=None,
                  progress=print) -> list[dict]:
    """Measure; returns the records (``on_record(record)`` is called as each one is made).

    For each device: every pipeline at ``batch_size`` (float32, XLA, one step per execution),
    training and loader alone; with ``chunks``, then the chunk shapes and the chunk cache, the
    generator read alone on the host (:mod:`~gpulesson.experiments.feeding.chunks`). ``max_steps`` (and
    ``cpu_max_steps`` for the CPU, ``classic_max_steps`` for the slow classic pipeline, when
    smaller) time partial epochs. Every condition gets ``warmup`` warm-up epochs and
    ``repeats`` timed ones, whatever they take (the lesson's rule asks for :data:`REPEATS`, or
    :data:`QUICK_REPEATS` in quick mode; the command line refuses fewer). Data files go to
    ``data_dir`` (default: a temporary folder, deleted afterwards).

    ``earlier``: the records run ``run_id`` already has (a run that goes on): their conditions
    (:func:`~gpulesson.experiments.feeding.records.condition`) are skipped.
    """
    from gpulesson.experiments.feeding import pipelines as fp

    pipelines = check_pipelines(pipelines, _keras().backend.backend())
    for device in devices:
        check_device(device)
    for name, value in (("batch_size", batch_size), ("n_images", n_images),
                        ("repeats", repeats), ("workers", workers)):
        _whole(name, value)
    _whole("warmup", warmup, 0)
    for name, value in (("max_steps", max_steps), ("cpu_max_steps", cpu_max_steps),
                        ("classic_max_steps", classic_max_steps)):
        if value is not None:
            _whole(name, value)
    if batch_size > n_images:
        raise ValueError(f"batch_size {batch_size} is larger than n_images {n_images}")
    earlier = list(earlier)
    check_earlier(earlier, n_images=n_images, backend=_keras().backend.backend())
    done = {condition(r) for r in earlier}
    run_id = run_id or new_run_id()
    made: list[dict] = []
    cleanup = None
    if data_dir is None:
        cleanup = tempfile.TemporaryDirectory(prefix="gpulesson-feeding-")
        data_dir = cleanup.name
    try:
        x, y = _arrays(n_images)
        ram = (x, y.astype("int32"))  # bytes, as the files hold them: the model scales them
        files: dict[int, dict] = {}

        def files_for(size, names):
            kinds = [FILES[n] for n in names if FILES[n]]
            have = files.setdefault(size, {})
            missing = [k for k in dict.fromkeys(kinds) if k not in have]
            if missing:
                started = time.perf_counter()
                have.update(fp.write_files(data_dir, x, y, missing, batch_size=size))
                progress(f"wrote {', '.join(missing)} file(s), batch {size} chunks, in "
                         f"{time.perf_counter() - started:.1f} s")
            return have

        def measure(device, names, *, size, group):
            keras_device = check_device(device)
            settings = {"train": {"precision": "float32", "jit_compile": True,
                                  "steps_per_execution": 1},
                        "loader": {"precision": None, "jit_compile": None,
                                   "steps_per_execution": None}}
            modes = ("train", "loader")
            todo = {name: [mode for mode in modes if condition(
                {"device_kind": device, "pipeline": name, "mode": mode, "group": group,
                 "batch_size": size, **settings[mode]}) not in done] for name in names}
            skipped = sum(len(modes) - len(left) for left in todo.values())
            if skipped:
                progress(f"{device} {group}: {skipped} of {len(names) * len(modes)} "
                         f"condition(s) recorded in run {run_id} already")
            names = [name for name in names if todo[name]]
            if not names:
                return  # nothing left: no files written, no model built
            device_limit = cpu_max_steps if device == "cpu" and cpu_max_steps else max_steps
            paths = files_for(size, names)
            on_device = fp.to_device(*ram, keras_device) if "device" in names else None
            model = build_model(keras_device)
            for name in names:
                full = fp.make_pipeline(name, batch_size=size, files=paths, arrays=ram,
                                        device_arrays=on_device, workers=workers)
                steps_limit = device_limit
                if name == "classic" and classic_max_steps:
                    steps_limit = min(filter(None, (device_limit, classic_max_steps)))
                dataset = fp.limit(full, steps_limit)
                extra = {"workers": workers if name in WORKER_PIPELINES else 0,
                         **allocator.mode(), **fp.device_method(name)}
                if FILES[name]:
                    extra.update(fp.file_info(paths[FILES[name]]))
                common = {"run_id": run_id, "device": device, "pipeline": name, "batch_size": size,
                          "steps": len(dataset), "full_steps": len(full), "n_images": n_images,
                          "group": group}
                for mode in todo[name]:
                    setting = settings[mode]
                    meter = BusyMeter()
                    if mode == "train":
                        with keras_scope(keras_device):
                            budget = time_training(model, dataset, warmup=warmup,
                                                   repeats=repeats)
                    else:
                        budget = time_loader(dataset, keras_device, warmup=warmup,
                                             repeats=repeats)
                    if name == "classic":
                        extra["full_reads"] = full.full_reads
                    record = measurement_record(budget, **common, mode=mode, **setting,
                                                extra={**extra, **meter.read()})
                    made.append(record)
                    if on_record:
                        on_record(record)
                    epochs = record["summary"]
                    progress(f"{device} {name:19} {short_setting(record):14} b{size}: "
                             f"{rate_text(record['images_per_second']):>7} img/s, epoch "
                             f"{epochs['median']:.3f} s ({epochs['min']:.3f}-"
                             f"{epochs['max']:.3f}, {epochs['n']})"
                             + (f" {record['steps']}/{record['full_epoch_steps']} steps"
                                if record["partial_epoch"] else ""))
                if name == "classic":
                    full.close()
            del model

        def measure_chunks():
            from gpulesson.experiments.feeding import chunks as ch

            for blocks, compression, cache in ch.CONDITIONS:
                layout = ch.label(blocks, compression, cache)
                loader = {"precision": None, "jit_compile": None, "steps_per_execution": None}
                if condition({"device_kind": "cpu", "pipeline": "lesson", "mode": "loader",
                              "group": ch.GROUP, "batch_size": batch_size, "layout": layout,
                              **loader}) in done:
                    continue
                path = ch.write_chunked(data_dir, x, y, batch_size=batch_size, blocks=blocks,
                                        compression=compression)
                meter = BusyMeter()
                budget = ch.time_reading(path, batch_size, cache_mib=cache, warmup=warmup,
                                         repeats=repeats)
                steps = -(-n_images // batch_size)
                record = measurement_record(
                    budget, run_id=run_id, device="cpu", pipeline="lesson", mode="loader",
                    batch_size=batch_size, steps=steps, full_steps=steps, n_images=n_images,
                    group=ch.GROUP, **loader,
                    extra={"layout": layout, "window": ch.WINDOW,
                           "cache_bytes": cache * ch.MIB if cache else None,
                           **fp.file_info(path), **meter.read()})
                made.append(record)
                if on_record:
                    on_record(record)
                progress(f"host {layout:40}: {rate_text(record['images_per_second']):>7} "
                         "img/s read alone")

        for device in devices:
            measure(device, pipelines, size=batch_size, group="pipelines")
        if chunks:
            measure_chunks()
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    return made


@contextlib.contextmanager
def keras_scope(keras_device: str):
    with _keras().device(keras_device):
        yield


