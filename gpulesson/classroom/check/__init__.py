"""Is a cluster (or a laptop) ready for the workshop?  ``python -m gpulesson.classroom.check``

Checks the login node, submits one short job that checks a compute node, and prints a checklist
(also as JSON for the site's support). :func:`learner_checks` is episode 1's setup check.
"""

import os
import sys

from gpulesson.classroom.check import limits, login
from gpulesson.classroom.check.report import SKIP, Item, fail, ok, skip, text
from gpulesson.datasets.settings import get_settings

GPU_REQUEST = ("launch the GPU session again, as episode 2 shows (the GPU partition, 1 GPU); if "
               "it has a GPU, check that the environment has TensorFlow's CUDA build "
               "(requirements/gpu.txt)")
# What Slurm sets in a job that was given GPUs (a CPU session has none of them).
GPU_JOB_VARIABLES = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE", "CUDA_VISIBLE_DEVICES")


def job_has_gpus(environ=os.environ) -> bool:
    """Whether this Slurm job was given GPUs, as its environment says (a list of GPU indices,
    or a count on the node)."""
    values = {name: environ.get(name, "").strip() for name in GPU_JOB_VARIABLES}
    if values["SLURM_GPUS_ON_NODE"] not in ("", "0"):
        return True
    return any(value not in ("", "-1", "NoDevFiles") for name, value in values.items()
               if name != "SLURM_GPUS_ON_NODE")


def gpu_item() -> Item:
    """Does Keras see a GPU in this Python?  No GPU is a fault only in a job given GPUs: the
    CPU session of episodes 1 to 4 has none, by design."""
    from gpulesson.machine.devices import keras_device

    device = keras_device()
    title = f"GPU for Keras ({device['backend']})"
    if device["gpu_count"]:
        return ok(title, device["device"])
    if os.environ.get("SLURM_JOB_ID") and job_has_gpus():
        return fail(title, "no GPU for Keras, although this job was given one", GPU_REQUEST)
    if os.environ.get("SLURM_JOB_ID"):
        return skip(title, "this session has no GPU: the CPU session is right for episodes 1 "
                           "to 4, and episode 5 runs in the GPU session")
    return skip(title, "no GPU here: the lesson trains on the CPU; episode 5's comparison needs "
                       "a GPU node")


def learner_items() -> list[Item]:
    """The checks that apply to a learner, in this Python (the lesson's kernel): its packages
    and settings, the data, the GPU."""
    gpu = gpu_item()
    settings = login.check_settings(os.environ, 'choose the kernel "Python (gpulesson)" (Kernel '
                                    "menu, Change Kernel), or " + login.register_fix(),
                                    names=login.GPU_SETTINGS)
    if gpu.status == SKIP:  # a laptop without a GPU: the GPU's memory settings do not matter
        settings = skip(settings.name, "they concern a GPU's memory, and there is none here")
    items = [login.check_packages(sys.executable), settings,
             *login.check_data(get_settings(), shared=False, learner=True), gpu,
             limits.module_item(os.environ), limits.home_item(get_settings())]
    for item in items:
        item.where = "learner"
    return items


def learner_checks() -> None:
    """Episode 1's setup check: one ✓, ✗ (with its fix) or – line per check of :func:`learner_items`."""
    print(text(learner_items()))
