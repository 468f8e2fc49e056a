"""Training, then prediction, of the lesson's CNN on each device with the episode's own code
(:mod:`gpulesson.lesson`): the same data split and initial weights everywhere, one warm-up epoch
then the timed ones; the load average before and after (a busy machine shows), energy at each
epoch's start and end. A run continued with ``--run-id`` measures only the parts and devices it
lacks, on the data it was measured on."""

from __future__ import annotations

from gpulesson.experiments import cli
from gpulesson.experiments.cnn import inference
from gpulesson.machine.timing import cpu_settings, load_average
from gpulesson.records.energy import energy_callback, start_intervals, stop_intervals
from gpulesson.records.recordset import RecordSet, epochs_summary, load_fields
from gpulesson.records.summaries import WARMUP, check_epochs, default_epochs

EXPERIMENT = "cnn-cpu-vs-gpu"
# One record a device; the page's run is the newest with both devices. A record made before
# the rule took its first epoch as the warm-up.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
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

    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.machine.devices import KERAS_DEVICES as DEVICES

    path = prepare(settings)
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
    predicted = inference.RECORDS.read(args.out, run_id=run_id)
    other = sorted({r.get("data") for r in [*RECORDS.read(args.out, run_id=run_id), *predicted]}
                   - {settings.data, None})
    if other:
        cli.refuse(f"Run {run_id} was measured on the data {other[0]!r}, not {settings.data!r}: "
                    f"set LESSON_DATA={other[0]} (and LESSON_QUICK as then) to go on with it.")
    trainings = _left(EXPERIMENT, devices, run_id, {kind for (kind,) in done})
    predictions = _left(inference.EXPERIMENT, devices, run_id,
                       {r["device_kind"] for r in predicted})
    trainings = trainings if "training" in args.parts else []
    predictions = predictions if "inference" in args.parts else []
    if not trainings and not predictions:
        return
    from gpulesson import lesson

    print(settings.describe())
    print(f"CPU threads: {threads}; XLA (jit_compile): {lesson.JIT_COMPILE}")
    if trainings:
        yield from train(trainings, settings, epochs=args.epochs, batch_size=args.batch_size,
                         seed=args.seed, run_id=run_id)
    if predictions:
        yield from inference.predict(predictions, settings, seed=args.seed, run_id=run_id)
        print(inference.describe(inference.RECORDS.read(args.out, run_id=run_id)))
