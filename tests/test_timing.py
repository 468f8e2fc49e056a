"""The episode's epoch timer (gpulesson.lesson.EpochTimer), timed() and the CPU facts of a run."""

import time
from types import SimpleNamespace

import numpy as np
import pytest

from gpulesson import lesson
from gpulesson.lesson import EpochTimer
from gpulesson.machine import timing
from gpulesson.machine.timing import timed


def fake_clock(monkeypatch, module, readings):
    """Make ``module``'s perf_counter return ``readings`` one after another."""
    values = iter(readings)
    monkeypatch.setattr(module.time, "perf_counter", lambda: next(values))


def run_epochs(timer, n, validation=False):
    timer.on_train_begin()
    for epoch in range(n):
        timer.on_epoch_begin(epoch)
        if validation:
            timer.on_test_begin()
            timer.on_test_end()
        timer.on_epoch_end(epoch, {"loss": 1.0})
    timer.on_train_end()


def test_arithmetic_with_a_fake_clock(monkeypatch):
    # Epochs of 5 s (warm-up), then 2, 2 and 4 s.
    fake_clock(monkeypatch, lesson, [10.0, 15.0, 20.0, 22.0, 30.0, 32.0, 40.0, 44.0])
    timer = EpochTimer(samples_per_epoch=1000)
    run_epochs(timer, 4)
    assert timer.epoch_seconds == [5.0, 2.0, 2.0, 4.0]
    summary = timer.summary()
    assert summary["epochs"] == 4 and summary["first_epoch_seconds"] == 5.0
    assert summary["total_seconds"] == 13.0
    assert summary["steady_mean_epoch_seconds"] == pytest.approx(8 / 3)
    assert summary["steady_median_epoch_seconds"] == 2.0
    assert summary["images_per_second"] == pytest.approx(1000 / (8 / 3))
    assert summary["epoch_seconds"] == [5.0, 2.0, 2.0, 4.0]
    assert summary["validation_seconds"] == []


def test_validation_is_timed_within_the_epoch(monkeypatch):
    # Epoch 0..10 s with validation 7..9 s; epoch 20..24 s with validation 22..23 s.
    fake_clock(monkeypatch, lesson, [0.0, 7.0, 9.0, 10.0, 20.0, 22.0, 23.0, 24.0])
    timer = EpochTimer()
    reads = []

    class Weight:  # reading it waits for the queued training steps
        def __array__(self, dtype=None, copy=None):
            reads.append(len(timer.validation_seconds))
            return np.zeros(1, dtype or "float32")

    timer.set_model(SimpleNamespace(trainable_weights=[Weight()]))
    run_epochs(timer, 2, validation=True)
    assert timer.epoch_seconds == [10.0, 4.0] and timer.validation_seconds == [2.0, 1.0]
    assert reads == [0, 1]  # the validation pass of each epoch first reads a weight


def test_a_new_fit_starts_a_new_measurement(monkeypatch):
    fake_clock(monkeypatch, lesson, [0.0, 3.0, 3.0, 4.0, 100.0, 107.0])
    timer = EpochTimer()
    run_epochs(timer, 2)
    run_epochs(timer, 1)
    assert timer.epoch_seconds == [7.0]


def test_one_epoch_and_no_epoch_have_no_steady_numbers(monkeypatch):
    timer = EpochTimer(samples_per_epoch=10)
    summary = timer.summary()
    assert summary["first_epoch_seconds"] is None and summary["total_seconds"] == 0
    assert summary["steady_mean_epoch_seconds"] is None
    fake_clock(monkeypatch, lesson, [0.0, 1.5])
    run_epochs(timer, 1)
    summary = timer.summary()
    assert summary["first_epoch_seconds"] == 1.5
    assert summary["steady_mean_epoch_seconds"] is None and summary["images_per_second"] is None


def test_the_measuring_helpers_do_not_import_the_episodes_code():
    # gpulesson.lesson imports gpulesson.machine.timing: never the other way round.
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(timing))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert not any(name and name.startswith("gpulesson.lesson") for name in imported)
    assert not hasattr(timing, "EpochTimer")


def test_times_a_real_keras_fit_with_validation():
    import keras

    rng = np.random.default_rng(0)
    x = rng.random((64, 8), dtype=np.float32)
    y = rng.integers(0, 2, 64)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    timer = EpochTimer(samples_per_epoch=len(x))
    start = time.perf_counter()
    model.fit(x, y, epochs=3, batch_size=32, verbose=0, callbacks=[timer], validation_split=0.25)
    elapsed = time.perf_counter() - start
    assert len(timer.epoch_seconds) == 3 and all(s > 0 for s in timer.epoch_seconds)
    assert len(timer.validation_seconds) == 3
    assert all(0 < v < e for v, e in zip(timer.validation_seconds, timer.epoch_seconds))
    assert sum(timer.epoch_seconds) <= elapsed
    assert timer.summary()["images_per_second"] > 0


def test_cpu_settings_name_cores_threads_and_load():
    facts = timing.cpu_settings()
    assert 1 <= facts["cpu_cores_available"] <= facts["cpu_cores_machine"]
    assert len(facts["load_average"]) == 3 and all(v >= 0 for v in facts["load_average"])
    assert isinstance(facts["framework_threads"], dict) and facts["framework_threads"]


def test_timed_returns_result_and_seconds(monkeypatch):
    fake_clock(monkeypatch, timing, [1.0, 3.5])
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


BURN = """
import sys, time
while time.process_time() < 0.6:  # /proc and os.times count whole clock ticks: a margin
    pass
print("done", flush=True)
sys.stdin.read()  # stays alive until the test closes its input
"""


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"), reason="needs Linux's /proc")
def test_a_child_process_cpu_counts_as_the_measurements_own_alive_and_ended():
    import subprocess
    import sys

    from gpulesson.machine.timing import BusyMeter

    meter, before = BusyMeter(), timing.own_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "done"
        # Running: read from /proc, with its own 0.6 s of CPU (and its start-up).
        assert timing.own_cpu_seconds() - before >= 0.5
        assert meter.read()["own_cpu_cores"] > 0
    finally:
        child.communicate("")
    # Ended and waited for: in the process's children's times.
    assert timing.own_cpu_seconds() - before >= 0.5
