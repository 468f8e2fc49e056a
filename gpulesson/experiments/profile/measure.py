"""Where a training step of the lesson's CNN spends its time on each device (JAX): the rule's
epochs through the lesson's generator (on a GPU one more samples NVML's utilisation), then the
first batches of one more epoch under ``jax.profiler.trace``, read into the host's and the
device's parts of a step (:func:`breakdown`). A step costs about three forward passes."""

import gzip
import json
import re
import tempfile
import time
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.profile import PROFILE_STEPS, QUICK_STEPS, RECORDS
from gpulesson.machine.devices import keras_device_name
from gpulesson.machine.timing import Budget, BusyMeter, synced_epoch_timer, synchronise
from gpulesson.records.pagewords import IN_ORDER, ORDER_FIELD
from gpulesson.records.summaries import WARMUP, repeats_for

EPOCH = "gpulesson_epoch"  # the profiled window: one epoch, from its start to its synchronised end
INPUT = "gpulesson_input"  # one batch fetched from the input pipeline
COPY = re.compile(r"memcpy|memset", re.IGNORECASE)
DISPATCH = "PjitFunction"  # JAX's host-side call of a compiled function


def read_events(folder) -> list[dict]:
    """The complete events (``"ph": "X"``, in µs) with their process and thread names, of the
    ``*.trace.json.gz`` that ``jax.profiler.trace(folder)`` wrote."""
    found = sorted(Path(folder).rglob("*.trace.json.gz"))
    if not found:
        raise FileNotFoundError(f"no *.trace.json.gz under {folder}: did jax.profiler.trace run?")
    with gzip.open(found[-1], "rt") as f:
        events = json.load(f)["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    processes = {e["pid"]: e["args"]["name"] for e in meta if e.get("name") == "process_name"}
    threads = {(e["pid"], e.get("tid")): e["args"]["name"]
               for e in meta if e.get("name") == "thread_name"}
    return [{**e, "process": processes.get(e["pid"], ""),
             "thread": threads.get((e["pid"], e.get("tid")), "")}
            for e in events if e.get("ph") == "X" and "dur" in e]


def length(intervals, window: tuple[float, float]) -> float:
    """The length inside ``window`` of the union of ``intervals`` (start, end)."""
    total, covered = 0.0, window[0]
    for start, end in sorted(intervals):
        start, end = max(start, covered), min(end, window[1])
        if end > start:
            total, covered = total + end - start, end
    return total


def _span(e) -> tuple[float, float]:
    return float(e["ts"]), float(e["ts"]) + float(e["dur"])


def breakdown(events, *, steps: int, device: str = "cpu") -> dict:
    """Seconds per step of the window (``step``) and of the parts of the host's timeline (input,
    dispatch, the rest of fit) and the device's (kernels, copies while no kernel runs, idle), each
    adding up to it; the lines read, the five longest kernels; a ValueError without the window."""
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
    # The device's work: a GPU's stream lines, else its "XLA Ops", else its lines but whole-step
    # summaries; on the CPU, XLA's worker threads on the host.
    if device == "gpu":
        gpu = [e for e in events if "GPU" in e["process"].upper()
               and not e["process"].startswith("/host")]
        on_device = ([e for e in gpu if "stream" in e["thread"].lower()]
                     or [e for e in gpu if "xla ops" in e["thread"].lower()]
                     or [e for e in gpu if not any(word in e["thread"].lower() for word in
                                                   ("module", "step", "framework", "scope"))])
        if not on_device:
            raise ValueError("the trace has no GPU line: the profiler did not see the GPU's work "
                             "(is CUPTI installed?)")
    else:
        on_device = [e for e in host if ("XLA" in e["thread"] or e["name"].startswith(
            "ThunkExecutor::Execute")) and not e["name"].startswith("ThreadpoolListener")]
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
        "device_lines": sorted({e["thread"] for e in on_device}),
        "top_kernels": [[name, t * us] for name, t in top],
    }


def profile_steps(model, dataset, steps: int, device: str = "cpu") -> dict:
    """The :func:`breakdown` of ``fit`` over ``dataset``'s first ``steps`` batches, each fetched
    inside an :data:`INPUT` event, the epoch marked (:data:`EPOCH`) until the device finished it."""
    import jax
    import keras

    steps = min(steps, len(dataset))

    class Annotated(keras.utils.PyDataset):
        def __len__(self):
            return steps

        def __getitem__(self, index):
            with jax.profiler.TraceAnnotation(INPUT):
                return dataset[index]

        def on_epoch_end(self):
            dataset.on_epoch_end()

    class MarkedEpoch(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.mark = jax.profiler.TraceAnnotation(EPOCH)
            self.mark.__enter__()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)
            self.mark.__exit__(None, None, None)

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # the Python tracer slows the host down many times
    with tempfile.TemporaryDirectory(prefix="gpulesson-profile-") as folder:
        with jax.profiler.trace(folder, profiler_options=options):
            model.fit(Annotated(), epochs=1, callbacks=[MarkedEpoch()], verbose=0, **IN_ORDER)
        return breakdown(read_events(folder), steps=steps, device=device)


def utilisation(model, dataset, device: str) -> dict:
    """The GPU's utilisation (percent) sampled by NVML through one epoch, or why there is none."""
    if device != "gpu":
        return {"skipped": "the CPU has no NVML utilisation"}
    from gpulesson.lesson.feeding import GpuWatch, gpu_utilisation

    if gpu_utilisation() is None:
        return {"skipped": "NVML (nvidia-ml-py) cannot read this GPU"}
    watch = GpuWatch(interval=0.05)
    model.fit(dataset, epochs=1, callbacks=[watch], verbose=0, **IN_ORDER)
    if not (found := watch.samples):
        return {"skipped": "the epoch was shorter than one NVML sample (0.05 s)"}
    return {"mean": sum(found) / len(found), "min": min(found), "max": max(found),
            "n": len(found), "interval_seconds": 0.05}


def measurement_record(budget, *, run_id: str, device: str, batch_size: int, n_images: int,
                       steps: int, forward_flops: int, utilisation: dict, profile: dict,
                       data: str, **extra) -> dict:
    """One device's results-file record."""
    per_image = 3 * forward_flops  # the forward pass and the backward pass's two products
    record = RECORDS.epoch_record(
        budget.seconds, warmup=budget.warmup, run_id=run_id, device=device, n_images=n_images,
        own={"keras_device": keras_device_name(device), "batch_size": batch_size},
        extra={"data": data, "steps": steps, "forward_flops_per_image": forward_flops,
               "train_flops_per_image": per_image, "utilisation": utilisation,
               "profile": profile, ORDER_FIELD: False, **extra})
    rate = record["images_per_second"]
    return {**record, "step_seconds": n_images / rate / steps, "achieved_tflops": per_image * rate / 1e12}


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

    devices = [device for device in cli.devices_here(args.devices) if (device,) not in done]
    given = args.steps or (QUICK_STEPS if args.quick else None)
    settings = get_settings()
    print(settings.describe(), flush=True)
    warmup, repeats = WARMUP, repeats_for(args.quick)
    train = lesson.split_batches(prepare(settings), settings.batch_size(args.batch_size))[0]
    for device in devices:
        with keras.device(keras_device_name(device)):
            keras.utils.set_random_seed(args.seed)
            model = lesson.compile_cnn(lesson.build_cnn())
            flops = flops_per_image(model)
            budget, meter, started = Budget(warmup, repeats), BusyMeter(), time.perf_counter()
            print(f"{device}: training {warmup} warm-up and {repeats} timed epoch(s) ...")
            model.fit(train, epochs=warmup + repeats, verbose=2, **IN_ORDER,  # a line an epoch
                      callbacks=[synced_epoch_timer(budget), lesson.DataEpoch(train)])
            busy = meter.read()
            used = utilisation(model, train, device)
            try:
                profiled = profile_steps(model, train, given or PROFILE_STEPS[device], device)
            except Exception as exc:  # the rest of the record still holds: keep it, say why
                profiled = {"failed": f"{type(exc).__name__}: {exc}"[:300]}
        record = measurement_record(
            budget, data=settings.data, run_id=run_id, device=device,
            batch_size=train.batch_size, n_images=train.n_images, steps=len(train),
            forward_flops=flops, utilisation=used, profile=profiled, **busy,
            wall_seconds=time.perf_counter() - started,
            read_ahead=bool(getattr(train, "read_ahead", False)))
        yield record
        print(f"{device}: " + " ".join(summary_lines(record)))
        del model
