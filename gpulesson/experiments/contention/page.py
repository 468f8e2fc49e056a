"""The episode's ``ref_cont_*`` values, from the reference run (read while the site builds).

Times are given for the episode's own epoch (the full-size training split without its
validation tenth), scaled from the images/s measured on the benchmark's subset: an epoch's
time grows in proportion to its images.
"""

from __future__ import annotations

from gpulesson.experiments.contention.records import RESULTS_FILE, find_in, reference_run
from gpulesson.results import NOT_RECORDED, duration, hardware
from gpulesson.settings import FULL_N_TRAIN

# The episode's training images per epoch: split_batches keeps the last tenth for validation.
LESSON_EPOCH_IMAGES = FULL_N_TRAIN - FULL_N_TRAIN // 10


def software(record: dict) -> str:
    backend = record["backend"]
    return (f"Keras {record['versions'].get('keras', '?')}, {backend} "
            f"{record['versions'].get(backend, '?')}")


def _condition(prefix: str, record: dict | None) -> dict[str, str]:
    if record is None:
        return {f"{prefix}_{key}": NOT_RECORDED
                for key in ("rate", "total_rate", "lesson_epoch", "slowdown", "load")}
    slowdown, load = record.get("slowdown"), record.get("load_max")
    return {
        f"{prefix}_rate": f"{record['images_per_second']:,.0f} images/s",
        f"{prefix}_total_rate": f"{record['images_per_second_total']:,.0f} images/s",
        f"{prefix}_lesson_epoch": duration(LESSON_EPOCH_IMAGES / record["images_per_second"]),
        f"{prefix}_slowdown": f"{slowdown:.1f} times" if slowdown else NOT_RECORDED,
        f"{prefix}_load": f"{load:.1f}" if load is not None else NOT_RECORDED,
    }


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the reference run for episode 5 (MyST substitutions ``ref_cont_*``);
    NOT_RECORDED for everything the run lacks."""
    records = reference_run(path)
    first = records[0] if records else None
    alone = find_in(records, 1, None)
    values = {
        "ref_cont_run": first["run_id"] if first else NOT_RECORDED,
        "ref_cont_date": first["date"][:10] if first else NOT_RECORDED,
        "ref_cont_software": software(first) if first else NOT_RECORDED,
        "ref_cont_cpu": hardware(records).get("CPU", NOT_RECORDED),
        "ref_cont_cores": str(first.get("cpu_cores_available")) if first else NOT_RECORDED,
        "ref_cont_n_images": f"{first['n_images']:,}" if first else NOT_RECORDED,
        "ref_cont_batch_size": str(first["batch_size"]) if first else NOT_RECORDED,
        "ref_cont_lesson_images": f"{LESSON_EPOCH_IMAGES:,}",
        "ref_cont_alone_first": (duration(alone["first_epoch_seconds"]) if alone
                                 else NOT_RECORDED),
        "ref_cont_alone_later": (duration(alone["mean_epoch_seconds"])
                                 if alone and alone["epochs"] > 1 else NOT_RECORDED),
    }
    for prefix, copies, threads in (("alone", 1, None), ("two", 2, None), ("three", 3, None),
                                    ("three_one_thread", 3, 1)):
        values.update(_condition(f"ref_cont_{prefix}", find_in(records, copies, threads)))
    return values
