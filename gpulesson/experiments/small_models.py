"""A small MLP on the CPU and on the GPU, and a sweep of batch size x layer width.

    python -m gpulesson.experiments.small_models                      # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.small_models --devices cpu gpu
    python -m gpulesson.experiments.small_models --parts sweep --batch-sizes 32 4096 --widths 16 4096

Two measurements of the episode "Small models: when the GPU does not help", both with the
episode's own code (:func:`gpulesson.lesson.build_mlp` and :func:`gpulesson.lesson.train_mlp`):

``comparison``
    The episode's multilayer perceptron (30 -> 16 -> 8 -> 2) trained on the Wisconsin
    breast-cancer data (``gpulesson.lesson.sklearn``, needs scikit-learn) from the same initial
    weights on every device, for a fixed number of epochs; one record per device.
``sweep``
    The same kind of MLP with hidden layers ``(width, width // 2)``, trained on random numbers
    of the same 30 features (``data: "random"``: enough rows to time, nothing to learn) for
    every batch size and width; one record per device and cell, with the time per sample.

All records of one call share a ``run_id``, and are appended to ``--out`` (default: the
lesson's results file :data:`RESULTS_FILE`). The episode's numbers and figures are drawn from
the newest run with CPU and GPU records (else with GPU records, else the newest run),
separately for each part. The speed-up of a cell is the CPU's time divided by the GPU's, from
records of the same run: one machine's CPU against its own GPU. Any Keras backend works
(``KERAS_BACKEND``); the sweep needs no scikit-learn.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

import numpy as np

from gpulesson import results
from gpulesson.devices import KERAS_DEVICES as DEVICES
from gpulesson.results import (
    NOT_RECORDED,
    append_record,
    data_label,
    hardware,
    is_gpu,
    make_record,
    new_run_id,
)
from gpulesson.results import duration as short_time
from gpulesson.results import pick as _pick
from gpulesson.results import speedup as _epoch_speedup

EXPERIMENT = "mlp-cpu-vs-gpu"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
PARTS = ("comparison", "sweep")
N_FEATURES, N_CLASSES = 30, 2
EPISODE_WIDTHS = (16, 8)  # the episode's MLP: 30 -> 16 -> 8 -> 2

# The CPU-vs-GPU comparison on the breast-cancer data: a fixed number of epochs, no early stop.
COMPARISON = {"epochs": 20, "batch_size": 32}
QUICK_COMPARISON = {"epochs": 2, "batch_size": 32}
# The sweep: every batch size x every width, on random rows (at least 4 batches per epoch).
GRID = {"batch_sizes": (32, 256, 1024, 4096), "widths": (16, 256, 1024, 4096),
        "n_rows": 4096, "epochs": 3}
QUICK_GRID = {"batch_sizes": (32, 256), "widths": (16, 64), "n_rows": 1024, "epochs": 2}
MIN_BATCHES = 4
SKIPPED_GPU = "SKIPPED: no GPU is visible to Keras"


class SmallModelsError(ValueError):
    """A request this module cannot carry out; the message says what to change."""


# ----------------------------------------------------------------------------- devices, inputs

def keras_device_name(device: str) -> str:
    """``"cpu"``/``"gpu"`` (or ``"gpu:0"``) -> the Keras device name (``"cpu"``, ``"gpu:0"``)."""
    name = str(device).lower()
    if name in DEVICES:
        return DEVICES[name]
    if name in DEVICES.values():
        return name
    raise SmallModelsError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")


def is_gpu_device(device: str) -> bool:
    return str(device).lower().startswith(("gpu", "cuda"))


def check_devices(devices, gpu_count: int) -> list[str]:
    """The Keras names of ``devices``; refuses unknown devices, and a GPU when none is visible."""
    names = [keras_device_name(d) for d in devices]
    if not names:
        raise SmallModelsError("no device given: use cpu, gpu or both")
    if len(set(names)) != len(names):
        raise SmallModelsError(f"a device is named twice: {', '.join(map(str, devices))}")
    if any(is_gpu_device(n) for n in names) and not gpu_count:
        raise SmallModelsError(f"{SKIPPED_GPU}: run with --devices cpu, or on a machine with a GPU "
                               "(python -m gpulesson.devices tells what this Python sees)")
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
    """The sweep's grid, checked: whole numbers >= 1, and at least 2 epochs (one to warm up)."""
    grid = {"batch_sizes": _positive_ints(batch_sizes, "batch size"),
            "widths": _positive_ints(widths, "layer width"),
            "n_rows": _positive_ints([n_rows], "number of rows")[0],
            "epochs": _positive_ints([epochs], "number of epochs")[0]}
    if grid["epochs"] < 2:
        raise SmallModelsError("the sweep needs at least 2 epochs: the first one is warm-up and not timed")
    return grid


def hidden_widths(width: int) -> tuple[int, int]:
    """The hidden layers of the sweep's MLP of ``width``: (width, width // 2); 16 -> (16, 8)."""
    (width,) = _positive_ints([width], "layer width")
    return width, max(1, width // 2)


def rows_for(batch_size: int, n_rows: int) -> int:
    """Rows of random data for one sweep cell: ``n_rows``, and at least MIN_BATCHES batches."""
    return max(n_rows, MIN_BATCHES * batch_size)


def random_data(n_rows: int, n_features: int = N_FEATURES, n_classes: int = N_CLASSES, seed: int = 0):
    """``(x, y)``: standard-normal float32 features and random one-hot labels (timing only)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    y = np.eye(n_classes, dtype="float32")[rng.integers(0, n_classes, n_rows)]
    return x, y


def parameter_count(widths, n_features: int = N_FEATURES, n_classes: int = N_CLASSES) -> int:
    """Weights and biases of an MLP with hidden layers ``widths``: sum of (inputs + 1) x outputs."""
    sizes = [n_features, *widths, n_classes]
    return sum((a + 1) * b for a, b in itertools.pairwise(sizes))


# ----------------------------------------------------------------------------- measurements

def time_cell(device: str, batch_size: int, width: int, *, n_rows: int, epochs: int, seed: int = 0) -> dict:
    """Train a new sweep MLP of ``width`` on ``device`` for ``epochs`` epochs of random rows.

    Returns the :class:`~gpulesson.lesson.EpochTimer` summary with the cell's facts and
    ``seconds_per_sample`` (the mean of the epochs after the first, per row).
    """
    import keras

    from gpulesson.lesson import JIT_COMPILE, EpochTimer

    rows = rows_for(batch_size, n_rows)
    x, y = random_data(rows, seed=seed)
    widths = hidden_widths(width)
    from gpulesson import lesson

    keras.utils.set_random_seed(seed)
    with keras.device(keras_device_name(device)):
        model = lesson.build_mlp(N_FEATURES, widths, N_CLASSES)
        timer = EpochTimer(samples_per_epoch=rows)
        model.fit(x, y, batch_size=batch_size, epochs=epochs, callbacks=[timer], verbose=0)
    timing = timer.summary()
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    return {
        "batch_size": batch_size,
        "width": width,
        "hidden_widths": list(widths),
        "n_parameters": model.count_params(),
        "n_rows": rows,
        "steps_per_epoch": math.ceil(rows / batch_size),
        **timing,
        "mean_epoch_seconds": mean,
        "seconds_per_sample": mean / rows,
        "seconds_per_step": mean / math.ceil(rows / batch_size),
        "jit_compile": JIT_COMPILE,
    }


def _kind(device: str) -> str:
    return "gpu" if is_gpu_device(device) else "cpu"


def _device_fields(device: str) -> dict:
    """Record fields that say which device ran: a CPU run is "CPU" also on a GPU machine."""
    fields = {"device_kind": _kind(device), "keras_device": device}
    if fields["device_kind"] == "cpu":
        fields["device"] = "CPU"
    return fields


def sweep(devices, batch_sizes, widths, *, n_rows: int, epochs: int, run_id: str | None = None,
          seed: int = 0, source: str = "notebook", progress=print) -> list[dict]:
    """Time every (batch size, width) cell on every device; one record per device and cell.

    ``devices``: Keras names (``"cpu"``, ``"gpu:0"``). Checks the whole grid before the
    first measurement. Records have ``part: "sweep"`` and ``data: "random"``.
    """
    devices = [keras_device_name(d) for d in devices]
    grid = check_grid(batch_sizes, widths, n_rows, epochs)
    run_id = run_id or new_run_id()
    records = []
    for device in devices:
        for width in grid["widths"]:
            for batch_size in grid["batch_sizes"]:
                cell = time_cell(device, batch_size, width, n_rows=grid["n_rows"], epochs=grid["epochs"],
                                 seed=seed)
                if progress:
                    progress(f"{device}  width {width:5}  batch {batch_size:5}  "
                             f"{short_time(cell['seconds_per_sample'])} per sample")
                records.append(make_record(EXPERIMENT, data="random", part="sweep", run_id=run_id,
                                           source=source, **_device_fields(device), **cell))
    return records


def comparison_record(run: dict, *, run_id: str, batch_size: int, n_train: int, n_test: int,
                      start_weights: str | None = None, source: str = "notebook") -> dict:
    """The record of one device's run of :func:`gpulesson.lesson.train_mlp` (``part: "comparison"``)."""
    timing = dict(run["timing"])
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    return make_record(
        EXPERIMENT, data="breast_cancer", part="comparison", run_id=run_id, source=source,
        **_device_fields(run["device"]),
        batch_size=batch_size, n_train=n_train, n_test=n_test,
        hidden_widths=list(EPISODE_WIDTHS), n_parameters=run["model"].count_params(),
        **timing, mean_epoch_seconds=mean, training_seconds=training,
        test_loss=float(run["test_loss"]), test_accuracy=float(run["test_accuracy"]),
        start_weights=start_weights, jit_compile=run.get("jit_compile"),
        history={key: [float(v) for v in values] for key, values in run["history"].items()},
    )


# ----------------------------------------------------------------------------- reading records

def runs(records, part: str) -> dict[str, list[dict]]:
    """The records of ``part`` grouped by ``run_id`` (:func:`gpulesson.results.runs`)."""
    if part not in PARTS:
        raise SmallModelsError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    return results.runs(records, EXPERIMENT, part=part)


def reference_run(part: str, path=RESULTS_FILE) -> list[dict]:
    """The records of ``part`` of the reference run (:func:`gpulesson.results.reference_run`)."""
    if part not in PARTS:
        raise SmallModelsError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    return results.reference_run(path, EXPERIMENT, part=part)


def speedup(records) -> float | None:
    """CPU mean epoch / GPU mean epoch of one comparison run (None without both)."""
    return _epoch_speedup(records)


def speedup_text(ratio: float | None) -> str:
    if ratio is None:
        return NOT_RECORDED
    return f"{ratio:.1f}× (GPU faster)" if ratio >= 1 else f"{ratio:.2f}× (GPU {1 / ratio:.1f}× slower)"


def sweep_cells(records) -> dict[tuple[int, int], dict[str, dict]]:
    """``{(width, batch_size): {"cpu": record, "gpu": record}}`` of one sweep run's records."""
    cells: dict[tuple[int, int], dict[str, dict]] = {}
    for record in records:
        device = "gpu" if is_gpu(record) else "cpu"
        cells.setdefault((record["width"], record["batch_size"]), {})[device] = record
    return cells


def sweep_speedups(records) -> dict[tuple[int, int], float]:
    """``{(width, batch_size): CPU time per sample / GPU time per sample}`` for cells with both."""
    result = {}
    for key, pair in sweep_cells(records).items():
        if "cpu" in pair and "gpu" in pair and pair["gpu"]["seconds_per_sample"]:
            result[key] = pair["cpu"]["seconds_per_sample"] / pair["gpu"]["seconds_per_sample"]
    return result


def _axes(records) -> tuple[list[int], list[int]]:
    widths = sorted({r["width"] for r in records})
    batches = sorted({r["batch_size"] for r in records})
    return widths, batches


def describe_comparison(records) -> str:
    """The comparison in words: each device's epoch times, accuracy, and the speed-up."""
    if not records:
        return "No comparison run recorded."
    first = records[0]
    lines = [(f"Data: {data_label(records)}; {first['n_train']} training rows (a fifth of them for "
              f"validation), batch size {first['batch_size']}, {first['epochs']} epochs, "
              f"backend {first['backend']}.")]
    names = hardware(records)
    for record in sorted(records, key=is_gpu):
        kind = "GPU" if is_gpu(record) else "CPU"
        lines.append(f"{kind} ({names[kind]}): first epoch {short_time(record['first_epoch_seconds'])} "
                     f"(warm-up), then {short_time(record['mean_epoch_seconds'])} per epoch; "
                     f"test accuracy {record['test_accuracy']:.3f}.")
    if _pick(records, True) is None:
        lines.append(f"GPU: {NOT_RECORDED}.")
    else:
        lines.append(f"Speed-up of the GPU per epoch: {speedup_text(speedup(records))}.")
    return "\n".join(lines)


def sweep_table(records) -> str:
    """A text table of a sweep run: time per sample per device, and the speed-up, per cell."""
    if not records:
        return "No sweep recorded."
    widths, batches = _axes(records)
    cells, ratios = sweep_cells(records), sweep_speedups(records)
    kinds = [k for k in ("cpu", "gpu") if any(k in pair for pair in cells.values())]
    header = f"{'width':>6} {'batch':>6} " + " ".join(f"{k.upper() + ' per sample':>16}" for k in kinds)
    if ratios:
        header += f" {'speed-up':>9}"
    lines = [f"Data: {data_label(records)}; backend {records[0]['backend']}.", header]
    for width in widths:
        for batch in batches:
            pair = cells.get((width, batch), {})
            line = f"{width:6} {batch:6} " + " ".join(
                f"{short_time(pair[k]['seconds_per_sample']) if k in pair else '-':>16}" for k in kinds)
            if ratios:
                ratio = ratios.get((width, batch))
                line += f" {f'{ratio:.2f}x' if ratio else '-':>9}"
            lines.append(line)
    if not ratios:
        lines.append(f"Speed-up: {NOT_RECORDED} (no GPU records in this sweep).")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- figures

def comparison_figure(records):
    """Time per epoch of the comparison run, per device (the GPU line only when recorded)."""
    from gpulesson import compare_plots

    if not records:
        raise SmallModelsError("no comparison records to plot: "
                               "run python -m gpulesson.experiments.small_models")
    cpu, gpu = _pick(records, False), _pick(records, True)
    names = hardware(records)
    for kind in ("CPU", "GPU"):
        names.setdefault(kind, NOT_RECORDED)
    fig = compare_plots.epoch_times(cpu["epoch_seconds"] if cpu else None,
                                    gpu["epoch_seconds"] if gpu else None,
                                    label=data_label(records), hardware=names)
    fig.axes[0].set_title(f"MLP {' -> '.join(map(str, [N_FEATURES, *EPISODE_WIDTHS, N_CLASSES]))}, "
                          f"batch size {records[0]['batch_size']}, backend {records[0]['backend']}",
                          fontsize=9)
    fig.tight_layout()
    return fig


def _grid_values(records, value) -> tuple[list[int], list[int], np.ndarray]:
    widths, batches = _axes(records)
    matrix = np.full((len(widths), len(batches)), np.nan)
    for i, width in enumerate(widths):
        for j, batch in enumerate(batches):
            found = value(width, batch)
            if found is not None:
                matrix[i, j] = found
    return widths, batches, matrix


def sweep_figure(records):
    """The sweep as a grid of widths (rows) x batch sizes (columns), every cell annotated.

    With GPU records: the GPU's speed-up over the CPU (the colour centred on 1, where the two
    are equal; each cell says "GPU n× faster" or "GPU n× slower"). Without: the CPU's time per
    sample, and a note that the GPU sweep is not recorded yet.
    """
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    if not records:
        raise SmallModelsError("no sweep records to plot: "
                               "run python -m gpulesson.experiments.small_models --parts sweep")
    cells, ratios = sweep_cells(records), sweep_speedups(records)
    names = hardware(records)
    fig, ax = plt.subplots(figsize=(7.5, 5.6))
    if ratios:
        widths, batches, matrix = _grid_values(records, lambda w, b: ratios.get((w, b)))
        bound = max(2.0, float(np.nanmax(np.abs(np.log10(matrix)))) if np.isfinite(matrix).any() else 2.0)
        norm = mcolors.LogNorm(vmin=10 ** -bound, vmax=10 ** bound)
        image = ax.imshow(matrix, cmap="RdBu", norm=norm)
        fig.colorbar(image, ax=ax, label="speed-up: CPU time / GPU time (1 = equal)")

        def text(value):
            if value >= 1:
                return f"{value:.2g}×\nGPU faster"
            return f"{value:.2g}×\nGPU {1 / value:.2g}× slower"
        title = "Speed-up of the GPU over the CPU, per sample"
        detail = f"CPU: {names.get('CPU', NOT_RECORDED)}; GPU: {names['GPU']}"
    else:
        # One device only (normally the CPU): its time per sample, and why there is no speed-up.
        kind = "cpu" if "CPU" in names else "gpu"
        widths, batches, matrix = _grid_values(
            records, lambda w, b: cells.get((w, b), {}).get(kind, {}).get("seconds_per_sample"))
        matrix = matrix * 1e6
        image = ax.imshow(matrix, cmap="YlOrBr", norm=mcolors.LogNorm())
        fig.colorbar(image, ax=ax, label=f"{kind.upper()} time per sample (µs, log scale)")

        def text(value):
            return short_time(value / 1e6)
        if kind == "cpu":
            title = "CPU time per sample (GPU sweep: not recorded yet)"
            detail = f"CPU: {names['CPU']}; GPU: {NOT_RECORDED}, so no speed-up can be shown"
        else:
            title = "GPU time per sample (no CPU sweep in this run)"
            detail = f"GPU: {names['GPU']}; CPU: {NOT_RECORDED}, so no speed-up can be shown"
    for i in range(len(widths)):
        for j in range(len(batches)):
            value = matrix[i, j]
            if not np.isfinite(value):
                ax.text(j, i, "not\nmeasured", ha="center", va="center", fontsize=8)
                continue
            # Dark cells get white text: the number must be readable on every colour.
            red, green, blue, _ = image.cmap(image.norm(value))
            dark = 0.299 * red + 0.587 * green + 0.114 * blue < 0.5
            ax.text(j, i, text(value), ha="center", va="center", fontsize=8,
                    color="white" if dark else "black")
    ax.set_xticks(range(len(batches)), [str(b) for b in batches])
    ax.set_yticks(range(len(widths)), [f"{w} ({hidden_widths(w)[1]})" for w in widths])
    ax.set_xlabel("batch size")
    ax.set_ylabel("hidden layer widths: first (second)")
    first = records[0]
    fig.suptitle(f"{title} | {data_label(records)}\n{detail}\n"
                 f"MLP 30 -> width -> width/2 -> 2; {first['backend']} backend; {first['date'][:10]}",
                 fontsize=10)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- page values

def _list_text(values) -> str:
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def _run_facts(prefix: str, records) -> dict[str, str]:
    first = records[0] if records else None
    cpu, gpu = _pick(records, False), _pick(records, True)
    return {
        f"{prefix}_run": first["run_id"] if first else NOT_RECORDED,
        f"{prefix}_date": first["date"][:10] if first else NOT_RECORDED,
        f"{prefix}_backend": (f"{first['backend']} {first['versions'].get(first['backend'], '')}".strip()
                              if first else NOT_RECORDED),
        f"{prefix}_cpu": hardware([cpu])["CPU"] if cpu else NOT_RECORDED,
        f"{prefix}_gpu": gpu["device"] if gpu else NOT_RECORDED,
    }


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference runs for the episode page (MyST substitutions ``ref_mlp_*``)."""
    comparison = reference_run("comparison", path)
    values = _run_facts("ref_mlp", comparison)
    first = comparison[0] if comparison else None
    values.update({
        "ref_mlp_n_train": str(first["n_train"]) if first else NOT_RECORDED,
        "ref_mlp_batch_size": str(first["batch_size"]) if first else NOT_RECORDED,
        "ref_mlp_epochs": str(first["epochs"]) if first else NOT_RECORDED,
        "ref_mlp_speedup": speedup_text(speedup(comparison)),
    })
    for name, record in (("cpu", _pick(comparison, False)), ("gpu", _pick(comparison, True))):
        values[f"ref_mlp_{name}_first_epoch"] = (short_time(record["first_epoch_seconds"]) if record
                                                 else NOT_RECORDED)
        values[f"ref_mlp_{name}_epoch"] = short_time(record["mean_epoch_seconds"]) if record else NOT_RECORDED
        values[f"ref_mlp_{name}_accuracy"] = f"{record['test_accuracy']:.3f}" if record else NOT_RECORDED

    records = reference_run("sweep", path)
    values.update(_run_facts("ref_mlp_sweep", records))
    cells, ratios = sweep_cells(records), sweep_speedups(records)
    widths, batches = _axes(records) if records else ([], [])
    smallest = cells.get((widths[0], batches[0]), {}) if records else {}
    largest = cells.get((widths[-1], batches[-1]), {}) if records else {}
    values.update({
        "ref_mlp_sweep_batches": _list_text(batches) if records else NOT_RECORDED,
        "ref_mlp_sweep_widths": _list_text(widths) if records else NOT_RECORDED,
        "ref_mlp_sweep_epochs": str(records[0]["epochs"]) if records else NOT_RECORDED,
        "ref_mlp_sweep_small_cell": (f"width {widths[0]}, batch size {batches[0]}" if records
                                     else NOT_RECORDED),
        "ref_mlp_sweep_large_cell": (f"width {widths[-1]}, batch size {batches[-1]}" if records
                                     else NOT_RECORDED),
    })
    for name in ("cpu", "gpu"):
        kind_records = [r for r in records if is_gpu(r) == (name == "gpu")]
        values[f"ref_mlp_sweep_{name}_total"] = (short_time(sum(r["total_seconds"] for r in kind_records))
                                                 if kind_records else NOT_RECORDED)
        for size, cell in (("small", smallest), ("large", largest)):
            record = cell.get(name)
            values[f"ref_mlp_sweep_{name}_{size}_sample"] = (short_time(record["seconds_per_sample"])
                                                             if record else NOT_RECORDED)
            values[f"ref_mlp_sweep_{name}_{size}_step"] = (short_time(record["seconds_per_step"])
                                                           if record else NOT_RECORDED)
    if ratios:
        best = max(ratios, key=ratios.get)
        worst = min(ratios, key=ratios.get)
        paying = sorted(key for key, ratio in ratios.items() if ratio > 1)
        values["ref_mlp_sweep_best"] = f"{ratios[best]:.1f}× at width {best[0]}, batch size {best[1]}"
        values["ref_mlp_sweep_worst"] = f"{ratios[worst]:.2f}× at width {worst[0]}, batch size {worst[1]}"
        values["ref_mlp_sweep_paying"] = f"{len(paying)} of {len(ratios)}"
    else:
        for key in ("best", "worst", "paying"):
            values[f"ref_mlp_sweep_{key}"] = NOT_RECORDED
    return values


# ----------------------------------------------------------------------------- command line

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", default=None, metavar="DEVICE",
                        help="cpu, gpu or both, in this order (default: cpu, then gpu if one is visible)")
    parser.add_argument("--parts", nargs="+", default=list(PARTS), metavar="PART",
                        help="comparison (breast-cancer MLP; needs scikit-learn), sweep, or both (default)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=None, metavar="N",
                        help=f"sweep batch sizes (default {' '.join(map(str, GRID['batch_sizes']))})")
    parser.add_argument("--widths", nargs="+", type=int, default=None, metavar="N",
                        help=f"sweep layer widths (default {' '.join(map(str, GRID['widths']))})")
    parser.add_argument("--rows", type=int, default=None,
                        help=f"random rows per sweep epoch, at least {MIN_BATCHES} batches "
                             f"(default {GRID['n_rows']})")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"epochs per sweep cell, the first not timed (default {GRID['epochs']})")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny run for tests (also with LESSON_QUICK=1)")
    parser.add_argument("--out", type=Path, default=RESULTS_FILE,
                        help=f"results file to append to (default {RESULTS_FILE})")
    parser.add_argument("--seed", type=int, default=42, help="random seed of the initial weights")
    return parser


def _plan(args, quick: bool) -> dict:
    """Everything the run will do, checked before anything is measured or written."""
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        raise SmallModelsError(f"unknown part(s) {', '.join(unknown)}: use {' and/or '.join(PARTS)}")
    if "comparison" in args.parts:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise SmallModelsError(
                "scikit-learn is not installed, and the comparison on the breast-cancer data needs it: "
                "pip install scikit-learn==1.9.1, or record only the sweep with --parts sweep") from None
    base = QUICK_GRID if quick else GRID
    grid = check_grid(args.batch_sizes or base["batch_sizes"], args.widths or base["widths"],
                      args.rows if args.rows is not None else base["n_rows"],
                      args.epochs if args.epochs is not None else base["epochs"])
    return {"parts": [p for p in PARTS if p in args.parts], "grid": grid,
            "comparison": QUICK_COMPARISON if quick else COMPARISON}


def run_comparison(devices, *, run_id: str, seed: int, settings: dict, source: str) -> list[dict]:
    """Train the episode's MLP on the breast-cancer data on every device; one record each."""
    import keras

    from gpulesson import lesson
    from gpulesson.lesson.sklearn import prepare_breast_cancer

    train, test, _, _ = prepare_breast_cancer()
    keras.utils.set_random_seed(seed)
    initial_weights = lesson.build_mlp().get_weights()
    start = lesson.weights_fingerprint(initial_weights)
    records = []
    for device in devices:
        print(f"Comparison: training the MLP on {device} for {settings['epochs']} epochs ...", flush=True)
        keras.utils.set_random_seed(seed)
        run = lesson.train_mlp(device, initial_weights, train, test, settings["epochs"],
                               batch_size=settings["batch_size"])
        records.append(comparison_record(run, run_id=run_id, batch_size=settings["batch_size"],
                                         n_train=len(train[0]), n_test=len(test[0]),
                                         start_weights=start, source=source))
    return records


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from gpulesson.devices import keras_device
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    try:
        plan = _plan(args, quick)
        gpus = keras_device()["gpu_count"]
        devices = check_devices(args.devices or (["cpu", "gpu"] if gpus else ["cpu"]), gpus)
    except SmallModelsError as exc:
        print(f"error: {exc}. Nothing was measured or written.", file=sys.stderr)
        return 2
    if args.devices is None and not gpus:
        print(f"{SKIPPED_GPU}: recording the CPU only.")
    run_id, source = new_run_id(), "gpulesson.experiments.small_models" + (" --quick" if quick else "")
    print(f"Run {run_id}: {', '.join(plan['parts'])} on {', '.join(devices)}"
          + (" (quick mode)" if quick else ""), flush=True)
    for part in plan["parts"]:
        if part == "comparison":
            records = run_comparison(devices, run_id=run_id, seed=args.seed, settings=plan["comparison"],
                                     source=source)
            print(describe_comparison(records))
        else:
            records = sweep(devices, **plan["grid"], run_id=run_id, seed=args.seed, source=source,
                            progress=lambda line: print(line, flush=True))
            print(sweep_table(records))
        for record in records:
            append_record(args.out, record)
        print(f"Appended {len(records)} {part} record(s) of run {run_id} to {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
