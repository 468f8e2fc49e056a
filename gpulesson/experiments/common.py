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
these two functions, so that a sentence never ranks noise. :func:`compare_middle` compares the
middle repeats (:func:`middle`: five or more, without the fastest and the slowest), so that
one stray repeat cannot decide a comparison either way.

**Old records.** Records made before the rule have no summary: :func:`summary_of` builds one
from the samples they hold (e.g. the epochs after the first), so that the pages still build
from them and show what they have (a range over two epochs, or one value and "1 repeat").

**The meters.** :class:`Budget` holds one condition's epoch times (the warm-up apart) and says
when the rule's repeats are done; :func:`synced_epoch_timer` is the ``fit`` callback that reads
each epoch's time after the device finished it and stops training when the budget is done;
:class:`BusyMeter` records what else the machine did meanwhile (other programs' CPU share, the
load average before and after).

**Figures.** :func:`draw_spread` draws a summary's range as an error bar around its median,
with the samples as small dots, so a figure shows how much the repeats varied.

The summaries, the words and the drawing are defined in :mod:`gpulesson.records.summaries`, so that the
classroom's modules (such as the class's runs, :mod:`gpulesson.classroom.results`)
follow the same rule; this module gives them to the experiments with the rest of the rule.
"""

from __future__ import annotations

import os
import time

from gpulesson.machine.timing import load_average, own_cpu_seconds
from gpulesson.records.summaries import (  # noqa: F401 (the rule and its words, kept here too)
    MIN_RANKED,
    NO_DIFFERENCE,
    QUICK_REPEATS,
    REPEATS,
    SAME_WORD,
    SPREAD_NOTE,
    SUMMARY_KEY,
    WARMUP,
    Comparison,
    as_rate,
    compare,
    compare_middle,
    draw_spread,
    fmt_number,
    middle,
    rank,
    scale,
    summarise,
    summary_of,
    summary_text,
    times_text,
)

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


# --- the meters -------------------------------------------------------------------------------

class Budget:
    """Epoch times of one condition: ``warmup`` epochs, recorded apart, then ``repeats`` timed
    ones. However long they take, all of them are timed (the rule): no clock cuts a condition
    short."""

    def __init__(self, warmup: int, repeats: int):
        self.warmup, self.repeats = warmup, repeats
        self.seconds: list[float] = []

    @property
    def timed(self) -> list[float]:
        return self.seconds[self.warmup:]

    def done(self) -> bool:
        return len(self.timed) >= self.repeats


def synchronise(logs) -> None:
    """Wait until the epoch's work is done on the device: converting the loss that its last
    step computed to a Python number has to wait for it (and, on a GPU, for everything queued
    before it)."""
    for value in (logs or {}).values():
        float(value)


def synced_epoch_timer(budget: Budget):
    """A ``fit`` callback that appends each epoch's wall time to ``budget``, read after the
    device finished the epoch, and stops training when the budget is done."""
    import keras  # only when something is measured

    class SyncedEpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.budget, self._start = budget, None

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)
            self.budget.seconds.append(time.perf_counter() - self._start)
            if self.budget.done():
                self.model.stop_training = True

    return SyncedEpochTimer()


class BusyMeter:
    """How much of the machine's CPU time other programs used while one condition was measured
    (0: the machine was ours; 0.5: half of all cores were busy elsewhere), how many cores the
    measurement itself kept busy (its process and its child processes, such as a reading
    process), and the load average right before and right after. Other programs on the same
    cores slow a CPU measurement down, so every record keeps these. The shares need Linux's
    /proc (None elsewhere)."""

    def __init__(self):
        self.before = load_average()
        self.start = self._sample()

    @staticmethod
    def _sample():
        try:
            with open("/proc/stat") as f:
                fields = [int(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
        busy = (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")
        return busy, own_cpu_seconds(), time.perf_counter()

    def _since_start(self) -> tuple[float, float] | None:
        """(other programs' share of all cores, cores this process and its children kept busy)
        from the start until now, from one sample; None without /proc or time elapsed."""
        end = self._sample()
        if self.start is None or end is None:
            return None
        busy, own, wall = (b - a for a, b in zip(self.start, end, strict=True))
        if wall <= 0:
            return None
        share = (busy - own) / (wall * (os.cpu_count() or 1))
        return round(min(max(share, 0.0), 1.0), 3), round(own / wall, 2)

    def read(self) -> dict:
        """The record's fields (``load_average`` is the one read after, as records made before
        the rule kept it)."""
        other, own = self._since_start() or (None, None)
        after = load_average()
        return {"other_programs_cpu_share": other, "own_cpu_cores": own,
                "load_average": after, "load_average_before": self.before,
                "load_average_after": after}


def fit_progress(n_images: int, epochs: dict) -> str:
    """A fit's progress line after its condition: the rate and the epochs' median and range,
    from a record's ``summary``."""
    return (f"{n_images / epochs['median']:,.0f} img/s, epoch {epochs['median']:.3f} s "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}, {epochs['n']} epochs)")


def markdown_table(head, rows) -> str:
    """A Markdown table of ``rows`` (lists of cell texts) under the column titles ``head``: how
    the experiments' pages and commands show a run."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
