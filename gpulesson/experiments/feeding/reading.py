"""The verdicts of the feeding benchmark: does training wait for its data? From the records.

Two checks tell, and the episode states both. Training from a pipeline against training from
the fastest path from memory of the same run and device (:func:`input_verdict`): measurably
slower means that the data cost training time. The loader alone against
:data:`LOADER_MARGIN` times training's rate (:func:`loader_verdict`): a loader that alone is
not that much faster leaves the model waiting, *if* reading overlaps the steps. Where the
batches are read between the steps, in the thread that dispatches them (a ``PyDataset``
without workers on JAX and PyTorch), reading does not overlap them: its time adds to each
step, and a loader well ahead of training can still slow it down. So the comparison with
memory decides, and the loader's check says why. Every comparison reads the middle epochs
(:func:`~gpulesson.experiments.common.compare_middle`): one stray epoch decides nothing.

Imports no deep-learning framework.
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

DEVICES = ("cpu", "gpu")
# A loader that alone delivers less than this many times the images per second of training
# from it leaves the model waiting, where reading overlaps the steps: the margin absorbs the
# epochs' spread and the loader's share of the CPU while training runs. The episode states
# the same rule (tested).
LOADER_MARGIN = 1.5


def basis(*summaries, what: str = "epochs") -> str:
    """Which repeats the rule compared, for a verdict's brackets: "middle three of five epochs"
    (the fastest and the slowest left out, :func:`~gpulesson.experiments.common.compare_middle`),
    or "all epochs" where too few were timed to leave any out."""
    note = middle_note(*summaries, what=what)
    return f"all {what}" if note.startswith("all ") else note


def apart(*summaries) -> str:
    """The brackets' words for a measurable verdict: "middle three of five epochs apart"."""
    return f"{basis(*summaries)} apart"


def _why(*summaries, many: bool = False) -> str:
    """Why the rule cannot tell ``summaries`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in summaries)
    if least < MIN_RANKED:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    said = basis(*summaries)
    return "their ranges overlap" if said.startswith("all ") else f"the ranges of their {said} overlap"


def _scaled(summary: dict, factor: float) -> dict:
    return {**summary, **{k: summary[k] * factor for k in ("median", "min", "max")},
            "samples": [v * factor for v in summary["samples"]]}


def _names(names) -> str:
    quoted_names = [quoted(n) for n in names]
    return ", ".join(quoted_names[:-1]) + (" and " if len(names) > 1 else "") + quoted_names[-1]


def fastest_text(records, device: str, quote=quoted) -> str:
    """The fastest pipeline in training on ``device``, the first place of
    :func:`~gpulesson.experiments.feeding.records.ranking` in the rule's words: "`ram`", or
    several names, the highest median first, and that the rule finds no measurable difference
    from it (and on which epochs). ``quote`` writes a name (the alt text's: plain)."""
    places = ranking(records, device)
    if not places:
        return "not measured"
    first = places[0]
    if len(first) == 1:
        return quote(first[0])
    rates = base_rates(records, device)
    names = ", ".join(map(quote, first[:-1])) + f" and {quote(first[-1])}"
    chosen = [rates[n] for n in first]
    why = (_why(*chosen, many=True) if min(r["n"] for r in chosen) < MIN_RANKED
           else basis(*chosen))
    return f"{names} ({NO_DIFFERENCE} from {quote(first[0])}, the highest median; {why})"


def loader_verdict(train: dict, loader: dict) -> str:
    """Whether a pipeline's loader alone kept ahead of training, by the rule's comparison of the
    loader's rate with :data:`LOADER_MARGIN` times the training rate: "ahead" (the loader is
    measurably faster than that), "waiting" (measurably slower) or "unclear" (their ranges
    overlap, or either was timed once). It assumes that reading overlaps the steps."""
    verdict = compare_middle(rate_summary(loader), _scaled(rate_summary(train), LOADER_MARGIN),
                             higher_is_better=True)
    if not verdict.measurable:
        return "unclear"
    return "ahead" if verdict.word == "faster" else "waiting"


def input_verdict(train: dict, loader: dict | None, top: dict) -> str:
    """Whether training from a pipeline waited for its data, decided by training from the
    fastest path from memory of the same run and device (``top``):

    - "waiting": measurably slower than ``top``, and the loader alone was not ahead of
      training by the margin (or was not timed): the loader is too slow;
    - "adds": measurably slower than ``top`` although the loader alone was ahead: reading did
      not overlap the steps, so its time added to each one;
    - "faster": measurably faster than ``top``: the data did not hold the model back;
    - "keeps up": no measurable difference from ``top``: the model set the pace;
    - "unclear": the rule cannot compare the two (one epoch each, no range).
    """
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


def _versus_top(records, device, names, top) -> str:
    """Each of ``names`` against ``top`` in the rule's words: "`classic` 205× slower" (the
    answer says once which epochs every comparison read)."""
    return ", ".join(f"{quoted(n)} " + compare_middle(
        rate_summary(find(records, device, n)), rate_summary(top),
        higher_is_better=True).sentence for n in names)


def device_reading(records, device: str) -> str:
    """The answer for one device: the fastest pipeline (:func:`fastest_text`, the page's one
    ranking), and for each pipeline that reads data whether training waited for it
    (:func:`input_verdict`), with why."""
    top = fastest_in_memory(records, device)
    reading = [p for p in PIPELINES if p not in IN_MEMORY and find(records, device, p)]
    if not top or not reading:
        return ""
    memory = quoted(top["pipeline"])
    text = [f"On the {device.upper()}, the fastest pipeline was "
            f"{fastest_text(records, device)}; the fastest from memory, {memory}."]
    verdicts = {p: input_verdict(find(records, device, p), find(records, device, p, "loader"),
                                 top) for p in reading}
    by = {v: [p for p in reading if verdicts[p] == v]
          for v in ("waiting", "adds", "faster", "keeps up", "unclear")}
    if by["waiting"]:
        text.append(f"Training from {_names(by['waiting'])} was measurably slower than from "
                    f"{memory} ({_versus_top(records, device, by['waiting'], top)}), "
                    f"and the loader alone was not measurably faster than {LOADER_MARGIN:g} "
                    "times training: those loaders made the model wait.")
    if by["adds"]:
        text.append(f"Training from {_names(by['adds'])} was measurably slower than from "
                    f"{memory} ({_versus_top(records, device, by['adds'], top)}), "
                    f"although the loader alone was more than {LOADER_MARGIN:g} times faster "
                    "than training: reading did not overlap the steps, so its time added to "
                    "each one. The data set the pace.")
    if by["faster"]:
        text.append(f"Training from {_names(by['faster'])} was measurably faster than from "
                    f"{memory} ({_versus_top(records, device, by['faster'], top)}): the data "
                    "did not hold the model back.")
    if by["keeps up"]:
        text.append(f"Training from {_names(by['keeps up'])} showed {NO_DIFFERENCE} from "
                    f"{memory}: the model set the pace.")
    if by["unclear"]:
        why = _why(*[rate_summary(find(records, device, p)) for p in by["unclear"]],
                   rate_summary(top), many=True)
        text.append(f"For {_names(by['unclear'])} the rule cannot tell ({why}).")
    return " ".join(text)


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records; it
    says first which epochs every comparison in it read (:func:`basis`)."""
    found = [said for device in DEVICES if (said := device_reading(records, device))]
    if not found:
        return "No reference run has been recorded yet."
    rates = [rate for device in DEVICES for rate in base_rates(records, device).values()]
    return (f"In the reference run{'s' if len(found) > 1 else ''}, every comparison reads the "
            f"{basis(*rates)} of each pipeline. " + " ".join(found))
