"""Episode 5's first line: is this the GPU session? Said before any training starts (not from the
GPU cell's "SKIPPED" after the CPU training)."""

import os
from collections.abc import Mapping

from gpulesson.datasets.settings import parse_bool
from gpulesson.errors import LessonError

CPU_ONLY = "LESSON_CPU_ONLY"  # set to 1 to go on without a GPU in a job on purpose


class NoGPUError(LessonError):
    """The kernel runs in a batch job that has no GPU (the message says what to do)."""


def gpu_or_stop(environ: Mapping[str, str] | None = None, found: dict | None = None) -> None:
    """Say in one line the GPU Keras will train on; in a Slurm job without a GPU, stop."""
    env = os.environ if environ is None else environ
    if found is None:
        from gpulesson.machine.devices import keras_device

        found = keras_device()
    if found["gpu_count"]:
        print(f"GPU session: Keras sees {found['gpu_count']} GPU(s), {found['device']} "
              f"({found['backend']} backend).")
        return
    job = env.get("SLURM_JOB_ID")
    if job and not parse_bool(CPU_ONLY, env.get(CPU_ONLY, "")):
        partition = env.get("SLURM_JOB_PARTITION") or "?"
        raise NoGPUError(
            f"This kernel sees no GPU: it runs in job {job} on the partition {partition}, which "
            f"gave it none. Nothing has trained yet. Save your notebook, end this session (in the "
            f"portal: My Interactive Sessions > Delete), start the GPU session from the session "
            f"menu, and run this notebook again from the top. If the new session has no GPU "
            f"either, tell a helper. To go on without a GPU on purpose: %env {CPU_ONLY}=1, "
            f"then run this cell again.")
    print(f"No GPU here ({found['backend']} backend): this notebook trains on the CPU only, "
          "then shows the lesson's recorded GPU run.")
