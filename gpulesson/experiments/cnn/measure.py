"""Training, then prediction, of the lesson's CNN on each device with the episode's own code
(:mod:`gpulesson.lesson`): the same data split and initial weights everywhere, one warm-up epoch
then the timed ones; the load average before and after (a busy machine shows), energy at each
epoch's start and end. Prediction times a large batch (throughput) and one image (latency), with
the training's initial weights: the arithmetic does not depend on them. A run continued with
``--run-id`` measures only the parts and devices it lacks, on the data it was measured on."""

from functools import partial

from gpulesson import lesson
from gpulesson.datasets import load
from gpulesson.experiments import cli
from gpulesson.machine.devices import KERAS_DEVICES as DEVICES
from gpulesson.machine.timing import cpu_settings, load_average, timed
from gpulesson.records import summaries
from gpulesson.records.energy import (
    energy_callback,
    energy_of_calls,
    energy_text,
    start_intervals,
    stop_intervals,
)
from gpulesson.records.recordset import RecordSet, epochs_summary, load_fields
from gpulesson.records.results import duration
from gpulesson.records.summaries import WARMUP, as_rate, check_epochs, default_epochs, repeats_for, summarise

EXPERIMENT = "cnn-cpu-vs-gpu"
# One record a device; the page's run is the newest with both devices. A record made before
# the rule took its first epoch as the warm-up.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
# The prediction's records: one a device, in the same file.
PREDICTIONS = RecordSet("cnn-inference", ("device_kind",), file=EXPERIMENT)
LARGE_BATCH, QUICK_LARGE_BATCH = 1024, 64  # images a throughput call predicts
LATENCY_FACTOR = 4  # latency calls are cheap: four times the rule's repeats
PARTS = ("training", "inference")


def run_record(run: dict, *, data: str, run_id: str, batches, source: str = "notebook",
               load_before=None, load_after=None, energy: dict | None = None) -> dict:
    """The record of one device's run (what :func:`gpulesson.lesson.train_on` returns, with the
    CPU settings read right after it); ``batches``: its ``(train, validation, test)``
    generators. ``mean_validation_seconds`` leaves out the warm-up's pass, as the mean epoch
    does; the load averages and ``energy`` are kept when given."""
    timing = dict(run["timing"])
    kind = "gpu" if str(run["device"]).lower().startswith(("gpu", "cuda")) else "cpu"
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    validation = timing.get("validation_seconds") or []
    validation = validation[1:] or validation
    fields = {
        "run_id": run_id, "source": source, "device_kind": kind, "keras_device": run["device"],
        "batch_size": batches[0].batch_size, "n_train": batches[0].n_images,
        "n_validation": batches[1].n_images, "n_test": batches[2].n_images,
        # the training generator reads ahead (episode 4): records before it have no field
        "read_ahead": bool(getattr(batches[0], "read_ahead", False)),
        **timing, "mean_epoch_seconds": mean,
        "mean_validation_seconds": sum(validation) / len(validation) if validation else None,
        "summary": epochs_summary(timing["epoch_seconds"]), "jit_compile": run.get("jit_compile"),
        **cpu_settings(), "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "test_loss": run["test_loss"], "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"],
        "history": {key: [float(v) for v in values] for key, values in run["history"].items()},
        **load_fields(load_before, load_after),
    }
    if energy is not None:
        fields["energy"] = energy
    return RECORDS.record(data=data, **fields)


def train(devices, settings, *, epochs: int | None, batch_size: int, seed: int, run_id: str):
    """Train on each of ``devices`` ("cpu", "gpu") in turn, yielding each one's record as soon
    as it is made. ``epochs`` counts the warm-up."""
    epochs = check_epochs(default_epochs(settings.quick) if epochs is None else epochs)
    import keras

    path = load.prepare(settings)
    batches = lesson.split_batches(path, settings.batch_size(batch_size))
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_cnn().get_weights()
    for name in devices:
        print(f"Training on {DEVICES[name]} for {epochs} epochs ({WARMUP} warm-up, "
              f"{epochs - WARMUP} timed) ...", flush=True)
        intervals, reason = start_intervals(name)
        try:
            load_before = load_average()
            run = lesson.train_on(DEVICES[name], initial_weights, *batches, epochs, verbose=2,
                                  callbacks=[energy_callback(intervals)])
            load_after = load_average()
        finally:
            energy = stop_intervals(intervals, reason, warmup=WARMUP, images=batches[0].n_images)
        # The episode's EpochTimer waits for the queued steps before the validation clock
        # starts, and train_on times a second evaluate after a first that compiled.
        yield {**run_record(run, data=settings.data, run_id=run_id, batches=batches,
                            source="gpulesson.experiments.cnn", load_before=load_before,
                            load_after=load_after, energy=energy),
               "validation_synchronised": True, "evaluation_warmed": True}


def time_calls(fn, warmup: int, repeats: int) -> tuple[list[float], list[float]]:
    """``(warm-up seconds, timed seconds)`` of ``warmup`` then ``repeats`` calls of ``fn``."""
    if repeats < 1:
        raise ValueError(f"at least one timed call is needed, not {repeats}")
    seconds = [timed(fn)[1] for _ in range(warmup + repeats)]
    return seconds[:warmup], seconds[warmup:]


def predict(devices, settings, *, seed: int, run_id: str):
    """Time prediction on each of ``devices`` ("cpu", "gpu"), yielding one record a device."""
    import keras

    path = load.prepare(settings)
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
                                 LATENCY_FACTOR * repeats_for(settings.quick))
        yield PREDICTIONS.record(
            data=settings.data, run_id=run_id, source="gpulesson.experiments.cnn",
            device_kind=name, keras_device=DEVICES[name], batch_size=int(size),
            **{summaries.SUMMARY_KEY: summarise(throughput[1], throughput[0])},
            latency=summarise(latency[1], latency[0]), energy=energy,
            jit_compile=bool(model.jit_compile), **cpu_settings())


def describe_predictions(records) -> str:
    """Each device's images per second, latency of one image and energy per image."""
    if not records:
        return "No prediction recorded."
    return "\n".join(
        f"{'GPU' if record.get('device_kind') == 'gpu' else 'CPU'} ({record['device']}): "
        f"{summaries.summary_text(as_rate(record[summaries.SUMMARY_KEY], record['batch_size']))} at "
        f"{record['batch_size']} images a call; one image "
        f"{summaries.summary_text(record['latency'], duration, what='calls')}; energy per "
        f"image {energy_text(record, per_image=True, what='calls')}." for record in records)


def _left(experiment: str, devices, run_id: str, done) -> list[str]:
    """Those of ``devices`` the run has no ``experiment`` record of, said aloud when some are."""
    if not done:
        return list(devices)
    rest = [d for d in devices if d not in done]
    print(f"Run {run_id} has {experiment} on {', '.join(sorted(done))} already: "
          + (f"going on with {', '.join(rest)}." if rest else "nothing left to record."))
    return rest


def measure(args, *, run_id: str, done):
    """The command's run: the ``--parts`` each device of ``--devices`` lacks in the run, each
    record yielded as soon as it is made."""
    from gpulesson.machine.backends import missing_backend_message
    from gpulesson.machine.timing import set_cpu_threads

    problem = missing_backend_message()  # before Keras is imported: one line, no traceback
    if problem:
        cli.refuse(f"python -m gpulesson.experiments.cnn: error: {problem}")
    # Before the framework runs anything: TensorFlow fixes its threads at its first operation.
    threads = set_cpu_threads(args.cpu_threads)
    from gpulesson.datasets.settings import get_settings
    from gpulesson.machine.devices import keras_device

    settings = get_settings()
    devices = cli.devices_or_refuse(args.devices, keras_device()["gpu_count"], "Keras")
    predicted = PREDICTIONS.read(args.out, run_id=run_id)
    other = sorted({r.get("data") for r in [*RECORDS.read(args.out, run_id=run_id), *predicted]}
                   - {settings.data, None})
    if other:
        cli.refuse(f"Run {run_id} was measured on the data {other[0]!r}, not {settings.data!r}: "
                    f"set LESSON_DATA={other[0]} (and LESSON_QUICK as then) to go on with it.")
    trainings = _left(EXPERIMENT, devices, run_id, {kind for (kind,) in done})
    predictions = _left(PREDICTIONS.experiment, devices, run_id,
                       {r["device_kind"] for r in predicted})
    trainings = trainings if "training" in args.parts else []
    predictions = predictions if "inference" in args.parts else []
    if not trainings and not predictions:
        return
    print(settings.describe())
    print(f"CPU threads: {threads}; XLA (jit_compile): {lesson.JIT_COMPILE}")
    if trainings:
        yield from train(trainings, settings, epochs=args.epochs, batch_size=args.batch_size,
                         seed=args.seed, run_id=run_id)
    if predictions:
        yield from predict(predictions, settings, seed=args.seed, run_id=run_id)
        print(describe_predictions(PREDICTIONS.read(args.out, run_id=run_id)))
