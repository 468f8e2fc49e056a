"""The one rule every measurement of the lesson follows, and the words that report it (the
classroom's runs follow it too).

**The rule.** Each condition (a device, a pipeline, a setting) is measured :data:`WARMUP` time(s)
first, a warm-up that is recorded but not averaged (compiling, caches, worker start-up), then
at least :data:`REPEATS` timed repeats (epochs or runs). Quick mode may time fewer
(:data:`QUICK_REPEATS`), and says so (:func:`summary_text` names the count). A record keeps
every sample and their summary (:func:`summarise`: median, min, max, n, the warm-up kept
apart); a page shows the median and the range (:func:`summary_text`). The meters that time a
condition are :mod:`gpulesson.machine.timing`'s.

**The words.** :func:`compare` is the only place where two summaries become words ("faster",
"slower", "about as fast", "N× faster"): where their ranges overlap, or where either has too few
repeats to have a range, it says there is no measurable difference, and :func:`rank` puts such
conditions in the same place of a ranking. Pages and figures take their comparison words from
these two functions, so that a sentence never ranks noise. :func:`compare_middle` compares the
middle repeats (:func:`middle`: five or more, without the fastest and the slowest), so that
one stray repeat cannot decide a comparison either way.

**Old records.** Records made before the rule have no summary: :func:`summary_of` builds one
from the samples they hold (e.g. the epochs after the first), so that the pages still build
from them and show what they have (a range over two epochs, or one value and "1 repeat").
"""

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MIN_RANKED = 2  # a summary with fewer samples has no range, so it is never ranked
SUMMARY_KEY = "summary"  # where a record keeps the summary of its main measurement
SAME_WORD = "about as fast as"
NO_DIFFERENCE = "no measurable difference"
REPEATS = 5  # timed repeats of each condition (the rule)
WARMUP = 1  # warm-up repeats before them: recorded, never averaged
QUICK_REPEATS = 2  # quick mode: fewer, and the page or table says how many
MIDDLE_FROM = 5  # from this many repeats on, a comparison reads the middle ones (:func:`middle`)


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
    """The summary of one condition's timed samples; samples and warm-up kept whole for later."""
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
    """A record's summary under ``key``, or one built from an old record's ``samples_key``
    (without a warm-up list, its first sample was the warm-up)."""
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
    """As ``amount`` per second; the median rate is over the median time (what was measured)."""
    def rate(seconds):
        return amount / seconds if seconds else math.inf

    return {"unit": unit, "n": summary["n"], "median": rate(summary["median"]),
            "min": rate(summary["max"]), "max": rate(summary["min"]),
            "samples": [rate(s) for s in summary["samples"]],
            "warmup": [rate(s) for s in summary.get("warmup", [])]}


def scale(summary: Mapping | None, factor: float, unit: str | None = None) -> dict | None:
    """A summary with every value multiplied by ``factor``, in ``unit`` if given; None stays None."""
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
    """``"24.7 s (range 24.6–24.7 s, 2 repeats)"``: a summary as a page shows it."""
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
    """How condition A compares with B: ``ratio``, ``measurable``, ``word`` and the page's ``text``."""

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
    """Condition A against B in words; overlapping ranges or too few samples give "about as fast as"."""
    ratio = (a["median"] / b["median"]) if higher_is_better else (b["median"] / a["median"])
    enough = a["n"] >= MIN_RANKED and b["n"] >= MIN_RANKED
    if not enough or overlap(a, b) or ratio == 1:
        return Comparison(ratio, False, "about as fast as", SAME_WORD)
    word = "faster" if ratio > 1 else "slower"
    size = ratio if ratio > 1 else 1 / ratio
    text = f"{times_text(size)} {word} than" if size >= times_from else f"{word} than"
    return Comparison(ratio, True, word, text)


def rank(summaries: Mapping[str, Mapping], *, higher_is_better: bool = False) -> list[list[str]]:
    """Conditions' names best first, in places of those :func:`compare` cannot tell apart."""
    order = sorted(summaries, key=lambda n: summaries[n]["median"], reverse=higher_is_better)
    places: list[list[str]] = []
    for name in order:
        if places and not compare(summaries[places[-1][0]], summaries[name],
                                  higher_is_better=higher_is_better).measurable:
            places[-1].append(name)
        else:
            places.append([name])
    return places


# --- figures ----------------------------------------------------------------------------------

def draw_spread(ax, positions: Sequence[float], summaries: Sequence[Mapping | None], *,
                horizontal: bool = False, color: str = "black", samples: bool = True,
                scale: float = 1.0) -> None:
    """Draw each summary's range as an error bar at its median, with its samples as dots."""
    drawn = [(p, s) for p, s in zip(positions, summaries, strict=True) if s]
    if not drawn:
        return
    where = [p for p, _ in drawn]
    medians = [s["median"] * scale for _, s in drawn]
    errors = [[(s["median"] - s["min"]) * scale for _, s in drawn],  # below and above
              [(s["max"] - s["median"]) * scale for _, s in drawn]]
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


def middle(summary: dict | None) -> dict | None:
    """``summary`` with the range of its middle repeats (the fastest and the slowest left out)
    from :data:`MIDDLE_FROM` on, so that one stray repeat cannot decide a comparison."""
    if not summary or summary["n"] < MIDDLE_FROM:
        return summary
    kept = sorted(summary["samples"])[1:-1]
    return {**summary, "min": kept[0], "max": kept[-1], "range": "middle"}


def compare_middle(a: dict, b: dict, **options) -> Comparison:
    """:func:`compare` of the middle repeats of two summaries (:func:`middle`)."""
    return compare(middle(a), middle(b), **options)


def fit_progress(n_images: int, epochs: dict) -> str:
    """A fit's progress line after its condition: the rate and the epochs' median and range,
    from a record's ``summary``."""
    return (f"{n_images / epochs['median']:,.0f} img/s, epoch {epochs['median']:.3f} s "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}, {epochs['n']} epochs)")
