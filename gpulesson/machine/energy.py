"""Energy meters: what a device used, in joules: the CPU's powercap (RAPL) package counters;
an NVIDIA GPU's NVML energy counter, else its power sampled and integrated. A window counts
only when its reading changed :data:`MIN_CHANGES` times; where nothing can be read,
:class:`EnergyUnavailable` gives the reason, never a guessed wattage.
"""

import threading
import time
from collections.abc import Callable, Sequence
from itertools import pairwise
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")
POLL_SECONDS = 0.1  # how often a meter's thread reads its counter or samples the power
MIN_CHANGES = 10  # a window is measured when the meter's reading changed this often in it


class EnergyUnavailable(RuntimeError):
    """No energy counter can be read here; the message says why."""


# --- arithmetic ---------------------------------------------------------------------------------

def integrate(times: Sequence[float], watts: Sequence[float]) -> float:
    """The joules of power samples ``watts`` taken at ``times`` (seconds): trapezoidal rule."""
    if len(times) != len(watts):
        raise ValueError(f"{len(times)} sample times but {len(watts)} power samples: "
                         "give one time for each sample")
    if len(times) < 2:
        raise ValueError("at least two power samples are needed to integrate over a time")
    if any(b < a for a, b in pairwise(times)):
        raise ValueError("the sample times must not go backwards: sort the samples by time")
    if any(w < 0 for w in watts):
        raise ValueError("a power sample is negative: the meter read a wrong value")
    return sum((t1 - t0) * (w0 + w1) / 2
               for (t0, t1), (w0, w1) in zip(pairwise(times), pairwise(watts), strict=True))


def counter_delta(before: int, after: int, max_range: int) -> int:
    """The counts between two readings of a counter that wraps to 0 after ``max_range`` (once)."""
    if max_range <= 0:
        raise ValueError(f"the counter's range must be positive, not {max_range}")
    if not (0 <= before <= max_range and 0 <= after <= max_range):
        raise ValueError(f"readings {before} and {after} lie outside the counter's range "
                         f"0..{max_range}")
    return after - before if after >= before else after + max_range - before


# --- meters -----------------------------------------------------------------------------------

class EnergyMeter:
    """Joules since the meter started, read every ``poll`` seconds by a thread; subclasses give
    :meth:`read` and :meth:`_advance`."""

    source = ""
    counter = True  # a counter of joules (its smallest step is its resolution), not power samples

    def __init__(self, poll: float = POLL_SECONDS, clock: Callable[[], float] = time.perf_counter):
        self._poll, self._clock = poll, clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._total = 0.0
        self.changes = 0  # how often the reading changed since the meter started
        self.step_joules: float | None = None  # the smallest change of a counter seen
        self._last = self.read()
        self._last_time = clock()
        self._thread = None

    def read(self):
        raise NotImplementedError

    def _advance(self, before, after, seconds: float) -> float:
        """The joules between two readings ``seconds`` apart."""
        raise NotImplementedError

    def update(self) -> float:
        """Read the counter now; the joules since the meter started."""
        with self._lock:
            now, when = self.read(), self._clock()
            joules = self._advance(self._last, now, when - self._last_time)
            if now != self._last:
                self.changes += 1
                if self.counter and joules > 0:
                    self.step_joules = min(joules, self.step_joules or joules)
            self._total += joules
            self._last, self._last_time = now, when
            return self._total

    def reading(self) -> tuple[float, int, float]:
        """``(joules, changes, time)`` now: a point from which a window is measured."""
        joules = self.update()
        with self._lock:
            return joules, self.changes, self._last_time

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            self.update()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, name="energy-meter", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


class PowercapMeter(EnergyMeter):
    """The CPU packages' energy counters of Linux powercap (RAPL) under ``root``."""

    def __init__(self, root: Path = POWERCAP, **kwargs):
        self.zones = cpu_zones(root)
        self.ranges = [int(_read(zone / "max_energy_range_uj")) for zone in self.zones]
        self.source = "RAPL package counters (" + ", ".join(z.name for z in self.zones) + ")"
        super().__init__(**kwargs)

    def read(self) -> list[int]:
        return [int(_read(zone / "energy_uj")) for zone in self.zones]

    def _advance(self, before, after, seconds):
        return sum(counter_delta(b, a, r)
                   for b, a, r in zip(before, after, self.ranges, strict=True)) / 1e6


class _NvmlMeter(EnergyMeter):
    def __init__(self, nvml, handle, **kwargs):
        self._nvml, self._handle = nvml, handle
        super().__init__(**kwargs)


class NvmlCounterMeter(_NvmlMeter):
    """An NVIDIA GPU's total energy counter (millijoules since the driver loaded)."""

    source = "NVML total energy counter"

    def read(self) -> int:
        return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)

    def _advance(self, before, after, seconds):
        return (after - before) / 1e3


class NvmlPowerMeter(_NvmlMeter):
    """An NVIDIA GPU's board power (milliwatts), sampled and integrated (:func:`integrate`)."""

    source = "NVML power samples"
    counter = False

    def read(self) -> float:
        return self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1e3

    def _advance(self, before, after, seconds):
        return integrate([0.0, seconds], [before, after])


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except PermissionError:
        raise EnergyUnavailable(
            f"the CPU's energy counter {path} is readable by root only (Linux 5.10 and "
            "newer; the node's administrators can allow it)") from None
    except OSError as exc:
        raise EnergyUnavailable(f"the CPU's energy counter {path} cannot be read "
                                f"({exc.strerror or exc})") from None


def cpu_zones(root: Path = POWERCAP) -> list[Path]:
    """The powercap zones of the CPU packages under ``root`` (not their sub-zones)."""
    zones = sorted(p for p in Path(root).glob("intel-rapl:*") if p.name.count(":") == 1)
    if not zones:
        raise EnergyUnavailable(f"this machine shows no CPU energy counters (no {root}/intel-rapl:*;"
                                " a virtual machine or container often hides them)")
    return zones


def _nvml_handle():
    """``(pynvml, handle)`` of CUDA's first GPU, or EnergyUnavailable with the reason."""
    import os

    try:
        import pynvml as nvml
    except ImportError:
        raise EnergyUnavailable("nvidia-ml-py (pynvml) is not installed") from None
    try:
        nvml.nvmlInit()
    except Exception as exc:  # no driver or no NVML library
        raise EnergyUnavailable(f"NVML cannot be started ({exc}): no NVIDIA driver here") from None
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() or "0"
    try:
        if first.startswith(("GPU-", "MIG-")):
            return nvml, nvml.nvmlDeviceGetHandleByUUID(first)
        return nvml, nvml.nvmlDeviceGetHandleByIndex(int(first))
    except Exception as exc:
        raise EnergyUnavailable(f"NVML does not know the GPU {first!r} ({exc})") from None


def gpu_meter(nvml=None, handle=None, **kwargs) -> EnergyMeter:
    """A meter of the first visible NVIDIA GPU: its energy counter, else its power samples."""
    if nvml is None:
        nvml, handle = _nvml_handle()
    reasons = []
    for meter in (NvmlCounterMeter, NvmlPowerMeter):
        try:
            return meter(nvml, handle, **kwargs)
        except Exception as exc:  # NVMLError_NotSupported and the like
            reasons.append(f"{meter.source}: {exc}")
    raise EnergyUnavailable("this GPU reports neither its energy nor its power ("
                            + "; ".join(reasons) + ")")


def open_meter(device_kind: str, *, powercap: Path = POWERCAP, **kwargs) -> EnergyMeter:
    """The meter of ``device_kind`` ("cpu" or "gpu"), not yet started; EnergyUnavailable where none."""
    if device_kind == "cpu":
        return PowercapMeter(powercap, **kwargs)
    if device_kind == "gpu":
        return gpu_meter(**kwargs)
    raise ValueError(f"unknown device kind {device_kind!r}: give 'cpu' or 'gpu'")


class Intervals:
    """The joules, changes, seconds and readings of a meter's intervals (None: records none)."""

    def __init__(self, meter: EnergyMeter | None):
        self.meter, self._start = meter, None
        self.joules: list[float] = []
        self.changes: list[int] = []
        self.seconds: list[float] = []
        self.readings: list[tuple] = []

    def begin(self) -> None:
        if self.meter is not None:
            self._start = self.meter.reading()

    def end(self) -> None:
        if self.meter is not None and self._start is not None:
            end = self.meter.reading()
            self.readings.append((self._start, end))
            self.joules.append(end[0] - self._start[0])
            self.changes.append(end[1] - self._start[1])
            self.seconds.append(end[2] - self._start[2])
            self._start = None

    def window(self, first: int = 0) -> dict:
        """``{"joules", "changes", "seconds", "intervals"}`` from interval ``first`` to the last."""
        if not self.readings[first:]:
            raise ValueError(f"no interval from number {first} on: {len(self.readings)} recorded")
        start, end = self.readings[first][0], self.readings[-1][1]
        return {"joules": end[0] - start[0], "changes": end[1] - start[1],
                "seconds": end[2] - start[2], "intervals": len(self.readings) - first}


# --- what a record keeps ------------------------------------------------------------------------

def unmeasured(reason: str) -> dict:
    """A record's ``energy`` where no meter could be read: the reason, and no number."""
    return {"measured": False, "reason": str(reason)}

