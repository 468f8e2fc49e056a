"""What the GPU ran at during each timed window: its SM clock and its board power, from NVML.

A long run of large products heats the card, and a card at its power limit lowers its clock,
so the windows of one size can slow down one after another. Each window therefore keeps the
mean and the lowest SM clock (MHz) and the mean board power (W) that a thread sampled every
:data:`POLL_SECONDS` while it ran (:class:`WindowSensor`). NVML reads the card, not the
process: another program on the same GPU shows too. Where NVML cannot be read (no NVIDIA GPU,
no ``pynvml``), :func:`open_sensor` returns None and the reason, which the record keeps.
"""

from __future__ import annotations

import statistics
import threading
import time

POLL_SECONDS = 0.02  # a 0.5 s window holds about 25 samples


class WindowSensor:
    """Samples ``(time, SM clock in MHz, board power in W)`` from NVML, from a thread while it
    is entered (``poll`` seconds apart) or when :meth:`sample` is called; :meth:`window` gives
    a window's summary of the samples taken between its start and end."""

    def __init__(self, nvml, handle, poll: float | None = POLL_SECONDS, clock=time.perf_counter):
        self.nvml, self.handle, self.poll, self.clock = nvml, handle, poll, clock
        self.samples: list[tuple[float, float, float]] = []
        self._stop = threading.Event()
        self._thread = None
        self.source = "NVML (SM clock, board power)"

    def sample(self) -> None:
        clock = self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)
        watts = self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000  # reported in mW
        self.samples.append((self.clock(), float(clock), float(watts)))

    def _run(self) -> None:
        while not self._stop.wait(self.poll):
            self.sample()

    def __enter__(self):
        if self.poll:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def window(self, start: float, end: float) -> dict:
        """``{"sm_clock_mhz", "sm_clock_min_mhz", "watts", "samples"}`` of the samples taken
        from ``start`` to ``end``; a window shorter than the polling takes one sample now."""
        inside = [s for s in list(self.samples) if start < s[0] <= end]
        if not inside:
            self.sample()
            inside = self.samples[-1:]
        clocks, watts = [s[1] for s in inside], [s[2] for s in inside]
        return {"sm_clock_mhz": statistics.fmean(clocks), "sm_clock_min_mhz": min(clocks),
                "watts": statistics.fmean(watts), "samples": len(inside)}


def open_sensor(device: str):
    """``(sensor, None)`` for the first visible NVIDIA GPU (``CUDA_VISIBLE_DEVICES``) that NVML
    can read, else ``(None, reason)``; the CPU has no such sensor here."""
    if device != "gpu":
        return None, "the CPU's clock and power are not sampled"
    from gpulesson.energy import _nvml_handle

    try:
        sensor = WindowSensor(*_nvml_handle())
        sensor.sample()  # fails here, not in the middle of a sweep, where NVML cannot read it
        sensor.samples.clear()
    except Exception as exc:  # no pynvml, no driver, not an NVIDIA GPU
        return None, f"NVML could not be read: {type(exc).__name__}: {str(exc)[:120]}"
    return sensor, None
