"""Is a cluster (or a laptop) ready for the workshop?  ``python -m gpulesson.check``

The instructor runs it on the login node the day before: it checks what the login node can
(:mod:`~gpulesson.check.login`), submits one short job that checks the compute node
(:mod:`~gpulesson.check.submit`, :mod:`~gpulesson.check.job`), and prints a checklist, each
item ✓, ✗ with the one thing to do, or – not checked with why (:mod:`~gpulesson.check.report`),
also written as JSON for the site's support. :func:`learner_checks` is the part that applies to
a learner: episode 1's setup check. :mod:`~gpulesson.check.example` keeps the job part's
checklist from a GPU node as the instructor guide's example.
"""

from __future__ import annotations

import os
import sys

from gpulesson.check.report import SKIP, Item, fail, ok, skip, text

__all__ = ["Item", "learner_checks", "learner_items"]

GPU_REQUEST = ("start JupyterLab again in a job that asks for a GPU (episode 2's request: the "
               "GPU partition, 1 GPU)")


def gpu_item() -> Item:
    """Does Keras see a GPU in this Python?  No GPU is a fault only inside a Slurm job."""
    from gpulesson.devices import keras_device

    device = keras_device()
    title = f"GPU for Keras ({device['backend']})"
    if device["gpu_count"]:
        return ok(title, device["device"])
    if os.environ.get("SLURM_JOB_ID"):
        return fail(title, "no GPU in this job", GPU_REQUEST)
    return skip(title, "no GPU here: the lesson trains on the CPU; episode 5's comparison needs "
                       "a GPU node")


def learner_items() -> list[Item]:
    """The checks that apply to a learner, in this Python (the lesson's kernel): its packages
    and settings, the data, the GPU."""
    from gpulesson.check.login import GPU_SETTINGS, check_data, check_packages, check_settings
    from gpulesson.settings import get_settings

    gpu = gpu_item()
    settings = check_settings(os.environ, 'choose the kernel "Python (gpulesson)" (Kernel menu, '
                              "Change Kernel), or register it again: make kernel",
                              names=GPU_SETTINGS)
    if gpu.status == SKIP:  # a laptop without a GPU: the GPU's memory settings do not matter
        settings = skip(settings.name, "they concern a GPU's memory, and there is none here")
    items = [check_packages(sys.executable), settings,
             *check_data(get_settings(), shared=False, not_yet_ok=True), gpu]
    for item in items:
        item.where = "learner"
    return items


def learner_checks() -> None:
    """Episode 1's setup check: one ✓, ✗ (with its fix) or – line per check of :func:`learner_items`."""
    print(text(learner_items()))
