"""The reading exercise's verdicts: did training wait for its data?

Training from a pipeline against training from the fastest path from memory of the same run and
device decides (:func:`input_verdict`); the loader alone against :data:`LOADER_MARGIN` times
training's rate says why (:func:`loader_verdict`). The loader's check alone cannot decide: where
batches are read between the steps, in the thread that dispatches them (a ``PyDataset`` without
workers on JAX and PyTorch), reading does not overlap the steps, and a loader well ahead of
training still slows it down. Every comparison reads the middle epochs.
"""

from __future__ import annotations

from gpulesson.experiments.ceiling.records import middle_note
from gpulesson.experiments.common import MIN_RANKED, NO_DIFFERENCE, compare_middle
from gpulesson.experiments.feeding.records import (
    IN_MEMORY,
    PIPELINES,
    base_rates,
    fastest_in_memory,
    find,
    quoted,
    ranking,
    rate_summary,
)
from gpulesson.experiments.pagewords import listed

DEVICES = ("cpu", "gpu")
# A loader that alone delivers less than this many times the images per second of training
# from it leaves the model waiting, where reading overlaps the steps: the margin absorbs the
# epochs' spread and the loader's share of the CPU while training runs. The episode states
# the same rule (tested).
LOADER_MARGIN = 1.5
# What the answer says of the pipelines of each verdict of :func:`input_verdict`.
SAID = {
    "waiting": "Training from {names} was measurably slower than from {memory} ({versus}), and "
               "the loader alone was not measurably faster than {margin:g} times training: "
               "those loaders made the model wait.",
    "adds": "Training from {names} was measurably slower than from {memory} ({versus}), "
            "although the loader alone was more than {margin:g} times faster than training: "
            "reading did not overlap the steps, so its time added to each one. The data set "
            "the pace.",
    "faster": "Training from {names} was measurably faster than from {memory} ({versus}): the "
              "data did not hold the model back.",
    "keeps up": "Training from {names} showed {none} from {memory}: the model set the pace.",
    "unclear": "For {names} the rule cannot tell ({why}).",
}


def basis(*summaries, what: str = "epochs") -> str:
    """Which repeats the rule compared: "middle three of five epochs", or "all epochs"."""
    note = middle_note(*summaries, what=what)
    return f"all {what}" if note.startswith("all ") else note


def apart(*summaries) -> str:
    return f"{basis(*summaries)} apart"


def _why(*summaries, many: bool = False) -> str:
    """Why the rule cannot tell ``summaries`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in summaries)
    if least < MIN_RANKED:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    said = basis(*summaries)
    return "their ranges overlap" if said.startswith("all ") else f"the ranges of their {said} overlap"


def fastest_text(records, device: str, quote=quoted) -> str:
    """The first place of :func:`~gpulesson.experiments.feeding.records.ranking` in the rule's
    words: one name, or several with the note that the rule cannot tell them apart."""
    places = ranking(records, device)
    if not places:
        return "not measured"
    first = places[0]
    if len(first) == 1:
        return quote(first[0])
    rates = base_rates(records, device)
    chosen = [rates[n] for n in first]
    why = (_why(*chosen, many=True) if min(r["n"] for r in chosen) < MIN_RANKED
           else basis(*chosen))
    return (f"{listed(map(quote, first))} ({NO_DIFFERENCE} from {quote(first[0])}, the highest "
            f"median; {why})")


def loader_verdict(train: dict, loader: dict) -> str:
    """"ahead", "waiting" or "unclear": the loader's rate against :data:`LOADER_MARGIN` times
    training's, assuming that reading overlaps the steps."""
    rate = rate_summary(train)
    scaled = {**rate, **{k: rate[k] * LOADER_MARGIN for k in ("median", "min", "max")},
              "samples": [v * LOADER_MARGIN for v in rate["samples"]]}
    verdict = compare_middle(rate_summary(loader), scaled, higher_is_better=True)
    if not verdict.measurable:
        return "unclear"
    return "ahead" if verdict.word == "faster" else "waiting"


def input_verdict(train: dict, loader: dict | None, top: dict) -> str:
    """Training from a pipeline against ``top``, the fastest from memory: "waiting" (measurably
    slower, the loader not ahead), "adds" (slower although the loader was ahead: reading did
    not overlap the steps), "faster", "keeps up" (no measurable difference) or "unclear"."""
    said = compare_middle(rate_summary(train), rate_summary(top), higher_is_better=True)
    if min(rate_summary(train)["n"], rate_summary(top)["n"]) < MIN_RANKED:
        return "unclear"
    if not said.measurable:
        return "keeps up"
    if said.word == "faster":
        return "faster"
    if loader is not None and loader_verdict(train, loader) == "ahead":
        return "adds"
    return "waiting"


def device_reading(records, device: str) -> str:
    """The answer for one device: its fastest pipeline, and whether training waited for each
    pipeline that reads data."""
    top = fastest_in_memory(records, device)
    reading = [p for p in PIPELINES if p not in IN_MEMORY and find(records, device, p)]
    if not top or not reading:
        return ""
    memory = quoted(top["pipeline"])
    text = [f"On the {device.upper()}, the fastest pipeline was "
            f"{fastest_text(records, device)}; the fastest from memory, {memory}."]
    verdicts = {p: input_verdict(find(records, device, p), find(records, device, p, "loader"),
                                 top) for p in reading}
    for verdict, said in SAID.items():
        names = [p for p in reading if verdicts[p] == verdict]
        if not names:
            continue
        rates = [rate_summary(find(records, device, p)) for p in names]
        versus = ", ".join(f"{quoted(n)} " + compare_middle(
            rate, rate_summary(top), higher_is_better=True).sentence
            for n, rate in zip(names, rates, strict=True))
        why = _why(*rates, rate_summary(top), many=True) if verdict == "unclear" else ""
        text.append(said.format(names=listed(map(quoted, names)), memory=memory, versus=versus,
                                margin=LOADER_MARGIN, none=NO_DIFFERENCE, why=why))
    return " ".join(text)


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    found = [said for device in DEVICES if (said := device_reading(records, device))]
    if not found:
        return "No reference run has been recorded yet."
    rates = [rate for device in DEVICES for rate in base_rates(records, device).values()]
    return (f"In the reference run{'s' if len(found) > 1 else ''}, every comparison reads the "
            f"{basis(*rates)} of each pipeline. " + " ".join(found))
