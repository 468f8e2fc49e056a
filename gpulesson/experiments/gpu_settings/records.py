"""The settings' records: one per setting and device, and what a page takes from them.

Every setting changes one thing of the lesson's default (:data:`SETTINGS`); the ``target`` row
combines the settings that were measurably faster than the default on that device, fed from the
lesson's HDF5 file through the best path episode 9 teaches (the file read once, the data on the
device, batches taken there), and ``target-ram`` is the same model and settings fed from RAM: the
target's goals are an epoch of the 45,000 training images in at most :data:`TARGET_SECONDS` on
the GPU and at least :data:`TARGET_SHARE` of ``target-ram``'s rate, at the default's accuracy.

A record keeps its timed epochs (the rule of :mod:`gpulesson.experiments.common`), the achieved
TFLOP/s (3 forward passes a training image, as :mod:`gpulesson.experiments.profile.records`
says) and the test accuracy after all its epochs, the warm-up included, the same number for
every setting. Imports no deep-learning framework.
"""

from __future__ import annotations

import statistics

from gpulesson import results
from gpulesson.devices import keras_device_name
from gpulesson.experiments.common import ORDER_FIELD, SUMMARY_KEY, compare_middle, summarise
from gpulesson.experiments.profile.records import TRAINING_PASSES
from gpulesson.results import make_record

EXPERIMENT = "gpu-settings"
RESULTS_FILE = results.RESULTS_DIR / "gpu-settings.jsonl"
TARGET_IMAGES = 45_000  # the lesson file's 50,000 training images less the tenth kept for validation
TARGET_SECONDS = 0.1  # an epoch of the TARGET_IMAGES training images on the H200
TARGET_GPU = "H200"  # the card the target is set for
TARGET_SHARE = 0.9  # of the same model and settings fed from RAM
BASE_LEARNING_RATE, BASE_BATCH = 1e-3, 256
SPE, LARGE_BATCH, WORKERS = 16, 1024, 4

# name -> (what changes, the options of that condition). The default's options: the lesson's
# generator (HDF5Batches) from the file, batch 256, float32, one step per execution.
DEFAULT = {"feed": "generator", "batch_size": BASE_BATCH, "precision": "float32",
           "steps_per_execution": 1}
SETTINGS: dict[str, tuple[str, dict]] = {
    "default": ("the lesson's default: its generator on the HDF5 file, batch 256, float32", {}),
    "spe": (f"steps_per_execution={SPE}", {"steps_per_execution": SPE}),
    "bf16": ("mixed bfloat16 (keras.mixed_precision)", {"precision": "mixed_bfloat16"}),
    "batch": (f"batch {LARGE_BATCH}, learning rate x{LARGE_BATCH // BASE_BATCH} (linear scaling)",
              {"batch_size": LARGE_BATCH}),
    "ram": ("the file read once into RAM, batches sliced there", {"feed": "ram"}),
    "device": ("the file read once onto the device, batches taken there (DeviceBatches)",
               {"feed": "device"}),
    "workers": (f"Grain with {WORKERS} worker processes on the file's blocks",
                {"feed": f"grain-{WORKERS}"}),
}
SPEEDUPS = ("spe", "bf16", "batch")  # the settings the target combines where they help
TARGETS = ("target", "target-ram")


def learning_rate(batch_size: int) -> float:
    """The linear scaling rule: the learning rate grows with the batch size (1e-3 at 256)."""
    return BASE_LEARNING_RATE * batch_size / BASE_BATCH


def options(name: str, combined=()) -> dict:
    """The options of setting ``name``; for the targets, those of the settings ``combined``
    with the feed from the device (``target``) or RAM (``target-ram``)."""
    if name in TARGETS:
        found = dict(DEFAULT)
        for each in combined:
            found.update(SETTINGS[each][1])
        found["feed"] = "device" if name == "target" else "ram"
    else:
        found = {**DEFAULT, **SETTINGS[name][1]}
    return {**found, "learning_rate": learning_rate(found["batch_size"])}


def measurement_record(budget, *, run_id: str, device: str, setting: str, what: str,
                       chosen: dict, n_images: int, forward_flops: int, test_accuracy: float,
                       test_loss: float, data: str, extra: dict) -> dict:
    """One results-file record of one setting on one device."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    median = statistics.median(timed)
    fields = {
        "run_id": run_id, "source": "gpulesson.experiments.gpu_settings", "device_kind": device,
        "keras_device": keras_device_name(device), "setting": setting, "setting_label": what,
        **chosen, "n_images": n_images, "epochs": len(budget.seconds),
        "warmup_seconds": budget.seconds[:budget.warmup], "epoch_seconds": timed,
        "median_epoch_seconds": median, "images_per_second": n_images / median,
        "achieved_tflops": TRAINING_PASSES * forward_flops * n_images / median / 1e12,
        "forward_flops_per_image": forward_flops, "test_accuracy": test_accuracy,
        "test_loss": test_loss, SUMMARY_KEY: summarise(timed, budget.seconds[:budget.warmup]),
        ORDER_FIELD: False, **extra,
    }
    if device == "cpu":
        fields["device"] = "CPU"
    return make_record(EXPERIMENT, data=data, **fields)


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The newest run with GPU records, else the newest run (CPU rehearsals)."""
    return results.reference_run(path, EXPERIMENT)


def find(records, device: str, setting: str) -> dict | None:
    return next((r for r in records if r.get("device_kind") == device
                 and r.get("setting") == setting), None)


def helped(records, device: str) -> list[str]:
    """The settings of :data:`SPEEDUPS` measurably faster than the default on ``device``
    (:func:`~gpulesson.experiments.common.compare_middle` of their epochs, the rule of every
    comparison on the page)."""
    base = find(records, device, "default")
    if not base:
        return []
    found = []
    for name in SPEEDUPS:
        record = find(records, device, name)
        if record and compare_middle(record["summary"], base["summary"]).word == "faster":
            found.append(name)
    return found


def target(records, device: str) -> dict | None:
    """The target's numbers on ``device``: its epoch (median), its share of the same settings
    fed from RAM, its accuracy and the default's, and whether each goal is met; None without
    both target rows and the default."""
    got, ram, base = (find(records, device, name) for name in (*TARGETS, "default"))
    if not (got and ram and base):
        return None
    epoch = got["median_epoch_seconds"] * TARGET_IMAGES / got["n_images"]
    share = got["images_per_second"] / ram["images_per_second"]
    # The accuracy goal is the default's. The rows that train as the default does (its batch
    # size and learning rate; another feed or execution) show how far a run of the same
    # training varies: the target meets the goal when it reaches the lowest of them.
    alike = [r["test_accuracy"] for r in records if r.get("device_kind") == device
             and r.get("setting") in SETTINGS and r["batch_size"] == base["batch_size"]
             and r["learning_rate"] == base["learning_rate"]]
    return {"epoch_seconds": epoch, "epoch_ok": epoch <= TARGET_SECONDS,
            "measured_images": got["n_images"], "share": share, "share_ok": share >= TARGET_SHARE,
            "accuracy": got["test_accuracy"], "default_accuracy": base["test_accuracy"],
            "alike_accuracy": (min(alike), max(alike), len(alike)),
            "accuracy_ok": got["test_accuracy"] >= min(alike),
            "combined": got.get("combined", [])}
