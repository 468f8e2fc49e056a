"""The PyTorch run's records: one per device of a run, the reference run, a run that goes on.

A run is what :func:`gpulesson.lesson.torch.train_on` returns: a dict with ``device``
("cpu", "cuda", "mps"), ``epoch_seconds``, ``train_loss``, ``evaluation_seconds``,
``test_loss``, ``test_accuracy``, ``start_weights`` (fingerprint) and ``batch_size``.

A record keeps every epoch, their summary (``summary``: median, range, the samples, the warm-up
apart) and the load average right before and right after the device's training; a CUDA record
also keeps the GPU's facts (``gpu``) and how float32 was computed (``float32_precision``), as
the Keras records do. The records have the fields of the CNN's records that
:func:`gpulesson.experiments.cnn.describe` reads, so the comparison in words is the CNN's.
Imports no deep-learning framework: PyTorch only when a record is made.
"""

from __future__ import annotations

import importlib.util
import platform
import statistics

from gpulesson import results
from gpulesson.experiments.common import SUMMARY_KEY, summarise
from gpulesson.experiments.recordset import RecordSet, load_fields, split_epochs
from gpulesson.timing import load_average

EXPERIMENT = "pytorch-cpu-vs-gpu"
# One record a device; the page's run is the newest with both devices.
RECORDS = RecordSet(EXPERIMENT, ("device_kind",), warmup_key=None)
RESULTS_FILE, runs, reference_run = RECORDS.results_file, RECORDS.runs, RECORDS.newest_run


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    return __import__(module).__version__


def torch_environment(device: str) -> dict:
    """What a PyTorch record says about the framework and the device it ran on.

    These keys replace the Keras-oriented ones of :func:`gpulesson.results.environment_record`:
    ``backend`` "pytorch", ``versions`` (python, torch, torchvision, numpy), ``gpu_count``
    (CUDA GPUs PyTorch sees), ``torch_threads`` (CPU threads PyTorch computes with) and
    ``device``: the GPU's name for a GPU run, ``"CPU"`` for a CPU run.

    As in the Keras records (:func:`gpulesson.results.device_facts`), a CUDA run also has
    ``gpu`` (model, driver, CUDA versions, compute capability, memory:
    :func:`gpulesson.devices.gpu_facts` of PyTorch's first GPU) and ``float32_precision`` (TF32
    or float32 for matrix products and convolutions, from PyTorch's settings in force and the
    GPU: :func:`gpulesson.devices.float32_precision`); a CPU run has ``float32_precision``
    (float32). An Apple GPU (MPS) run has neither: those probes know CUDA GPUs only.
    """
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
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
        "gpu_count": gpus,
        "torch_threads": torch.get_num_threads(),
        "device": name,
    }
    if kind in ("cuda", "cpu"):  # as in the Keras records; MPS has no such facts to read
        environment.update(results.device_facts(
            {**environment, "device_kind": "gpu" if kind == "cuda" else "cpu"}))
    return environment


def run_record(run: dict, *, data: str, run_id: str, n_train: int, n_test: int,
               source: str = "notebook", load_before=None, load_after=None) -> dict:
    """The results-file record of one device's run (see the module docstring for ``run``).

    The measurement rule: the first :data:`~gpulesson.experiments.common.WARMUP` epoch is the
    warm-up, the epochs after it are the timed ones; ``summary`` keeps their summary
    (:func:`~gpulesson.experiments.common.summarise`, the warm-up apart), ``epoch_seconds``
    every epoch, the warm-up first. ``mean_epoch_seconds`` is the mean of the timed epochs (the
    first alone when only one ran), ``images_per_second`` the images over their median;
    ``total_seconds`` adds the evaluation to the training time. ``load_before`` and
    ``load_after``: the load average right before and right after the training
    (``os.getloadavg()``), kept as ``load_average_before`` and ``load_average_after`` when
    given; ``load_average`` is read when the record is made. The record has the fields
    :func:`gpulesson.experiments.cnn.describe` and :func:`~gpulesson.experiments.cnn.figures` read.
    """
    seconds = [float(s) for s in run["epoch_seconds"]]
    if not seconds:
        raise ValueError("the run has no epoch times")
    warmup, timed = split_epochs(seconds)
    summary = summarise(timed, warmup)
    mean = statistics.fmean(timed)
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
        "mean_epoch_seconds": mean,
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

