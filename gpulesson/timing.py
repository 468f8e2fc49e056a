"""Wall-clock timing of training epochs and of single calls, the same way on CPU and GPU.

Why wall-clock epoch ends are honest on a GPU: GPU work is queued asynchronously, so a timer
read right after *launching* work can stop too early. Keras' ``fit`` however converts each
epoch's logs (loss, metrics) to Python floats before it calls ``on_epoch_end`` (Keras 3's
``CallbackList.on_epoch_end`` does this for every backend); fetching those numbers waits for
all of the epoch's device work. So the time between ``on_epoch_begin`` and ``on_epoch_end`` is
the real time the epoch took, including its validation pass when ``validation_data`` is given.

The first epoch also includes tracing/compiling the model and warming up the device (memory
pools, kernel selection), which is why it is reported apart from the "steady" epochs.

Importing this module imports Keras (``EpochTimer`` is a Keras callback).
"""

from __future__ import annotations

import statistics
import sys
import time

import keras


class EpochTimer(keras.callbacks.Callback):
    """Records the wall time of every epoch of ``model.fit`` in :attr:`epoch_seconds`.

    ``samples_per_epoch`` (optional, e.g. ``len(x_train)``) lets :meth:`summary` report a
    throughput in images per second over the steady epochs.

    Use: ``timer = EpochTimer(len(x_train)); model.fit(..., callbacks=[timer]); timer.summary()``
    """

    def __init__(self, samples_per_epoch: int | None = None):
        super().__init__()
        self.samples_per_epoch = samples_per_epoch
        self.epoch_seconds: list[float] = []
        self._start: float | None = None

    def on_train_begin(self, logs=None):
        # A new fit starts a new measurement: reusing the timer must not mix two runs.
        self.epoch_seconds = []
        self._start = None

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if self._start is None:
            raise RuntimeError("EpochTimer: on_epoch_end was called without on_epoch_begin")
        self.epoch_seconds.append(time.perf_counter() - self._start)
        self._start = None

    @property
    def first_epoch(self) -> float | None:
        """Seconds of the first epoch (includes compiling and warm-up); None before any epoch."""
        return self.epoch_seconds[0] if self.epoch_seconds else None

    @property
    def steady_epochs(self) -> list[float]:
        """Seconds of the epochs after the first: what training the model really costs."""
        return self.epoch_seconds[1:]

    @property
    def total_seconds(self) -> float:
        return sum(self.epoch_seconds)

    def summary(self) -> dict:
        """The timings as a plain dict (JSON-ready, e.g. for :func:`gpulesson.results.append_record`).

        The steady mean and median are None when only one epoch ran (there is no steady epoch
        to average); ``images_per_second`` needs ``samples_per_epoch`` and a steady epoch.
        """
        steady = self.steady_epochs
        mean = statistics.fmean(steady) if steady else None
        rate = None
        if mean and self.samples_per_epoch:
            rate = self.samples_per_epoch / mean
        return {
            "epochs": len(self.epoch_seconds),
            "epoch_seconds": list(self.epoch_seconds),
            "first_epoch_seconds": self.first_epoch,
            "steady_mean_epoch_seconds": mean,
            "steady_median_epoch_seconds": statistics.median(steady) if steady else None,
            "total_seconds": self.total_seconds,
            "images_per_second": rate,
        }


def _wait_for_device(result) -> None:
    """Wait until the work behind ``result`` is done, for backends that return before that.

    Keras' ``fit``/``evaluate``/``predict`` return Python or numpy values, which are already
    complete; raw tensors from JAX or PyTorch (on a GPU) may still be being computed.
    """
    if hasattr(result, "block_until_ready"):  # JAX arrays
        result.block_until_ready()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def timed(fn, *args, **kwargs):
    """Call ``fn(*args, **kwargs)``; return ``(result, seconds)`` measured with ``perf_counter``.

    The clock stops once the result is ready (JAX arrays and PyTorch's GPU queue are waited
    for). For TensorFlow tensors, time a function that ends with ``keras.ops.convert_to_numpy``.
    """
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    _wait_for_device(result)
    return result, time.perf_counter() - start
