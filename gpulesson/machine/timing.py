"""Timing helpers the episodes do not teach: single calls, and the CPU facts of a timing (the
epoch timer is the episodes' own, in :mod:`gpulesson.lesson`, which imports this module)."""

import os
import sys
import time


def available_cores() -> int:
    """The cores this process may run on (a Slurm job's allocation, not the whole node)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def framework_threads() -> dict:
    """The Keras backend's CPU thread settings (0 or absent: the framework decides)."""
    backend = _keras_backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                "inter_op": tf.config.threading.get_inter_op_parallelism_threads()}
    if backend == "torch":
        import torch

        return {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}
    # JAX: XLA's CPU thread pool follows the cores available; only XLA_FLAGS can change it.
    return {"xla_flags": os.environ.get("XLA_FLAGS", "")}


def load_average() -> list[float] | None:
    """The machine's load average over 1, 5 and 15 minutes, rounded (None where there is none)."""
    try:
        return [round(float(v), 2) for v in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def process_stat(pid) -> list[str] | None:
    """The fields of Linux's /proc/PID/stat after the command's name (state first); None without one."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()  # the name may hold spaces and ")"
    except (OSError, IndexError):
        return None


def own_cpu_seconds() -> float:
    """CPU seconds of this process and its children, running (from /proc) or waited for."""
    times = os.times()
    total = time.process_time() + times.children_user + times.children_system
    tick, parents = os.sysconf("SC_CLK_TCK"), [os.getpid()]
    while parents:
        parent = parents.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:  # not Linux, or the process has just ended
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children = [int(pid) for pid in f.read().split()]
            except (OSError, ValueError):
                continue
            for child in children:
                fields = process_stat(child)
                if fields is None:  # ended meanwhile
                    continue
                total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
                parents.append(child)
    return total


def cpu_settings() -> dict:
    """The facts that decide a CPU timing: cores, the framework's threads, the load average."""
    return {
        "cpu_cores_available": available_cores(),
        "cpu_cores_machine": os.cpu_count(),
        "framework_threads": framework_threads(),
        "load_average": load_average(),
    }


def set_cpu_threads(threads: int | None = None) -> dict:
    """Fix the framework's CPU threads (default: the cores available) before it does any work;
    returns :func:`framework_threads`."""
    threads = threads or available_cores()
    backend = _keras_backend()
    if backend == "tensorflow":
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError as exc:
            raise RuntimeError(f"TensorFlow's threads can only be set before it runs anything: "
                               f"call set_cpu_threads() first ({exc})") from exc
    elif backend == "torch":
        import torch

        torch.set_num_threads(threads)
    return framework_threads()


def _keras_backend() -> str:
    import keras

    return keras.backend.backend()


def _wait_for_device(result) -> None:
    """Wait until the work behind ``result`` is done: JAX and PyTorch GPU tensors may still be computing."""
    if hasattr(result, "block_until_ready"):  # JAX arrays
        result.block_until_ready()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def timed(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), seconds)``, the clock stopped once the result is ready."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    _wait_for_device(result)
    return result, time.perf_counter() - start


class Budget:
    """Epoch times of one condition: ``warmup`` epochs, recorded apart, then ``repeats`` timed
    ones. However long they take, all of them are timed (the rule): no clock cuts a condition
    short."""

    def __init__(self, warmup: int, repeats: int):
        self.warmup, self.repeats = warmup, repeats
        self.seconds: list[float] = []

    @property
    def timed(self) -> list[float]:
        return self.seconds[self.warmup:]

    def done(self) -> bool:
        return len(self.timed) >= self.repeats


def synchronise(logs) -> None:
    """Wait until the epoch's work is done on the device: converting the loss that its last
    step computed to a Python number has to wait for it (and, on a GPU, for everything queued
    before it)."""
    for value in (logs or {}).values():
        float(value)


def synced_epoch_timer(budget: Budget):
    """A ``fit`` callback that appends each epoch's wall time to ``budget``, read after the
    device finished the epoch, and stops training when the budget is done."""
    import keras  # only when something is measured

    class SyncedEpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.budget, self._start = budget, None

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)
            self.budget.seconds.append(time.perf_counter() - self._start)
            if self.budget.done():
                self.model.stop_training = True

    return SyncedEpochTimer()


class BusyMeter:
    """How much of the machine's CPU time other programs used while one condition was measured
    (0: the machine was ours; 0.5: half of all cores were busy elsewhere), how many cores the
    measurement itself kept busy (its process and its child processes, such as a reading
    process), and the load average right before and right after. Other programs on the same
    cores slow a CPU measurement down, so every record keeps these. The shares need Linux's
    /proc (None elsewhere)."""

    def __init__(self):
        self.before = load_average()
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
        busy = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")
        return busy, own_cpu_seconds(), time.perf_counter()

    def _since_start(self) -> tuple[float, float] | None:
        """(other programs' share of all cores, cores this process and its children kept busy)
        from the start until now, from one sample; None without /proc or time elapsed."""
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy, own, wall = (b - a for a, b in zip(self.start, end, strict=True))
        if wall <= 0:
            return None
        share = (busy - own) / (wall * (os.cpu_count() or 1))
        return round(min(max(share, 0.0), 1.0), 3), round(own / wall, 2)

    def read(self) -> dict:
        """The record's fields (``load_average`` is the one read after, as records made before
        the rule kept it)."""
        other, own = self._since_start() or (None, None)
        after = load_average()
        return {"other_programs_cpu_share": other, "own_cpu_cores": own,
                "load_average": after, "load_average_before": self.before,
                "load_average_after": after}
