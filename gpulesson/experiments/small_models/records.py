"""The small-models records: one per device (comparison) or per device and cell (sweep), the
reference runs, speed-ups, and a run in words or as a table. Imports no deep-learning framework.

Each record keeps its epoch times and their ``summary`` (the first epoch the warm-up, the
lesson's measurement rule); records made before the rule are summarised from their epoch
times (:func:`epoch_summary`). Comparisons of the CPU and the GPU come from
:func:`~gpulesson.experiments.common.compare`: where the ranges of the timed epochs overlap,
there is no measurable difference, whatever the ratio of the medians.
"""

from __future__ import annotations

from gpulesson.experiments.common import Comparison, summarise, summary_text, times_text
from gpulesson.experiments.recordset import RecordSet, epochs_summary, gpu_against_cpu
from gpulesson.results import NOT_RECORDED, data_label, hardware, is_gpu
from gpulesson.results import duration as short_time
from gpulesson.results import pick as _pick

EXPERIMENT = "mlp-cpu-vs-gpu"
PARTS = ("comparison", "sweep")
N_FEATURES, N_CLASSES = 30, 2
EPISODE_WIDTHS = (16, 8)  # the episode's MLP: 30 -> 16 -> 8 -> 2
# A record made before the rule took its first epoch as the warm-up.
RECORDS = RecordSet(EXPERIMENT, ("part", "device_kind", "width", "batch_size"),
                    data="breast_cancer", warmup_key=None)
RESULTS_FILE = RECORDS.results_file


class SmallModelsError(ValueError):
    """A request this experiment cannot carry out; the message says what to change."""


def is_gpu_device(device: str) -> bool:
    return str(device).lower().startswith(("gpu", "cuda"))


def _kind(device: str) -> str:
    return "gpu" if is_gpu_device(device) else "cpu"


def _device_fields(device: str) -> dict:
    """Record fields that say which device ran (the layer names a CPU run's device "CPU")."""
    return {"device_kind": _kind(device), "keras_device": device}


def comparison_record(run: dict, *, run_id: str, batch_size: int, n_train: int, n_test: int,
                      start_weights: str | None = None, source: str = "notebook",
                      load_average: dict | None = None, energy: dict | None = None) -> dict:
    """The record of one device's run of :func:`gpulesson.lesson.train_mlp` (``part: "comparison"``),
    with the ``summary`` of its epochs (the first the warm-up) and, when given, the
    ``load_average`` before and after (``{"start": [...], "end": [...]}``), and the ``energy``
    of each epoch or why it could not be read (:mod:`gpulesson.experiments.energy`)."""
    timing = dict(run["timing"])
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    return RECORDS.record(
        part="comparison", run_id=run_id, source=source, **_device_fields(run["device"]),
        batch_size=batch_size, n_train=n_train, n_test=n_test,
        hidden_widths=list(EPISODE_WIDTHS), n_parameters=run["model"].count_params(),
        **timing, mean_epoch_seconds=mean, training_seconds=training,
        test_loss=float(run["test_loss"]), test_accuracy=float(run["test_accuracy"]),
        start_weights=start_weights, jit_compile=run.get("jit_compile"),
        summary=epochs_summary(timing["epoch_seconds"]), load_average=load_average,
        **({"energy": energy} if energy is not None else {}),
        history={key: [float(v) for v in values] for key, values in run["history"].items()},
    )


def runs(records, part: str) -> dict[str, list[dict]]:
    """The records of ``part`` grouped by ``run_id`` (:func:`gpulesson.results.runs`)."""
    return RECORDS.runs(records, part=_checked(part))


def reference_run(part: str, path=None) -> list[dict]:
    """The records of ``part`` of the reference run (the layer's
    :meth:`~gpulesson.experiments.recordset.RecordSet.newest_run`): a sweep counts only with
    every cell of its grid on each device it measured."""
    return RECORDS.newest_run(path, part=_checked(part),
                              complete=sweep_complete if part == "sweep" else None)


def _checked(part: str) -> str:
    if part not in PARTS:
        raise SmallModelsError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    return part


def sweep_complete(records) -> bool:
    """Whether each device of a sweep run has every cell of the run's grid (widths x batches)."""
    widths, batches = _axes(records)
    grid = {(w, b) for w in widths for b in batches}
    devices = {is_gpu(r) for r in records}
    return all({(r["width"], r["batch_size"]) for r in records if is_gpu(r) == gpu} == grid
               for gpu in devices)


def epoch_summary(record: dict | None) -> dict | None:
    """The summary of a record's timed epochs (seconds per epoch): the one it keeps, or, for a
    record made before the rule, one of its epochs after the first (the warm-up). A sweep
    record without epoch times has its median epoch as its only sample (no range)."""
    if not record:
        return None
    found = RECORDS.epoch_summary(record)
    if found is None and record.get("mean_epoch_seconds"):
        found = summarise([record["mean_epoch_seconds"]])
    return found


def scaled(summary: dict | None, divisor: float) -> dict | None:
    """A time summary divided by ``divisor`` (rows, steps): per sample, per step."""
    if not summary:
        return None
    return {**summary, "median": summary["median"] / divisor, "min": summary["min"] / divisor,
            "max": summary["max"] / divisor,
            "samples": [v / divisor for v in summary["samples"]],
            "warmup": [v / divisor for v in summary.get("warmup", [])]}


def sample_summary(record: dict | None) -> dict | None:
    """The time per sample of a sweep record (its epoch summary over its rows)."""
    return scaled(epoch_summary(record), record["n_rows"]) if record else None


def step_summary(record: dict | None) -> dict | None:
    """The time per step of a sweep record (its epoch summary over its steps per epoch)."""
    if not record:
        return None
    steps = record.get("steps_per_epoch") or -(-record["n_rows"] // record["batch_size"])
    return scaled(epoch_summary(record), steps)


def verdict(records) -> Comparison | None:
    """The GPU against the CPU of one comparison run, per timed epoch (None without both)."""
    return RECORDS.gpu_against_cpu(records, epoch_summary)


def speedup(records) -> float | None:
    """CPU median epoch / GPU median epoch of one comparison run (None without both)."""
    found = verdict(records)
    return found.ratio if found else None


def speedup_text(found: Comparison | None) -> str:
    """A comparison of the GPU with the CPU in words: the ratio of the medians and the verdict,
    ``"0.4× (GPU 2.5× slower)"`` or ``"1.1× (no measurable difference)"``."""
    if found is None:
        return NOT_RECORDED
    words = f"GPU {found.sentence}" if found.measurable else found.sentence
    return f"{times_text(found.ratio)} ({words})"


def sweep_cells(records) -> dict[tuple[int, int], dict[str, dict]]:
    """``{(width, batch_size): {"cpu": record, "gpu": record}}`` of one sweep run's records."""
    cells: dict[tuple[int, int], dict[str, dict]] = {}
    for record in records:
        device = "gpu" if is_gpu(record) else "cpu"
        cells.setdefault((record["width"], record["batch_size"]), {})[device] = record
    return cells


def sweep_verdicts(records) -> dict[tuple[int, int], Comparison]:
    """``{(width, batch_size): the GPU against the CPU}`` (:func:`gpu_against_cpu` of the times
    per sample) for the cells with both devices."""
    result = {}
    for key, pair in sweep_cells(records).items():
        found = gpu_against_cpu(sample_summary(pair.get("cpu")), sample_summary(pair.get("gpu")))
        if found is not None:
            result[key] = found
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
                     f"(warm-up), then {summary_text(epoch_summary(record), short_time)} per "
                     f"epoch; test accuracy {record['test_accuracy']:.3f}.")
    if _pick(records, True) is None:
        lines.append("GPU: no run in these records.")
    else:
        lines.append(f"Speed-up of the GPU per epoch (medians): {speedup_text(verdict(records))}.")
    return "\n".join(lines)


def sweep_table(records) -> str:
    """A text table of a sweep run: time per sample per device, and the speed-up, per cell."""
    if not records:
        return "No sweep recorded."
    widths, batches = _axes(records)
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    kinds = [k for k in ("cpu", "gpu") if any(k in pair for pair in cells.values())]
    header = f"{'width':>6} {'batch':>6} " + " ".join(f"{k.upper() + ' per sample':>24}" for k in kinds)
    if verdicts:
        header += f" {'speed-up':>9}  GPU against CPU"
    lines = [f"Data: {data_label(records)}; backend {records[0]['backend']}; per sample: median "
             "(fastest-slowest timed epoch).", header]

    def cell(record):
        found = sample_summary(record)
        if not found:
            return "-"
        text = short_time(found["median"])
        return text + (f" ({short_time(found['min'])}-{short_time(found['max'])})"
                       if found["n"] > 1 else " (1 epoch)")

    for width in widths:
        for batch in batches:
            pair = cells.get((width, batch), {})
            line = f"{width:6} {batch:6} " + " ".join(f"{cell(pair.get(k)):>24}" for k in kinds)
            if verdicts:
                found = verdicts.get((width, batch))
                line += (f" {found.ratio:8.2f}x  {found.sentence}" if found else f" {'-':>9}")
            lines.append(line)
    if not verdicts:
        lines.append("Speed-up: not measured (no GPU records in this sweep).")
    return "\n".join(lines)
