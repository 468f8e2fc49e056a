"""The episode's ``ref_cont_*`` values, from the newest run of each part (read while the site
builds): ``ref_cont_watch_*`` from the watched part, the others from the copies part.

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


# The watched part's modes, by their names in the page's values.
WATCHED = {"none": "no browser", "bar": "browser, bar per step", "lines": "browser, line per epoch"}


def _watched(records) -> dict[str, str]:
    first = records[0] if records else None
    values = {"ref_cont_watch_images": f"{first['n_images']:,}" if first else NOT_RECORDED,
              "ref_cont_watch_epochs": str(first["epochs"]) if first else NOT_RECORDED,
              "ref_cont_watch_date": first["date"][:10] if first else NOT_RECORDED}
    for key, mode in WATCHED.items():
        record = find_in(records, 1, None, mode)
        prefix = f"ref_cont_watch_{key}"
        if record is None:
            values.update({f"{prefix}_{name}": NOT_RECORDED
                           for name in ("epochs", "first", "last", "slowdown", "load", "trend")})
            continue
        epochs = record["per_copy"][0]["epoch_seconds"]
        slowdown, load = record.get("slowdown"), record.get("load_max")
        values.update({
            f"{prefix}_epochs": ", ".join(f"{t:.0f}" for t in epochs) + " s",
            f"{prefix}_first": duration(epochs[0]),
            f"{prefix}_last": duration(epochs[-1]),
            f"{prefix}_slowdown": f"{slowdown:.1f} times" if slowdown else NOT_RECORDED,
            f"{prefix}_load": f"{load:.1f}" if load is not None else NOT_RECORDED,
            # Did the epochs grow as the cell's output grew? Words that follow the numbers.
            f"{prefix}_trend": ("grew from one epoch to the next"
                                if epochs[-1] > epochs[0] * 1.15 else
                                "stayed about the same from one epoch to the next"),
        })
    none = find_in(records, 1, None, WATCHED["none"])
    for key in ("bar", "lines"):
        record = find_in(records, 1, None, WATCHED[key])
        values[f"ref_cont_watch_{key}_vs_none"] = (
            compared(record["mean_epoch_seconds"], none["mean_epoch_seconds"],
                     words=("faster than", "about as fast as", "slower than"))
            if record and none else NOT_RECORDED)
    return values


def compared(value: float, reference: float, words=("less than", "about", "more than"),
             tolerance: float = 0.15) -> str:
    """``value`` against ``reference`` in words: within ``tolerance`` (a fraction) is "about"."""
    if value < reference * (1 - tolerance):
        return words[0]
    if value > reference * (1 + tolerance):
        return words[2]
    return words[1]


def _verdicts(records) -> dict[str, str]:
    """Words that compare conditions, so that the page's sentences follow the measurement."""
    three, three_one = find_in(records, 3, None), find_in(records, 3, 1)
    values = {"ref_cont_three_vs_share": NOT_RECORDED, "ref_cont_one_thread_vs_default":
              NOT_RECORDED}
    if three and three.get("slowdown"):
        # An equal share of the cores would make each of three trainings three times slower.
        values["ref_cont_three_vs_share"] = compared(three["slowdown"], 3.0)
    alone = find_in(records, 1, None)
    values["ref_cont_together"] = NOT_RECORDED
    if alone and three:
        together, single = three["images_per_second_total"], alone["images_per_second_total"]
        rates = f"{together:,.0f} images/s against {single:,.0f}"
        # Why k trainings may lose less than a k-th each: what the totals say.
        values["ref_cont_together"] = (
            f"Together the three processed more images per second than one alone ({rates}): "
            "a single training leaves the cores idle part of the time, between its steps, "
            "and the others fill those gaps."
            if compared(together, single) == "more than" else
            f"Together the three processed no more images per second than one alone ({rates}): "
            "one training already kept the cores busy.")
    if three and three_one:
        values["ref_cont_one_thread_vs_default"] = compared(
            three_one["mean_epoch_seconds"], three["mean_epoch_seconds"],
            words=("faster than", "about as fast as", "slower than"))
    return values


def _alone_range(copies_run, watched_run) -> str:
    """The shortest and longest epoch of a training alone on the machine, in both parts' runs
    (one copy with the default threads; no browser), scaled to the episode's epoch: how much
    single runs vary there."""
    alone = [r for r in (find_in(copies_run, 1, None),
                         find_in(watched_run, 1, None, WATCHED["none"])) if r]
    rates = [r["n_images"] / seconds for r in alone
             for seconds in r["per_copy"][0]["epoch_seconds"]]
    if not rates:
        return NOT_RECORDED
    return (f"{duration(LESSON_EPOCH_IMAGES / max(rates))} to "
            f"{duration(LESSON_EPOCH_IMAGES / min(rates))}")


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
    values.update(_verdicts(records))
    watched = reference_run(path, "watched")
    values.update(_watched(watched))
    values["ref_cont_alone_range"] = _alone_range(records, watched)
    return values
