"""Episode 8's comparison measured with its own code (:mod:`gpulesson.lesson.torch`), one record a
device. Importing it needs neither PyTorch nor Keras (TensorFlow and PyTorch's compiler bring
clashing LLVM copies), so the notebook's first cell can say when PyTorch is missing."""

import copy
import importlib.util
import platform
import statistics

from gpulesson.experiments import cli
from gpulesson.machine.timing import load_average
from gpulesson.records import results
from gpulesson.records.recordset import RecordSet, check_earlier, epochs_summary, load_fields
from gpulesson.records.summaries import SUMMARY_KEY, WARMUP, default_epochs

# One record a device; the page's run is the newest with both devices.
RECORDS = RecordSet("pytorch-cpu-vs-gpu", ("device_kind",), warmup_key=None)
INSTALL = "python -m pip install -r requirements/torch.txt"
DEVICES = {"cpu": "cpu", "gpu": "cuda"}

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
    """Whether PyTorch can be imported (then print its version); without it print :data:`SKIPPED` and,
    in IPython, turn every later cell into a one-line note, so the notebook runs and does nothing."""
    if importlib.util.find_spec("torch") is None:
        print(SKIPPED)
        if shell is None and importlib.util.find_spec("IPython"):
            from IPython import get_ipython
            shell = get_ipython()
        if shell is not None and _skip_cell not in shell.input_transformers_post:
            shell.input_transformers_post.append(_skip_cell)
        return False
    import torch

    print(f"PyTorch {torch.__version__}")
    return True


def torch_environment(device: str) -> dict:
    """PyTorch's view of the framework and the device, in place of the Keras-oriented keys of
    :func:`~gpulesson.records.results.environment_record`, with the device facts (not for MPS)."""
    import torch

    kind = torch.device(device).type
    name = "CPU"
    if kind == "cuda":
        name = torch.cuda.get_device_name(torch.device(device))
    elif kind == "mps":
        name = f"Apple GPU (MPS), {platform.machine()}"
    environment = {
        "backend": "pytorch",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "torchvision": results._version("torchvision"), "numpy": results._version("numpy")},
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
    """One device's record of :func:`gpulesson.lesson.torch.train_on`'s run, by the measurement rule."""
    seconds = [float(s) for s in run["epoch_seconds"]]
    if not seconds:
        raise ValueError("the run has no epoch times")
    summary = epochs_summary(seconds)
    training = sum(seconds)
    fields = {
        "run_id": run_id, "source": source,
        "device_kind": "cpu" if str(run["device"]).startswith("cpu") else "gpu",
        "torch_device": str(run["device"]),
        "batch_size": run["batch_size"], "n_train": n_train, "n_test": n_test,
        "epochs": len(seconds), "epoch_seconds": seconds, "first_epoch_seconds": seconds[0],
        "mean_epoch_seconds": statistics.fmean(summary["samples"]), SUMMARY_KEY: summary,
        "images_per_second": n_train / summary["median"], "training_seconds": training,
        "evaluation_seconds": run["evaluation_seconds"],
        "total_seconds": training + run["evaluation_seconds"],
        "train_loss": [float(v) for v in run["train_loss"]],
        "test_loss": run["test_loss"], "test_accuracy": run["test_accuracy"],
        "start_weights": run["start_weights"], "load_average": load_average(),
        **load_fields(load_before, load_after),
    }
    # PyTorch's view of the machine, without importing Keras (and with it TensorFlow).
    environment = {**results.machine_record(), **torch_environment(str(run["device"]))}
    return RECORDS.record(data=data, environment=environment, **fields)


def measure(args, *, run_id: str, done):
    """The command's run: one record a device it lacks, each yielded as soon as its device is
    done; going on with a run (``done``) needs the settings the run was recorded with."""
    if importlib.util.find_spec("torch") is None:
        cli.refuse(f"PyTorch is not installed: {INSTALL}")
    import torch

    from gpulesson.datasets.mnist import load_data
    from gpulesson.datasets.settings import get_settings
    from gpulesson.lesson import torch as lesson_torch

    if args.threads:
        torch.set_num_threads(args.threads)
    devices = cli.devices_or_refuse(args.devices, torch.cuda.is_available(), "PyTorch")
    settings = get_settings()
    # The rule: one warm-up epoch, then the timed ones (fewer in quick mode), unless --epochs.
    epochs = default_epochs(settings.quick) if args.epochs is None else args.epochs
    had = sorted(kind for (kind,) in done)
    if had:
        devices = [d for d in devices if d not in had]
        print(f"Run {run_id} has {', '.join(had)} already: "
              + (f"going on with {', '.join(devices)}." if devices else "nothing left to record."))
        if not devices:
            return
    # The lesson's data, normalised by the training images' statistics; one initial CNN for all.
    (x_train, y_train), (x_test, y_test), data, _ = load_data(settings)
    mean, std = float(x_train.mean() / 255), float(x_train.std() / 255)
    train_set = lesson_torch.to_dataset(x_train, y_train, mean, std)
    test_set = lesson_torch.to_dataset(x_test, y_test, mean, std)
    torch.manual_seed(args.seed)
    initial_state = copy.deepcopy(lesson_torch.SmallCNN().state_dict())
    batch_size = settings.batch_size(args.batch_size)
    try:
        check_earlier(RECORDS.read(args.out, run_id=run_id) if had else [], data=data,
                      n_train=len(train_set), batch_size=batch_size, epochs=epochs)
    except ValueError as exc:
        cli.refuse(f"error: {exc}. Nothing was trained or written.")
    print(f"Run {run_id}: {len(train_set):,} training and {len(test_set):,} test images; "
          f"{epochs} epochs of batch size {batch_size}; PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads", flush=True)
    for name in devices:
        print(f"Training on {DEVICES[name]} for {epochs} epochs ({WARMUP} warm-up, "
              f"{epochs - WARMUP} timed) ...", flush=True)
        before = load_average()
        run = lesson_torch.train_on(DEVICES[name], initial_state, train_set, test_set, epochs,
                                    batch_size=batch_size)
        yield run_record(run, data=data, run_id=run_id, n_train=len(train_set),
                         n_test=len(test_set), source="gpulesson.experiments.torch_reference",
                         load_before=before, load_after=load_average())
