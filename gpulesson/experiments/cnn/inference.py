"""Prediction with the lesson's CNN on each device: throughput at a large batch, latency of one
image, energy per image (:func:`energy_of_calls`: one call is shorter than a step of the meter),
recorded in the CNN's results file with the training's ``run_id``. The arithmetic does not
depend on the weights: the training's initial ones serve, so a run adds these without training."""

from __future__ import annotations

from functools import partial

from gpulesson.machine.timing import cpu_settings, timed
from gpulesson.records.energy import energy_of_calls, energy_text
from gpulesson.records.recordset import RecordSet
from gpulesson.records.results import duration
from gpulesson.records.summaries import (
    SUMMARY_KEY,
    WARMUP,
    as_rate,
    repeats_for,
    summarise,
    summary_of,
    summary_text,
)

EXPERIMENT = "cnn-inference"
# One record a device, in the CNN's results file beside its training's.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), file="cnn-cpu-vs-gpu")
LARGE_BATCH = 1024  # images a throughput call predicts
QUICK_LARGE_BATCH = 64
LATENCY_FACTOR = 4  # latency calls are cheap: four times the rule's repeats


def latency_repeats(quick: bool) -> int:
    return LATENCY_FACTOR * repeats_for(quick)


def time_calls(fn, warmup: int, repeats: int) -> tuple[list[float], list[float]]:
    """``(warm-up seconds, timed seconds)`` of ``warmup`` then ``repeats`` calls of ``fn``."""
    if repeats < 1:
        raise ValueError(f"at least one timed call is needed, not {repeats}")
    seconds = [timed(fn)[1] for _ in range(warmup + repeats)]
    return seconds[:warmup], seconds[warmup:]


def throughput_summary(record: dict | None) -> dict | None:
    """Images per second of a record's large-batch calls (median and range), or None."""
    if not record:
        return None
    seconds = summary_of(record, "throughput_seconds", warmup_key=None)
    return as_rate(seconds, record["batch_size"]) if seconds else None


def latency_summary(record: dict | None) -> dict | None:
    found = (record or {}).get("latency")
    return dict(found) if isinstance(found, dict) and found.get("samples") else None


def predict(devices, settings, *, seed: int, run_id: str):
    """Time prediction on each of ``devices`` ("cpu", "gpu"), yielding one record a device."""
    import keras

    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.machine.devices import KERAS_DEVICES as DEVICES

    path = prepare(settings)
    test = lesson.HDF5Batches(path, "test", batch_size=1)
    size = min(QUICK_LARGE_BATCH if settings.quick else LARGE_BATCH, test.n_images)
    images = lesson.HDF5Batches(path, "test", batch_size=size)[0][0]
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_cnn().get_weights()
    for name in devices:
        print(f"Predicting on {DEVICES[name]}: {size} images a call, then one image a call ...",
              flush=True)
        with keras.device(DEVICES[name]):
            model = lesson.compile_cnn(lesson.build_cnn())
            model.set_weights(initial_weights)
            throughput = time_calls(partial(model.predict_on_batch, images), WARMUP,
                                    repeats_for(settings.quick))
            energy = energy_of_calls(partial(model.predict_on_batch, images), name, images=size)
            latency = time_calls(partial(model.predict_on_batch, images[:1]), WARMUP,
                                 latency_repeats(settings.quick))
        yield RECORDS.record(
            data=settings.data, run_id=run_id, source="gpulesson.experiments.cnn",
            device_kind=name, keras_device=DEVICES[name], batch_size=int(size),
            **{SUMMARY_KEY: summarise(throughput[1], throughput[0])},
            latency=summarise(latency[1], latency[0]), energy=energy,
            jit_compile=bool(model.jit_compile), **cpu_settings())


def describe(records) -> str:
    """Each device's images per second, latency of one image and energy per image."""
    if not records:
        return "No prediction recorded."
    return "\n".join(
        f"{'GPU' if record.get('device_kind') == 'gpu' else 'CPU'} ({record['device']}): "
        f"{summary_text(throughput_summary(record))} at {record['batch_size']} images a call; "
        f"one image {summary_text(latency_summary(record), duration, what='calls')}; energy per "
        f"image {energy_text(record, per_image=True, what='calls')}." for record in records)
