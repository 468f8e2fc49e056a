"""The small models' records, one per device (comparison) or per device and cell (sweep), the
reference runs, speed-ups, and a run in words or as a table. Imports no deep-learning framework."""

from __future__ import annotations

from gpulesson.experiments.common import Comparison, scale, summarise, summary_text, times_text
from gpulesson.experiments.recordset import RecordSet, epochs_summary, gpu_against_cpu
from gpulesson.records.results import NOT_RECORDED, data_label, hardware, is_gpu
from gpulesson.records.results import duration as short_time
from gpulesson.records.results import pick as _pick

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


def device_fields(device: str) -> dict:
    """The fields that say which Keras device ran."""
    kind = "gpu" if str(device).lower().startswith(("gpu", "cuda")) else "cpu"
    return {"device_kind": kind, "keras_device": device}


def comparison_record(run: dict, *, run_id: str, batch_size: int, n_train: int, n_test: int,
                      start_weights: str | None = None, source: str = "notebook",
                      load_average: dict | None = None, energy: dict | None = None) -> dict:
    """The record of one device's run of :func:`gpulesson.lesson.train_mlp`; ``load_average``
    (``{"start": [...], "end": [...]}``) and ``energy`` as measured around it."""
    timing = dict(run["timing"])
    mean = timing["steady_mean_epoch_seconds"] or timing["first_epoch_seconds"]
    training = timing.pop("total_seconds")
    return RECORDS.record(
        part="comparison", run_id=run_id, source=source, **device_fields(run["device"]),
        batch_size=batch_size, n_train=n_train, n_test=n_test,
        hidden_widths=list(EPISODE_WIDTHS), n_parameters=run["model"].count_params(),
        **timing, mean_epoch_seconds=mean, training_seconds=training,
        test_loss=float(run["test_loss"]), test_accuracy=float(run["test_accuracy"]),
        start_weights=start_weights, jit_compile=run.get("jit_compile"),
        summary=epochs_summary(timing["epoch_seconds"]), load_average=load_average,
        **({"energy": energy} if energy is not None else {}),
        history={key: [float(v) for v in values] for key, values in run["history"].items()},
    )


def reference_run(part: str, path=None) -> list[dict]:
    """The records of ``part`` of the newest run with CPU and GPU records; a sweep counts only
    with every cell of its grid on each device it measured."""
    if part not in PARTS:
        raise SmallModelsError(f"unknown part {part!r}: use one of {', '.join(PARTS)}")
    return RECORDS.newest_run(path, part=part, complete=sweep_complete if part == "sweep" else None)


def axes(records) -> tuple[list[int], list[int]]:
    """The sorted widths and batch sizes of a sweep's records."""
    return sorted({r["width"] for r in records}), sorted({r["batch_size"] for r in records})


def cell_name(key: tuple[int, int]) -> str:
    return f"width {key[0]}, batch size {key[1]}"


def sweep_complete(records) -> bool:
    """Whether each device of a sweep run has every cell of the run's grid."""
    widths, batches = axes(records)
    grid = {(w, b) for w in widths for b in batches}
    return all({(r["width"], r["batch_size"]) for r in records if is_gpu(r) == gpu} == grid
               for gpu in {is_gpu(r) for r in records})


def epoch_summary(record: dict | None) -> dict | None:
    """The summary of a record's timed epochs; a sweep record without epoch times has its mean
    epoch as its only sample (no range)."""
    if not record:
        return None
    found = RECORDS.epoch_summary(record)
    if found is None and record.get("mean_epoch_seconds"):
        found = summarise([record["mean_epoch_seconds"]])
    return found


def sample_summary(record: dict | None) -> dict | None:
    """The time per sample of a sweep record."""
    return scale(epoch_summary(record), 1 / record["n_rows"]) if record else None


def step_summary(record: dict | None) -> dict | None:
    """The time per step of a sweep record."""
    if not record:
        return None
    steps = record.get("steps_per_epoch") or -(-record["n_rows"] // record["batch_size"])
    return scale(epoch_summary(record), 1 / steps)


def verdict(records) -> Comparison | None:
    """The GPU against the CPU of one comparison run, per timed epoch (None without both)."""
    return RECORDS.gpu_against_cpu(records, epoch_summary)


def speedup_text(found: Comparison | None) -> str:
    """``"0.4× (GPU 2.5× slower)"`` or ``"1.1× (no measurable difference)"``."""
    if found is None:
        return NOT_RECORDED
    return f"{times_text(found.ratio)} ({verdict_words(found)})"


def verdict_words(found: Comparison) -> str:
    """The verdict: "GPU 2.5× slower", or "no measurable difference" where the ranges overlap."""
    return f"GPU {found.sentence}" if found.measurable else found.sentence


def sweep_cells(records) -> dict[tuple[int, int], dict[str, dict]]:
    """``{(width, batch_size): {"cpu": record, "gpu": record}}`` of one sweep run's records."""
    cells: dict[tuple[int, int], dict[str, dict]] = {}
    for record in records:
        cells.setdefault((record["width"], record["batch_size"]), {})[
            "gpu" if is_gpu(record) else "cpu"] = record
    return cells


def sweep_verdicts(records) -> dict[tuple[int, int], Comparison]:
    """``{(width, batch_size): the GPU against the CPU per sample}`` of the cells with both."""
    found = {key: gpu_against_cpu(sample_summary(pair.get("cpu")), sample_summary(pair.get("gpu")))
             for key, pair in sweep_cells(records).items()}
    return {key: v for key, v in found.items() if v is not None}


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


def _cell_text(record) -> str:
    found = sample_summary(record)
    if not found:
        return "-"
    return short_time(found["median"]) + (f" ({short_time(found['min'])}-{short_time(found['max'])})"
                                          if found["n"] > 1 else " (1 epoch)")


def sweep_table(records) -> str:
    """A text table of a sweep run: time per sample per device, and the speed-up, per cell."""
    if not records:
        return "No sweep recorded."
    widths, batches = axes(records)
    cells, verdicts = sweep_cells(records), sweep_verdicts(records)
    kinds = [k for k in ("cpu", "gpu") if any(k in pair for pair in cells.values())]
    header = f"{'width':>6} {'batch':>6} " + " ".join(f"{k.upper() + ' per sample':>24}" for k in kinds)
    if verdicts:
        header += f" {'speed-up':>9}  GPU against CPU"
    lines = [f"Data: {data_label(records)}; backend {records[0]['backend']}; per sample: median "
             "(fastest-slowest timed epoch).", header]
    for width in widths:
        for batch in batches:
            pair = cells.get((width, batch), {})
            line = f"{width:6} {batch:6} " + " ".join(f"{_cell_text(pair.get(k)):>24}" for k in kinds)
            if verdicts:
                found = verdicts.get((width, batch))
                line += (f" {found.ratio:8.2f}x  {found.sentence}" if found else f" {'-':>9}")
            lines.append(line)
    if not verdicts:
        lines.append("Speed-up: not measured (no GPU records in this sweep).")
    return "\n".join(lines)
