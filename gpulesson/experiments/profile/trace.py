"""Reading a JAX profile (its Chrome-trace ``*.trace.json.gz``, no TensorBoard) into a step's parts.

Two timelines, each split into parts that add up to the profiled window (:data:`EPOCH`):

- **host** (the thread that runs ``fit``): ``input`` (fetching batches, :data:`INPUT`),
  ``dispatch`` (calls of compiled functions), ``other`` (the rest of ``fit``, and waiting);
- **device**: ``kernels``, ``copies`` (host-device copies while no kernel runs), ``idle``.

On a GPU the device's parts come from its stream lines; on a CPU the "device" is XLA's worker
threads on the host, and there are no copies. Overlapping intervals (nested events, several
threads or streams) are merged before they are added up.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

EPOCH = "gpulesson_epoch"  # the profiled window: one epoch, from its start to its synchronised end
INPUT = "gpulesson_input"  # one batch fetched from the input pipeline
COPY = re.compile(r"memcpy|memset", re.IGNORECASE)
DISPATCH = "PjitFunction"  # JAX's host-side call of a compiled function


def trace_file(folder) -> Path:
    """The ``*.trace.json.gz`` file that ``jax.profiler.trace(folder)`` wrote."""
    found = sorted(Path(folder).rglob("*.trace.json.gz"))
    if not found:
        raise FileNotFoundError(f"no *.trace.json.gz under {folder}: did jax.profiler.trace run?")
    return found[-1]


def read_events(path) -> list[dict]:
    """The complete events (``"ph": "X"``, in µs) with their process and thread names."""
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    processes, threads = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "process_name":
            processes[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_name":
            threads[(e["pid"], e.get("tid"))] = e["args"]["name"]
    return [{**e, "process": processes.get(e["pid"], ""),
             "thread": threads.get((e["pid"], e.get("tid")), "")}
            for e in events if e.get("ph") == "X" and "dur" in e]


def merged(intervals) -> list[tuple[float, float]]:
    """Intervals (start, end) merged where they overlap or touch, in order."""
    out: list[list[float]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def length(intervals, window: tuple[float, float]) -> float:
    """The length of the merged ``intervals`` inside ``window``."""
    lo, hi = window
    return sum(max(0.0, min(b, hi) - max(a, lo)) for a, b in merged(intervals))


def _span(e) -> tuple[float, float]:
    return float(e["ts"]), float(e["ts"]) + float(e["dur"])


def device_events(events, device: str = "cpu") -> tuple[list[dict], list[str]]:
    """``(events, line names)`` of the device's work: a GPU's stream lines, else its "XLA Ops",
    else its lines but whole-step summaries; on the CPU, XLA's worker threads on the host."""
    gpu = [e for e in events if "GPU" in e["process"].upper() and not e["process"].startswith("/host")]
    if device == "gpu":
        streams = [e for e in gpu if "stream" in e["thread"].lower()]
        ops = [e for e in gpu if "xla ops" in e["thread"].lower()]
        chosen = streams or ops or [e for e in gpu if not any(
            word in e["thread"].lower() for word in ("module", "step", "framework", "scope"))]
    else:
        chosen = [e for e in events if e["process"].startswith("/host")
                  and ("XLA" in e["thread"] or e["name"].startswith("ThunkExecutor::Execute"))
                  and not e["name"].startswith("ThreadpoolListener")]
    return chosen, sorted({e["thread"] for e in chosen})


def breakdown(events, *, steps: int, device: str = "cpu") -> dict:
    """Seconds per step of each part of the two timelines and of the window (``step``), the lines
    read and the five longest kernels; a ValueError without the window, or a GPU's line."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, not {steps}")
    windows = [_span(e) for e in events if e["name"] == EPOCH]
    if not windows:
        raise ValueError(f"the trace has no {EPOCH!r} event: the profiled epoch was not marked")
    window = max(windows, key=lambda w: w[1] - w[0])
    wall = window[1] - window[0]
    host = [e for e in events if e["process"].startswith("/host")]
    inputs = [_span(e) for e in host if e["name"] == INPUT]
    calls = [_span(e) for e in host if e["name"].startswith(DISPATCH)]
    input_time = length(inputs, window)
    dispatch = length(inputs + calls, window) - input_time  # calls made while fetching: input
    on_device, lines = device_events(events, device)
    if device == "gpu" and not on_device:
        raise ValueError("the trace has no GPU line: the profiler did not see the GPU's work "
                         "(is CUPTI installed?)")
    # By the event's name: a stream's line is often named after all it does ("Compute,MemcpyH2D")
    copies = [_span(e) for e in on_device if COPY.search(e["name"])]
    kernels = [_span(e) for e in on_device if not COPY.search(e["name"])]
    kernel_time = length(kernels, window)
    copy_time = length(kernels + copies, window) - kernel_time  # copies while no kernel ran
    per_kernel: dict[str, float] = {}
    for e in on_device:
        if (e["name"] and not COPY.search(e["name"]) and window[0] <= e["ts"] <= window[1]
                and not e["name"].startswith(("ThunkExecutor", "end: "))):
            per_kernel[e["name"]] = per_kernel.get(e["name"], 0.0) + float(e["dur"])
    top = sorted(per_kernel.items(), key=lambda item: -item[1])[:5]
    us = 1e-6 / steps  # microseconds in the window -> seconds per step
    return {
        "steps": steps, "step": wall * us,
        "host": {"input": input_time * us, "dispatch": dispatch * us,
                 "other": (wall - input_time - dispatch) * us},
        "device": {"kernels": kernel_time * us, "copies": copy_time * us,
                   "idle": (wall - kernel_time - copy_time) * us},
        "device_lines": lines, "top_kernels": [[name, t * us] for name, t in top],
    }
