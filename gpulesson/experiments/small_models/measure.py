"""Training the MLPs on each device, the comparison on the breast-cancer data and the sweep of
batch size x layer width on random rows, and the checks of what is asked for. Keras is imported
only when something is trained. Each record keeps the load average before and after it was
measured; the comparison also the energy of each epoch where the device's meter can be read."""

from __future__ import annotations

import math

import numpy as np

from gpulesson.experiments.common import WARMUP, repeats_for
from gpulesson.experiments.energy import energy_callback, start_intervals, stop_intervals
from gpulesson.experiments.recordset import epochs_summary
from gpulesson.experiments.small_models.records import (
    N_CLASSES,
    N_FEATURES,
    RECORDS,
    SmallModelsError,
    comparison_record,
    device_fields,
)
from gpulesson.machine.devices import KERAS_DEVICES as DEVICES
from gpulesson.machine.timing import load_average
from gpulesson.records.results import duration as short_time
from gpulesson.records.results import new_run_id

# The CPU-vs-GPU comparison on the breast-cancer data: a fixed number of epochs, no early stop;
# the first is the warm-up, the other 19 the timed repeats (more than the rule's minimum: an
# epoch of this model takes about 0.1 s on the lesson's CPU).
COMPARISON = {"epochs": 20, "batch_size": 32}
QUICK_COMPARISON = {"epochs": WARMUP + repeats_for(True), "batch_size": 32}
# The sweep: every batch size x every width, on random rows (at least 4 batches per epoch), each
# cell one warm-up epoch and the rule's timed repeats. On the lesson's 2-core CPU the warm-up
# epochs of all 16 cells took 26 to 29 s and one timed epoch of all of them 17 to 19 s
# (results/mlp-cpu-vs-gpu.jsonl, whose sweeps of 3 epochs a cell took 61 to 66 s; the width-4096
# cells most of it), so the full sweep of 6 epochs a cell takes about two minutes there.
GRID = {"batch_sizes": (32, 256, 1024, 4096), "widths": (16, 256, 1024, 4096),
        "n_rows": 4096, "epochs": WARMUP + repeats_for(False)}
QUICK_GRID = {"batch_sizes": (32, 256), "widths": (16, 64), "n_rows": 1024,
              "epochs": WARMUP + repeats_for(True)}
MIN_EPOCHS = WARMUP + repeats_for(True)  # the warm-up and at least the quick mode's repeats
MIN_BATCHES = 4
SKIPPED_GPU = "SKIPPED: no GPU is visible to Keras"


def keras_device_name(device: str) -> str:
    """``"cpu"``/``"gpu"`` (or ``"gpu:0"``) -> the Keras device name (``"cpu"``, ``"gpu:0"``)."""
    name = str(device).lower()
    if name in DEVICES:
        return DEVICES[name]
    if name in DEVICES.values():
        return name
    raise SmallModelsError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")


def check_devices(devices, gpu_count: int) -> list[str]:
    """The Keras names of ``devices``; refuses unknown devices, and a GPU when none is visible."""
    names = [keras_device_name(d) for d in devices]
    if not names:
        raise SmallModelsError("no device given: use cpu, gpu or both")
    if len(set(names)) != len(names):
        raise SmallModelsError(f"a device is named twice: {', '.join(map(str, devices))}")
    if any(device_fields(n)["device_kind"] == "gpu" for n in names) and not gpu_count:
        raise SmallModelsError(f"{SKIPPED_GPU}: run with --devices cpu, or on a machine with a GPU "
                               "(python -m gpulesson.machine.devices tells what this Python sees)")
    return names


def _positive_ints(values, what: str) -> tuple[int, ...]:
    values = tuple(values)
    if not values:
        raise SmallModelsError(f"give at least one {what}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise SmallModelsError(f"every {what} must be a whole number of at least 1, not {value!r}")
    return tuple(int(v) for v in values)


def check_grid(batch_sizes, widths, n_rows: int, epochs: int) -> dict:
    """The sweep's grid, checked: whole numbers >= 1, and at least :data:`MIN_EPOCHS` epochs
    (the warm-up and enough timed repeats to have a range)."""
    grid = {"batch_sizes": _positive_ints(batch_sizes, "batch size"),
            "widths": _positive_ints(widths, "layer width"),
            "n_rows": _positive_ints([n_rows], "number of rows")[0],
            "epochs": _positive_ints([epochs], "number of epochs")[0]}
    if grid["epochs"] < MIN_EPOCHS:
        raise SmallModelsError(
            f"the sweep needs at least {MIN_EPOCHS} epochs: the first {WARMUP} warm-up, not "
            f"timed, and at least {MIN_EPOCHS - WARMUP} timed repeats")
    return grid


def hidden_widths(width: int) -> tuple[int, int]:
    """The hidden layers of the sweep's MLP of ``width``: (width, width // 2); 16 -> (16, 8)."""
    (width,) = _positive_ints([width], "layer width")
    return width, max(1, width // 2)


def rows_for(batch_size: int, n_rows: int) -> int:
    """Rows of random data for one sweep cell: ``n_rows``, and at least MIN_BATCHES batches."""
    return max(n_rows, MIN_BATCHES * batch_size)


def time_cell(device: str, batch_size: int, width: int, *, n_rows: int, epochs: int, seed: int = 0) -> dict:
    """Train a new sweep MLP of ``width`` on ``device`` for ``epochs`` epochs of random rows
    (standard-normal features, random one-hot labels: enough to time, nothing to learn); the
    timer's summary with the cell's facts and the median timed epoch per row and per step."""
    import keras

    from gpulesson import lesson

    rows = rows_for(batch_size, n_rows)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, N_FEATURES), dtype=np.float32)
    y = np.eye(N_CLASSES, dtype="float32")[rng.integers(0, N_CLASSES, rows)]
    widths = hidden_widths(width)
    keras.utils.set_random_seed(seed)
    load = {"start": load_average(), "end": None}
    with keras.device(keras_device_name(device)):
        model = lesson.build_mlp(N_FEATURES, widths, N_CLASSES)
        timer = lesson.EpochTimer(samples_per_epoch=rows)
        model.fit(x, y, batch_size=batch_size, epochs=epochs, callbacks=[timer], verbose=0)
    load["end"] = load_average()
    timing = timer.summary()
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    summary = epochs_summary(timing["epoch_seconds"])
    steps = math.ceil(rows / batch_size)
    return {"batch_size": batch_size, "width": width, "hidden_widths": list(widths),
            "n_parameters": model.count_params(), "n_rows": rows, "steps_per_epoch": steps,
            **timing, "mean_epoch_seconds": mean, "summary": summary,
            "seconds_per_sample": summary["median"] / rows,
            "seconds_per_step": summary["median"] / steps,
            "jit_compile": lesson.JIT_COMPILE, "load_average": load}


def condition(record: dict) -> tuple:
    """What one record measured: its part, device kind and, for the sweep, its cell. A run that
    goes on (``--run-id``) skips the conditions it has."""
    cell = (record.get("width"), record.get("batch_size")) if record["part"] == "sweep" else ()
    return (record["part"], record["device_kind"], *cell)


def sweep(devices, batch_sizes, widths, *, n_rows: int, epochs: int, run_id: str | None = None,
          seed: int = 0, source: str = "notebook", progress=print, done=frozenset(),
          on_record=None) -> list[dict]:
    """Time every (batch size, width) cell on every device (Keras names); one record per device
    and cell, each handed to ``on_record`` as it is made, so that a run that stops keeps what
    it measured. The whole grid is checked first; cells whose :func:`condition` is in ``done``
    are skipped."""
    devices = [keras_device_name(d) for d in devices]
    grid = check_grid(batch_sizes, widths, n_rows, epochs)
    run_id = run_id or new_run_id()
    records = []
    for device in devices:
        for width in grid["widths"]:
            for batch_size in grid["batch_sizes"]:
                if ("sweep", device_fields(device)["device_kind"], width, batch_size) in done:
                    continue
                cell = time_cell(device, batch_size, width, n_rows=grid["n_rows"], epochs=grid["epochs"],
                                 seed=seed)
                if progress:
                    progress(f"{device}  width {width:5}  batch {batch_size:5}  "
                             f"{short_time(cell['seconds_per_sample'])} per sample")
                record = RECORDS.record(data="random", part="sweep", run_id=run_id,
                                        source=source, **device_fields(device), **cell)
                if on_record:
                    on_record(record)
                records.append(record)
    return records


def run_comparison(devices, *, run_id: str, seed: int, settings: dict, source: str,
                   done=frozenset(), on_record=None) -> list[dict]:
    """Train the episode's MLP on the breast-cancer data on every device from the same initial
    weights; one record each (``done`` and ``on_record`` as in :func:`sweep`)."""
    import keras

    from gpulesson import lesson
    from gpulesson.lesson.sklearn import prepare_breast_cancer

    train, test, _, _ = prepare_breast_cancer()
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_mlp().get_weights()
    start = lesson.weights_fingerprint(initial_weights)
    records = []
    for device in devices:
        kind = device_fields(device)["device_kind"]
        if ("comparison", kind) in done:
            continue
        print(f"Comparison: training the MLP on {device} for {settings['epochs']} epochs ...", flush=True)
        keras.utils.set_random_seed(seed)
        intervals, reason = start_intervals(kind)
        try:
            load = {"start": load_average(), "end": None}
            run = lesson.train_mlp(device, initial_weights, train, test, settings["epochs"],
                                   batch_size=settings["batch_size"],
                                   callbacks=[energy_callback(intervals)])
            load["end"] = load_average()
        finally:
            energy = stop_intervals(intervals, reason, warmup=WARMUP, images=len(train[0]))
        record = comparison_record(run, run_id=run_id, batch_size=settings["batch_size"],
                                   n_train=len(train[0]), n_test=len(test[0]),
                                   start_weights=start, source=source, load_average=load,
                                   energy=energy)
        if on_record:
            on_record(record)
        records.append(record)
    return records
