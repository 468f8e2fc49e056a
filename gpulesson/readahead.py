"""Reading ahead in another process: a generator's next batches, read into shared memory.

Episode 9's ``ReadAhead`` reads in a thread of the training process. That helps little there:
h5py holds Python's lock while it reads, and mixing a window in numpy holds it too, so the
reading thread and the thread that runs ``fit`` take turns. :class:`ProcessReadAhead` reads in
a Python process of its own, with a lock of its own: it reads the next ``depth`` batches of the
same epoch, in the same order, into a buffer both processes map, and the training process
only copies each batch out (about 0.8 MB for 256 CIFAR-sized images).

It follows the epoch like ``ReadAhead`` (train with ``fit(shuffle=False)`` and
``DataEpoch(reader)``), so every image comes exactly once per epoch, with its label, on every
backend. Give it to ``fit`` as it is, without Keras' workers: it is its own worker.

The reading process is a new interpreter (``python -m gpulesson.readahead``), not a fork:
forking a process that runs TensorFlow's or JAX's threads can deadlock, and a new interpreter
does not re-run the learner's script. It imports Keras with its NumPy backend (no TensorFlow,
JAX or PyTorch): the generator needs only h5py and numpy. It ends when the training process
calls :meth:`ProcessReadAhead.close`, drops the reader, or ends.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
import weakref
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

import keras
import numpy as np

START_SECONDS = 180  # a new interpreter imports Keras and opens the file: seconds, not minutes
POLL_SECONDS = 1.0


class ReaderError(RuntimeError):
    """The reading process failed or ended; the message says why and what to do."""


def _shared_folder() -> str:
    # /dev/shm is memory; elsewhere (macOS) a temporary file in the page cache does as well.
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _nbytes(shapes: dict, key: str) -> int:
    """Bytes of the slots of ``key`` ("x": images, "y": labels)."""
    return int(np.prod(shapes[key])) * np.dtype(shapes[f"{key}_dtype"]).itemsize


def _buffers(path: str, shapes: dict, mode: str):
    """The images' and labels' slots, mapped from the file at ``path``, the labels after."""
    x = np.memmap(path, dtype=shapes["x_dtype"], mode=mode, shape=shapes["x"])
    y = np.memmap(path, dtype=shapes["y_dtype"], mode=mode, shape=shapes["y"],
                  offset=_nbytes(shapes, "x"))
    return x, y


def _reserve(handle: int, size: int, path: str) -> None:
    """Give the buffer's file its bytes now: a mapped file that runs out of room later kills
    the process that writes to it (SIGBUS) instead of raising an error."""
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(handle, 0, size)
        else:  # macOS: no reservation, only the size
            os.ftruncate(handle, size)
    except OSError as error:
        raise ReaderError(
            f"no room for the reading buffer ({size / 2**20:.1f} MiB) in "
            f"{os.path.dirname(path)}: {error.strerror}. Free space there, or use a smaller "
            "depth or batch") from error


def _buffer_bytes(shapes: dict) -> int:
    return _nbytes(shapes, "x") + _nbytes(shapes, "y")


def _stop(process: subprocess.Popen, connection: Connection) -> None:
    """End the reading process (it ends by itself when the connection closes)."""
    try:
        connection.send(None)
    except (OSError, ValueError):
        pass
    connection.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class ProcessReadAhead(keras.utils.PyDataset):
    """``batches`` (a PyDataset of numpy (images, labels), such as the lesson's
    ``HDF5Batches``), read ``depth`` batches ahead by a process of its own.

    Train with ``fit(shuffle=False)`` and ``DataEpoch(reader)``; call :meth:`close` (or use
    ``with``) when done to end the process at once.
    """

    def __init__(self, batches, depth: int = 4):
        super().__init__()
        if depth < 1:
            raise ValueError(f"depth={depth} must be at least 1 batch")
        self.batches, self.depth = batches, depth
        self._n = len(batches)
        self._lock = threading.RLock()
        self._asked: dict[int, int] = {}  # batch index -> slot being filled, in asking order
        self._ready: dict[int, tuple[int, int]] = {}  # batch index -> (slot, rows)
        self._process, self._connection = self._start()
        self._finalizer = weakref.finalize(self, _stop, self._process, self._connection)
        self._free = list(range(depth))

    # -- the reading process -------------------------------------------------------------

    def _start(self):
        try:
            payload = pickle.dumps(self.batches)
        except Exception as error:
            raise TypeError(
                f"ProcessReadAhead sends the batches to a new process, and they cannot be "
                f"pickled ({error}); define their class in a module, not in the notebook"
            ) from error
        ours, theirs = Pipe()
        package_root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "KERAS_BACKEND": "numpy", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(
                   [package_root, *filter(None, [os.environ.get("PYTHONPATH")])])}
        process = subprocess.Popen(
            [sys.executable, "-m", "gpulesson.readahead", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        try:
            ours.send((payload, self.depth))
            shapes = self._answer(ours, process, START_SECONDS, "start")
            handle, path = tempfile.mkstemp(prefix="gpulesson-readahead-", dir=_shared_folder())
            try:
                _reserve(handle, _buffer_bytes(shapes), path)
                ours.send(path)
                self._answer(ours, process, START_SECONDS, "start")
                self._x, self._y = _buffers(path, shapes, "r")
            finally:
                # Both processes have it mapped: the file's name is no longer needed.
                os.close(handle)
                os.unlink(path)
        except BaseException:
            _stop(process, ours)
            raise
        return process, ours

    @staticmethod
    def _answer(connection, process, seconds, what):
        """The next message from the reading process, or a :class:`ReaderError`."""
        waited = 0.0
        while not connection.poll(POLL_SECONDS):
            waited += POLL_SECONDS
            if process.poll() is not None or waited >= seconds:
                break
        else:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                message = None
            if isinstance(message, tuple) and message[0] == "error":
                raise ReaderError(f"the reading process failed at {what} (make a new "
                                  f"ProcessReadAhead once it is fixed):\n{message[-1]}")
            if message is not None:
                return message
        raise ProcessReadAhead._gone(process, what)

    @staticmethod
    def _gone(process, what) -> ReaderError:
        code = process.poll()
        state = "did not answer" if code is None else f"ended (exit code {code})"
        return ReaderError(
            f"the reading process {state} at {what}; its error, if any, is printed above. "
            "Make a new ProcessReadAhead, or read without it")

    def close(self) -> None:
        """End the reading process; the reader cannot be used after this."""
        self._finalizer()
        self._asked.clear()
        self._ready.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __getstate__(self):
        raise TypeError("a ProcessReadAhead reads in a process of its own: give it to fit "
                        "without workers or use_multiprocessing")

    # -- batches -------------------------------------------------------------------------

    def __len__(self):
        return self._n

    @property
    def epoch(self):
        return self.batches.epoch

    @epoch.setter
    def epoch(self, value):
        with self._lock:
            if value != self.batches.epoch:
                self._forget()
                self.batches.epoch = value

    def _ask_from(self, index: int) -> None:
        """Ask for the batches from ``index`` on that are not asked for yet, while a slot is free."""
        for ahead in range(index, min(index + self.depth, len(self))):
            if not self._free:
                return
            if ahead not in self._asked and ahead not in self._ready:
                slot = self._free.pop()
                try:
                    self._connection.send(("read", self.batches.epoch, ahead, slot))
                except OSError:
                    self.close()
                    raise self._gone(self._process, f"batch {ahead}") from None
                self._asked[ahead] = slot

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise ReaderError("this ProcessReadAhead was closed: make a new one")

    def _receive(self) -> None:
        """Wait for the oldest asked batch to be read."""
        try:
            _, index, rows = self._answer(self._connection, self._process, float("inf"),
                                          f"batch {next(iter(self._asked))}")
        except ReaderError:
            self.close()  # its answers are out of step now: a new reader starts clean
            raise
        self._ready[index] = (self._asked.pop(index), rows)

    def _forget(self) -> None:
        # Batches read for another epoch's order are of no use; the process answers in order.
        while self._asked:
            self._receive()
        self._free += [slot for slot, _ in self._ready.values()]
        self._ready.clear()

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        with self._lock:
            self._check_open()
            if index not in self._asked and index not in self._ready:
                self._forget()  # read out of order: start again from here
            self._ask_from(index)
            while index not in self._ready:
                self._receive()
            slot, rows = self._ready.pop(index)
            # A copy: the slot is filled again while the model trains on this batch.
            batch = self._x[slot, :rows].copy(), self._y[slot, :rows].copy()
            self._free.append(slot)
            self._ask_from(index + 1)
            return batch

    def on_epoch_end(self):
        with self._lock:
            self._forget()
            self.batches.on_epoch_end()


def _serve(connection: Connection) -> None:
    """The reading process: read the batches asked for, into the shared slots, in order."""
    # Ctrl-C reaches the whole process group; the training process decides when this ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        payload, depth = connection.recv()
        batches = pickle.loads(payload)
        x, y = batches[0]
        rows = max(len(x), getattr(batches, "batch_size", 0))
        shapes = {"x": (depth, rows, *x.shape[1:]), "x_dtype": x.dtype.str,
                  "y": (depth, rows, *y.shape[1:]), "y_dtype": y.dtype.str}
        connection.send(shapes)
        xs, ys = _buffers(connection.recv(), shapes, "r+")
        connection.send("mapped")
    except EOFError:
        return
    except BaseException:
        connection.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            request = connection.recv()
        except EOFError:  # the training process ended
            return
        if request is None:
            return
        _, epoch, index, slot = request
        try:
            batches.epoch = epoch
            x, y = batches[index]
            if len(x) > rows or len(x) != len(y):
                raise ValueError(f"batch {index} has {len(x)} images and {len(y)} labels; "
                                 f"a slot holds {rows} of each")
            xs[slot, :len(x)], ys[slot, :len(y)] = x, y
            connection.send(("done", index, len(x)))
        except Exception:
            connection.send(("error", index, traceback.format_exc()))


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
