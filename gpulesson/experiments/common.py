"""The one rule every measurement of the lesson follows, and the words that report it.

**The rule.** Each condition (a device, a pipeline, a setting) is measured :data:`WARMUP` time(s)
first, a warm-up that is recorded but not averaged (compiling, caches, worker start-up), then
at least :data:`REPEATS` timed repeats (epochs or runs). Quick mode may time fewer
(:data:`QUICK_REPEATS`), and says so (:func:`summary_text` names the count). A record keeps
every sample and their summary (:func:`summarise`: median, min, max, n, the warm-up kept
apart); a page shows the median and the range (:func:`summary_text`).

**The words.** :func:`compare` is the only place where two summaries become words ("faster",
"slower", "about as fast", "N× faster"): where their ranges overlap, or where either has too few
repeats to have a range, it says there is no measurable difference, and :func:`rank` puts such
conditions in the same place of a ranking. Pages and figures take their comparison words from
these two functions, so that a sentence never ranks noise.

**Old records.** Records made before the rule have no summary: :func:`summary_of` builds one
from the samples they hold (e.g. the epochs after the first), so that the pages still build
from them and show what they have (a range over two epochs, or one value and "1 repeat").

**The command line.** Every experiment's command appends its records to a results file
(``--out``), most seed their models' initial weights (``--seed``), measure the CPU and then the
GPU if one is visible unless told which devices, can go on with an earlier run (``--run-id``,
skipping the conditions it has), and end by saying what they appended.

**Figures.** :func:`draw_spread` draws a summary's range as an error bar around its median,
with the samples as small dots, so a figure shows how much the repeats varied.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPEATS = 5  # timed repeats of each condition (the rule)
WARMUP = 1  # warm-up repeats before them: recorded, never averaged
QUICK_REPEATS = 2  # quick mode: fewer, and the page or table says how many
MIN_RANKED = 2  # a summary with fewer samples has no range, so it is never ranked
SUMMARY_KEY = "summary"  # where a record keeps the summary of its main measurement
SAME_WORD = "about as fast as"
NO_DIFFERENCE = "no measurable difference"


def repeats_for(quick: bool) -> int:
    """The timed repeats of a condition: :data:`REPEATS`, or :data:`QUICK_REPEATS` in quick mode."""
    return QUICK_REPEATS if quick else REPEATS


def default_epochs(quick: bool) -> int:
    """The epochs a training of a device runs: the warm-up, then the rule's timed repeats."""
    return WARMUP + repeats_for(quick)


def check_epochs(epochs: int) -> int:
    """``epochs`` if it leaves at least one timed epoch after the warm-up, else a ValueError."""
    if epochs < WARMUP + 1:
        raise ValueError(f"epochs must be at least {WARMUP + 1} ({WARMUP} warm-up and at least one "
                         f"timed epoch), not {epochs}")
    return epochs


# --- summaries --------------------------------------------------------------------------------

def summarise(samples: Sequence[float], warmup: Sequence[float] = (), *,
              unit: str = "s") -> dict:
    """The summary a record keeps of one condition's timed ``samples`` (the ``warmup`` apart).

    ``{"unit", "n", "median", "min", "max", "samples", "warmup"}``; ``samples`` and
    ``warmup`` are kept whole, so that anyone can summarise them otherwise later.
    """
    values = [float(v) for v in samples]
    if not values:
        raise ValueError("no timed samples to summarise: a warm-up alone is not a measurement")
    if any(math.isnan(v) for v in values):
        raise ValueError("a timed sample is not a number")
    return {"unit": unit, "n": len(values), "median": statistics.median(values),
            "min": min(values), "max": max(values), "samples": values,
            "warmup": [float(v) for v in warmup]}


def summary_of(record: Mapping, samples_key: str = "epoch_seconds", *,
               warmup_key: str | None = "warmup_seconds", first_is_warmup: bool | None = None,
               key: str = SUMMARY_KEY) -> dict | None:
    """The summary of a record's main measurement: the one it keeps under ``key``, or, for a
    record made before the rule, one built from its ``samples_key`` list.

    An old record's warm-up is its ``warmup_key`` list when it has one; otherwise its first
    sample is taken as the warm-up (``first_is_warmup``, default: when there are at least two
    samples), as the lesson's epoch timers always treated it. None when there is nothing.
    """
    kept = record.get(key)
    if isinstance(kept, Mapping) and kept.get("samples"):
        return dict(kept)
    samples = record.get(samples_key)
    if not isinstance(samples, Sequence) or isinstance(samples, str) or not samples:
        return None
    samples = [float(v) for v in samples]
    warmup = record.get(warmup_key) if warmup_key else None
    if warmup is None:
        if first_is_warmup is None:
            first_is_warmup = len(samples) >= 2
        warmup, samples = (samples[:1], samples[1:]) if first_is_warmup else ([], samples)
    return summarise(samples, warmup or [])


def as_rate(summary: Mapping, amount: float, unit: str = "images/s") -> dict:
    """A time summary as a rate: ``amount`` (images, FLOPs, ...) per second of each sample.

    The slowest sample gives the lowest rate; the median rate is ``amount`` over the median
    time (which, for an even count, is not the median of the rates: the time is what was
    measured)."""
    def rate(seconds):
        return amount / seconds if seconds else math.inf

    return {"unit": unit, "n": summary["n"], "median": rate(summary["median"]),
            "min": rate(summary["max"]), "max": rate(summary["min"]),
            "samples": [rate(s) for s in summary["samples"]],
            "warmup": [rate(s) for s in summary.get("warmup", [])]}


def scale(summary: Mapping | None, factor: float, unit: str | None = None) -> dict | None:
    """A summary with every value multiplied by ``factor`` (a time per epoch as the time of 30
    epochs, joules per epoch as joules per image), in ``unit`` if given; None stays None."""
    if not summary:
        return None
    return {**summary, "unit": summary.get("unit", "") if unit is None else unit,
            "median": summary["median"] * factor, "min": summary["min"] * factor,
            "max": summary["max"] * factor, "samples": [v * factor for v in summary["samples"]],
            "warmup": [v * factor for v in summary.get("warmup", [])]}


def fmt_number(value: float) -> str:
    """A measured number with the digits it deserves: 1,824; 214; 9.4; 0.62."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def summary_text(summary: Mapping | None, show=None, *, what: str = "repeats") -> str:
    """A page's view of a summary: the median and the range, and how many repeats they are of:
    ``"24.7 s (range 24.6–24.7 s, 2 repeats)"``; one sample: ``"24.7 s (1 repeat, no range)"``.
    ``show`` formats a value (default: :func:`fmt_number` and the unit)."""
    if not summary:
        return "not measured"
    n, unit = summary["n"], ""
    if show is None:
        show, unit = fmt_number, f" {summary.get('unit', '')}".rstrip()
    if n < MIN_RANKED:
        return f"{show(summary['median'])}{unit} ({n} {what.rstrip('s')}, no range)"
    return (f"{show(summary['median'])}{unit} (range {show(summary['min'])}–"
            f"{show(summary['max'])}{unit}, {n} {what})")


# --- comparisons --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """How condition A compares with condition B.

    ``ratio``: how many times faster A is than B (B's median time over A's, or A's median rate
    over B's); ``measurable``: whether the ranges are apart and both have a range; ``word``:
    "faster", "slower" or "about as fast as" (the page's word); ``text``: the comparison with
    its size, e.g. "2.1× faster than", "slower than", "about as fast as"."""

    ratio: float
    measurable: bool
    word: str
    text: str

    @property
    def sentence(self) -> str:
        """The verdict alone: "2.1× faster", "no measurable difference"."""
        return self.text.removesuffix(" than").removesuffix(" as") if self.measurable \
            else NO_DIFFERENCE


def overlap(a: Mapping, b: Mapping) -> bool:
    """Whether the ranges of two summaries overlap."""
    return a["min"] <= b["max"] and b["min"] <= a["max"]


def times_text(ratio: float) -> str:
    """A ratio as "1.5×", "12×"."""
    return (f"{ratio:.2g}" if ratio < 10 else f"{ratio:.0f}") + "×"


def compare(a: Mapping, b: Mapping, *, higher_is_better: bool = False,
            times_from: float = 1.2) -> Comparison:
    """Condition A against condition B, from their summaries (:func:`summarise`), in words.

    Times are better lower, rates (``higher_is_better``) higher. Ranges that overlap, or a
    summary with fewer than :data:`MIN_RANKED` samples, give "about as fast as" and "no
    measurable difference". Apart, a ratio of at least ``times_from`` is said with its size
    ("2.1× faster than"), a smaller one as "faster than" or "slower than"."""
    ratio = (a["median"] / b["median"]) if higher_is_better else (b["median"] / a["median"])
    enough = a["n"] >= MIN_RANKED and b["n"] >= MIN_RANKED
    if not enough or overlap(a, b) or ratio == 1:
        return Comparison(ratio, False, "about as fast as", SAME_WORD)
    word = "faster" if ratio > 1 else "slower"
    size = ratio if ratio > 1 else 1 / ratio
    text = f"{times_text(size)} {word} than" if size >= times_from else f"{word} than"
    return Comparison(ratio, True, word, text)


def rank(summaries: Mapping[str, Mapping], *, higher_is_better: bool = False) -> list[list[str]]:
    """The conditions' names in order, best first, in places: a place holds the conditions that
    :func:`compare` cannot tell apart from its best one (overlapping ranges, or too few
    repeats). ``[["ram", "device"], ["lesson"], ...]``: "ram" and "device" share first place."""
    order = sorted(summaries, key=lambda n: summaries[n]["median"], reverse=higher_is_better)
    places: list[list[str]] = []
    for name in order:
        if places and not compare(summaries[places[-1][0]], summaries[name],
                                  higher_is_better=higher_is_better).measurable:
            places[-1].append(name)
        else:
            places.append([name])
    return places


def best_text(summaries: Mapping[str, Mapping], *, higher_is_better: bool = False,
              quote=str) -> str:
    """The best condition in words: "`ram`", or "`ram` and `device` (no measurable
    difference)" when the first place is shared."""
    if not summaries:
        return "not measured"
    first = rank(summaries, higher_is_better=higher_is_better)[0]
    if len(first) == 1:
        return quote(first[0])
    names = ", ".join(map(quote, first[:-1])) + f" and {quote(first[-1])}"
    return f"{names} ({NO_DIFFERENCE})"


# --- figures ----------------------------------------------------------------------------------

def spread_errors(summaries: Sequence[Mapping]) -> list[list[float]]:
    """Matplotlib's ``yerr``/``xerr`` for summaries drawn at their medians: the distances down to
    the minimum and up to the maximum."""
    return [[s["median"] - s["min"] for s in summaries], [s["max"] - s["median"] for s in summaries]]


def draw_spread(ax, positions: Sequence[float], summaries: Sequence[Mapping | None], *,
                horizontal: bool = False, color: str = "black", samples: bool = True,
                scale: float = 1.0) -> None:
    """Draw each summary's range as an error bar at its median (and its samples as dots) at
    ``positions`` on ``ax``: vertical bars for vertical plots, horizontal ones for ``barh``.
    ``scale`` multiplies the values (e.g. 1e3 for milliseconds). None summaries are skipped."""
    drawn = [(p, s) for p, s in zip(positions, summaries, strict=True) if s]
    if not drawn:
        return
    where = [p for p, _ in drawn]
    medians = [s["median"] * scale for _, s in drawn]
    errors = [[e * scale for e in side] for side in spread_errors([s for _, s in drawn])]
    keyword = "xerr" if horizontal else "yerr"
    xs, ys = (medians, where) if horizontal else (where, medians)
    ax.errorbar(xs, ys, **{keyword: errors}, fmt="none", ecolor=color, capsize=3, linewidth=1,
                zorder=3)
    if samples:
        for p, s in drawn:
            values = [v * scale for v in s["samples"]]
            points = (values, [p] * len(values)) if horizontal else ([p] * len(values), values)
            ax.plot(*points, linestyle="none", marker=".", markersize=3, color=color, alpha=0.6,
                    zorder=4)


SPREAD_NOTE = "bars: median; whiskers: fastest to slowest repeat; dots: the repeats"


# --- the command line ---------------------------------------------------------------------------

DEFAULT_SEED = 42


def add_out_option(parser: argparse.ArgumentParser, default: Path) -> None:
    """``--out``: the results file the records are appended to, ``default`` if not given."""
    parser.add_argument("--out", type=Path, default=default,
                        help=f"results file to append to (default {default})")


def add_seed_option(parser: argparse.ArgumentParser, default: int = DEFAULT_SEED) -> None:
    """``--seed``: the random seed of the initial weights."""
    parser.add_argument("--seed", type=int, default=default,
                        help="random seed of the initial weights")


def default_devices(requested: list[str] | None, gpu_visible) -> list[str]:
    """The devices asked for; if none were, the CPU, then the GPU when one is visible."""
    if requested:
        return list(requested)
    return ["cpu", "gpu"] if gpu_visible else ["cpu"]


def say_appended(records: list[dict], out: Path, what: str = "record(s)") -> None:
    """Print how many records of which run were appended to ``out``."""
    print(f"Appended {len(records)} {what} of run {records[0]['run_id']} to {out}", flush=True)


def add_run_id_option(parser: argparse.ArgumentParser) -> None:
    """``--run-id``: go on with an earlier run instead of starting a new one.

    A reference stage that was stopped (its time limit, a lost job) runs its commands again with
    the same run id; each command then measures only the conditions that run does not have yet,
    so a re-run never records a condition twice.
    """
    parser.add_argument("--run-id", default=None,
                        help="add to this run of the results file instead of starting a new "
                             "one, skipping the conditions it already has (how an interrupted "
                             "reference stage goes on)")


def continue_run(out: Path, experiment: str, run_id: str | None, key) -> tuple[str, set]:
    """``(run id, keys of the conditions already recorded)`` for a run that may go on.

    Without ``run_id``: a new run, nothing recorded. With it: the keys ``key(record)`` of the
    records of ``experiment`` with that run id in ``out`` (none if the file is missing).
    """
    from gpulesson.results import new_run_id, read_records

    if not run_id:
        return new_run_id(), set()
    if not Path(out).is_file():
        return run_id, set()
    done = {key(record) for record in read_records(out, experiment=experiment, run_id=run_id)}
    return run_id, done


def add_epochs_option(parser: argparse.ArgumentParser) -> None:
    """``--epochs``: epochs per device, the warm-up included (default: :func:`default_epochs`);
    a number that leaves no timed epoch is refused as a usage error."""
    def epochs(text: str) -> int:
        try:
            return check_epochs(int(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument("--epochs", type=epochs, default=None,
                        help=f"epochs per device, the {WARMUP} warm-up epoch included (default "
                             f"{default_epochs(False)}: {WARMUP} warm-up and {REPEATS} timed; quick "
                             f"mode {default_epochs(True)}); at least {WARMUP + 1}")
