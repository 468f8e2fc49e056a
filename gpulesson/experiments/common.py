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

The summaries, the words and the drawing are defined in :mod:`gpulesson.summaries`, so that the
modules at the top of the package (such as the class's runs, :mod:`gpulesson.class_results`)
follow the same rule; this module gives them to the experiments with the rest of the rule.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpulesson.summaries import (  # noqa: F401 (the rule's summaries and words, kept here too)
    MIN_RANKED,
    NO_DIFFERENCE,
    SAME_WORD,
    SPREAD_NOTE,
    SUMMARY_KEY,
    Comparison,
    as_rate,
    best_text,
    compare,
    draw_spread,
    fmt_number,
    overlap,
    rank,
    scale,
    spread_errors,
    summarise,
    summary_of,
    summary_text,
    times_text,
)

REPEATS = 5  # timed repeats of each condition (the rule)
WARMUP = 1  # warm-up repeats before them: recorded, never averaged
QUICK_REPEATS = 2  # quick mode: fewer, and the page or table says how many


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
