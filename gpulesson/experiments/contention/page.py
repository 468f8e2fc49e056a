"""The episode's ``ref_cont_*`` values: ``ref_cont_watch_*`` from the newest run of the watched
part, the others from the newest of the copies part.

Times are given for the episode's own epoch, scaled from the images/s measured on the
benchmark's subset: an epoch's time grows in proportion to its images. Every word that compares
two timings is :func:`~gpulesson.experiments.common.compare`'s, so that a slowdown whose ranges
overlap (or that has a single timed epoch, no range) is said to be by the medians only.
"""

from __future__ import annotations

from itertools import pairwise

from gpulesson.datasets.settings import FULL_N_TRAIN
from gpulesson.experiments.common import NO_DIFFERENCE, compare, scale
from gpulesson.experiments.contention.figures import alt_text, watched_alt_text
from gpulesson.experiments.contention.records import (
    RESULTS_FILE,
    condition_summary,
    find_in,
    reference_run,
)
from gpulesson.experiments.pagewords import first_epoch, median_text, run_values
from gpulesson.records.results import NOT_RECORDED, duration, software

# The episode's training images per epoch: split_batches keeps the last tenth for validation.
LESSON_EPOCH_IMAGES = FULL_N_TRAIN - FULL_N_TRAIN // 10
# The watched part's modes, by their names in the page's values.
WATCHED = {"none": "no browser", "bar": "browser, bar per step", "lines": "browser, line per epoch"}


def _blank(prefix: str, names) -> dict[str, str]:
    return {f"{prefix}_{name}": NOT_RECORDED for name in names}


def _load(record: dict) -> str:
    load = record.get("load_max")
    return f"{load:.1f}" if load is not None else NOT_RECORDED


def slowdown_text(summary: dict | None, baseline: dict | None) -> str:
    """How many times as long a condition's epochs took as the baseline's, by the medians:
    "2.2 times", "1.6 times (by the medians; no measurable difference by the ranges)"."""
    if not summary or not baseline:
        return NOT_RECORDED
    comparison = compare(baseline, summary)  # ratio: the condition's median over the baseline's
    text = f"{comparison.ratio:.1f} times"
    return text if comparison.measurable else f"{text} (by the medians; {NO_DIFFERENCE} by the ranges)"


def _condition(prefix: str, record: dict | None, baseline: dict | None,
               is_baseline: bool) -> dict[str, str]:
    summary = condition_summary(record)
    if summary is None:
        return _blank(prefix, ("rate", "total_rate", "lesson_epoch", "slowdown", "load"))
    rate = record["n_images"] / summary["median"]  # each copy, by the median epoch
    return {
        f"{prefix}_rate": f"{rate:,.0f} images/s",
        f"{prefix}_total_rate": f"{rate * record['copies']:,.0f} images/s",
        f"{prefix}_lesson_epoch": duration(LESSON_EPOCH_IMAGES / rate),
        # One copy alone is the baseline: its slowdown is 1 by definition.
        f"{prefix}_slowdown": "1.0 times" if is_baseline else slowdown_text(summary, baseline),
        f"{prefix}_load": _load(record),
    }


def trend(epochs, summary: dict, none: dict | None) -> str:
    """Whether a training's epochs grew as the cell's output grew: only where each took longer
    than the one before and the timed ones were measurably slower than with no browser."""
    rising = len(epochs) > 1 and all(b > a for a, b in pairwise(epochs))
    against = compare(summary, none) if none is not None else None
    if rising and against is not None and against.measurable and against.word == "slower":
        return "grew from one epoch to the next"
    return "did not grow measurably from one epoch to the next"


def _watched(records) -> dict[str, str]:
    values = {"ref_cont_watch_images": f"{records[0]['n_images']:,}" if records else NOT_RECORDED,
              **run_values("ref_cont_watch", records, "epochs", "date")}
    found = {key: find_in(records, 1, None, mode) for key, mode in WATCHED.items()}
    summaries = {key: condition_summary(record) for key, record in found.items()}
    none = summaries["none"]
    for key, record in found.items():
        summary, prefix = summaries[key], f"ref_cont_watch_{key}"
        if summary is None:
            values.update(_blank(prefix, ("epochs", "first", "last", "slowdown", "load", "trend")))
            continue
        epochs = record["per_copy"][0]["epoch_seconds"]
        values.update({
            f"{prefix}_epochs": ", ".join(f"{t:.0f}" for t in epochs) + " s",
            f"{prefix}_first": duration(epochs[0]),
            f"{prefix}_last": duration(epochs[-1]),
            f"{prefix}_slowdown": "1.0 times" if key == "none" else slowdown_text(summary, none),
            f"{prefix}_load": _load(record),
            f"{prefix}_trend": trend(epochs, summary, none),
        })
    for key in ("bar", "lines"):
        # "3× slower than", "faster than", "about as fast as".
        values[f"ref_cont_watch_{key}_vs_none"] = (compare(summaries[key], none).text
                                                   if summaries[key] and none else NOT_RECORDED)
    return values


def _verdicts(records) -> dict[str, str]:
    three_record, alone_record = find_in(records, 3, None), find_in(records, 1, None)
    three, alone = condition_summary(three_record), condition_summary(alone_record)
    three_one = condition_summary(find_in(records, 3, 1))
    values = {"ref_cont_three_vs_share": NOT_RECORDED, "ref_cont_together": NOT_RECORDED,
              "ref_cont_one_thread_vs_default": (compare(three_one, three).text
                                                 if three and three_one else NOT_RECORDED)}
    if not (three and alone):
        return values
    # An equal share of the cores would make each of three trainings three times slower than
    # one alone: faster than that is less time, slower more.
    share = compare(three, scale(alone, 3))
    values["ref_cont_three_vs_share"] = (
        ("less than" if share.word == "faster" else "more than") if share.measurable
        else "not measurably different from")
    # Three copies process more images per second together than one alone exactly when each
    # of their epochs takes less than three of one alone: the same comparison.
    together = three_record["copies"] * three_record["n_images"] / three["median"]
    single = alone_record["n_images"] / alone["median"]
    rates = f"{together:,.0f} images/s against {single:,.0f}, by the median epochs"
    if not share.measurable:
        values["ref_cont_together"] = (
            f"Together the three processed {together:,.0f} images/s and one alone "
            f"{single:,.0f}, by the median epochs; by the ranges of their epochs, "
            f"{NO_DIFFERENCE}.")
    elif share.word == "faster":
        values["ref_cont_together"] = (
            f"Together the three processed more images per second than one alone ({rates}): "
            "a single training leaves the cores idle part of the time, between its steps, "
            "and the others fill those gaps.")
    else:
        values["ref_cont_together"] = (
            f"Together the three processed fewer images per second than one alone ({rates}): "
            "one training already kept the cores busy, and taking turns cost time.")
    return values


def _alone_range(copies_run, watched_run) -> str:
    """The shortest and longest epoch of a training alone in both parts' runs, scaled to the
    episode's epoch: how much single runs vary there."""
    alone = [r for r in (find_in(copies_run, 1, None),
                         find_in(watched_run, 1, None, WATCHED["none"])) if r]
    rates = [r["n_images"] / seconds for r in alone
             for seconds in r["per_copy"][0]["epoch_seconds"]]
    if not rates:
        return NOT_RECORDED
    return (f"{duration(LESSON_EPOCH_IMAGES / max(rates))} to "
            f"{duration(LESSON_EPOCH_IMAGES / min(rates))}")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Episode 5's ``ref_cont_*`` values; NOT_RECORDED for everything the runs lack."""
    records, watched = reference_run(path), reference_run(path, "watched")
    first = records[0] if records else {}
    alone = find_in(records, 1, None)
    baseline = condition_summary(alone)
    values = {
        **run_values("ref_cont", records, "run", "date", "cpu", "batch_size"),
        "ref_cont_software": software(first) if first else NOT_RECORDED,
        "ref_cont_cores": str(first.get("cpu_cores_available")) if first else NOT_RECORDED,
        "ref_cont_data": first.get("data_label", NOT_RECORDED),
        "ref_cont_n_images": f"{first['n_images']:,}" if first else NOT_RECORDED,
        "ref_cont_lesson_images": f"{LESSON_EPOCH_IMAGES:,}",
        "ref_cont_alone_first": first_epoch(alone),
        # An epoch after the warm-up alone: the median and range.
        "ref_cont_alone_later": median_text(baseline if alone and alone["epochs"] > 1 else None),
        **_verdicts(records), **_watched(watched),
        "ref_cont_alone_range": _alone_range(records, watched),
        # The figures' alt texts, made from what they draw.
        "ref_cont_fig_alt": alt_text(records) if records else NOT_RECORDED,
        "ref_cont_fig_watched_alt": watched_alt_text(watched) if watched else NOT_RECORDED,
    }
    for prefix, copies, threads in (("alone", 1, None), ("two", 2, None), ("three", 3, None),
                                    ("three_one_thread", 3, 1)):
        record = find_in(records, copies, threads)
        values.update(_condition(f"ref_cont_{prefix}", record, baseline, record is alone))
    return values
