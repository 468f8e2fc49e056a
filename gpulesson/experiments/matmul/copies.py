"""Copying a product's two inputs from the host to the device, from two kinds of host memory.

- **Pageable** memory is what a NumPy array lives in: the operating system may move its pages,
  so the driver first copies them into a pinned buffer of its own and then over the link.
- **Pinned** (page-locked) memory stays where it is: the GPU reads it over the link directly.
  JAX places an array there with the memory kind ``"pinned_host"``.

Each copy is timed until the copied arrays are on the device. The rate in GB/s is the bytes of
both inputs over the median time. Pinned copies are measured with the JAX backend only; with
another, the record keeps the reason.
"""

from __future__ import annotations

import statistics
import time


def _timed(copy, repeats: int) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        copy()
        seconds.append(time.perf_counter() - start)
    return seconds


def pageable(host, dtype: str, wait, repeats: int) -> list[float]:
    """Seconds of copying the NumPy arrays ``host`` to the current Keras device, each time."""
    import keras

    def copy():
        for x in [keras.ops.convert_to_tensor(x, dtype=dtype) for x in host]:
            wait(x)

    return _timed(copy, repeats)


def pinned(host, device: str, repeats: int) -> list[float]:
    """Seconds of copying ``host`` from pinned host memory to ``device`` ("cpu" or "gpu"),
    each time; the arrays are put into pinned memory once, before the clock starts. Raises
    NotImplementedError on a backend other than JAX."""
    import keras

    if keras.backend.backend() != "jax":
        raise NotImplementedError("pinned copies are measured with the JAX backend only")
    import jax
    from jax.sharding import SingleDeviceSharding

    target = jax.devices(device)[0]
    staged = [jax.device_put(x, SingleDeviceSharding(target, memory_kind="pinned_host"))
              for x in host]
    jax.block_until_ready(staged)
    on_device = SingleDeviceSharding(target, memory_kind="device")
    return _timed(lambda: jax.block_until_ready([jax.device_put(x, on_device) for x in staged]),
                  repeats)


def copy_fields(host, device: str, dtype: str, wait, repeats: int) -> dict:
    """The record's copy fields: ``transfer_seconds`` (pageable, as records before the pinned
    copy kept them) and ``pinned_transfer_seconds``, with their medians, the bytes copied, and
    ``pinned_transfer_unsupported`` (the reason) where pinned copies could not be made."""
    copies = pageable(host, dtype, wait, repeats)
    fields = {"transfer_memory": "pageable", "transfer_bytes": int(sum(x.nbytes for x in host)),
              "transfer_seconds": copies, "transfer_median_seconds": statistics.median(copies),
              "pinned_transfer_seconds": None, "pinned_transfer_median_seconds": None,
              "pinned_transfer_unsupported": None}
    try:
        found = pinned(host, device, repeats)
    except Exception as exc:  # a backend or device without pinned host memory
        fields["pinned_transfer_unsupported"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    else:
        fields["pinned_transfer_seconds"] = found
        fields["pinned_transfer_median_seconds"] = statistics.median(found)
    return fields
