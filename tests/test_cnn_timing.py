"""The episode's EpochTimer and train_on time validation and evaluation as the work, not a
compile or the training steps still queued: the validation clock starts after reading a
weight, which waits for the queued steps, and evaluation is timed after a warm call that
compiled the test set's batches. The episode's own train_on runs with a made-up asynchronous
model (its fit returns while the steps are still queued, and a weight's value is ready only
once they ran) on a made-up clock, so no test depends on the machine's speed."""

import importlib
from types import SimpleNamespace

import numpy as np
import pytest

QUEUED, VALIDATION, COMPILE, BATCH = 5.0, 1.0, 2.0, 0.01

core = importlib.import_module("gpulesson.lesson.core")


class Device:
    """A clock, the training steps still queued on the device, and the shapes compiled."""

    def __init__(self):
        self.now, self.queued, self.compiled, self.compiles = 0.0, 0.0, set(), 0

    def clock(self):
        return self.now

    def wait(self):  # a fetch from the device: the queued steps run first
        self.now += self.queued
        self.queued = 0.0


class Weight:
    """A weight on the made-up device: reading its value waits for the queued steps."""

    def __init__(self, device):
        self.device = device

    def __array__(self, dtype=None, copy=None):
        self.device.wait()
        return np.zeros(2, dtype or "float32")


class Model:
    """As Keras on JAX or a GPU: ``fit`` queues each epoch's steps and returns before they
    ran; its validation pass needs the trained weights; ``evaluate`` compiles each batch shape
    it has not seen, then runs each batch."""

    jit_compile = True

    def __init__(self, device):
        self.device = device
        self.trainable_weights = [Weight(device)]

    def get_weights(self):
        return [np.zeros(2, "float32")]

    def set_weights(self, weights):
        pass

    def evaluate(self, data, verbose=0):
        for size in data.shapes:
            if size not in self.device.compiled:
                self.device.compiled.add(size)
                self.device.compiles += 1
                self.device.now += COMPILE
            self.device.now += BATCH
        return [1.0, 0.5]

    def fit(self, train, validation_data, epochs, shuffle, callbacks, verbose):
        for callback in callbacks:
            callback.set_model(self)
        for callback in callbacks:
            callback.on_train_begin()
        for epoch in range(epochs):
            for callback in callbacks:
                callback.on_epoch_begin(epoch)
            self.device.queued += QUEUED  # dispatched; the device still runs them
            for callback in callbacks:
                callback.on_test_begin()
            self.device.wait()  # validation reads the trained weights
            self.device.now += VALIDATION
            for callback in callbacks:
                callback.on_test_end()
            for callback in callbacks:  # Keras hands the loss as a number: done
                callback.on_epoch_end(epoch, {"loss": 1.0})
        return SimpleNamespace(history={"loss": [1.0] * epochs})


@pytest.fixture
def device(monkeypatch):
    device = Device()
    monkeypatch.setattr(core, "time", SimpleNamespace(perf_counter=device.clock))
    monkeypatch.setattr(core, "build_cnn", lambda: None)
    monkeypatch.setattr(core, "compile_cnn", lambda model: Model(device))
    return device


def _train(epochs=3):
    train = SimpleNamespace(n_images=900, epoch=0)
    test = SimpleNamespace(shapes=[256] * 39 + [16])
    return core.train_on("cpu", [], train, None, test, epochs)


def test_validation_waits_for_the_queued_training_steps(device):
    run = _train()
    assert run["timing"]["validation_seconds"] == pytest.approx([VALIDATION] * 3)
    # the epoch still holds its steps, its validation and nothing else
    assert run["timing"]["epoch_seconds"] == pytest.approx([QUEUED + VALIDATION] * 3)


def test_a_timer_without_the_wait_would_count_the_queued_steps(device, monkeypatch):
    """What the timer measured before it read a weight first: validation plus the queued
    training steps. Shows that the test above can fail."""
    monkeypatch.setattr(core.keras.ops, "convert_to_numpy", lambda value: None)
    run = _train()
    assert run["timing"]["validation_seconds"] == pytest.approx([QUEUED + VALIDATION] * 3)


def test_evaluation_is_timed_after_a_warm_call(device):
    run = _train()
    assert run["evaluation_seconds"] == pytest.approx(40 * BATCH)  # no compile in it
    assert device.compiles == 2  # 256 images, and the last 16: compiled once, by the warm call


def test_a_real_fit_times_each_validation_pass():
    """The mechanism with Keras itself: a tiny model, two epochs, a validation pass each; the
    timer's read of a weight works on the backend in use."""
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((32, 4), "float32"), np.zeros((32, 2), "float32")
    timer = core.EpochTimer()
    model.fit(x, y, validation_data=(x, y), epochs=2, batch_size=8, verbose=0,
              callbacks=[timer])
    assert len(timer.validation_seconds) == 2 and all(s > 0 for s in timer.validation_seconds)
