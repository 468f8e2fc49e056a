"""The episode's ``ref_cont_*`` values, from the newest run of each part (read while the site
builds): ``ref_cont_watch_*`` from the watched part, the others from the copies part.

Times are given for the episode's own epoch (the full-size training split without its
validation tenth), scaled from the images/s measured on the benchmark's subset: an epoch's
time grows in proportion to its images.

The measurement rule (:mod:`gpulesson.experiments.common`): a condition's samples are the
epochs after the warm-up of all its copies
(:func:`~gpulesson.experiments.contention.records.condition_summary`); rates, epochs and
slowdowns are given by the medians, and every word that compares two timings ("less than",
"slower than", "about as fast as", "no measurable difference") comes from
:func:`~gpulesson.experiments.common.compare` of their summaries: where their ranges overlap,
or one condition has a single timed epoch and so no range, a slowdown is said to be by the
medians only.
"""

from __future__ import annotations

from itertools import pairwise

from gpulesson.experiments.common import NO_DIFFERENCE, compare
from gpulesson.experiments.contention.records import (
    RESULTS_FILE,
    condition_summary,
    find_in,
    reference_run,
)
from gpulesson.experiments.pagewords import first_epoch, median_text, run_values
from gpulesson.results import NOT_RECORDED, duration, software
from gpulesson.settings import FULL_N_TRAIN

# The episode's training images per epoch: split_batches keeps the last tenth for validation.
LESSON_EPOCH_IMAGES = FULL_N_TRAIN - FULL_N_TRAIN // 10


def scaled(summary: dict, factor: float) -> dict:
    """A summary with every value times ``factor``: e.g. what k times one copy's epochs would
    be (an equal share of the cores among k trainings)."""
    return {**summary, **{key: summary[key] * factor for key in ("median", "min", "max")},
            "samples": [v * factor for v in summary["samples"]],
            "warmup": [v * factor for v in summary.get("warmup", [])]}


def slowdown_text(condition: dict | None, baseline: dict | None) -> str:
    """How many times as long a condition's epochs took as the baseline's, by the medians:
    "2.2 times"; where :func:`~gpulesson.experiments.common.compare` cannot tell the two apart
    (ranges that overlap, or a single timed epoch), it says so:
    "1.6 times (by the medians; no measurable difference by the ranges)"."""
    if not condition or not baseline:
        return NOT_RECORDED
    comparison = compare(baseline, condition)  # ratio: the condition's median over the baseline's
    text = f"{comparison.ratio:.1f} times"
    return text if comparison.measurable else f"{text} (by the medians; {NO_DIFFERENCE} by the ranges)"


def _condition(prefix: str, record: dict | None, baseline: dict | None, *,
               is_baseline: bool = False) -> dict[str, str]:
    """A condition's values; ``baseline``: the summary of one copy alone (``is_baseline``: the
    condition is that copy, whose slowdown is 1 by definition)."""
    summary = condition_summary(record)
    if record is None or summary is None:
        return {f"{prefix}_{key}": NOT_RECORDED
                for key in ("rate", "total_rate", "lesson_epoch", "slowdown", "load")}
    load = record.get("load_max")
    rate = record["n_images"] / summary["median"]  # each copy, by the median epoch
    return {
        f"{prefix}_rate": f"{rate:,.0f} images/s",
        f"{prefix}_total_rate": f"{rate * record['copies']:,.0f} images/s",
        f"{prefix}_lesson_epoch": duration(LESSON_EPOCH_IMAGES / rate),
        f"{prefix}_slowdown": "1.0 times" if is_baseline else slowdown_text(summary, baseline),
        f"{prefix}_load": f"{load:.1f}" if load is not None else NOT_RECORDED,
    }


# The watched part's modes, by their names in the page's values.
WATCHED = {"none": "no browser", "bar": "browser, bar per step", "lines": "browser, line per epoch"}


def _watched(records) -> dict[str, str]:
    first = records[0] if records else None
    values = {"ref_cont_watch_images": f"{first['n_images']:,}" if first else NOT_RECORDED,
              **run_values("ref_cont_watch", records, "epochs", "date")}
    none = condition_summary(find_in(records, 1, None, WATCHED["none"]))
    for key, mode in WATCHED.items():
        record = find_in(records, 1, None, mode)
        summary = condition_summary(record)
        prefix = f"ref_cont_watch_{key}"
        if record is None or summary is None:
            values.update({f"{prefix}_{name}": NOT_RECORDED
                           for name in ("epochs", "first", "last", "slowdown", "load", "trend")})
            continue
        epochs = record["per_copy"][0]["epoch_seconds"]
        load = record.get("load_max")
        values.update({
            f"{prefix}_epochs": ", ".join(f"{t:.0f}" for t in epochs) + " s",
            f"{prefix}_first": duration(epochs[0]),
            f"{prefix}_last": duration(epochs[-1]),
            f"{prefix}_slowdown": "1.0 times" if key == "none" else slowdown_text(summary, none),
            f"{prefix}_load": f"{load:.1f}" if load is not None else NOT_RECORDED,
            f"{prefix}_trend": trend(epochs, summary, none),
        })
    for key in ("bar", "lines"):
        summary = condition_summary(find_in(records, 1, None, WATCHED[key]))
        # "3× slower than", "faster than", "about as fast as" (common.compare).
        values[f"ref_cont_watch_{key}_vs_none"] = (compare(summary, none).text
                                                   if summary and none else NOT_RECORDED)
    return values


def trend(epochs, summary: dict, none: dict | None) -> str:
    """Did a training's epochs grow as the cell's output grew? "grew from one epoch to the
    next" only where each epoch took longer than the one before and the timed epochs were
    measurably slower than those of the training without a browser
    (:func:`~gpulesson.experiments.common.compare`); otherwise they did not grow measurably."""
    rising = len(epochs) > 1 and all(b > a for a, b in pairwise(epochs))
    against = compare(summary, none) if none is not None else None
    if rising and against is not None and against.measurable and against.word == "slower":
        return "grew from one epoch to the next"
    return "did not grow measurably from one epoch to the next"


def share_comparison(records):
    """Three copies at once against an equal share of the cores (each epoch three times that of
    one copy alone): :func:`~gpulesson.experiments.common.compare` of the three copies' epochs
    with one copy's times three; None without both conditions."""
    three = condition_summary(find_in(records, 3, None))
    alone = condition_summary(find_in(records, 1, None))
    return compare(three, scaled(alone, 3)) if three and alone else None


def _verdicts(records) -> dict[str, str]:
    """Words that compare conditions, so that the page's sentences follow the measurement: all
    from :func:`~gpulesson.experiments.common.compare` of the conditions' summaries."""
    three_record, alone_record = find_in(records, 3, None), find_in(records, 1, None)
    three, alone = condition_summary(three_record), condition_summary(alone_record)
    three_one = condition_summary(find_in(records, 3, 1))
    values = {"ref_cont_three_vs_share": NOT_RECORDED, "ref_cont_together": NOT_RECORDED,
              "ref_cont_one_thread_vs_default": NOT_RECORDED}
    share = share_comparison(records)
    if share is not None:
        # An equal share of the cores would make each of three trainings three times slower:
        # faster than that is less time, slower more.
        values["ref_cont_three_vs_share"] = (
            ("less than" if share.word == "faster" else "more than") if share.measurable
            else "not measurably different from")
        # Why k trainings may lose less than a k-th each: what the totals say. Three copies
        # process more images per second together than one alone exactly when each of their
        # epochs takes less than three of one alone: the same comparison.
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
    if three and three_one:
        # "faster than", "1.3× slower than", "about as fast as" (common.compare).
        values["ref_cont_one_thread_vs_default"] = compare(three_one, three).text
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
    baseline = condition_summary(alone)
    values = {
        **run_values("ref_cont", records, "run", "date", "cpu", "batch_size"),
        "ref_cont_software": software(first) if first else NOT_RECORDED,
        "ref_cont_cores": str(first.get("cpu_cores_available")) if first else NOT_RECORDED,
        "ref_cont_data": first.get("data_label", NOT_RECORDED) if first else NOT_RECORDED,
        "ref_cont_n_images": f"{first['n_images']:,}" if first else NOT_RECORDED,
        "ref_cont_lesson_images": f"{LESSON_EPOCH_IMAGES:,}",
        "ref_cont_alone_first": first_epoch(alone),
        # An epoch after the warm-up alone: the median and range.
        "ref_cont_alone_later": median_text(baseline if alone and alone["epochs"] > 1 else None),
    }
    for prefix, copies, threads in (("alone", 1, None), ("two", 2, None), ("three", 3, None),
                                    ("three_one_thread", 3, 1)):
        record = find_in(records, copies, threads)
        values.update(_condition(f"ref_cont_{prefix}", record, baseline,
                                 is_baseline=record is not None and record is alone))
    values.update(_verdicts(records))
    watched = reference_run(path, "watched")
    values.update(_watched(watched))
    values["ref_cont_alone_range"] = _alone_range(records, watched)
    # The figures' alt texts, made from what they draw (contention.figures).
    from gpulesson.experiments.contention.figures import alt_text, watched_alt_text

    values["ref_cont_fig_alt"] = alt_text(records) if records else NOT_RECORDED
    values["ref_cont_fig_watched_alt"] = watched_alt_text(watched) if watched else NOT_RECORDED
    return values
