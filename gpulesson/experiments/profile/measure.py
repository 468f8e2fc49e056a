"""Measuring where a training step of the lesson's CNN spends its time, on each device (JAX).

Episode 5's CNN learns from the lesson's HDF5 file through the lesson's generator, by the rule
of :mod:`gpulesson.experiments.common` (a warm-up epoch, then the timed epochs). On a GPU one
more epoch samples NVML's utilisation. Then the first batches of one more epoch run under
``jax.profiler.trace``, with the epoch and each batch fetched marked for
:mod:`~gpulesson.experiments.profile.trace`. A training step costs about three forward passes
(the forward pass and the backward pass's two products): the achieved rate is
``3 × forward × images per second`` of the timed epochs' median.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from gpulesson.experiments import cli
from gpulesson.experiments.common import (
    IN_ORDER,
    ORDER_FIELD,
    SUMMARY_KEY,
    WARMUP,
    Budget,
    BusyMeter,
    summarise,
    synced_epoch_timer,
)
from gpulesson.experiments.profile import PROFILE_STEPS, QUICK_STEPS, RECORDS, trace
from gpulesson.machine.devices import keras_device_name

TRAINING_PASSES = 3  # forward + the two products of the backward pass


def annotated(dataset, max_batches: int):
    """``dataset``'s first ``max_batches`` batches, each fetched inside a :data:`trace.INPUT` event."""
    import jax
    import keras

    class Annotated(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.n = min(max_batches, len(dataset))

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


def measurement_record(budget, *, run_id: str, device: str, batch_size: int, n_images: int,
                       steps: int, forward_flops: int, utilisation: dict, profile: dict,
                       extra: dict, data: str | None = None) -> dict:
    """One device's results-file record."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    if not data:
        from gpulesson.datasets.settings import get_settings

        data = get_settings().data
    median, warmups = statistics.median(timed), budget.seconds[:budget.warmup]
    per_image = TRAINING_PASSES * forward_flops
    return RECORDS.record(
        data=data, run_id=run_id, source="gpulesson.experiments.profile", device_kind=device,
        keras_device=keras_device_name(device), batch_size=batch_size, n_images=n_images,
        steps=steps, warmup_seconds=warmups, epoch_seconds=timed, median_epoch_seconds=median,
        images_per_second=n_images / median, step_seconds=median / steps,
        forward_flops_per_image=forward_flops, train_flops_per_image=per_image,
        achieved_tflops=per_image * n_images / median / 1e12, utilisation=utilisation,
        profile=profile, **{ORDER_FIELD: False, SUMMARY_KEY: summarise(timed, warmups)}, **extra)


def measure(args, *, run_id: str, done):
    """The records of the devices asked for that ``done`` lacks, each yielded as it is made."""
    import keras

    if keras.backend.backend() != "jax":
        print("The profile reads JAX's profiler: run it with KERAS_BACKEND=jax.", file=sys.stderr)
        raise SystemExit(2)
    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.datasets.settings import get_settings
    from gpulesson.experiments.profile.page import summary_lines
    from gpulesson.lesson.feeding import flops_per_image

    devices = cli.devices_here(args.devices)
    given = args.steps or (QUICK_STEPS if args.quick else None)
    steps = dict.fromkeys(PROFILE_STEPS, given) if given else PROFILE_STEPS
    settings = get_settings()
    print(settings.describe(), flush=True)
    warmup, repeats = WARMUP, cli.repeats_for(args.quick)
    path = prepare(settings)
    train = lesson.split_batches(path, settings.batch_size(args.batch_size))[0]
    for device in devices:
        if (device,) in done:
            continue
        keras_device = keras_device_name(device)
        with keras.device(keras_device):
            keras.utils.set_random_seed(args.seed)
            model = lesson.compile_cnn(lesson.build_cnn())
            flops = flops_per_image(model)
            budget = Budget(warmup, repeats)
            meter = BusyMeter()
            started = time.perf_counter()
            print(f"{device}: training {warmup} warm-up and {repeats} timed epoch(s) ...")
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
        yield record
        print(f"{device}: " + " ".join(summary_lines(record)))
        del model
