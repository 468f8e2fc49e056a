"""Training episode 7's MLPs on each device with the episode's own code, every request checked
first; Keras is imported only when something is trained. Each record keeps the load average
around it, the comparison each epoch's energy where the device's meter can be read."""

import importlib.util
import itertools
import math

import numpy as np

from gpulesson.experiments import cli
from gpulesson.machine.devices import KERAS_DEVICES as DEVICES
from gpulesson.machine.devices import keras_device
from gpulesson.machine.timing import load_average
from gpulesson.records.energy import energy_callback, start_intervals, stop_intervals
from gpulesson.records.recordset import RecordSet, epochs_summary
from gpulesson.records.results import duration, new_run_id
from gpulesson.records.summaries import WARMUP, repeats_for

PARTS = ("comparison", "sweep")
N_FEATURES, N_CLASSES = 30, 2
EPISODE_WIDTHS = (16, 8)
EPISODE_MLP = (N_FEATURES, *EPISODE_WIDTHS, N_CLASSES)  # the episode's MLP: 30 -> 16 -> 8 -> 2
# A record made before the rule took its first epoch as the warm-up.
RECORDS = RecordSet("mlp-cpu-vs-gpu", ("part", "device_kind", "width", "batch_size"),
                    data="breast_cancer", warmup_key=None)
MIN_EPOCHS = WARMUP + repeats_for(True)  # the warm-up and at least the quick mode's repeats
# The comparison: a fixed number of epochs, no early stop; the first is the warm-up, the other
# 19 the timed repeats (more than the rule's minimum: an epoch takes about 0.1 s on a CPU).
COMPARISON = {"epochs": 20, "batch_size": 32}
QUICK_COMPARISON = {"epochs": MIN_EPOCHS, "batch_size": 32}
# The sweep: every batch size x every width, on random rows (at least 4 batches per epoch),
# each cell one warm-up epoch and the rule's timed repeats: about two minutes on the lesson's
# 2-core CPU, most of it in the width-4096 cells.
GRID = {"batch_sizes": (32, 256, 1024, 4096), "widths": (16, 256, 1024, 4096),
        "n_rows": 4096, "epochs": WARMUP + repeats_for(False)}
QUICK_GRID = {"batch_sizes": (32, 256), "widths": (16, 64), "n_rows": 1024, "epochs": MIN_EPOCHS}
MIN_BATCHES = 4
SKIPPED_GPU = "SKIPPED: no GPU is visible to Keras"


def device_kind(device: str) -> str:
    return "gpu" if str(device).lower().startswith(("gpu", "cuda")) else "cpu"


def keras_device_name(device: str) -> str:
    """``"cpu"``/``"gpu"`` (or ``"gpu:0"``) -> the Keras device name (``"cpu"``, ``"gpu:0"``)."""
    name = str(device).lower()
    if name in DEVICES or name in DEVICES.values():
        return DEVICES.get(name, name)
    raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")


def check_devices(devices, gpu_count: int) -> list[str]:
    """The Keras names of ``devices``; refuses unknown devices, and a GPU when none is visible."""
    names = [keras_device_name(d) for d in devices]
    if len(set(names)) != len(names):
        raise ValueError(f"a device is named twice: {', '.join(map(str, devices))}")
    if "gpu" in map(device_kind, names) and not gpu_count:
        raise ValueError(f"{SKIPPED_GPU}: run with --devices cpu, or on a machine with a GPU "
                         "(python -m gpulesson.machine.devices tells what this Python sees)")
    return names


def _positive_ints(values, what: str) -> tuple[int, ...]:
    values = tuple(values)
    if not values:
        raise ValueError(f"give at least one {what}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"every {what} must be a whole number of at least 1, not {value!r}")
    return tuple(int(v) for v in values)


def check_grid(batch_sizes, widths, n_rows: int, epochs: int) -> dict:
    """The sweep's grid, checked: whole numbers >= 1, and at least :data:`MIN_EPOCHS` epochs."""
    grid = {"batch_sizes": _positive_ints(batch_sizes, "batch size"),
            "widths": _positive_ints(widths, "layer width"),
            "n_rows": _positive_ints([n_rows], "number of rows")[0],
            "epochs": _positive_ints([epochs], "number of epochs")[0]}
    if grid["epochs"] < MIN_EPOCHS:
        raise ValueError(
            f"the sweep needs at least {MIN_EPOCHS} epochs: the first {WARMUP} warm-up, not "
            f"timed, and at least {MIN_EPOCHS - WARMUP} timed repeats")
    return grid


def hidden_widths(width: int) -> tuple[int, int]:
    """The hidden layers of the sweep's MLP of ``width``: (width, width // 2); 16 -> (16, 8)."""
    (width,) = _positive_ints([width], "layer width")
    return width, max(1, width // 2)


def time_cell(device: str, batch_size: int, width: int, *, n_rows: int, epochs: int, seed: int = 0) -> dict:
    """A new sweep MLP of ``width`` trained on ``device`` on random rows (enough to time, nothing
    to learn): the timer's summary, the cell's facts and the median timed epoch per row and step."""
    import keras

    from gpulesson import lesson

    rows = max(n_rows, MIN_BATCHES * batch_size)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, N_FEATURES), dtype=np.float32)
    y = np.eye(N_CLASSES, dtype="float32")[rng.integers(0, N_CLASSES, rows)]
    widths = hidden_widths(width)
    keras.utils.set_random_seed(seed)
    load = {"start": load_average()}
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
            "seconds_per_sample": summary["median"] / rows, "seconds_per_step": summary["median"] / steps,
            "jit_compile": lesson.JIT_COMPILE, "load_average": load}


def _sweep(devices, batch_sizes, widths, *, n_rows: int, epochs: int, run_id: str | None = None,
           seed: int = 0, source: str = "notebook", progress=print, done=frozenset()):
    """One record per device and cell not ``done``, each yielded as it is made, the grid checked first."""
    devices = [keras_device_name(d) for d in devices]
    grid = check_grid(batch_sizes, widths, n_rows, epochs)
    run_id = run_id or new_run_id()
    for device, width, batch_size in itertools.product(devices, grid["widths"], grid["batch_sizes"]):
        if ("sweep", device_kind(device), width, batch_size) in done:
            continue
        cell = time_cell(device, batch_size, width, n_rows=grid["n_rows"], epochs=grid["epochs"], seed=seed)
        if progress:
            progress(f"{device}  width {width:5}  batch {batch_size:5}  "
                     f"{duration(cell['seconds_per_sample'])} per sample")
        yield RECORDS.record(data="random", part="sweep", run_id=run_id, source=source,
                             device_kind=device_kind(device), keras_device=device, **cell)


def sweep(devices, batch_sizes, widths, **options) -> list[dict]:
    """One record per device (Keras names) and (batch size, width) cell of :func:`time_cell`."""
    return list(_sweep(devices, batch_sizes, widths, **options))


def comparison_record(run: dict, *, run_id: str, batch_size: int, n_train: int, n_test: int,
                      start_weights: str | None = None, source: str = "notebook",
                      load_average: dict | None = None, energy: dict | None = None) -> dict:
    """The record of a run of :func:`gpulesson.lesson.train_mlp`, with the load and energy around it."""
    timing = dict(run["timing"])
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    return RECORDS.record(
        part="comparison", run_id=run_id, source=source, device_kind=device_kind(run["device"]),
        keras_device=run["device"], batch_size=batch_size, n_train=n_train, n_test=n_test,
        hidden_widths=list(EPISODE_WIDTHS), n_parameters=run["model"].count_params(),
        **timing, mean_epoch_seconds=mean, training_seconds=training,
        test_loss=float(run["test_loss"]), test_accuracy=float(run["test_accuracy"]),
        start_weights=start_weights, jit_compile=run.get("jit_compile"),
        summary=epochs_summary(timing["epoch_seconds"]), load_average=load_average,
        **({"energy": energy} if energy is not None else {}),
        history={key: [float(v) for v in values] for key, values in run["history"].items()})


def _comparison(devices, *, run_id: str, seed: int, settings: dict, source: str, done):
    """One record a device: the episode's MLP on the breast-cancer data, the same initial weights on each."""
    import keras

    from gpulesson import lesson
    from gpulesson.lesson.sklearn import prepare_breast_cancer

    train, test, _, _ = prepare_breast_cancer()
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_mlp().get_weights()
    for device in devices:
        kind = device_kind(device)
        if any(key[:2] == ("comparison", kind) for key in done):
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
        yield comparison_record(run, run_id=run_id, batch_size=settings["batch_size"],
                                n_train=len(train[0]), n_test=len(test[0]),
                                start_weights=lesson.weights_fingerprint(initial_weights),
                                source=source, load_average=load, energy=energy)


def measure(args, *, run_id: str, done):
    """The command's run: the parts asked for, each record yielded as it is made."""
    base = QUICK_GRID if args.quick else GRID
    try:
        unknown = [p for p in args.parts if p not in PARTS]
        if unknown:
            raise ValueError(f"unknown part(s) {', '.join(unknown)}: use {' and/or '.join(PARTS)}")
        parts = [p for p in PARTS if p in args.parts]
        if "comparison" in parts and importlib.util.find_spec("sklearn") is None:
            raise ValueError(
                "scikit-learn is not installed, and the comparison on the breast-cancer data needs it: "
                "pip install scikit-learn==1.9.1, or record only the sweep with --parts sweep")
        grid = check_grid(args.batch_sizes or base["batch_sizes"], args.widths or base["widths"],
                          base["n_rows"] if args.rows is None else args.rows,
                          base["epochs"] if args.epochs is None else args.epochs)
        gpus = keras_device()["gpu_count"]
        devices = check_devices(cli.default_devices(args.devices, gpus), gpus)
    except ValueError as exc:
        cli.refuse(f"error: {exc}. Nothing was measured or written.")
    if args.devices is None and not gpus:
        print(f"{SKIPPED_GPU}: recording the CPU only.")
    print(f"Run {run_id}: {', '.join(parts)} on {', '.join(devices)}"
          + (" (quick mode)" if args.quick else "")
          + (f"; going on: {len(done)} condition(s) recorded already" if done else ""), flush=True)
    shared = {"run_id": run_id, "seed": args.seed, "done": done,
              "source": "gpulesson.experiments.small_models" + (" --quick" if args.quick else "")}
    if "comparison" in parts:
        yield from _comparison(devices, settings=QUICK_COMPARISON if args.quick else COMPARISON, **shared)
    if "sweep" in parts:
        yield from _sweep(devices, **grid, **shared, progress=lambda line: print(line, flush=True))
