"""The PyTorch run's records: one per device of a run (with the CNN's record fields), the reference
run. Imports no deep-learning framework: PyTorch only when a record is made."""

from __future__ import annotations

import importlib.util
import platform
import statistics

from gpulesson.experiments.common import SUMMARY_KEY, summarise
from gpulesson.experiments.recordset import RecordSet, load_fields, split_epochs
from gpulesson.machine.timing import load_average
from gpulesson.records import results

EXPERIMENT = "pytorch-cpu-vs-gpu"
# One record a device; the page's run is the newest with both devices.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
RESULTS_FILE, runs, reference_run = RECORDS.results_file, RECORDS.runs, RECORDS.newest_run


def _version(module: str) -> str | None:
    return __import__(module).__version__ if importlib.util.find_spec(module) else None


def torch_environment(device: str) -> dict:
    """PyTorch's view of the framework and the device, in place of the Keras-oriented keys of
    :func:`gpulesson.records.results.environment_record`. A CUDA or CPU run also gets the device facts
    the Keras records have (``gpu``, ``float32_precision``); MPS has no such facts to read."""
    import torch

    kind = torch.device(device).type
    if kind == "cuda":
        name = torch.cuda.get_device_name(torch.device(device))
    elif kind == "mps":
        name = f"Apple GPU (MPS), {platform.machine()}"
    else:
        name = "CPU"
    environment = {
        "backend": "pytorch",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "torchvision": _version("torchvision"), "numpy": _version("numpy")},
        "gpu_count": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "torch_threads": torch.get_num_threads(),
        "device": name,
    }
    if kind in ("cuda", "cpu"):
        environment.update(results.device_facts(
            {**environment, "device_kind": "gpu" if kind == "cuda" else "cpu"}))
    return environment


def run_record(run: dict, *, data: str, run_id: str, n_train: int, n_test: int,
               source: str = "notebook", load_before=None, load_after=None) -> dict:
    """The results-file record of one device's run (what :func:`gpulesson.lesson.torch.train_on`
    returns), by the measurement rule: the warm-up epoch apart, the timed ones summarised."""
    seconds = [float(s) for s in run["epoch_seconds"]]
    if not seconds:
        raise ValueError("the run has no epoch times")
    warmup, timed = split_epochs(seconds)
    summary = summarise(timed, warmup)
    training = sum(seconds)
    fields = {
        "run_id": run_id,
        "source": source,
        "device_kind": "cpu" if str(run["device"]).startswith("cpu") else "gpu",
        "torch_device": str(run["device"]),
        "batch_size": run["batch_size"],
        "n_train": n_train,
        "n_test": n_test,
        "epochs": len(seconds),
        "epoch_seconds": seconds,
        "first_epoch_seconds": seconds[0],
        "mean_epoch_seconds": statistics.fmean(timed),
        SUMMARY_KEY: summary,
        "images_per_second": n_train / summary["median"],
        "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "train_loss": [float(v) for v in run["train_loss"]],
        "test_loss": run["test_loss"],
        "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"],
        "load_average": load_average(),
        **load_fields(load_before, load_after),
    }
    # PyTorch's view of the machine, without importing Keras (and with it TensorFlow, which
    # must not share a process with PyTorch's compiler, Triton: their LLVM copies clash).
    environment = {**results.machine_record(), **torch_environment(str(run["device"]))}
    return RECORDS.record(data=data, environment=environment, **fields)
