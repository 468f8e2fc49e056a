"""The PyTorch episode's CPU-vs-GPU measurements: records, the reference run, the CLI.

    LESSON_DATA=synthetic python -m gpulesson.experiments.torch_reference    # CPU, then GPU if visible
    python -m gpulesson.experiments.torch_reference --devices gpu --epochs 11 --out my-runs.jsonl

The command runs what the notebook of the episode "The same comparison in PyTorch" runs (the
model and the training function come from :mod:`gpulesson.lesson.torch`, generated from that
episode): same data, same initial weights on every device, per-epoch times, evaluation.

Each device follows the lesson's measurement rule (:mod:`gpulesson.experiments.common`): one
warm-up epoch (:data:`~gpulesson.experiments.common.WARMUP`), recorded but not averaged, then
the timed epochs (:func:`~gpulesson.experiments.common.repeats_for`: five, two in quick mode);
``--epochs`` counts both, the warm-up included. A record keeps every epoch, their summary
(``summary``: median, range, the samples, the warm-up apart) and the load average right before
and right after the device's training; a CUDA record also keeps the GPU's facts (``gpu``) and
how float32 was computed (``float32_precision``), as the Keras records do. The page shows
medians and ranges (:func:`~gpulesson.experiments.common.summary_text`) and compares the devices
in the words of :func:`~gpulesson.experiments.common.compare`; the figures' alt texts are made
from what they draw (:func:`alt_texts`).

Each device's run is appended as one record (sharing a ``run_id``) to ``--out``, by default the
lesson's results file :data:`RESULTS_FILE`, from which the episode's reference figures and
numbers (``{{ ref_torch_... }}``) are drawn. The data follow the lesson's settings
(``LESSON_DATA=synthetic`` for the stand-in, else MNIST; ``LESSON_QUICK``; ``LESSON_DATA_DIR``).
Each record is appended as soon as its device is done; ``--run-id`` goes on with an earlier
run, training only on the devices it lacks, and the summary printed is the whole run.

A run is what :func:`gpulesson.lesson.torch.train_on` returns: a dict with ``device``
("cpu", "cuda", "mps"), ``epoch_seconds``, ``train_loss``, ``evaluation_seconds``,
``test_loss``, ``test_accuracy``, ``start_weights`` (fingerprint) and ``batch_size``.

Importing this module needs neither PyTorch nor torchvision: the notebook's first cell uses
:func:`check_torch` to say plainly when PyTorch is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import platform
import statistics
import sys

from gpulesson import results
from gpulesson.experiments import cnn
from gpulesson.experiments.cnn import describe
from gpulesson.experiments.cnn.records import (
    epoch_summary,
    gpu_comparison,
    speedup_text,
    split_epochs,
)
from gpulesson.experiments.common import (
    SUMMARY_KEY,
    WARMUP,
    add_epochs_option,
    add_out_option,
    add_run_id_option,
    add_seed_option,
    continue_run,
    default_devices,
    default_epochs,
    say_appended,
    summarise,
    summary_text,
)
from gpulesson.results import (
    NOT_RECORDED,
    data_label,
    duration,
    hardware,
    make_record,
    pick,
)
from gpulesson.timing import load_average

EXPERIMENT = "pytorch-cpu-vs-gpu"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
INSTALL = "python -m pip install -r requirements/torch.txt"
DEVICES = {"cpu": "cpu", "gpu": "cuda"}
FULL_BATCH_SIZE = 128
FIRST_EPOCH = "one-off start-up costs"  # what a PyTorch warm-up epoch pays for (no compiling)

__all__ = ["EXPERIMENT", "RESULTS_FILE", "alt_texts", "check_torch", "describe", "figures",
           "reference_run", "run_record", "runs", "substitutions"]

SKIPPED = (
    "SKIPPED: PyTorch is not installed in this kernel's environment, so this notebook\n"
    "runs none of its code: every later code cell does nothing. PyTorch is an optional\n"
    "extra of the lesson. To run the notebook, install the lesson's pinned versions\n"
    "into the environment (on a login node: it downloads several GB)\n"
    f"    {INSTALL}\n"
    "then restart the kernel. The page of this episode shows the recorded results."
)
SKIPPED_CELL = "print('Skipped: PyTorch is not installed (see the first cell).')\n"


def _skip_cell(lines):
    """An IPython input transformer: the cell's code is replaced by a short note."""
    return [SKIPPED_CELL]


def check_torch(shell=None) -> bool:
    """Whether PyTorch can be imported; if not, say so and make later cells no-ops.

    Without PyTorch it prints :data:`SKIPPED` and, inside IPython (a notebook kernel),
    registers an input transformer that replaces the code of every cell run afterwards by a
    one-line note, so the rest of the notebook runs without errors and without doing anything.
    Restarting the kernel removes it. With PyTorch it prints its version and returns True.
    """
    if importlib.util.find_spec("torch") is None:
        print(SKIPPED)
        if shell is None:
            try:
                from IPython import get_ipython
            except ImportError:
                get_ipython = None
            shell = get_ipython() if get_ipython else None
        if shell is not None and _skip_cell not in shell.input_transformers_post:
            shell.input_transformers_post.append(_skip_cell)
        return False
    import torch

    print(f"PyTorch {torch.__version__}")
    return True


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
    }
    for key, load in (("load_average_before", load_before), ("load_average_after", load_after)):
        if load is not None:
            fields[key] = [round(float(v), 2) for v in load]
    # PyTorch's view of the machine, without importing Keras (and with it TensorFlow, which
    # must not share a process with PyTorch's compiler, Triton: their LLVM copies clash).
    environment = {**results.machine_record(), **torch_environment(str(run["device"]))}
    return make_record(EXPERIMENT, data=data, environment=environment, **fields)


def _hardware_names(records) -> dict[str, str]:
    """The devices' names for the figures: the CPU's line says how many threads PyTorch
    computed with."""
    names = hardware(records)
    cpu = pick(records, False)
    if cpu and cpu.get("torch_threads"):
        # The cores of the machine, and how many of them PyTorch computed with.
        threads = cpu["torch_threads"]
        names["CPU"] += f", {threads} PyTorch thread{'s' if threads > 1 else ''}"
    return names


def figures(records):
    """The epoch-time plot and the time bar chart of one run's records: ``(fig, fig)``, each
    with its ``alt_text``.

    Those of :func:`gpulesson.experiments.cnn.figures` (the warm-up epoch marked apart, the
    timed epochs as median, range and dots, the GPU's bar labelled with the words of
    :func:`~gpulesson.experiments.common.compare`), except that the note on the first epoch
    does not speak of compiling: PyTorch runs eagerly, and its first epoch only pays start-up
    costs (loading GPU kernels, allocating memory); and the CPU's line in the title says how
    many threads PyTorch computed with.
    """
    return cnn.figures(records, first_epoch=FIRST_EPOCH, hardware_names=_hardware_names(records))


def alt_texts(records) -> tuple[str, str]:
    """The alt texts of :func:`figures` of the same records, ``(epoch times, time bars)``,
    made from what they draw (:func:`gpulesson.experiments.cnn.alt_texts`)."""
    return cnn.alt_texts(records, first_epoch=FIRST_EPOCH,
                         hardware_names=_hardware_names(records))


def runs(records) -> dict[str, list[dict]]:
    """This experiment's records grouped by ``run_id`` (:func:`gpulesson.results.runs`)."""
    return results.runs(records, EXPERIMENT)


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The records of the reference run (:func:`gpulesson.results.reference_run`)."""
    return results.reference_run(path, EXPERIMENT)


def _epochs_text(record: dict | None) -> str:
    """An epoch after the warm-up: the median and range of the timed epochs (records made
    before the rule: of the epochs after the first,
    :func:`~gpulesson.experiments.cnn.records.epoch_summary`)."""
    summary = epoch_summary(record)
    return summary_text(summary, duration, what="epochs") if summary else NOT_RECORDED


def _warmup_epochs(record: dict | None) -> str:
    """How many epochs of a record are its warm-up and how many are timed: "1 warm-up and 4 timed"."""
    summary = epoch_summary(record)
    if not summary:
        return NOT_RECORDED
    return f"{len(summary['warmup'])} warm-up and {summary['n']} timed"


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """The reference run as text for the episode page (placeholders ``ref_torch_*``).

    An epoch after the warm-up is the median and range of the timed epochs
    (:func:`~gpulesson.experiments.common.summary_text`); the GPU against the CPU is said by
    :func:`~gpulesson.experiments.common.compare` (``ref_torch_gpu_vs_cpu``) and its ratio of
    medians (``ref_torch_speedup``, which says so where the ranges overlap); the first epoch,
    the evaluation and the total are single measurements. ``ref_torch_fig_*_alt``: the alt
    texts of the figures, made from what they draw (:func:`alt_texts`)."""
    records = reference_run(path)
    first = records[0] if records else None
    cpu, gpu = pick(records, False), pick(records, True)
    comparison = gpu_comparison(records)
    epochs_alt, bars_alt = alt_texts(records) if records else (NOT_RECORDED, NOT_RECORDED)
    values = {
        "ref_torch_date": first["date"][:10] if first else NOT_RECORDED,
        "ref_torch_version": first["versions"]["torch"] if first else NOT_RECORDED,
        "ref_torch_data": data_label(records) if first else NOT_RECORDED,
        "ref_torch_n_train": f"{first['n_train']:,}" if first else NOT_RECORDED,
        "ref_torch_batch_size": str(first["batch_size"]) if first else NOT_RECORDED,
        "ref_torch_epochs": str(first["epochs"]) if first else NOT_RECORDED,
        "ref_torch_epochs_timed": _warmup_epochs(first),
        "ref_torch_cpu": hardware([cpu])["CPU"] if cpu else NOT_RECORDED,
        "ref_torch_cpu_threads": str(cpu["torch_threads"]) if cpu else NOT_RECORDED,
        "ref_torch_gpu": gpu["device"] if gpu else NOT_RECORDED,
        # The ratio of the median epochs, and where the ranges overlap, that they do.
        "ref_torch_speedup": speedup_text(comparison) if comparison else NOT_RECORDED,
        # The GPU against the CPU in words (common.compare): "8× faster", "no measurable difference".
        "ref_torch_gpu_vs_cpu": comparison.sentence if comparison else NOT_RECORDED,
        "ref_torch_fig_epoch_times_alt": epochs_alt,
        "ref_torch_fig_time_bars_alt": bars_alt,
    }
    for name, record in (("cpu", cpu), ("gpu", gpu)):
        for key, field in (("first_epoch", "first_epoch_seconds"),
                           ("evaluation", "evaluation_seconds"), ("total", "total_seconds")):
            values[f"ref_torch_{name}_{key}"] = duration(record[field]) if record else NOT_RECORDED
        values[f"ref_torch_{name}_epoch"] = _epochs_text(record)
        values[f"ref_torch_{name}_accuracy"] = f"{record['test_accuracy']:.3f}" if record else NOT_RECORDED
        # An epoch after the warm-up over its steps: for a network this small, the host's
        # time per step (Python, the copy of each batch and the wait for it), not arithmetic.
        summary = epoch_summary(record) if record else None
        values[f"ref_torch_{name}_step"] = (
            duration(summary["median"] / math.ceil(record["n_train"] / record["batch_size"]))
            if summary else NOT_RECORDED)
    return values


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices to train on, in this order (default: cpu, then gpu if one is visible)")
    add_epochs_option(parser)
    parser.add_argument("--batch-size", type=int, default=FULL_BATCH_SIZE,
                        help=f"images per batch (default {FULL_BATCH_SIZE}; quick mode: at most 64)")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for PyTorch (default: PyTorch's choice)")
    add_out_option(parser, RESULTS_FILE)
    add_seed_option(parser)
    add_run_id_option(parser)
    return parser


def condition(record: dict) -> str:
    """What sets a record apart within a run: its kind of device (one record each)."""
    return record["device_kind"]


def check_earlier(earlier, **run) -> None:
    """A run goes on only with the data, sizes and epochs it was recorded with (``run``:
    field -> value), so that its CPU and GPU records compare."""
    for field, value in run.items():
        found = sorted({str(r.get(field)) for r in earlier} - {str(value)})
        if found:
            raise ValueError(
                f"run {earlier[0].get('run_id')} was recorded with {field} {', '.join(found)}, "
                f"not {value}: go on with the settings it had, or start a new run")


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if importlib.util.find_spec("torch") is None:
        print(f"PyTorch is not installed: {INSTALL}", file=sys.stderr)
        return 2
    import copy

    import torch

    from gpulesson.lesson import torch as lesson_torch
    from gpulesson.mnist import load_data
    from gpulesson.results import append_record, read_records
    from gpulesson.settings import get_settings

    if args.threads:
        torch.set_num_threads(args.threads)
    gpus = torch.cuda.is_available()
    devices = default_devices(args.devices, gpus)
    if "gpu" in devices and not gpus:
        print("No GPU is visible to PyTorch: run with --devices cpu, or on a machine with a GPU.",
              file=sys.stderr)
        return 2
    if args.devices is None and not gpus:
        print("No GPU visible: recording the CPU run only.")

    run_id, done = continue_run(args.out, EXPERIMENT, args.run_id, condition)

    def whole_run() -> list[dict]:
        if not args.out.is_file():
            return []
        return read_records(args.out, experiment=EXPERIMENT, run_id=run_id)

    settings = get_settings()
    # The rule: one warm-up epoch, then the timed ones (fewer in quick mode), unless --epochs.
    epochs = default_epochs(settings.quick) if args.epochs is None else args.epochs
    if done:
        left = [d for d in devices if d not in done]
        print(f"Run {run_id} has {', '.join(sorted(done))} already: "
              + (f"going on with {', '.join(left)}." if left else "nothing left to record."))
        devices = left
        if not devices:
            print(describe(whole_run(), full_epochs=epochs))
            return 0
    (x_train, y_train), (x_test, y_test), data, _ = load_data(settings)
    mean, std = float(x_train.mean() / 255), float(x_train.std() / 255)
    train_set = lesson_torch.to_dataset(x_train, y_train, mean, std)
    test_set = lesson_torch.to_dataset(x_test, y_test, mean, std)
    torch.manual_seed(args.seed)
    initial_state = copy.deepcopy(lesson_torch.SmallCNN().state_dict())
    batch_size = settings.batch_size(args.batch_size)
    try:
        check_earlier(whole_run() if done else [], data=data, n_train=len(train_set),
                      batch_size=batch_size, epochs=epochs)
    except ValueError as exc:
        print(f"error: {exc}. Nothing was trained or written.", file=sys.stderr)
        return 2
    print(f"Run {run_id}: {len(train_set):,} training and {len(test_set):,} test images; "
          f"{epochs} epochs of batch size {batch_size}; PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads", flush=True)

    records = []
    for name in devices:
        print(f"Training on {DEVICES[name]} for {epochs} epochs ({WARMUP} warm-up, "
              f"{epochs - WARMUP} timed) ...", flush=True)
        load_before = load_average()
        run = lesson_torch.train_on(DEVICES[name], initial_state, train_set, test_set, epochs,
                                    batch_size=batch_size)
        load_after = load_average()
        record = run_record(run, data=data, run_id=run_id, n_train=len(train_set),
                            n_test=len(test_set), source="gpulesson.experiments.torch_reference",
                            load_before=load_before, load_after=load_after)
        append_record(args.out, record)
        records.append(record)
    print(describe(whole_run(), full_epochs=epochs))
    say_appended(records, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
