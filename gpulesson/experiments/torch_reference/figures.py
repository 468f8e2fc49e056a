"""The figures of a PyTorch run: epoch times and the time bars (``fig/08-pytorch/reference.py``),
and their alt texts.

They are the CNN's (:func:`gpulesson.experiments.cnn.figures`), with two PyTorch words: the
note on the warm-up epoch (:data:`FIRST_EPOCH`) and the CPU's line in the title, which says how
many threads PyTorch computed with. The alt texts are made from what the figures draw
(:func:`alt_texts`).
"""

from __future__ import annotations

from gpulesson.experiments import cnn
from gpulesson.results import hardware, pick

FIRST_EPOCH = "one-off start-up costs"  # what a PyTorch warm-up epoch pays for (no compiling)


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
