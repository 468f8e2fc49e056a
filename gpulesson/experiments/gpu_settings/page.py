"""The settings on the page: episode 9's ``ref_gpuset_*`` values and the command's table.

Every value comes from the reference run (:func:`~gpulesson.experiments.gpu_settings.records.reference_run`);
without GPU records, ``ref_gpuset_gpu`` says :data:`~gpulesson.results.NOT_RECORDED`, so that
the episode says in one sentence how to record them. Imports no deep-learning framework.
"""

from __future__ import annotations

from gpulesson.experiments.common import compare, markdown_table, summary_text
from gpulesson.experiments.gpu_settings.figures import alt_text
from gpulesson.experiments.gpu_settings.records import (
    RESULTS_FILE,
    SETTINGS,
    TARGET_SECONDS,
    TARGET_SHARE,
    TARGETS,
    find,
    reference_run,
    target,
)
from gpulesson.results import NOT_RECORDED, hardware, software

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
                  compare(record["summary"], base["summary"]).sentence)
        found.append([f"`{name}`", record["setting_label"],
                      summary_text(record["summary"], _seconds, what="epochs"),
                      f"{record['achieved_tflops']:.3g}", f"{record['test_accuracy']:.3f}",
                      versus])
    return found


def table(records, device: str) -> str:
    head = ["Setting", "What changes", "Epoch: median (range)", "TFLOP/s", "Test accuracy",
            "Against the default"]
    return markdown_table(head, rows(records, device))


def target_text(records, device: str) -> str:
    """How far the target got on ``device``, measured, in two sentences."""
    found = target(records, device)
    if not found:
        return "The target rows were not measured in this run."
    combined = " + ".join(found["combined"]) or "none of the settings"
    scaled = ("" if found["measured_images"] == 45_000 else
              f", scaled from epochs of {found['measured_images']:,} images")
    return (f"The target ({combined}, from the device): an epoch of 45,000 images in "
            f"{_seconds(found['epoch_seconds'])}{scaled} (goal {TARGET_SECONDS:g} s: "
            f"{'met' if found['epoch_ok'] else 'not met'}), {found['share']:.0%} of the rate "
            f"from RAM (goal {TARGET_SHARE:.0%}: {'met' if found['share_ok'] else 'not met'}), "
            f"test accuracy {found['accuracy']:.3f} (default {found['default_accuracy']:.3f}).")


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
    """Episode 9's values of the settings (MyST substitutions ``ref_gpuset_*``)."""
    records = reference_run(path)
    gpu = [r for r in records if r["device_kind"] == "gpu"]
    return {
        "ref_gpuset_gpu": hardware(gpu).get("GPU", NOT_RECORDED) if gpu else NOT_RECORDED,
        "ref_gpuset_table": table(records, "gpu") if gpu else NOT_RECORDED,
        "ref_gpuset_target": target_text(records, "gpu") if gpu else NOT_RECORDED,
        "ref_gpuset_when": (f"run {records[0]['run_id']}, {software(records)}" if gpu
                            else NOT_RECORDED),
        "ref_gpuset_alt": alt_text(records),
    }
