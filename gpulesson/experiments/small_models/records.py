"""The small-models records: one per device (comparison) or per device and cell (sweep), the
reference runs, speed-ups, and a run in words or as a table. Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson import results
from gpulesson.results import NOT_RECORDED, data_label, hardware, is_gpu, make_record
from gpulesson.results import duration as short_time
from gpulesson.results import pick as _pick
from gpulesson.results import speedup as _epoch_speedup

EXPERIMENT = "mlp-cpu-vs-gpu"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
PARTS = ("comparison", "sweep")
N_FEATURES, N_CLASSES = 30, 2
EPISODE_WIDTHS = (16, 8)  # the episode's MLP: 30 -> 16 -> 8 -> 2


class SmallModelsError(ValueError):
    """A request this experiment cannot carry out; the message says what to change."""


def is_gpu_device(device: str) -> bool:
    return str(device).lower().startswith(("gpu", "cuda"))


def _kind(device: str) -> str:
    return "gpu" if is_gpu_device(device) else "cpu"


def _device_fields(device: str) -> dict:
    """Record fields that say which device ran: a CPU run is "CPU" also on a GPU machine."""
    fields = {"device_kind": _kind(device), "keras_device": device}
    if fields["device_kind"] == "cpu":
        fields["device"] = "CPU"
    return fields


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
