"""The CNN's figures of a PyTorch run (``fig/08-pytorch/reference.py``) and their alt texts, with
two PyTorch words: the warm-up epoch's note, and the CPU's PyTorch threads in the title."""

from __future__ import annotations

from gpulesson.experiments import cnn
from gpulesson.records.results import hardware, pick

# PyTorch runs eagerly: its first epoch only pays start-up costs (loading GPU kernels,
# allocating memory), no compiling.
FIRST_EPOCH = "one-off start-up costs"


def _words(records) -> dict:
    names = hardware(records)
    cpu = pick(records, False)
    if cpu and cpu.get("torch_threads"):
        # The cores of the machine, and how many of them PyTorch computed with.
        threads = cpu["torch_threads"]
        names["CPU"] += f", {threads} PyTorch thread{'s' if threads > 1 else ''}"
    return {"first_epoch": FIRST_EPOCH, "hardware_names": names}


def figures(records):
    """The epoch-time plot and the time bar chart of one run's records, each with its ``alt_text``."""
    return cnn.figures(records, **_words(records))


def alt_texts(records) -> tuple[str, str]:
    """The alt texts of :func:`figures` of the same records, made from what they draw."""
    return cnn.alt_texts(records, **_words(records))
