"""The words every experiment's page makes from records, written once: which run and machine
a value comes from, a value or :data:`~gpulesson.records.results.NOT_RECORDED`, a median and
range, lists in prose, and what is not recorded yet with the command that records it.
"""

from collections.abc import Callable

from gpulesson.records.results import NOT_RECORDED, duration, hardware, pick
from gpulesson.records.summaries import MIDDLE_FROM, summary_text

NOTHING_YET = "Without a run there is nothing to compare yet."


def given(value, show: Callable = str) -> str:
    """``show(value)``, or :data:`NOT_RECORDED` where ``value`` is missing (None, empty)."""
    return show(value) if value else NOT_RECORDED


def listed(items) -> str:
    """Items in prose: "a", "a and b", "a, b and c"."""
    items = [str(item) for item in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def share_text(ratio: float, goal: float) -> str:
    """A share to the nearest whole percent (0.617 is 62%), with the decimals it takes where
    rounding would put it on the other side of the ``goal`` (0.8999 is 89.99%, not 90%)."""
    for digits in range(4):
        text = f"{ratio * 100:.{digits}f}"
        if (float(text) / 100 >= goal) == (ratio >= goal):
            return f"{text}%"
    return f"{ratio * 100:.4f}%"


def met(ok: bool) -> str:
    """A goal's verdict: "met" or "not met"."""
    return "met" if ok else "not met"


def day(record: dict) -> str:
    """The date a record was made: "2026-11-28"."""
    return record["date"][:10]


def backend_version(record: dict) -> str:
    """The Keras backend of a record and its version, e.g. ``"tensorflow 2.21.0"``."""
    return f"{record['backend']} {record['versions'].get(record['backend'], '')}".strip()


def by_device(records) -> tuple[tuple[str, dict | None], tuple[str, dict | None]]:
    """``(("cpu", first CPU record), ("gpu", first GPU record))`` of ``records`` (None where absent)."""
    return ("cpu", pick(records, False)), ("gpu", pick(records, True))


# What each field of :func:`run_values` says of a run (its first record; the first of a device).
_RUN_FIELDS = {
    "run": lambda records: records[0]["run_id"],
    "date": lambda records: day(records[0]),
    "backend": lambda records: backend_version(records[0]),
    "cpu": lambda records: given(pick(records, False), lambda r: hardware([r])["CPU"]),
    "gpu": lambda records: given(pick(records, True), lambda r: r["device"]),
    "n_train": lambda records: f"{records[0]['n_train']:,}",
    "batch_size": lambda records: str(records[0]["batch_size"]),
    "epochs": lambda records: str(records[0]["epochs"]),
}


def run_values(prefix: str, records, *fields: str) -> dict[str, str]:
    """``{f"{prefix}_{field}": text}`` of the run ``records`` for each of ``fields`` (keys of
    ``_RUN_FIELDS``); :data:`NOT_RECORDED` without records."""
    return {f"{prefix}_{field}": _RUN_FIELDS[field](records) if records else NOT_RECORDED
            for field in fields}


def median_text(summary: dict | None, show: Callable = duration, what: str = "epochs") -> str:
    """"1.2 s (range 1.1–1.3 s, 5 epochs)", or :data:`NOT_RECORDED` without a summary."""
    return summary_text(summary, show, what=what) if summary else NOT_RECORDED


def accuracy(record: dict | None) -> str:
    """A record's test accuracy as the pages write it ("0.712"), or :data:`NOT_RECORDED`."""
    return f"{record['test_accuracy']:.3f}" if record else NOT_RECORDED


def first_epoch(record: dict | None) -> str:
    """A record's first epoch, compiling included ("12.3 s"), or :data:`NOT_RECORDED`."""
    return duration(record["first_epoch_seconds"]) if record else NOT_RECORDED


def comparison_text(comparison) -> str:
    """A comparison's sentence ("3.1× faster"), or :data:`NOT_RECORDED` without one."""
    return comparison.sentence if comparison else NOT_RECORDED


def headed(label: str, note: str) -> str:
    """A column's header with its note: "Against none (middle three of five epochs)"."""
    return label + (f" ({note})" if note else "")


def none_yet(what: str, command: str, more: str = "") -> str:
    """ "No ceiling run has been recorded yet: `command` records one." (``more`` before the stop)."""
    return f"No {what} has been recorded yet: `{command}` records one{more}."


def recorded_by(command: str, it: str = "it") -> str:
    """The command that records what a page lacks, as a bracket: "(`command` records it)"."""
    return f"(`{command}` records {it})"


def malloc_fixed(records) -> bool:
    """Whether every one of ``records`` (PyTorch's) ran with glibc malloc's thresholds fixed."""
    return all((r.get("malloc") or {}).get("mode") == "fixed" for r in records)


def measurably(said) -> str:
    """A verdict as a clause: "1.4× slower", "measurably slower", "no measurable difference"."""
    if said.measurable and "×" not in said.sentence:
        return f"measurably {said.sentence}"
    return said.sentence


_COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int) -> str:
    return _COUNTS[n] if 0 <= n < len(_COUNTS) else f"{n:,}"


def middle_note(*summaries, what: str = "epochs") -> str:
    """Which repeats :func:`~gpulesson.records.summaries.compare_middle` reads, in words:
    "middle three of five epochs"; '' without summaries."""
    counts = sorted({s["n"] for s in summaries if s})
    if not counts:
        return ""
    if counts[0] >= MIDDLE_FROM:
        if len(counts) == 1:
            return f"middle {_count(counts[0] - 2)} of {_count(counts[0])} {what}"
        return f"middle {what}: the fastest and the slowest of each left out"
    if counts[-1] < MIDDLE_FROM:
        return f"all {what}: too few to leave the fastest and slowest out"
    return (f"middle {what} where {_count(MIDDLE_FROM)} or more were timed (the fastest and the "
            f"slowest left out), all of them elsewhere")


# fit(shuffle=True), Keras's default, also reorders a PyDataset's batches. The lesson's
# generator reads `window` blocks at a time and owns its order (episode 4): reordered by fit, it
# reads a whole window for almost every batch. Every experiment trains with IN_ORDER, and its
# records say so (ORDER_FIELD); a record without the field was made while fit still reordered.
IN_ORDER = {"shuffle": False}
ORDER_FIELD = "fit_shuffle"


def reordered_by_fit(record: dict) -> bool:
    """Whether ``fit`` reordered the batches of ``record``'s training: a record made before the
    experiments passed :data:`IN_ORDER` has no :data:`ORDER_FIELD`."""
    return ORDER_FIELD not in record


def reordered_note(records, what: str) -> str:
    """A page's sentence on ``records`` (those read through the lesson's generator) made while
    ``fit`` reordered their batches (:func:`reordered_by_fit`), naming ``what`` they are and
    their runs; "" when there are none."""
    runs = sorted({r["run_id"] for r in records if reordered_by_fit(r)})
    if not runs:
        return ""
    named = ", ".join(runs[:-1]) + f" and {runs[-1]}" if len(runs) > 1 else runs[0]
    return (f"In {'run' if len(runs) == 1 else 'runs'} {named}, `fit` reordered "
            f"{what} (its default `shuffle=True`, episode 4): almost every batch read a whole "
            "window of blocks, so reading cost more there than in the lesson's code.")


def markdown_table(head, rows) -> str:
    """A Markdown table of ``rows`` (lists of cell texts) under the column titles ``head``: how
    the experiments' pages and commands show a run."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
