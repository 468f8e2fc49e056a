"""Measuring episode 8's comparison with the episode's own code (:mod:`gpulesson.lesson.torch`):
whether PyTorch is there, the data and initial weights, and the training on each device.

Importing it needs no PyTorch: the notebook's first cell uses :func:`check_torch` to say plainly
when PyTorch is missing.
"""

from __future__ import annotations

import importlib.util

from gpulesson.experiments.common import WARMUP
from gpulesson.experiments.torch_reference.records import run_record
from gpulesson.machine.timing import load_average

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
    """Whether PyTorch can be imported (then print its version). Without it, print
    :data:`SKIPPED` and, in IPython, turn every later cell into a one-line note until the
    kernel restarts, so the rest of the notebook runs without errors and does nothing."""
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


def prepare(settings, seed: int):
    """``(train_set, test_set, data, initial_state)``: the lesson's data, normalised by the
    training images' mean and deviation, and the CNN's initial weights for every device."""
    import copy

    import torch

    from gpulesson.datasets.mnist import load_data
    from gpulesson.lesson import torch as lesson_torch

    (x_train, y_train), (x_test, y_test), data, _ = load_data(settings)
    mean, std = float(x_train.mean() / 255), float(x_train.std() / 255)
    train_set = lesson_torch.to_dataset(x_train, y_train, mean, std)
    test_set = lesson_torch.to_dataset(x_test, y_test, mean, std)
    torch.manual_seed(seed)
    initial_state = copy.deepcopy(lesson_torch.SmallCNN().state_dict())
    return train_set, test_set, data, initial_state


def run_devices(devices, initial_state, train_set, test_set, epochs: int, *, batch_size: int,
                data: str, run_id: str, out) -> list[dict]:
    """One record a device, each appended to ``out`` as soon as its device is done, so that a
    run that stops keeps what it measured."""
    from gpulesson.lesson import torch as lesson_torch
    from gpulesson.records.results import append_record

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
        append_record(out, record)
        records.append(record)
    return records
