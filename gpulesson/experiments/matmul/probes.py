"""What a sweep measures beside the product itself: the GPU's SM clock and board power while a
window of calls runs (NVML), and the time of copying the inputs to the device."""

import statistics
import threading
import time

POLL_SECONDS = 0.02  # NVML sampled this often: a 0.5 s window holds about 25 samples


class WindowSensor:
    """The GPU's SM clock and board power from NVML, sampled every ``poll`` s while entered."""

    source = "NVML (SM clock, board power)"

    def __init__(self, nvml, handle, poll: float | None = POLL_SECONDS, clock=time.perf_counter):
        self.nvml, self.handle, self.poll, self.clock = nvml, handle, poll, clock
        self.samples: list[tuple[float, float, float]] = []
        self._stop, self._thread = threading.Event(), None

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
        """A window's clock and power; one without a sample inside is sampled now."""
        inside = [s for s in list(self.samples) if start < s[0] <= end]
        if not inside:
            self.sample()
            inside = self.samples[-1:]
        clocks, watts = [s[1] for s in inside], [s[2] for s in inside]
        return {"sm_clock_mhz": statistics.fmean(clocks), "sm_clock_min_mhz": min(clocks),
                "watts": statistics.fmean(watts), "samples": len(inside)}


def open_sensor(device: str):
    """``(sensor, None)`` for the first GPU that NVML can read, else ``(None, reason)``."""
    if device != "gpu":
        return None, "the CPU's clock and power are not sampled"
    from gpulesson.machine.energy import _nvml_handle

    try:
        sensor = WindowSensor(*_nvml_handle())
        sensor.sample()  # fails here, not mid-sweep, where NVML cannot read it
        sensor.samples.clear()
    except Exception as exc:  # no pynvml, no driver, not an NVIDIA GPU
        return None, f"NVML could not be read: {type(exc).__name__}: {str(exc)[:120]}"
    return sensor, None


def timed(call, repeats: int) -> list[tuple[float, object]]:
    found = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        found.append((time.perf_counter() - start, result))
    return found


def copy_fields(host, device: str, dtype: str, wait, repeats: int) -> dict:
    """The seconds of copying the NumPy arrays ``host`` to the device from pageable memory, and
    with JAX, from pinned memory, which the GPU reads over the link directly."""
    import keras

    def pageable():
        for x in [keras.ops.convert_to_tensor(x, dtype=dtype) for x in host]:
            wait(x)

    copies = [s for s, _ in timed(pageable, repeats)]
    fields = {"transfer_memory": "pageable", "transfer_bytes": int(sum(x.nbytes for x in host)),
              "transfer_seconds": copies, "transfer_median_seconds": statistics.median(copies),
              "pinned_transfer_seconds": None, "pinned_transfer_median_seconds": None}
    try:
        if keras.backend.backend() != "jax":
            raise NotImplementedError("pinned copies are measured with the JAX backend only")
        import jax
        from jax.sharding import SingleDeviceSharding

        target = jax.devices(device)[0]
        staged = [jax.device_put(x, SingleDeviceSharding(target, memory_kind="pinned_host"))
                  for x in host]  # put into pinned memory once, before the clock starts
        jax.block_until_ready(staged)
        on_device = SingleDeviceSharding(target, memory_kind="device")
        found = [s for s, _ in timed(lambda: jax.block_until_ready(
            [jax.device_put(x, on_device) for x in staged]), repeats)]
    except Exception as exc:  # a backend or device without pinned host memory
        return {**fields, "pinned_transfer_unsupported": f"{type(exc).__name__}: {str(exc)[:160]}"}
    return {**fields, "pinned_transfer_seconds": found, "pinned_transfer_unsupported": None,
            "pinned_transfer_median_seconds": statistics.median(found)}
