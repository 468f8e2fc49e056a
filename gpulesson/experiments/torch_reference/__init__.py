"""The PyTorch episode's CPU-vs-GPU measurements: records, the reference run, the comparison.

One training run (the notebook of the episode "The same comparison in PyTorch", or
``python -m gpulesson.experiments.torch_reference``) gives one record per device, all with the
same ``run_id``: the episode's own model and training function (:mod:`gpulesson.lesson.torch`),
the same data and initial weights on every device. Each device's epochs follow the lesson's
measurement rule (:mod:`gpulesson.experiments.common`): a warm-up epoch, recorded but not
averaged, then the timed epochs, kept with their summary (median and range). The records have
the fields of the CNN's (:mod:`gpulesson.experiments.cnn`), whose comparison in words
(:func:`describe`) and figures they share.

The lesson's *reference* result is the newest run in :data:`RESULTS_FILE` that has a GPU
record (else the newest run): the episode's figures and numbers (``{{ ref_torch_... }}``) are
drawn from it by code, never typed in.

Its parts, in the order of an experiment:

- :mod:`~gpulesson.experiments.torch_reference.measure`: whether PyTorch is there
  (:func:`check_torch`, the notebook's first cell), the data, the training on each device;
- :mod:`~gpulesson.experiments.torch_reference.records`: the records, PyTorch's view of the
  device (:func:`torch_environment`), the reference run;
- :mod:`~gpulesson.experiments.torch_reference.page`: the episode's ``ref_torch_*`` values;
- :mod:`~gpulesson.experiments.torch_reference.figures`: the figures
  (``fig/08-pytorch/reference.py``) and their alt texts (:func:`alt_texts`);
- :mod:`~gpulesson.experiments.torch_reference.__main__`: the command line,
  ``python -m gpulesson.experiments.torch_reference``.

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
    # The command line (main, and _parser that tests parse stage arguments with) is loaded only
    # when asked for: ``python -m`` runs __main__ itself, and a copy imported here with the
    # package would make runpy warn that it is already in sys.modules.
    if name in ("main", "_parser"):
        from gpulesson.experiments.torch_reference import __main__ as command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
