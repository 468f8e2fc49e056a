"""Training the lesson's CNN on each device with the episode's own code (:mod:`gpulesson.lesson`):
the same data split and initial weights everywhere, one warm-up epoch then the timed ones; the
load average before and after (a busy machine shows), energy at each epoch's start and end."""

from __future__ import annotations

from gpulesson.experiments.cnn.records import run_record
from gpulesson.experiments.common import WARMUP, check_epochs, default_epochs
from gpulesson.experiments.energy import energy_callback, start_intervals, stop_intervals
from gpulesson.machine.timing import load_average


def run_devices(devices, settings, *, epochs: int | None = None, batch_size: int, seed: int,
                on_record=None, run_id: str | None = None) -> list[dict]:
    """Train on each of ``devices`` ("cpu", "gpu") in turn; each record handed to ``on_record``
    at once, so that a stopped run keeps it. ``epochs`` counts the warm-up."""
    epochs = check_epochs(default_epochs(settings.quick) if epochs is None else epochs)
    import keras

    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.machine.devices import KERAS_DEVICES as DEVICES
    from gpulesson.records.results import new_run_id

    path = prepare(settings)
    batches = lesson.split_batches(path, settings.batch_size(batch_size))
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_cnn().get_weights()

    run_id, records = run_id or new_run_id(), []
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
        record = {**run_record(run, data=settings.data, run_id=run_id, batches=batches,
                               source="gpulesson.experiments.cnn", load_before=load_before,
                               load_after=load_after, energy=energy),
                  "validation_synchronised": True, "evaluation_warmed": True}
        if on_record:
            on_record(record)
        records.append(record)
    return records
