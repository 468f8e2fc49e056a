"""Episode 10's ``ref_par_*`` values: the cost model fed with the CNN's measured GPU step.

The compute time per step is an input of the cost model. Where the lesson has a GPU run of
episode 5's CNN, it is that run's median epoch after the warm-up over its training steps
(validation included, as in episode 5); otherwise the page and the notebook use
:data:`ASSUMED_STEP_MS` and say that it is assumed. Pure Python: no framework.
"""

from __future__ import annotations

import math

from gpulesson import results
from gpulesson.experiments.parallel.cost import (
    INTERCONNECTS,
    LESSON_CNN_PARAMETERS,
    allreduce_seconds,
    scaling_efficiency,
)

EXPERIMENT = "cnn-cpu-vs-gpu"  # the results file this page reads: episode 5's CNN
ASSUMED_STEP_MS = 20.0  # milliseconds per step, where no GPU run is recorded (not a measurement)
ETHERNET = "10 Gb/s Ethernet"
GPU_COUNTS = (2, 4, 8)


def cnn_step(records) -> tuple[float, str]:
    """``(milliseconds per step, where the number comes from)`` for the cost model: the GPU
    record's median epoch over its training steps, else :data:`ASSUMED_STEP_MS`."""
    from gpulesson.experiments.cnn.records import epoch_summary

    gpu = results.pick(records, True)
    summary = epoch_summary(gpu) if gpu else None
    if not summary:
        return ASSUMED_STEP_MS, "assumed, not a measurement: no GPU run is recorded"
    steps = math.ceil(gpu["n_train"] / gpu["batch_size"])
    return (summary["median"] / steps * 1e3,
            f"measured on {gpu['device']}: the median epoch over its {steps} steps, "
            "validation included")


def _and(parts) -> str:
    parts = list(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def substitutions(path) -> dict[str, str]:
    """The step, and the CNN's all-reduce, efficiency and speed-up over Ethernet on 2, 4, 8 GPUs."""
    from gpulesson.experiments.cnn.records import reference_run

    step_ms, source = cnn_step(reference_run(path))
    seconds = [allreduce_seconds(LESSON_CNN_PARAMETERS, n, INTERCONNECTS[ETHERNET]) for n in GPU_COUNTS]
    efficiency = [scaling_efficiency(step_ms / 1e3, s) for s in seconds]
    short = [n for n, e in zip(GPU_COUNTS, efficiency, strict=True) if e < 0.5]
    return {
        "ref_par_step": f"{step_ms:.3g} ms",
        "ref_par_step_source": source,
        "ref_par_eth_allreduce": _and(f"{s * 1e3:.2g}" for s in seconds) + " ms",
        "ref_par_eth_efficiency": _and(f"{100 * e:.0f} %" for e in efficiency),
        "ref_par_eth_speedup": _and(f"{n * e:.1f}" for n, e in zip(GPU_COUNTS, efficiency, strict=True)),
        "ref_par_eth_verdict": (
            f"From {short[0]} GPUs on, the exchange takes longer than the step computes: over "
            "Ethernet, this CNN's steps are too short to spread." if short else
            "The exchange grows little beyond 4 GPUs, but every GPU added loses a little more."),
    }
