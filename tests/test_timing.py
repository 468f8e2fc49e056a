"""Epoch timing callback and the timed() helper."""

import time

import numpy as np
import pytest

from gpulesson import timing
from gpulesson.timing import EpochTimer, timed


def fake_clock(monkeypatch, readings):
    """Make perf_counter return ``readings`` one after another (only this test calls it)."""
    values = iter(readings)
    monkeypatch.setattr(timing.time, "perf_counter", lambda: next(values))


def run_epochs(timer, n):
    timer.on_train_begin()
    for epoch in range(n):
        timer.on_epoch_begin(epoch)
        timer.on_epoch_end(epoch, {"loss": 1.0})
    timer.on_train_end()


def test_arithmetic_with_a_fake_clock(monkeypatch):
    # Epochs of 5 s (warm-up), then 2, 2 and 4 s.
    fake_clock(monkeypatch, [10.0, 15.0, 20.0, 22.0, 30.0, 32.0, 40.0, 44.0])
    timer = EpochTimer(samples_per_epoch=1000)
    run_epochs(timer, 4)
    assert timer.epoch_seconds == [5.0, 2.0, 2.0, 4.0]
    assert timer.first_epoch == 5.0
    assert timer.steady_epochs == [2.0, 2.0, 4.0]
    assert timer.total_seconds == 13.0
    summary = timer.summary()
    assert summary["epochs"] == 4
    assert summary["steady_mean_epoch_seconds"] == pytest.approx(8 / 3)
    assert summary["steady_median_epoch_seconds"] == 2.0
    assert summary["images_per_second"] == pytest.approx(1000 / (8 / 3))
    assert summary["epoch_seconds"] == [5.0, 2.0, 2.0, 4.0]


def test_a_new_fit_starts_a_new_measurement(monkeypatch):
    fake_clock(monkeypatch, [0.0, 3.0, 3.0, 4.0, 100.0, 107.0])
    timer = EpochTimer()
    run_epochs(timer, 2)
    run_epochs(timer, 1)
    assert timer.epoch_seconds == [7.0]


def test_one_epoch_and_no_epoch_have_no_steady_numbers(monkeypatch):
    timer = EpochTimer(samples_per_epoch=10)
    assert timer.first_epoch is None and timer.total_seconds == 0
    assert timer.summary()["steady_mean_epoch_seconds"] is None
    fake_clock(monkeypatch, [0.0, 1.5])
    run_epochs(timer, 1)
    summary = timer.summary()
    assert summary["first_epoch_seconds"] == 1.5
    assert summary["steady_mean_epoch_seconds"] is None and summary["images_per_second"] is None


def test_epoch_end_without_begin_is_an_error():
    with pytest.raises(RuntimeError, match="without on_epoch_begin"):
        EpochTimer().on_epoch_end(0)


def test_times_a_real_keras_fit():
    import keras

    rng = np.random.default_rng(0)
    x = rng.random((64, 8), dtype=np.float32)
    y = rng.integers(0, 2, 64)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    timer = EpochTimer(samples_per_epoch=len(x))
    start = time.perf_counter()
    model.fit(x, y, epochs=3, batch_size=32, verbose=0, callbacks=[timer])
    elapsed = time.perf_counter() - start
    assert len(timer.epoch_seconds) == 3 and all(s > 0 for s in timer.epoch_seconds)
    assert len(timer.steady_epochs) == 2
    assert timer.total_seconds <= elapsed
    assert timer.summary()["images_per_second"] > 0


def test_timed_returns_result_and_seconds(monkeypatch):
    fake_clock(monkeypatch, [1.0, 3.5])
    result, seconds = timed(lambda a, b=0: a + b, 2, b=3)
    assert result == 5 and seconds == 2.5


def test_timed_waits_for_asynchronous_results():
    class Pending:
        ready = False

        def block_until_ready(self):
            self.ready = True
            return self

    result, seconds = timed(Pending)
    assert result.ready and seconds >= 0
