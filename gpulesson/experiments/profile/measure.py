"""Measuring where a training step of the lesson's CNN spends its time, on each device (JAX):
the rule's epochs through the lesson's generator (on a GPU one more samples NVML's utilisation),
then the first batches of one more epoch under ``jax.profiler.trace``, read into a step's parts
(:func:`breakdown`). A step costs about three forward passes (the forward pass and the backward
pass's two products): the achieved rate is ``3 × forward × images per second``.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import tempfile
import time
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.profile import PROFILE_STEPS, QUICK_STEPS, RECORDS
from gpulesson.machine.devices import keras_device_name
from gpulesson.machine.timing import Budget, BusyMeter, synced_epoch_timer
from gpulesson.records.pagewords import IN_ORDER, ORDER_FIELD
from gpulesson.records.summaries import SUMMARY_KEY, WARMUP, summarise

# A JAX profile (its *.trace.json.gz, no TensorBoard) as a step's parts on two timelines that add up
# to the profiled window: the host's (input, dispatch, the rest of fit) and the device's (kernels,
# copies while no kernel runs, idle; on a CPU, XLA's worker threads), overlaps merged.

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


TRAINING_PASSES = 3  # forward + the two products of the backward pass


def annotated(dataset, max_batches: int):
    """``dataset``'s first ``max_batches`` batches, each fetched inside a :data:`INPUT` event."""
    import jax
    import keras

    class Annotated(keras.utils.PyDataset):
        def __init__(self):
            super().__init__()
            self.n = min(max_batches, len(dataset))

        def __len__(self):
            return self.n

        def __getitem__(self, index):
            with jax.profiler.TraceAnnotation(INPUT):
                return dataset[index]

        def on_epoch_end(self):
            dataset.on_epoch_end()

    return Annotated()


def marked_epoch():
    """A ``fit`` callback that marks each epoch (:data:`EPOCH`) until the device finished it."""
    import jax
    import keras

    from gpulesson.machine.timing import synchronise

    class MarkedEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.mark = jax.profiler.TraceAnnotation(EPOCH)
            self.mark.__enter__()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)
            self.mark.__exit__(None, None, None)

    return MarkedEpoch()


def profile_steps(model, dataset, steps: int, device: str = "cpu") -> dict:
    """The :func:`breakdown` of ``steps`` batches of ``fit``."""
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # the Python tracer slows the host down many times
    part = annotated(dataset, steps)
    with tempfile.TemporaryDirectory(prefix="gpulesson-profile-") as folder:
        with jax.profiler.trace(folder, profiler_options=options):
            model.fit(part, epochs=1, callbacks=[marked_epoch()], verbose=0, **IN_ORDER)
        events = read_events(trace_file(folder))
    return breakdown(events, steps=len(part), device=device)


def utilisation(model, dataset, device: str) -> dict:
    """The GPU's utilisation (percent) sampled by NVML through one epoch, or why there is none."""
    if device != "gpu":
        return {"skipped": "the CPU has no NVML utilisation"}
    from gpulesson.lesson.feeding import GpuWatch, gpu_utilisation

    if gpu_utilisation() is None:
        return {"skipped": "NVML (nvidia-ml-py) cannot read this GPU"}
    watch = GpuWatch(interval=0.05)
    model.fit(dataset, epochs=1, callbacks=[watch], verbose=0, **IN_ORDER)
    found = watch.samples
    if not found:
        return {"skipped": "the epoch was shorter than one NVML sample (0.05 s)"}
    return {"mean": sum(found) / len(found), "min": min(found), "max": max(found),
            "n": len(found), "interval_seconds": 0.05}


def measurement_record(budget, *, run_id: str, device: str, batch_size: int, n_images: int,
                       steps: int, forward_flops: int, utilisation: dict, profile: dict,
                       extra: dict, data: str | None = None) -> dict:
    """One device's results-file record."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    if not data:
        from gpulesson.datasets.settings import get_settings

        data = get_settings().data
    median, warmups = statistics.median(timed), budget.seconds[:budget.warmup]
    per_image = TRAINING_PASSES * forward_flops
    return RECORDS.record(
        data=data, run_id=run_id, source="gpulesson.experiments.profile", device_kind=device,
        keras_device=keras_device_name(device), batch_size=batch_size, n_images=n_images,
        steps=steps, warmup_seconds=warmups, epoch_seconds=timed, median_epoch_seconds=median,
        images_per_second=n_images / median, step_seconds=median / steps,
        forward_flops_per_image=forward_flops, train_flops_per_image=per_image,
        achieved_tflops=per_image * n_images / median / 1e12, utilisation=utilisation,
        profile=profile, **{ORDER_FIELD: False, SUMMARY_KEY: summarise(timed, warmups)}, **extra)


def measure(args, *, run_id: str, done):
    """The records of the devices asked for that ``done`` lacks, each yielded as it is made."""
    import keras

    if keras.backend.backend() != "jax":
        cli.refuse("The profile reads JAX's profiler: run it with KERAS_BACKEND=jax.")
    from gpulesson import lesson
    from gpulesson.datasets.load import prepare
    from gpulesson.datasets.settings import get_settings
    from gpulesson.experiments.profile.page import summary_lines
    from gpulesson.lesson.feeding import flops_per_image

    devices = cli.devices_here(args.devices)
    given = args.steps or (QUICK_STEPS if args.quick else None)
    steps = dict.fromkeys(PROFILE_STEPS, given) if given else PROFILE_STEPS
    settings = get_settings()
    print(settings.describe(), flush=True)
    warmup, repeats = WARMUP, cli.repeats_for(args.quick)
    path = prepare(settings)
    train = lesson.split_batches(path, settings.batch_size(args.batch_size))[0]
    for device in devices:
        if (device,) in done:
            continue
        keras_device = keras_device_name(device)
        with keras.device(keras_device):
            keras.utils.set_random_seed(args.seed)
            model = lesson.compile_cnn(lesson.build_cnn())
            flops = flops_per_image(model)
            budget = Budget(warmup, repeats)
            meter = BusyMeter()
            started = time.perf_counter()
            print(f"{device}: training {warmup} warm-up and {repeats} timed epoch(s) ...")
            model.fit(train, epochs=warmup + repeats, verbose=2, **IN_ORDER,  # a line an epoch
                      callbacks=[synced_epoch_timer(budget), lesson.DataEpoch(train)])
            busy = meter.read()
            used = utilisation(model, train, device)
            try:
                profiled = profile_steps(model, train, min(steps[device], len(train)), device)
            except Exception as exc:  # the rest of the record still holds: keep it, say why
                profiled = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
        record = measurement_record(
            budget, run_id=run_id, device=device, batch_size=train.batch_size,
            n_images=train.n_images, steps=len(train), forward_flops=flops,
            utilisation=used, profile=profiled,
            extra={**busy, "wall_seconds": time.perf_counter() - started,
                   "read_ahead": bool(getattr(train, "read_ahead", False))})
        yield record
        print(f"{device}: " + " ".join(summary_lines(record)))
        del model
