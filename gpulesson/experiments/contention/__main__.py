"""The lesson's CNN on a CPU shared with other work: k trainings at once, or a browser.

Part "copies": each number of copies started together, then again with each ``--cpu-threads``
per copy where the Keras backend has a per-process thread setting (on JAX they are skipped,
with a note kept in the records). Part "watched": one training in JupyterLab in headless
Chromium and one with no browser, skipped with a note where Chromium, Playwright or JupyterLab
is missing. Each condition is appended as soon as it finishes, so a stopped command loses only
the one it was in; ``--run-id`` goes on with the conditions a run lacks. Measure on an
otherwise quiet machine: other programs would count as one more copy.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.contention import measure
from gpulesson.experiments.contention.page import LESSON_EPOCH_IMAGES
from gpulesson.experiments.contention.records import (
    BASELINE_MODE,
    EXPERIMENT,
    RECORDS,
    RESULTS_FILE,
    condition_key,
    describe,
    find_in,
    make_records,
)

PARTS = ("copies", "watched")
# The workshop's epochs (the bar's output grows over all of them), at least the rule's repeats.
WATCHED_EPOCHS = max(3, measure.EPOCHS)
# Each size's default and its --quick value, in the order they are checked.
SIZES = {"n_images": (measure.N_IMAGES, measure.QUICK_N_IMAGES),
         "epochs": (measure.EPOCHS, measure.QUICK_EPOCHS),
         "watched_n_images": (LESSON_EPOCH_IMAGES, measure.QUICK_N_IMAGES),
         "watched_epochs": (WATCHED_EPOCHS, measure.QUICK_EPOCHS),
         "batch_size": (measure.BATCH_SIZE, measure.QUICK_BATCH_SIZE)}

COMMAND = cli.Command(
    "contention", __doc__,
    cli.option("--copies", nargs="+", type=int, default=list(measure.COPIES),
               help=f"numbers of trainings at once (default "
                    f"{' '.join(map(str, measure.COPIES))})"),
    cli.option("--cpu-threads", nargs="*", type=int, default=[1],
               help="also run each number of copies with this many framework CPU "
                    "threads per copy (default 1; give none to skip)"),
    cli.quick_default("--n-images", "training images per epoch", f"{measure.N_IMAGES:,}",
                      measure.QUICK_N_IMAGES),
    cli.quick_default("--epochs", "epochs per copy", measure.EPOCHS, measure.QUICK_EPOCHS),
    cli.quick_default("--batch-size", "images per batch", measure.BATCH_SIZE,
                      measure.QUICK_BATCH_SIZE),
    cli.option("--timeout", type=float, default=measure.TIMEOUT,
               help=f"seconds one condition may take, all copies together (default "
                    f"{measure.TIMEOUT:g})"),
    cli.quick("tiny sizes (also when LESSON_QUICK=1), for tests"),
    cli.option("--data-dir", type=Path, default=None,
               help="folder for the data file (default: a temporary folder)"),
    cli.option("--parts", nargs="+", choices=PARTS, default=list(PARTS),
               help="what to measure, each recorded as a run of its own: 'copies', "
                    "k trainings at once; 'watched', one training shown live in "
                    "JupyterLab in Chromium or not (needs Chromium and Playwright) "
                    "(default: both)"),
    cli.quick_default("--watched-n-images", "training images of the watched part",
                      f"{LESSON_EPOCH_IMAGES:,}, the episode's epoch", measure.QUICK_N_IMAGES),
    cli.quick_default("--watched-epochs", "epochs of the watched part",
                      f"{WATCHED_EPOCHS}, the workshop's and the rule's", measure.QUICK_EPOCHS),
    cli.out(RESULTS_FILE), cli.RUN_ID)
_parser = COMMAND.parser


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    size = {name: getattr(args, name) or (quick if args.quick else full)
            for name, (full, quick) in SIZES.items()}
    for name, value in (*size.items(), *(("copies", k) for k in args.copies),
                        *(("cpu_threads", t) for t in args.cpu_threads)):
        if value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    for name in ("n_images", "watched_n_images"):
        if size["batch_size"] > size[name]:
            parser.error(f"--batch-size {size['batch_size']} is larger than "
                         f"--{name.replace('_', '-')} {size[name]}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")

    say = functools.partial(print, flush=True)
    lacking = measure.missing() if "watched" in args.parts else []
    if lacking and "copies" not in args.parts:
        print(f"error: {measure.skip_note(lacking, skipped=False)} Nothing was measured "
              "or written.", file=sys.stderr)
        return 2
    threads, skipped = list(args.cpu_threads), []
    if "copies" in args.parts and threads:
        note = measure.threads_skipped(measure.keras_backend(), threads)
        if note:
            say(f"Note: {note}.")
            threads, skipped = [], [note]
    parts = {}
    for part in (p for p in PARTS if p in args.parts):
        # One run id per part (a run of its own), or the one given to go on with.
        run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id, condition_key)
        prefix = "watched_" if part == "watched" else ""
        parts[part] = _Part(part, run_id, done, args.out, skipped, say,
                            n_images=size[f"{prefix}n_images"], batch_size=size["batch_size"],
                            epochs=size[f"{prefix}epochs"])
    mismatch = next((p.mismatch() for p in parts.values() if p.mismatch()), None)
    if mismatch:
        print(f"error: {mismatch}. Nothing was measured or written.", file=sys.stderr)
        return 2

    current = None
    each = {"timeout": args.timeout, "data_dir": args.data_dir, "progress": say}
    try:
        if "copies" in parts:
            current = parts["copies"]
            current.start(f" per copy; copies {' '.join(map(str, sorted(set(args.copies))))}"
                          + "".join(f"; then {t} thread(s) each" for t in sorted(set(threads))))
            measure.run_benchmark(args.copies, threads=threads,
                                  done={(k, t) for k, t, _ in current.done},
                                  on_condition=current.record, **current.sizes, **each)
            current.finish()
        if "watched" in parts and lacking:
            say(measure.skip_note(lacking))
        elif "watched" in parts:
            current = parts["watched"]
            current.start(", shown: " + "; ".join(measure.MODES))
            measure.run_watched_benchmark(done={w for _, _, w in current.done},
                                          on_condition=current.record, **current.sizes, **each)
            current.finish()
    except measure.WorkerError as exc:
        kept = (f" The {len(current.written)} condition(s) finished before it are recorded; "
                f"go on with --run-id {current.run_id}." if current and current.written else "")
        print(f"{exc}\nNothing was written to {args.out} for that condition.{kept}",
              file=sys.stderr)
        return 1
    return 0


class _Part:
    """One part's run: what it has already, and each finished condition appended at once."""

    def __init__(self, part, run_id, done, out, skipped, say, **sizes):
        self.part, self.run_id, self.out, self.say, self.sizes = part, run_id, out, say, sizes
        self.done = {key for key in done if (key[2] is None) == (part == "copies")}
        self.skipped = skipped if part == "copies" else []
        self.alone = (1, None, BASELINE_MODE if part == "watched" else None)
        self.earlier = self._read() if self.done else []
        alone = find_in(self.earlier, *self.alone)
        self.baseline = alone["mean_epoch_seconds"] if alone else None
        self.written = []

    def _read(self) -> list[dict]:
        return RECORDS.read(self.out, run_id=self.run_id, part=self.part)

    def mismatch(self) -> str | None:
        """Why this command cannot go on with the run (other sizes), or None."""
        for record in self.earlier:
            other = {key: record.get(key) for key in self.sizes}
            if other != self.sizes:
                return (f"run {self.run_id} recorded its {self.part} with "
                        + ", ".join(f"{k} {v}" for k, v in other.items())
                        + ", this command asks for "
                        + ", ".join(f"{k} {v}" for k, v in self.sizes.items())
                        + ": give the same sizes, or start a new run")
        return None

    def start(self, what: str) -> None:
        going_on = (f"; going on: {len(self.done)} condition(s) recorded already"
                    if self.done else "")
        self.say(f"Run {self.run_id}: {self.sizes['n_images']:,} images, batch "
                 f"{self.sizes['batch_size']}, {self.sizes['epochs']} epoch(s){what}{going_on}")

    def record(self, condition: dict) -> None:
        from gpulesson.records.results import append_record

        [record] = make_records([condition], run_id=self.run_id, baseline=self.baseline,
                                skipped=self.skipped, **self.sizes)
        append_record(self.out, record)
        self.written.append(record)
        if condition_key(condition) == self.alone:
            self.baseline = record["mean_epoch_seconds"]

    def finish(self) -> None:
        """Print the whole run, read back from the file, and what this command added."""
        whole = self._read()
        if whole:
            self.say(describe(whole))
        if self.written:
            cli.say_appended(self.written, self.out)
        else:
            self.say(f"Run {self.run_id} already had every {self.part} condition: nothing "
                     "measured.")


if __name__ == "__main__":
    raise SystemExit(main())
