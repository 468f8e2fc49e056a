"""Episode 5's finished runs, kept so that a kernel restart does not mean training again:
:func:`reload_runs` puts back ``cpu_run``, ``gpu_run`` and ``records`` from the learner's newest
saved run of the same data (not a CPU-only run where a GPU is visible now). No file is written over.
"""

import json
from pathlib import Path

from gpulesson.datasets.settings import get_settings, keep_earlier
from gpulesson.records.results import pick, read_records

RUNS_DIR = "my-runs"
RESULTS_NAME = "my-results.jsonl"  # the results file episode 5's cell writes
NAMES = ("cpu_run", "gpu_run", "records")
# The keys of EpochTimer.summary() that a record keeps under the same name.
TIMING_KEYS = ("epochs", "epoch_seconds", "validation_seconds", "first_epoch_seconds",
               "steady_mean_epoch_seconds", "steady_median_epoch_seconds", "images_per_second")


def save_runs(results_file, run_id: str, settings, **runs) -> None:
    """Save each run's model and an index beside ``results_file``; None, so the cell shows the line alone."""
    folder = Path(results_file).parent / RUNS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, run in runs.items():
        models[name] = None
        if run is not None:
            target = keep_earlier(folder / f"{run_id}-{name}.keras")
            run["model"].save(target)
            models[name] = target.name
    index = keep_earlier(folder / f"{run_id}.json")
    index.write_text(json.dumps({"run_id": run_id, "data": settings.data, "quick": settings.quick,
                                 "results": Path(results_file).name, "models": models}),
                     encoding="utf-8")
    print(f"Models saved in {folder}: after a restart, the catch-up cells reload this run "
          "instead of training again.")


def _newest(folder: Path, settings) -> dict | None:
    for index in sorted(folder.glob("*.json"), reverse=True):  # run ids sort by time
        try:
            saved = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (isinstance(saved, dict) and saved.get("data") == settings.data
                and saved.get("quick") == settings.quick and saved.get("models")):
            return saved
    return None


def run_from_record(record: dict, model) -> dict:
    """The dict ``train_on`` returned, made again from the run's record and its saved model."""
    timing = {key: record.get(key) for key in TIMING_KEYS}
    timing["total_seconds"] = record["training_seconds"]
    return {"device": record["keras_device"], "model": model, "history": record["history"],
            "timing": timing, "evaluation_seconds": record["evaluation_seconds"],
            "test_loss": record["test_loss"], "test_accuracy": record["test_accuracy"],
            "start_weights": record["start_weights"], "jit_compile": record.get("jit_compile")}


def reload_runs(namespace: dict, settings=None, gpu_visible: bool | None = None) -> bool:
    """Put the newest finished run back into ``namespace`` if it lacks all :data:`NAMES`; whether it did."""
    if any(name in namespace for name in NAMES):
        return False
    settings = settings or get_settings()
    folder = settings.work_dir / RUNS_DIR
    saved = _newest(folder, settings) if folder.is_dir() else None
    if saved is None:
        return False
    models = saved["models"]
    if gpu_visible is None and not models.get("gpu_run"):
        from gpulesson.machine.devices import keras_device

        gpu_visible = bool(keras_device()["gpu_count"])
    if gpu_visible and not models.get("gpu_run"):
        return False
    try:
        records = read_records(folder.parent / saved["results"], run_id=saved["run_id"])
    except (OSError, ValueError):
        return False
    import keras

    runs = {}
    for name in ("cpu_run", "gpu_run"):
        record = pick(records, gpu=name == "gpu_run")
        if models.get(name) and record is None:
            return False
        runs[name] = (run_from_record(record, keras.saving.load_model(folder / models[name]))
                      if models.get(name) else None)
    namespace.update(runs, records=records)
    done = " and ".join(name for name, run in runs.items() if run is not None)
    print(f"Reloaded your finished run {saved['run_id']} ({done}, saved in {folder}): no "
          "training again.")
    return True
