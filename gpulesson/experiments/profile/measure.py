"""Measuring where a training step of the lesson's CNN spends its time, on each device (JAX).

Episode 5's CNN learns from the lesson's HDF5 file through the lesson's generator, by the rule
of :mod:`gpulesson.experiments.common` (a warm-up epoch, then the timed epochs). On a GPU one
more epoch samples NVML's utilisation. Then the first batches of one more epoch run under
``jax.profiler.trace``, with the epoch and each batch fetched marked for
:mod:`~gpulesson.experiments.profile.trace`.
"""

from __future__ import annotations

import tempfile
import time

from gpulesson.experiments.common import IN_ORDER, WARMUP, Budget, BusyMeter, synced_epoch_timer
from gpulesson.experiments.profile import trace
from gpulesson.experiments.profile.records import measurement_record

BATCH_SIZE, QUICK_BATCH_SIZE = 256, 64
PROFILE_STEPS = {"gpu": 100, "cpu": 10}  # batches profiled (quick mode: at most 4)


def annotated(dataset, max_batches: int | None = None):
    """``dataset`` (a PyDataset), its first ``max_batches`` batches, each fetched inside a
    :data:`trace.INPUT` event."""
    import jax
    import keras

    class Annotated(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.n = len(dataset) if max_batches is None else min(max_batches, len(dataset))

        def __len__(self):
            return self.n

        def __getitem__(self, index):
            with jax.profiler.TraceAnnotation(trace.INPUT):
                return dataset[index]

        def on_epoch_end(self):
            dataset.on_epoch_end()

    return Annotated()


def marked_epoch():
    """A ``fit`` callback that marks each epoch (:data:`trace.EPOCH`) until the device finished it."""
    import jax
    import keras

    from gpulesson.experiments.common import synchronise

    class MarkedEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.mark = jax.profiler.TraceAnnotation(trace.EPOCH)
            self.mark.__enter__()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)
            self.mark.__exit__(None, None, None)

    return MarkedEpoch()


def profile_steps(model, dataset, steps: int, device: str = "cpu") -> dict:
    """The :func:`~gpulesson.experiments.profile.trace.breakdown` of ``steps`` batches of ``fit``."""
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # the Python tracer slows the host down many times
    part = annotated(dataset, steps)
    with tempfile.TemporaryDirectory(prefix="gpulesson-profile-") as folder:
        with jax.profiler.trace(folder, profiler_options=options):
            model.fit(part, epochs=1, callbacks=[marked_epoch()], verbose=0, **IN_ORDER)
        events = trace.read_events(trace.trace_file(folder))
    return trace.breakdown(events, steps=len(part), device=device)


def utilisation(model, dataset, device: str) -> dict:
    """The GPU's utilisation (percent) sampled by NVML through one epoch, or why there is none."""
    if device != "gpu":
        return {"skipped": "the CPU has no NVML utilisation"}
    from gpulesson.lesson.feeding import GpuWatch, gpu_utilisation

    if gpu_utilisation() is None:
        return {"skipped": "NVML (nvidia-ml-py) cannot read this GPU"}
    watch = GpuWatch(interval=0.05)
    model.fit(dataset, epochs=1, callbacks=[watch], verbose=0, **IN_ORDER)
    found = watch.samples
    if not found:
        return {"skipped": "the epoch was shorter than one NVML sample (0.05 s)"}
    return {"mean": sum(found) / len(found), "min": min(found), "max": max(found),
            "n": len(found), "interval_seconds": 0.05}


def measure(*, devices, batch_size: int, repeats: int, warmup: int = WARMUP, seed: int = 42,
            steps: dict | None = None, run_id: str, done=(), on_record=None,
            progress=print) -> list[dict]:
    """The records of ``devices`` not in ``done``, each passed to ``on_record`` as it is made;
    ``steps``: batches profiled per device (default :data:`PROFILE_STEPS`)."""
    import keras

    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.datasets.settings import get_settings
    from gpulesson.experiments.profile.page import summary_lines
    from gpulesson.lesson.feeding import flops_per_image
    from gpulesson.machine.devices import keras_device_name

    if keras.backend.backend() != "jax":
        raise RuntimeError("the profile reads JAX's profiler: run it with KERAS_BACKEND=jax")
    settings = get_settings()
    steps = {**PROFILE_STEPS, **(steps or {})}
    path = prepare(settings)
    train = lesson.split_batches(path, settings.batch_size(batch_size))[0]
    made = []
    for device in devices:
        if device in done:
            continue
        keras_device = keras_device_name(device)
        with keras.device(keras_device):
            keras.utils.set_random_seed(seed)
            model = lesson.compile_cnn(lesson.build_cnn())
            flops = flops_per_image(model)
            budget = Budget(warmup, repeats)
            meter = BusyMeter()
            started = time.perf_counter()
            progress(f"{device}: training {warmup} warm-up and {repeats} timed epoch(s) ...")
            model.fit(train, epochs=warmup + repeats, verbose=2, **IN_ORDER,  # a line an epoch
                      callbacks=[synced_epoch_timer(budget), lesson.DataEpoch(train)])
            busy = meter.read()
            used = utilisation(model, train, device)
            try:
                profiled = profile_steps(model, train, min(steps[device], len(train)), device)
            except Exception as exc:  # the rest of the record still holds: keep it, say why
                profiled = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
        record = measurement_record(
            budget, run_id=run_id, device=device, batch_size=train.batch_size,
            n_images=train.n_images, steps=len(train), forward_flops=flops,
            utilisation=used, profile=profiled,
            extra={**busy, "wall_seconds": time.perf_counter() - started,
                   "read_ahead": bool(getattr(train, "read_ahead", False))})
        made.append(record)
        if on_record:
            on_record(record)
        progress(f"{device}: " + " ".join(summary_lines(record)))
        del model
    return made
