"""Prediction with the lesson's CNN on each device: throughput at a large batch, latency of one
image, and their records.

Prediction needs no trained weights to be timed: the network does the same arithmetic
whatever its weights are. So each device predicts with the initial weights of the training
(the same ``seed``), and a run that has its training records can add these conditions
without training again (``python -m gpulesson.experiments.cnn --run-id ...``).

Both follow the lesson's measurement rule (:mod:`gpulesson.experiments.common`): warm-up
calls first, recorded but not summarised, then the timed calls, every one of them kept.

- **Throughput**: ``model.predict_on_batch`` on :data:`LARGE_BATCH` test images
  (:data:`QUICK_LARGE_BATCH` in quick mode), :func:`repeats_for` timed calls; a page shows
  the images per second (:func:`throughput_summary`).
- **Energy**: one call lasts milliseconds on a GPU, far shorter than a step of the GPU's
  energy counter, so the same call is repeated in one window until the device's meter
  (:mod:`gpulesson.energy`) has changed often enough
  (:func:`gpulesson.experiments.energy.energy_of_calls`), where a meter can be read.
- **Latency**: one image at a time, :func:`latency_repeats` timed calls (at least
  :data:`~gpulesson.experiments.common.REPEATS`); a page shows the median and the range.

The records (:data:`EXPERIMENT`, one a device) are kept in the CNN's results file beside the
training records, with the same ``run_id``; reading that file for the training
(``experiment="cnn-cpu-vs-gpu"``) leaves them out.
"""

from __future__ import annotations

from functools import partial

from gpulesson.experiments.common import (
    SUMMARY_KEY,
    WARMUP,
    as_rate,
    repeats_for,
    summarise,
    summary_of,
)
from gpulesson.experiments.energy import energy_of_calls
from gpulesson.experiments.recordset import RecordSet

EXPERIMENT = "cnn-inference"
# One record a device, in the CNN's results file beside its training's.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), file="cnn-cpu-vs-gpu")
LARGE_BATCH = 1024  # images a throughput call predicts
QUICK_LARGE_BATCH = 64
LATENCY_FACTOR = 4  # latency calls are cheap: four times the rule's repeats


def latency_repeats(quick: bool) -> int:
    """The timed single-image calls of a device: four times the rule's repeats (20; 8 quick)."""
    return LATENCY_FACTOR * repeats_for(quick)


def time_calls(fn, warmup: int, repeats: int, intervals=None) -> tuple[list[float], list[float]]:
    """``(warm-up seconds, timed seconds)`` of ``warmup`` then ``repeats`` calls of ``fn``,
    each read from :func:`gpulesson.timing.timed`; ``intervals`` (energy) around each call."""
    from gpulesson.timing import timed

    if repeats < 1:
        raise ValueError(f"at least one timed call is needed, not {repeats}")
    seconds = []
    for _ in range(warmup + repeats):
        if intervals is not None:
            intervals.begin()
        seconds.append(timed(fn)[1])
        if intervals is not None:
            intervals.end()
    return seconds[:warmup], seconds[warmup:]


def inference_record(*, device_kind: str, keras_device: str, data: str, run_id: str,
                     batch_size: int, throughput: tuple, latency: tuple, energy: dict,
                     source: str = "gpulesson.experiments.cnn", jit_compile=None) -> dict:
    """The record of one device's prediction: ``throughput`` and ``latency`` are ``(warm-up
    seconds, timed seconds)`` of the large-batch and the single-image calls."""
    from gpulesson.timing import cpu_settings

    fields = {
        "run_id": run_id, "source": source, "device_kind": device_kind,
        "keras_device": keras_device, "batch_size": int(batch_size),
        SUMMARY_KEY: summarise(throughput[1], throughput[0]),
        "latency": summarise(latency[1], latency[0]),
        "energy": energy, "jit_compile": jit_compile, **cpu_settings(),
    }
    return RECORDS.record(data=data, **fields)


def throughput_summary(record: dict | None) -> dict | None:
    """Images per second of a record's large-batch calls (median and range), or None."""
    if not record:
        return None
    seconds = summary_of(record, "throughput_seconds", warmup_key=None)
    return as_rate(seconds, record["batch_size"]) if seconds else None


def latency_summary(record: dict | None) -> dict | None:
    """Seconds of a record's single-image calls (median and range), or None."""
    found = (record or {}).get("latency")
    return dict(found) if isinstance(found, dict) and found.get("samples") else None


def measure_inference(devices, settings, *, seed: int, run_id: str, on_record=None) -> list[dict]:
    """Time prediction on each of ``devices`` ("cpu", "gpu"); one record a device."""
    import keras

    from gpulesson import lesson
    from gpulesson.data import prepare
    from gpulesson.devices import KERAS_DEVICES as DEVICES

    path = prepare(settings)
    test = lesson.HDF5Batches(path, "test", batch_size=1)
    size = min(QUICK_LARGE_BATCH if settings.quick else LARGE_BATCH, test.n_images)
    images = lesson.HDF5Batches(path, "test", batch_size=size)[0][0]
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_cnn().get_weights()
    repeats = repeats_for(settings.quick)
    records = []
    for name in devices:
        print(f"Predicting on {DEVICES[name]}: {size} images a call, then one image a call ...",
              flush=True)
        with keras.device(DEVICES[name]):
            model = lesson.compile_cnn(lesson.build_cnn())
            model.set_weights(initial_weights)
            throughput = time_calls(partial(model.predict_on_batch, images), WARMUP, repeats)
            energy = energy_of_calls(partial(model.predict_on_batch, images), name, images=size)
            latency = time_calls(partial(model.predict_on_batch, images[:1]), WARMUP,
                                 latency_repeats(settings.quick))
        record = inference_record(device_kind=name, keras_device=DEVICES[name],
                                  data=settings.data, run_id=run_id, batch_size=size,
                                  throughput=throughput, latency=latency, energy=energy,
                                  jit_compile=bool(model.jit_compile))
        if on_record:
            on_record(record)
        records.append(record)
    return records


def describe(records) -> str:
    """Each device's prediction in words: images per second at the large batch, the latency
    of one image, the energy per image where it was measured."""
    from gpulesson.experiments.common import summary_text
    from gpulesson.experiments.energy import energy_text
    from gpulesson.results import duration

    if not records:
        return "No prediction recorded."
    lines = []
    for record in records:
        kind = "GPU" if record.get("device_kind") == "gpu" else "CPU"
        lines.append(
            f"{kind} ({record['device']}): {summary_text(throughput_summary(record))} at "
            f"{record['batch_size']} images a call; one image "
            f"{summary_text(latency_summary(record), duration, what='calls')}; energy per image "
            f"{energy_text(record, per_image=True, what='calls')}.")
    return "\n".join(lines)


def reference_inference(path, run_id: str | None = None) -> list[dict]:
    """The prediction records to show: those of the training's reference run ``run_id`` when
    it has some, else the reference run of the prediction alone
    (the layer's newest run); CPU first."""
    found = RECORDS.runs_in(path, run_id=run_id).get(run_id) if run_id else None
    return found or RECORDS.newest_run(path)


def substitutions(path, run_id: str | None = None) -> dict[str, str]:
    """The page's ``ref_inf_*`` values: images per second, the latency of one image, the GPU
    against the CPU for each (:func:`gpulesson.experiments.common.compare`), energy per image."""
    from gpulesson.experiments.common import compare, summary_text
    from gpulesson.experiments.energy import energy_text
    from gpulesson.results import NOT_RECORDED, duration, pick

    records = reference_inference(path, run_id)
    cpu, gpu = pick(records, False), pick(records, True)
    values = {"ref_inf_batch": (f"{records[0]['batch_size']:,} images a call" if records
                                else NOT_RECORDED)}
    for name, record in (("cpu", cpu), ("gpu", gpu)):
        rate, latency = throughput_summary(record), latency_summary(record)
        values[f"ref_inf_{name}_rate"] = summary_text(rate) if rate else NOT_RECORDED
        values[f"ref_inf_{name}_latency"] = (summary_text(latency, duration, what="calls")
                                            if latency else NOT_RECORDED)
        values[f"ref_inf_{name}_image_energy"] = (
            energy_text(record, per_image=True, what="calls") if record else NOT_RECORDED)
    both = cpu and gpu
    values["ref_inf_rate_gpu_vs_cpu"] = (
        compare(throughput_summary(gpu), throughput_summary(cpu), higher_is_better=True).sentence
        if both else NOT_RECORDED)
    values["ref_inf_latency_gpu_vs_cpu"] = (
        compare(latency_summary(gpu), latency_summary(cpu)).sentence if both else NOT_RECORDED)
    return values
