"""Timing ``model.fit`` and the loader alone on each pipeline, by the lesson's measurement rule.

One model per device is built once and trained from every pipeline in turn. A slow condition
times only the first ``max_steps`` batches of each epoch (``partial_epoch``), never fewer
repeats. Keras is imported only when something is measured.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

from gpulesson.experiments import allocator
from gpulesson.experiments.common import IN_ORDER, REPEATS, WARMUP, Budget, BusyMeter, synced_epoch_timer
from gpulesson.experiments.feeding import records as fr
from gpulesson.machine.devices import keras_device_name as check_device
from gpulesson.records.recordset import check_earlier
from gpulesson.records.results import new_run_id

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
QUICK_N_IMAGES = 1_024
BATCH_SIZE, QUICK_BATCH_SIZE = 256, 64
# The reference's CPU epochs (--cpu-max-steps, --classic-max-steps): the CPU stage in about 6
# minutes on an idle 2-core machine, extrapolated from run 20261123T025717Z-e5fe6a.
REFERENCE_CPU_STEPS = 12
LOADER = dict.fromkeys(fr.BASE)  # a loader row has no training setting
# The chunk shapes and the chunk cache: the lesson's generator read alone on the host, windows
# of WINDOW blocks. A window's shuffled blocks are rarely neighbours, so a compressed chunk of 4
# blocks is decompressed for each unless the chunk cache keeps it. Loader rows of group GROUP,
# which the page's pipelines never read. (blocks per chunk, compression, cache in MiB or None).
GROUP, MIB, WINDOW = "chunks", 2**20, 4
CHUNKS = ((1, None, None), (4, None, None), (4, "lzf", None), (4, "lzf", 64))


def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    return precision


def _whole(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


def _keras():
    import keras

    return keras


def _wait(tensor) -> None:
    """Wait for ``tensor`` by fetching one of its elements to the host."""
    keras = _keras()
    keras.ops.convert_to_numpy(keras.ops.reshape(tensor, (-1,))[:1])


def _batches(dataset):
    """One epoch of ``dataset`` as ``fit`` fetches it: through Keras' own adapter, with its
    worker threads or processes when it has any."""
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
    """Epochs of ``dataset`` without a model: each batch converted to a tensor on
    ``keras_device``, as the model receives it; the clock stops once the last one is there."""
    keras = _keras()
    budget = Budget(warmup, repeats)
    while not budget.done():
        start = time.perf_counter()
        for batch in _batches(dataset):
            with keras.device(keras_device):
                last = [keras.ops.convert_to_tensor(a) for a in batch]
        for tensor in last:
            _wait(tensor)
        budget.seconds.append(time.perf_counter() - start)
    return budget


def time_training(model, dataset, *, warmup: int = WARMUP, repeats: int = REPEATS) -> Budget:
    budget = Budget(warmup, repeats)
    model.fit(dataset, epochs=warmup + repeats, callbacks=[synced_epoch_timer(budget)],
              verbose=0, **IN_ORDER)
    return budget


def chunks_label(blocks: int, compression: str | None, cache_mib: int | None) -> str:
    """A chunk condition in words: "chunks of 4 blocks, lzf, 64 MiB cache"."""
    words = [f"chunks of {blocks} block{'s' if blocks > 1 else ''}", compression or "uncompressed"]
    return ", ".join(words + ([f"{cache_mib} MiB cache"] if cache_mib else []))


@contextlib.contextmanager
def chunk_cache(cache_mib: int | None):
    """Inside the block, the lesson's generator opens its files with a chunk cache of
    ``cache_mib`` MiB (None: h5py's default)."""
    from gpulesson.lesson import core

    before = core.h5py
    if cache_mib is not None:
        core.h5py = SimpleNamespace(File=partial(before.File, rdcc_nbytes=cache_mib * MIB))
    try:
        yield
    finally:
        core.h5py = before


def time_reading(path, batch_size: int, *, cache_mib=None, warmup: int, repeats: int,
                 seed: int = 0) -> Budget:
    """Epochs of the lesson's generator over the training split of ``path``, read alone."""
    from gpulesson.lesson import HDF5Batches

    budget = Budget(warmup, repeats)
    with chunk_cache(cache_mib):
        batches = HDF5Batches(path, "train", batch_size, shuffle=True, seed=seed, window=WINDOW)
        while not budget.done():
            start = time.perf_counter()
            for index in range(len(batches)):
                batches[index]
            budget.seconds.append(time.perf_counter() - start)
            batches.on_epoch_end()
        batches._file.close()  # the next condition may ask for another cache
    return budget


def write_chunked(directory, x, y, *, batch_size: int, blocks: int, compression) -> Path:
    """A lesson data file of ``x, y`` whose chunks hold ``blocks`` batches; its path."""
    from gpulesson.experiments.feeding.pipelines import write_lesson_file

    path = Path(directory) / f"chunks-{blocks}x{batch_size}-{compression or 'none'}.h5"
    if not path.is_file():
        write_lesson_file(path, x, y, chunk_rows=blocks * batch_size, compression=compression)
    return path


@contextlib.contextmanager
def precision_policy(precision: str):
    """Build layers in ``precision`` inside the block; the previous policy is restored after."""
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
    """The lesson's CNN, compiled as :func:`gpulesson.lesson.compile_cnn` does, with the
    benchmark's ``jit_compile`` and ``steps_per_execution``."""
    keras = _keras()
    from gpulesson.lesson import build_cnn

    _whole("steps_per_execution", steps_per_execution)
    with keras.device(keras_device), precision_policy(precision):
        model = build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=jit_compile, steps_per_execution=steps_per_execution)
    return model


def run_benchmark(*, devices, pipelines, batch_size: int, n_images: int, repeats: int,
                  warmup: int = WARMUP, max_steps=None, cpu_max_steps=None,
                  classic_max_steps=None, workers: int = 2, chunks: bool = False,
                  data_dir=None, run_id: str | None = None, earlier=(), on_record=None,
                  progress=print) -> list[dict]:
    """Measure every pipeline on each device, training and loader alone, then with ``chunks``
    the chunk shapes read alone; the records, each also given to ``on_record``. ``earlier``:
    the records run ``run_id`` has already, whose conditions are skipped."""
    from gpulesson.experiments.feeding import pipelines as fp

    backend = _keras().backend.backend()
    pipelines = fr.check_pipelines(pipelines, backend)
    for device in devices:
        check_device(device)
    limits = {"max_steps": max_steps, "cpu_max_steps": cpu_max_steps,
              "classic_max_steps": classic_max_steps}
    for name, value in {"batch_size": batch_size, "n_images": n_images, "repeats": repeats,
                        "workers": workers, "warmup": warmup, **limits}.items():
        if value is not None or name not in limits:
            _whole(name, value, 0 if name == "warmup" else 1)
    if batch_size > n_images:
        raise ValueError(f"batch_size {batch_size} is larger than n_images {n_images}")
    earlier = list(earlier)
    check_earlier(earlier, n_images=n_images, backend=backend)
    done = {fr.condition(r) for r in earlier}
    run_id = run_id or new_run_id()
    made: list[dict] = []

    def keep(budget, **fields) -> dict:
        record = fr.measurement_record(budget, run_id=run_id, batch_size=batch_size,
                                    n_images=n_images, **fields)
        made.append(record)
        if on_record:
            on_record(record)
        return record

    def measure(device, names) -> None:
        keras_device = check_device(device)
        settings = {"train": fr.BASE, "loader": LOADER}
        todo = {name: [mode for mode, setting in settings.items() if fr.condition(
            {"device_kind": device, "pipeline": name, "mode": mode, "group": "pipelines",
             "batch_size": batch_size, **setting}) not in done] for name in names}
        skipped = sum(len(settings) - len(left) for left in todo.values())
        if skipped:
            progress(f"{device} pipelines: {skipped} of {len(names) * len(settings)} "
                     f"condition(s) recorded in run {run_id} already")
        names = [name for name in names if todo[name]]
        if not names:
            return  # nothing left: no files written, no model built
        device_limit = cpu_max_steps if device == "cpu" and cpu_max_steps else max_steps
        kinds = [k for k in dict.fromkeys(fr.FILES[n] for n in names) if k and k not in files]
        if kinds:
            started = time.perf_counter()
            files.update(fp.write_files(data_dir, x, y, kinds, batch_size=batch_size))
            progress(f"wrote {', '.join(kinds)} file(s), batch {batch_size} chunks, in "
                     f"{time.perf_counter() - started:.1f} s")
        on_device = fp.to_device(*ram, keras_device) if "device" in names else None
        model = build_model(keras_device)
        for name in names:
            full = fp.make_pipeline(name, batch_size=batch_size, files=files, arrays=ram,
                                    device_arrays=on_device, workers=workers)
            steps_limit = device_limit
            if name == "classic" and classic_max_steps:
                steps_limit = min(filter(None, (device_limit, classic_max_steps)))
            dataset = fp.limit(full, steps_limit)
            extra = {"workers": workers if name in fr.WORKER_PIPELINES else 0,
                     **allocator.mode(), **fp.device_method(name)}
            if fr.FILES[name]:
                extra.update(fp.file_info(files[fr.FILES[name]]))
            for mode in todo[name]:
                meter = BusyMeter()
                if mode == "train":
                    with _keras().device(keras_device):
                        budget = time_training(model, dataset, warmup=warmup, repeats=repeats)
                else:
                    budget = time_loader(dataset, keras_device, warmup=warmup, repeats=repeats)
                if name == "classic":
                    extra["full_reads"] = full.full_reads
                record = keep(budget, device=device, pipeline=name, mode=mode,
                              steps=len(dataset), full_steps=len(full), group="pipelines",
                              **settings[mode], extra={**extra, **meter.read()})
                epochs = record["summary"]
                progress(f"{device} {name:19} {fr.short_setting(record):14} b{batch_size}: "
                         f"{fr.rate_text(record['images_per_second']):>7} img/s, epoch "
                         f"{epochs['median']:.3f} s ({epochs['min']:.3f}-"
                         f"{epochs['max']:.3f}, {epochs['n']})"
                         + (f" {record['steps']}/{record['full_epoch_steps']} steps"
                            if record["partial_epoch"] else ""))
            if name == "classic":
                full.close()
        del model

    def measure_chunks() -> None:
        steps = -(-n_images // batch_size)
        for blocks, compression, cache in CHUNKS:
            layout = chunks_label(blocks, compression, cache)
            if fr.condition({"device_kind": "cpu", "pipeline": "lesson", "mode": "loader",
                          "group": GROUP, "batch_size": batch_size, "layout": layout,
                          **LOADER}) in done:
                continue
            path = write_chunked(data_dir, x, y, batch_size=batch_size, blocks=blocks,
                                 compression=compression)
            meter = BusyMeter()
            budget = time_reading(path, batch_size, cache_mib=cache, warmup=warmup,
                                  repeats=repeats)
            record = keep(budget, device="cpu", pipeline="lesson", mode="loader", steps=steps,
                          full_steps=steps, group=GROUP, **LOADER,
                          extra={"layout": layout, "window": WINDOW,
                                 "cache_bytes": cache * MIB if cache else None,
                                 **fp.file_info(path), **meter.read()})
            progress(f"host {layout:40}: {fr.rate_text(record['images_per_second']):>7} "
                     "img/s read alone")

    from gpulesson.datasets.synthetic import make_synthetic

    files = {}
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="gpulesson-feeding-"))
        (x, y), _ = make_synthetic(n_images, 10, seed=0, progress=False)
        ram = (x, y.astype("int32"))  # bytes, as the files hold them: the model scales them
        for device in devices:
            measure(device, pipelines)
        if chunks:
            measure_chunks()
    return made
