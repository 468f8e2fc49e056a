"""The CNN experiment's evaluation and validation times measure the work, not a compile or the
training steps still queued: validation is timed from a synchronisation, evaluation after a
warm-up that compiled the test set's batches (gpulesson.experiments.cnn.measure). A made-up
device with its own clock stands in for the GPU, so no test depends on the machine's speed."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

from gpulesson.energy import Intervals

measure = importlib.import_module("gpulesson.experiments.cnn.measure")

QUEUED, VALIDATION, COMPILE, BATCH = 5.0, 1.0, 2.0, 0.01


class Device:
    """A clock, the training steps still queued on the device, and the shapes compiled."""

    def __init__(self):
        self.now, self.queued, self.compiled, self.compiles = 0.0, 0.0, set(), 0

    def clock(self):
        return self.now

    def wait(self, model):  # a fetch from the device: the queued steps run first
        self.now += self.queued
        self.queued = 0.0


class Model:
    """``evaluate`` compiles each batch shape it has not seen, then runs each batch."""

    def __init__(self, device):
        self.device, self.trainable_variables = device, []

    def evaluate(self, data, verbose=0):
        for size in data.shapes:
            if size not in self.device.compiled:
                self.device.compiled.add(size)
                self.device.compiles += 1
                self.device.now += COMPILE
            self.device.now += BATCH
        return [1.0, 0.5]


@pytest.fixture
def device(monkeypatch):
    from gpulesson import data, lesson

    device = Device()
    monkeypatch.setattr(measure, "time", SimpleNamespace(perf_counter=device.clock))
    monkeypatch.setattr(measure, "wait_for_model", device.wait)
    monkeypatch.setattr(measure, "start_intervals", lambda kind: (Intervals(None), "no meter"))
    test = SimpleNamespace(batch_size=256, n_images=10_000, shapes=[256] * 39 + [16])
    batches = [SimpleNamespace(batch_size=256, n_images=n) for n in (900, 100)] + [test]
    model = Model(device)

    def train_on(device_name, weights, train, validation, test, n_epochs, verbose=None,
                 callbacks=()):
        """As the episode's train_on: its epoch timer first, then the callbacks given; each
        epoch queues its steps on the device, then validates; then one timed evaluate."""
        timer = lesson.EpochTimer(samples_per_epoch=train.n_images)
        for callback in (timer, *callbacks):
            callback.set_model(model)
        for epoch in range(n_epochs):
            for callback in (timer, *callbacks):
                callback.on_epoch_begin(epoch)
            device.queued += QUEUED  # the steps were dispatched; the device still runs them
            for callback in (timer, *callbacks):
                callback.on_test_begin()
            device.wait(model)  # validation needs the trained weights
            device.now += VALIDATION
            for callback in (timer, *callbacks):
                callback.on_test_end()
            for callback in (timer, *callbacks):
                callback.on_epoch_end(epoch)
        start = device.now
        model.evaluate(test)
        return {"device": device_name, "timing": timer.summary(), "model": model,
                "evaluation_seconds": device.now - start, "test_loss": 1.0,
                "test_accuracy": 0.5, "start_weights": "abc", "history": {"loss": [1.0]},
                "jit_compile": True, "old_validation": list(timer.validation_seconds)}

    monkeypatch.setattr(lesson, "train_on", train_on)
    monkeypatch.setattr(lesson, "split_batches", lambda path, size: batches)
    monkeypatch.setattr(lesson, "build_cnn", lambda: SimpleNamespace(get_weights=lambda: []))
    monkeypatch.setattr(data, "prepare", lambda settings: "unused.h5")
    # the episode's epoch timer reads the same made-up clock
    monkeypatch.setattr(importlib.import_module("gpulesson.lesson.core"), "time",
                        SimpleNamespace(perf_counter=device.clock))
    return device


def _run():
    settings = SimpleNamespace(quick=True, data="synthetic", batch_size=lambda size: size)
    (record,) = measure.run_devices(["cpu"], settings, batch_size=256, seed=1)
    return record


def test_validation_is_timed_from_a_synchronisation(device):
    record = _run()
    assert record["validation_synchronised"]
    # the queued training steps are not counted as validation
    assert record["validation_seconds"] == pytest.approx([VALIDATION] * record["epochs"])
    assert record["mean_validation_seconds"] == pytest.approx(VALIDATION)


def test_the_episodes_timer_alone_would_count_the_queued_steps(device):
    """What the records held before: the epoch timer's clock starts while steps are queued."""
    from gpulesson import lesson

    timer = lesson.EpochTimer()
    model = Model(device)
    timer.set_model(model)
    device.queued = QUEUED
    timer.on_test_begin()
    device.wait(model)
    device.now += VALIDATION
    timer.on_test_end()
    assert timer.validation_seconds == [pytest.approx(QUEUED + VALIDATION)]


def test_the_clock_is_read_after_the_wait(monkeypatch):
    events = []
    monkeypatch.setattr(measure, "wait_for_model", lambda model: events.append("wait"))
    monkeypatch.setattr(measure, "time",
                        SimpleNamespace(perf_counter=lambda: events.append("clock") or 0.0))
    timer = measure.synced_validation_timer()
    timer.on_test_begin()
    timer.on_test_end()
    assert events == ["wait", "clock", "clock"] and timer.seconds == [0.0]


def test_evaluation_is_timed_without_its_compile(device):
    record = _run()
    n_batches = 40
    # the first evaluate compiled the test set's batches: 256 images, and the last 16
    assert record["evaluation_first_seconds"] == pytest.approx(2 * COMPILE + n_batches * BATCH)
    assert record["evaluation_seconds"] == pytest.approx(n_batches * BATCH)
    assert device.compiles == 2  # the timed evaluate compiled nothing


def test_time_evaluation_times_one_compiled_call(device):
    model, test = Model(device), SimpleNamespace(shapes=[256, 256, 16])
    model.evaluate(test)  # the warm-up: two shapes compiled
    assert device.compiles == 2
    assert measure.time_evaluation(model, test) == pytest.approx(3 * BATCH)
    assert device.compiles == 2


def test_a_real_fit_times_each_validation_pass_after_waiting_for_the_model():
    """The mechanism with Keras itself: a tiny model, two epochs, a validation pass each."""
    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((32, 4), "float32"), np.zeros((32, 2), "float32")
    timer = measure.synced_validation_timer()
    model.fit(x, y, validation_data=(x, y), epochs=2, batch_size=8, verbose=0,
              callbacks=[timer])
    assert len(timer.seconds) == 2 and all(s > 0 for s in timer.seconds)
    measure.wait_for_model(model)  # a fetch of the smallest variable, on any backend
