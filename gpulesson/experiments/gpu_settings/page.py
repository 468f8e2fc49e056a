"""The settings on the page: episode 9's ``ref_gpuset_*`` values and the command's table.

Every value comes from the reference run (:func:`~gpulesson.experiments.gpu_settings.records.reference_run`);
without GPU records, ``ref_gpuset_gpu`` says :data:`~gpulesson.results.NOT_RECORDED`, so that
the episode says in one sentence how to record them. Imports no deep-learning framework.
"""

from __future__ import annotations

import math
from pathlib import Path

from gpulesson.experiments.ceiling.records import measurably, middle_note
from gpulesson.experiments.common import (
    compare_middle,
    markdown_table,
    reordered_note,
    summary_text,
)
from gpulesson.experiments.gpu_settings.figures import alt_text
from gpulesson.experiments.gpu_settings.records import (
    BASE_BATCH,
    RESULTS_FILE,
    SETTINGS,
    TARGET_GPU,
    TARGET_IMAGES,
    TARGET_SECONDS,
    TARGET_SHARE,
    TARGETS,
    find,
    reference_run,
    target,
)
from gpulesson.results import NOT_RECORDED, data_label, duration, hardware, software

DEVICES = ("gpu", "cpu")


def _seconds(value: float) -> str:
    return f"{value:.3g} s"


def rows(records, device: str) -> list[list[str]]:
    base = find(records, device, "default")
    found = []
    for name in [*SETTINGS, *TARGETS]:
        record = find(records, device, name)
        if not record:
            continue
        versus = ("" if record is base or not base else
                  measurably(compare_middle(record["summary"], base["summary"])))
        found.append([f"`{name}`", record["setting_label"],
                      summary_text(record["summary"], _seconds, what="epochs"),
                      f"{record['achieved_tflops']:.3g}", f"{record['test_accuracy']:.3f}",
                      versus])
    return found


def table(records, device: str) -> str:
    """The settings on ``device`` as a Markdown table; the last column's header says which
    epochs its verdicts compare."""
    note = middle_note(*(r["summary"] for r in records if r["device_kind"] == device))
    head = ["Setting", "What changes", "Epoch: median (range)", "TFLOP/s", "Test accuracy",
            "Against the default" + (f" ({note})" if note else "")]
    return markdown_table(head, rows(records, device))


def target_text(records, device: str) -> str:
    """How far the target got on ``device``, measured, in two sentences."""
    found = target(records, device)
    if not found:
        return "The target rows were not measured in this run."
    combined = " + ".join(found["combined"]) or "none of the settings"
    scaled = ("" if found["measured_images"] == TARGET_IMAGES else
              f", scaled from epochs of {found['measured_images']:,} images")
    return (f"The target ({combined}, from the device): an epoch of {TARGET_IMAGES:,} images in "
            f"{_seconds(found['epoch_seconds'])}{scaled} (goal {TARGET_SECONDS:g} s: "
            f"{'met' if found['epoch_ok'] else 'not met'}), {found['share']:.0%} of the rate "
            f"from RAM (goal {TARGET_SHARE:.0%}: {'met' if found['share_ok'] else 'not met'}), "
            f"{accuracy_text(records, device, found)}.")


def accuracy_text(records, device: str, found: dict) -> str:
    """The target's test accuracy against the goal, the default's, with the spread of the rows
    that train as the default does; and, where it falls short, what the larger batch alone
    reached."""
    low, high, n = found["alike_accuracy"]
    said = (f"test accuracy {found['accuracy']:.3f} (goal: the default's "
            f"{found['default_accuracy']:.3f}; the {n} rows that train as the default does span "
            f"{low:.3f}-{high:.3f}: {'met' if found['accuracy_ok'] else 'not met'})")
    batch = find(records, device, "batch")
    if found["accuracy_ok"] or not batch or "batch" not in found["combined"]:
        return said
    steps, default_steps = (math.ceil(batch["n_images"] / size)
                            for size in (batch["batch_size"], BASE_BATCH))
    return (f"{said}. The batch of {batch['batch_size']} alone reached "
            f"{batch['test_accuracy']:.3f}: its epochs take {steps} steps, not {default_steps}")


def goal_text(ceiling_path=None) -> str:
    """The target's goals, how they relate to the episode's goal, and what they leave for one
    step at the default batch size, beside what a step of the ceiling's do-nothing model fed
    from memory on the GPU already cost with JAX (the ceiling's reference run, read from
    ``ceiling_path``): the goals are constants, every measured number comes from the records."""
    from gpulesson.experiments.ceiling import records as ceiling
    from gpulesson.experiments.feeding.records import N_IMAGES, TARGET_EPOCH_SECONDS

    rate, episode_rate = TARGET_IMAGES / TARGET_SECONDS, N_IMAGES / TARGET_EPOCH_SECONDS
    steps = math.ceil(TARGET_IMAGES / BASE_BATCH)
    budget = TARGET_SECONDS / steps
    said = (f"Its goals: an epoch of the {TARGET_IMAGES:,} training images in "
            f"{duration(TARGET_SECONDS)} on the {TARGET_GPU}, {rate / episode_rate:.2g} times the "
            f"rate of the episode's goal ({N_IMAGES:,} images in "
            f"{duration(TARGET_EPOCH_SECONDS)}), and {TARGET_SHARE:.0%} of the rate of the same "
            f"settings fed from RAM. At batch {BASE_BATCH} that is {steps} steps, "
            f"{duration(budget)} a step.")
    records = ceiling.reference_run(ceiling_path) if ceiling_path else []
    top = ceiling.ceiling(records, "jax", "gpu")
    step = ceiling.step_summary(top)
    if not step:
        return said
    part = [r for r in records if r["device_kind"] == "gpu" and r["run_id"] == top["run_id"]]
    measured = (f"A step of the ceiling's do-nothing model fed from `{top['pipeline']}` "
                f"(batch {top['batch_size']}) took "
                f"{summary_text(step, duration, what='epochs')} with JAX on the "
                f"{hardware(part).get('GPU', 'GPU')} (run {top['run_id']})")
    if step["min"] > budget:
        return (f"{said} {measured}: already more than the target's step, in every epoch. So "
                "the target needs fewer "
                "steps (larger batches) or cheaper ones (less host work per step), not only "
                "faster kernels.")
    return (f"{said} {measured}: {step['median'] / budget:.0%} of the target's step before the "
            "CNN computes anything.")


def describe(records) -> str:
    """The run as plain text (for the command line)."""
    if not records:
        return "No records of the settings."
    lines = [f"Settings of the lesson's CNN, run {records[0]['run_id']} ({software(records)}):"]
    for device in DEVICES:
        if find(records, device, "default") or any(r["device_kind"] == device for r in records):
            name = hardware([r for r in records if r["device_kind"] == device])
            lines += [f"{device.upper()} ({', '.join(name.values())}):", table(records, device),
                      target_text(records, device)]
    return "\n".join(lines)


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 9's values of the settings (MyST substitutions ``ref_gpuset_*``); the ceiling's
    results file beside ``path`` gives what a step already costs (:func:`goal_text`)."""
    from gpulesson.experiments.ceiling.records import RESULTS_FILE as CEILING_FILE

    records = reference_run(path)
    gpu = [r for r in records if r["device_kind"] == "gpu"]
    return {
        "ref_gpuset_goal": goal_text(Path(path).with_name(CEILING_FILE.name)),
        # The data the settings' CNN trained on, named with the run.
        "ref_gpuset_data": data_label(gpu) if gpu else NOT_RECORDED,
        "ref_gpuset_gpu": hardware(gpu).get("GPU", NOT_RECORDED) if gpu else NOT_RECORDED,
        "ref_gpuset_table": table(records, "gpu") if gpu else NOT_RECORDED,
        "ref_gpuset_target": target_text(records, "gpu") if gpu else NOT_RECORDED,
        "ref_gpuset_when": (f"run {records[0]['run_id']}, {software(records)}" if gpu
                            else NOT_RECORDED),
        "ref_gpuset_alt": alt_text(records),
        "ref_gpuset_order": reordered_note(
            fed := [r for r in gpu if r.get("feed") == "generator"],
            "the generator's batches in the rows " + ", ".join(f"`{r['setting']}`" for r in fed)),
    }
