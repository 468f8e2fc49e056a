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

**The command line.** Every experiment's command appends its records to a results file
(``--out``), most seed their models' initial weights (``--seed``), measure the CPU and then the
GPU if one is visible unless told which devices, can go on with an earlier run (``--run-id``,
skipping the conditions it has; an id the file lacks starts a run only in the form that
``new_run_id`` gives), and end by saying what they appended. ``--out`` names a ``.jsonl`` file.

**The meters.** :class:`Budget` holds one condition's epoch times (the warm-up apart) and says
when the rule's repeats are done; :func:`synced_epoch_timer` is the ``fit`` callback that reads
each epoch's time after the device finished it and stops training when the budget is done;
:class:`BusyMeter` records what else the machine did meanwhile (other programs' CPU share, the
load average before and after).

**Figures.** :func:`draw_spread` draws a summary's range as an error bar around its median,
with the samples as small dots, so a figure shows how much the repeats varied.

The summaries, the words and the drawing are defined in :mod:`gpulesson.summaries`, so that the
modules at the top of the package (such as the class's runs, :mod:`gpulesson.class_results`)
follow the same rule; this module gives them to the experiments with the rest of the rule.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import time
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
from gpulesson.timing import load_average, own_cpu_seconds

REPEATS = 5  # timed repeats of each condition (the rule)
WARMUP = 1  # warm-up repeats before them: recorded, never averaged
QUICK_REPEATS = 2  # quick mode: fewer, and the page or table says how many


MIDDLE_FROM = 5  # from this many repeats on, a comparison reads the middle ones (:func:`middle`)

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


def middle(summary: dict | None) -> dict | None:
    """``summary`` with the range of its middle repeats, the fastest and the slowest left out,
    when it has at least :data:`MIDDLE_FROM` (the median is the same): compared through it
    (:func:`compare_middle`), one stray repeat, such as a pause in one epoch of five, cannot
    decide a comparison either way. Fewer repeats keep their whole range. Every sample stays in
    the record and in the range the page shows."""
    if not summary or summary["n"] < MIDDLE_FROM:
        return summary
    kept = sorted(summary["samples"])[1:-1]
    return {**summary, "min": kept[0], "max": kept[-1], "range": "middle"}


def compare_middle(a: dict, b: dict, **options) -> Comparison:
    """:func:`compare` of the middle repeats of two summaries (:func:`middle`)."""
    return compare(middle(a), middle(b), **options)


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


# --- the command line ---------------------------------------------------------------------------

DEFAULT_SEED = 42
NEW_RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")  # gpulesson.results.new_run_id's form


def results_file(text: str) -> Path:
    """``--out``'s value: a results file holds JSON lines, so its name ends in ``.jsonl``; any
    other name (a model, a figure, an HDF5 file) would get text appended to it."""
    path = Path(text)
    if path.suffix != ".jsonl":
        raise argparse.ArgumentTypeError(
            f"{text} is not a results file: records are JSON lines, appended to a file whose "
            f"name ends in .jsonl, e.g. --out {path.with_suffix('.jsonl').name}")
    return path


def add_out_option(parser: argparse.ArgumentParser, default: Path) -> None:
    """``--out``: the results file the records are appended to, ``default`` if not given."""
    parser.add_argument("--out", type=results_file, default=default,
                        help=f"results file to append to (default {default})")


def positive_seconds(text: str) -> float:
    """A time limit in seconds, more than 0 (0 or less would skip everything)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 seconds, not {text}: a limit of {text} would skip everything")
    return seconds


def add_seed_option(parser: argparse.ArgumentParser, default: int = DEFAULT_SEED) -> None:
    """``--seed``: the random seed of the initial weights."""
    parser.add_argument("--seed", type=int, default=default,
                        help="random seed of the initial weights")


def default_devices(requested: list[str] | None, gpu_visible) -> list[str]:
    """The devices asked for; if none were, the CPU, then the GPU when one is visible."""
    if requested:
        return list(requested)
    return ["cpu", "gpu"] if gpu_visible else ["cpu"]


def devices_or_refuse(requested: list[str] | None, gpu_visible, framework: str) -> list[str] | None:
    """:func:`default_devices`, saying when the CPU is all there is to record; None, with a
    message on stderr, when a GPU is asked for and ``framework`` sees none."""
    devices = default_devices(requested, gpu_visible)
    if "gpu" in devices and not gpu_visible:
        print(f"No GPU is visible to {framework}: run with --devices cpu, or on a machine with a "
              "GPU.", file=sys.stderr)
        return None
    if requested is None and not gpu_visible:
        print("No GPU visible: recording the CPU run only.")
    return devices


def say_appended(records: list[dict], out: Path, what: str = "record(s)") -> None:
    """Print how many records of which run were appended to ``out``."""
    print(f"Appended {len(records)} {what} of run {records[0]['run_id']} to {out}", flush=True)


def say_measured(made: list[dict], out: Path, experiment: str, run_id: str, describe) -> int:
    """A command's last words: the run's table (``describe`` of the run's records in ``out``)
    and what was appended, or that nothing was left to measure; its exit status, 0."""
    from gpulesson.results import read_records

    if not made:
        print("Nothing left to measure.")
        return 0
    print(describe(read_records(out, experiment=experiment, run_id=run_id)))
    say_appended(made, out)
    return 0


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
    records = read_records(out)
    done = {key(r) for r in records if r.get("experiment") == experiment and r.get("run_id") == run_id}
    known = sorted({r.get("run_id") for r in records} - {None})
    # An id the file lacks: a new run only in new_run_id's form (as tools/reference.py gives it).
    if run_id not in known and not NEW_RUN_ID.fullmatch(run_id):
        listed = ", ".join(known[-5:]) + (f" (the last 5 of {len(known)})" if len(known) > 5 else "")
        print(f"error: --run-id {run_id}: {out} has no run of that id (its runs: "
              f"{listed or 'none'}). Give one of them to go on with it, or leave --run-id out "
              "to start a new run.", file=sys.stderr)
        raise SystemExit(2)
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


def run_each_backend(module: str, backends, options: list[str], *, run_id: str, out: Path,
                     settings: dict | None = None) -> list[str]:
    """Run ``python -m module --backends NAME --run-id RUN --out OUT *options`` once per backend
    (a Keras process has one backend), with ``KERAS_BACKEND`` set, for PyTorch glibc malloc's
    thresholds fixed (:mod:`gpulesson.experiments.allocator`), and ``settings[NAME]`` (a dict
    of environment variables) added; the backends whose process failed."""
    from gpulesson.experiments import allocator

    failed = []
    for backend in backends:
        print(f"--- {backend}", flush=True)
        env = allocator.environment(backend, {**os.environ, "KERAS_BACKEND": backend,
                                              **(settings or {}).get(backend, {})})
        child = [sys.executable, "-m", module, "--backends", backend, "--run-id", run_id,
                 "--out", str(out), *options]
        if subprocess.run(child, env=env).returncode:
            failed.append(backend)
    return failed


def passed_on(args: argparse.Namespace, names) -> list[str]:
    """The options among ``names`` given on this command line, as arguments for a child
    process (``--n-images 1024``, ``--devices cpu gpu``, ``--quick``)."""
    found = []
    for name in names:
        value = getattr(args, name)
        if value is None or value is False or value == []:
            continue
        flag = f"--{name.replace('_', '-')}"
        found += [flag] if value is True else [flag, *map(str, value)] \
            if isinstance(value, list | tuple) else [flag, str(value)]
    return found


def chosen_backends(parser: argparse.ArgumentParser, requested, installed) -> list[str]:
    """The backends asked for (all of ``installed`` if none was); a usage error naming those
    not installed."""
    from gpulesson.devices import backend_installed

    missing = [b for b in requested or [] if not backend_installed(b)]
    if missing:
        parser.error(f"backend(s) {', '.join(missing)} not installed: pip install "
                     f"{' '.join(missing)}, or leave them out")
    return list(requested or installed)


def devices_here(requested) -> list[str]:
    """In a process that measures with its own Keras backend: PyTorch's allocator fixed (set
    already where the command started the process), and the devices to measure, ``requested``
    or :func:`default_devices`; a message and exit status 2 when a GPU is asked for and the
    backend sees none."""
    from gpulesson.devices import keras_device
    from gpulesson.experiments import allocator

    found = keras_device()
    allocator.fix_for(found["backend"])
    devices = default_devices(requested, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing measured. "
              "Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        raise SystemExit(2)
    return devices


def refuse_below_one(parser: argparse.ArgumentParser, args: argparse.Namespace, names) -> None:
    """A usage error for any of the options ``names`` given below 1."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")


def report_backends(out: Path, experiment: str, run_id: str, describe, failed) -> int:
    """After one process per backend: the run's table (``describe`` of its records in ``out``),
    the backends whose process failed; the command's exit status."""
    from gpulesson.results import read_records

    if Path(out).is_file():
        print(describe(read_records(out, experiment=experiment, run_id=run_id)))
    if failed:
        print(f"error: the {', '.join(failed)} process(es) failed (above).", file=sys.stderr)
        return 1
    return 0


def per_backend_command(parser: argparse.ArgumentParser, args: argparse.Namespace, *,
                        module: str, experiment: str, condition, installed, measure_here,
                        passed, settings: dict | None = None) -> int:
    """The command of an experiment measured in one process per Keras backend, after its own
    checks of ``args``: a new run, or ``--run-id``'s, skipping the conditions (``condition`` of
    a record) it has. In the process of the one backend asked for, ``measure_here(args,
    quick=, run_id=, done=)`` appends the records; otherwise the same command runs once per
    backend (those asked for, or ``installed``), with the options named in ``passed`` and
    ``settings`` (:func:`run_each_backend`), and the run's table comes from ``module``'s page."""
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    run_id, done = continue_run(args.out, experiment, args.run_id, condition)
    backends = chosen_backends(parser, args.backends, installed)
    if len(backends) == 1 and os.environ.get("KERAS_BACKEND") == backends[0]:
        made = measure_here(args, quick=quick, run_id=run_id, done=done)
        say_appended(made, args.out) if made else print("Nothing left to measure.")
        return 0
    options = passed_on(args, passed) + (["--quick"] if quick else [])
    failed = run_each_backend(module, backends, options, run_id=run_id, out=args.out,
                              settings=settings)
    describe = importlib.import_module(f"{module}.page").describe
    return report_backends(args.out, experiment, run_id, describe, failed)


def add_size_options(parser: argparse.ArgumentParser, sizes: dict) -> None:
    """``--n-images``, ``--batch-size`` and ``--quick`` of a command whose epoch is ``sizes``:
    ``{"n_images": ..., "batch_size": ..., "quick_n_images": ..., "quick_batch_size": ...}``."""
    parser.add_argument("--n-images", type=int, default=None,
                        help=f"images an epoch (default {sizes['n_images']:,}; --quick "
                             f"{sizes['quick_n_images']:,})")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"default {sizes['batch_size']} (--quick {sizes['quick_batch_size']})")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and 2 timed epochs (also when LESSON_QUICK=1)")


def rule_arguments(args: argparse.Namespace, sizes: dict, *, quick: bool, run_id: str,
                   done: set) -> dict:
    """The keyword arguments of an experiment's ``measure`` for the options of
    :func:`add_size_options`: the epoch's size, the rule's warm-up and repeats, the run, and
    each record appended to ``args.out`` as it is made, with its progress printed."""
    from gpulesson.results import append_record

    size = "quick_" if quick else ""
    return {"n_images": args.n_images or sizes[f"{size}n_images"],
            "batch_size": args.batch_size or sizes[f"{size}batch_size"],
            "repeats": repeats_for(quick), "warmup": WARMUP, "run_id": run_id, "done": done,
            "on_record": lambda r: append_record(args.out, r),
            "progress": lambda line: print(line, flush=True)}
