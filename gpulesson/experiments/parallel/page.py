"""Episode 10's ``ref_par_*`` values: the cost model fed with the CNN's measured GPU step and
ResNet-50's from its arithmetic at the card's best matrix-product rate (else assumed, said so)."""

import math
from pathlib import Path

from gpulesson.experiments import parallel
from gpulesson.records import results
from gpulesson.records.pagewords import listed

EXPERIMENT = "cnn-cpu-vs-gpu"  # the results file this page reads: episode 5's CNN
MATMUL_FILE = "matmul.jsonl"  # beside it: episode 6's matrix products
ASSUMED_STEP_MS = 20.0  # milliseconds per step, where no GPU run is recorded (not a measurement)
ASSUMED_RESNET_STEP_MS = 100.0  # likewise for ResNet-50, where episode 6 has no GPU run
RESNET_BATCH = 256  # images per GPU and step: the lesson's batch size
ETHERNET = "10 Gb/s Ethernet"
NVLINK = "NVLink 4 (H200 SXM)"
GPU_COUNTS = (2, 4, 8)


def cnn_step(records) -> tuple[float, str]:
    """``(ms per step, its source)``: the GPU record's median epoch over its training steps
    (validation included, as in episode 5), else :data:`ASSUMED_STEP_MS`."""
    from gpulesson.experiments.cnn.page import epoch_summary

    gpu = results.pick(records, True)
    summary = epoch_summary(gpu) if gpu else None
    if not summary:
        return ASSUMED_STEP_MS, "assumed, not a measurement: no GPU run is recorded"
    steps = math.ceil(gpu["n_train"] / gpu["batch_size"])
    return (summary["median"] / steps * 1e3,
            f"measured on {gpu['device']}: the median epoch over its {steps} steps, validation included")


def resnet_step(records) -> tuple[float, str]:
    """``(ms per step, its source)`` of ResNet-50 on :data:`RESNET_BATCH` images at the best
    median float32 rate of episode 6's GPU sweep (a lower bound), else the assumed step."""
    from gpulesson.experiments.matmul import find, precision_label, rate_summary

    gpu = find(records, "gpu", "float32")
    rates = [(summary["median"], point["n"]) for point in (gpu or {}).get("points", [])
             if (summary := rate_summary(point))]
    if not rates:
        return ASSUMED_RESNET_STEP_MS, "assumed, not a measurement: no GPU run of episode 6"
    gflops, n = max(rates)
    tflops = gflops / 1e3
    return (parallel.resnet50_step_ms(RESNET_BATCH, tflops),
            f"{RESNET_BATCH} images × 3 passes × 2 × 3.8 × 10⁹ multiply-adds ({parallel.RESNET50_SOURCE}) "
            f"at {tflops:.3g} TFLOP/s, the {gpu['device']}'s best {precision_label(gpu)} matrix "
            f"product in episode 6 (run {gpu['run_id']}, n = {n:,}): a lower bound, as "
            "ResNet-50's layers compute slower than a large matrix product")


def substitutions(path) -> dict[str, str]:
    """The steps, and the CNN's all-reduce, efficiency and speed-up over Ethernet and NVLink."""
    from gpulesson.experiments.cnn.page import reference_run
    from gpulesson.experiments.matmul import reference_run as matmul_run

    step_ms, source = cnn_step(reference_run(path))
    seconds = [parallel.link_allreduce_seconds(parallel.LESSON_CNN_PARAMETERS, n, ETHERNET)
               for n in GPU_COUNTS]
    efficiency = [parallel.scaling_efficiency(step_ms / 1e3, s) for s in seconds]
    short = [n for n, e in zip(GPU_COUNTS, efficiency, strict=True) if e < 0.5]
    nvlink = parallel.link_allreduce_seconds(parallel.LESSON_CNN_PARAMETERS, 8, NVLINK)
    latency = parallel.link_latency_seconds(8, NVLINK)
    resnet_ms, resnet_source = resnet_step(matmul_run(Path(path).parent / MATMUL_FILE))
    return {
        "ref_par_step": f"{step_ms:.3g} ms",
        "ref_par_step_source": source,
        "ref_par_eth_allreduce": listed(f"{s * 1e3:.2g}" for s in seconds) + " ms",
        "ref_par_eth_efficiency": listed(f"{100 * e:.0f} %" for e in efficiency),
        "ref_par_eth_speedup": listed(f"{n * e:.1f}" for n, e in zip(GPU_COUNTS, efficiency, strict=True)),
        "ref_par_eth_verdict": (
            f"From {short[0]} GPUs on, the exchange takes longer than the step computes: over "
            "Ethernet, this CNN's steps are too short to spread." if short else
            "The exchange grows little beyond 4 GPUs, but every GPU added loses a little more."),
        "ref_par_nvlink": f"{nvlink * 1e6:.0f} µs, {latency / nvlink:.0%} of it latency",
        "ref_par_resnet_step": f"{resnet_ms:.3g} ms",
        "ref_par_resnet_source": resnet_source,
    }
