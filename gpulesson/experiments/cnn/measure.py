"""Training the lesson's CNN on each device with the episode's own code.

The generator, model and training function come from :mod:`gpulesson.lesson`, which is
generated from the episode "Training a CNN on the CPU and on the GPU": the same data split and
the same initial weights on every device, per-epoch times, evaluation.

Each device follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`): its
first :data:`~gpulesson.experiments.common.WARMUP` epoch is the warm-up, recorded but not
averaged, and the :func:`~gpulesson.experiments.common.repeats_for` epochs after it are the
timed repeats (:data:`~gpulesson.experiments.common.REPEATS`; fewer in quick mode). The load
average is read right before and right after each device's training, so that a run on a busy
machine can be recognised.

Each epoch's energy is read too, from the trained device's meter (:mod:`gpulesson.energy`:
the CPU packages' counters for the CPU, the board's for an NVIDIA GPU) at the start and the
end of the epoch, with no extra synchronisation; epochs too short for the meter are measured
as one window, the whole timed phase; where no meter can be read, the record keeps the reason
(:mod:`gpulesson.experiments.energy`).

The episode's own code times validation and evaluation as the work, not what was queued or
compiled before it: its ``EpochTimer`` waits for the queued training steps before the
validation clock starts, and ``train_on`` times a second ``evaluate`` of the test set, after a
first that compiled its steps. The records say so (``validation_synchronised``,
``evaluation_warmed``).
"""

from __future__ import annotations

from gpulesson.experiments.cnn.records import run_record
from gpulesson.experiments.common import WARMUP, check_epochs, default_epochs
from gpulesson.experiments.energy import energy_callback, start_intervals, stop_intervals
from gpulesson.timing import load_average


def run_devices(devices, settings, *, epochs: int | None = None, batch_size: int, seed: int,
                on_record=None, run_id: str | None = None) -> list[dict]:
    """Train on each of ``devices`` ("cpu", "gpu") in turn; return one record a device.

    ``epochs``: the epochs each device trains, the warm-up included (default
    :func:`default_epochs`: the warm-up and the rule's repeats, fewer in quick mode); at least
    one more than the warm-up. ``batch_size`` is capped by the ``settings`` (quick mode);
    ``seed`` gives the initial weights, the same for every device. ``on_record(record)`` is
    called as soon as a device's record is made, so that a run that stops keeps what it
    measured; ``run_id`` names the run the records join (default: a new one).
    """
    epochs = check_epochs(default_epochs(settings.quick) if epochs is None else epochs)
    import keras

    from gpulesson import lesson
    from gpulesson.data import prepare
    from gpulesson.devices import KERAS_DEVICES as DEVICES
    from gpulesson.results import new_run_id

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
        record = {**run_record(run, data=settings.data, run_id=run_id, batches=batches,
                               source="gpulesson.experiments.cnn", load_before=load_before,
                               load_after=load_after, energy=energy),
                  "validation_synchronised": True, "evaluation_warmed": True}
        if on_record:
            on_record(record)
        records.append(record)
    return records
