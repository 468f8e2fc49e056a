"""Episode 8's CPU-vs-GPU measurements in PyTorch: one record per device of a run, with the CNN's
record fields, so the comparison in words (:func:`describe`) and the figures are the CNN's.

Importing the package needs neither PyTorch nor torchvision, and imports no Keras: TensorFlow
must not share a process with PyTorch's compiler (their LLVM copies clash).
"""

from __future__ import annotations

from gpulesson.experiments.cnn import describe
from gpulesson.experiments.torch_reference.figures import alt_texts, figures
from gpulesson.experiments.torch_reference.measure import SKIPPED_CELL, check_torch
from gpulesson.experiments.torch_reference.page import substitutions
from gpulesson.experiments.torch_reference.records import (
    EXPERIMENT,
    RESULTS_FILE,
    reference_run,
    run_record,
    torch_environment,
)

__all__ = ["EXPERIMENT", "RESULTS_FILE", "SKIPPED_CELL", "alt_texts", "check_torch", "describe",
           "figures", "main", "reference_run", "run_record", "substitutions", "torch_environment"]


def __getattr__(name: str):
    # The command line is loaded only when asked for: ``python -m`` runs __main__ itself, and a
    # copy imported here with the package would make runpy warn that it is already in sys.modules.
    if name in ("main", "_parser"):
        from gpulesson.experiments.torch_reference import __main__ as command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
