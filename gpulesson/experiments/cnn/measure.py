"""Training the lesson's CNN on each device with the episode's own code.

The generator, model and training function come from :mod:`gpulesson.lesson`, which is
generated from the episode "Training a CNN on the CPU and on the GPU": the same data split and
the same initial weights on every device, per-epoch times, evaluation.
"""

from __future__ import annotations

from gpulesson.experiments.cnn.records import run_record


def run_devices(devices, settings, *, epochs: int, batch_size: int, seed: int,
                on_record=None, run_id: str | None = None) -> list[dict]:
    """Train on each of ``devices`` ("cpu", "gpu") in turn; return one record a device.

    ``epochs`` and ``batch_size`` are capped by the ``settings`` (quick mode); ``seed`` gives
    the initial weights, the same for every device. ``on_record(record)`` is called as soon as
    a device's record is made, so that a run that stops keeps what it measured; ``run_id``
    names the run the records join (default: a new one).
    """
    import keras

    from gpulesson import lesson
    from gpulesson.data import prepare
    from gpulesson.devices import KERAS_DEVICES as DEVICES
    from gpulesson.results import new_run_id

    path = prepare(settings)
    batches = lesson.split_batches(path, settings.batch_size(batch_size))
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_cnn().get_weights()
    epochs = settings.epochs(epochs)

    run_id, records = run_id or new_run_id(), []
    for name in devices:
        print(f"Training on {DEVICES[name]} for {epochs} epochs ...", flush=True)
        run = lesson.train_on(DEVICES[name], initial_weights, *batches, epochs, verbose=2)
        record = run_record(run, data=settings.data, run_id=run_id, batches=batches,
                            source="gpulesson.experiments.cnn")
        if on_record:
            on_record(record)
        records.append(record)
    return records
