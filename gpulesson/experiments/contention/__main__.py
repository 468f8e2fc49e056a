"""The lesson's CNN on a CPU shared with other work: k trainings at once, or a browser.

    python -m gpulesson.experiments.contention                     # both parts
    python -m gpulesson.experiments.contention --parts copies --copies 1 2 4 --cpu-threads 1 2
    python -m gpulesson.experiments.contention --quick --out my-contention.jsonl

Part "copies": for each number of copies it starts that many identical trainings together, each
a process of its own, and records their epoch times and the load average seen while they ran;
then it repeats each with every number of framework threads per copy given by
``--cpu-threads`` (default: one thread; ``--cpu-threads`` alone: none). Those run only where
the Keras backend takes a per-process thread count (TensorFlow, PyTorch); on JAX they are
skipped, and the note saying so is printed and kept in the run's records.

Part "watched", after the copies: one training of the episode's size in a JupyterLab notebook
open in headless Chromium on this machine, with Keras' progress bar and with one line an
epoch, and the same training with its output going to a file (no browser); see
:mod:`gpulesson.experiments.contention.watched`. Where Chromium, Playwright or JupyterLab is
missing (a cluster's GPU node) it is skipped with a note saying how to add them.

The trainings always run on the CPU: their processes see no GPU. Each condition's record is
appended as soon as it has finished, so a stopped command loses only the condition it was in;
``--run-id`` goes on with an earlier run, measuring only the conditions it lacks. A training
that fails or runs past ``--timeout`` stops the command with its error, and nothing is written
for its condition. Measure on an otherwise quiet machine: other programs would count as one
more copy.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.contention import watched as watched_part
from gpulesson.experiments.contention.measure import (
    BATCH_SIZE,
    COPIES,
    EPOCHS,
    N_IMAGES,
    QUICK_BATCH_SIZE,
    QUICK_EPOCHS,
    QUICK_N_IMAGES,
    TIMEOUT,
    WorkerError,
    keras_backend,
    run_benchmark,
    threads_skipped,
)
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
from gpulesson.experiments.contention.watched import MODES

PARTS = ("copies", "watched")
# The workshop's epochs (the bar's output grows over all of them), at least the rule's repeats.
WATCHED_EPOCHS = max(3, EPOCHS)


COMMAND = cli.Command(
    "contention", __doc__,
    cli.option("--copies", nargs="+", type=int, default=list(COPIES),
               help=f"numbers of trainings at once (default "
                    f"{' '.join(map(str, COPIES))})"),
    cli.option("--cpu-threads", nargs="*", type=int, default=[1],
               help="also run each number of copies with this many framework CPU "
                    "threads per copy (default 1; give none to skip)"),
    cli.quick_default("--n-images", "training images per epoch", f"{N_IMAGES:,}",
                      QUICK_N_IMAGES),
    cli.quick_default("--epochs", "epochs per copy", EPOCHS, QUICK_EPOCHS),
    cli.quick_default("--batch-size", "images per batch", BATCH_SIZE, QUICK_BATCH_SIZE),
    cli.option("--timeout", type=float, default=TIMEOUT,
               help=f"seconds one condition may take, all copies together (default "
                    f"{TIMEOUT:g})"),
    cli.quick("tiny sizes (also when LESSON_QUICK=1), for tests"),
    cli.option("--data-dir", type=Path, default=None,
               help="folder for the data file (default: a temporary folder)"),
    cli.option("--parts", nargs="+", choices=PARTS, default=list(PARTS),
               help="what to measure, each recorded as a run of its own: 'copies', "
                    "k trainings at once; 'watched', one training shown live in "
                    "JupyterLab in Chromium or not (needs Chromium and Playwright) "
                    "(default: both)"),
    cli.quick_default("--watched-n-images", "training images of the watched part",
                      f"{LESSON_EPOCH_IMAGES:,}, the episode's epoch", QUICK_N_IMAGES),
    cli.quick_default("--watched-epochs", "epochs of the watched part",
                      f"{WATCHED_EPOCHS}, the workshop's and the rule's", QUICK_EPOCHS),
    cli.out(RESULTS_FILE), cli.RUN_ID)
_parser = COMMAND.parser


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    quick = args.quick
    n_images = args.n_images or (QUICK_N_IMAGES if quick else N_IMAGES)
    epochs = args.epochs or (QUICK_EPOCHS if quick else EPOCHS)
    batch_size = args.batch_size or (QUICK_BATCH_SIZE if quick else BATCH_SIZE)
    watched_n = args.watched_n_images or (QUICK_N_IMAGES if quick else LESSON_EPOCH_IMAGES)
    watched_epochs = args.watched_epochs or (QUICK_EPOCHS if quick else WATCHED_EPOCHS)
    for name, value in (("--n-images", n_images), ("--epochs", epochs),
                        ("--watched-n-images", watched_n), ("--watched-epochs", watched_epochs),
                        ("--batch-size", batch_size), *(("--copies", k) for k in args.copies),
                        *(("--cpu-threads", t) for t in args.cpu_threads)):
        if value < 1:
            parser.error(f"{name} must be at least 1, not {value}")
    for name, images in (("--n-images", n_images), ("--watched-n-images", watched_n)):
        if batch_size > images:
            parser.error(f"--batch-size {batch_size} is larger than {name} {images}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")

    say = functools.partial(print, flush=True)
    lacking = watched_part.missing() if "watched" in args.parts else []
    if lacking and "copies" not in args.parts:
        print(f"error: {watched_part.skip_note(lacking, skipped=False)} Nothing was measured "
              "or written.",
              file=sys.stderr)
        return 2
    threads, skipped = list(args.cpu_threads), []
    if "copies" in args.parts and threads:
        note = threads_skipped(keras_backend(), threads)
        if note:
            say(f"Note: {note}.")
            threads, skipped = [], [note]
    parts = {}
    for part in PARTS:
        if part in args.parts:
            # One run id per part (a run of its own), or the one given to go on with.
            run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id, condition_key)
            parts[part] = _Part(part, run_id, done, args.out,
                                n_images if part == "copies" else watched_n, batch_size,
                                epochs if part == "copies" else watched_epochs, skipped, say)
    mismatch = next((p.mismatch() for p in parts.values() if p.mismatch()), None)
    if mismatch:
        print(f"error: {mismatch}. Nothing was measured or written.", file=sys.stderr)
        return 2

    current = None
    try:
        if "copies" in parts:
            current = parts["copies"]
            say(f"Run {current.run_id}: {n_images:,} images, batch {batch_size}, {epochs} "
                f"epoch(s) per copy; copies {' '.join(map(str, sorted(set(args.copies))))}"
                + "".join(f"; then {t} thread(s) each" for t in sorted(set(threads)))
                + current.going_on())
            run_benchmark(args.copies, threads=threads, n_images=n_images,
                          batch_size=batch_size, epochs=epochs, timeout=args.timeout,
                          data_dir=args.data_dir, progress=say,
                          done={(k, t) for k, t, w in current.done if w is None},
                          on_condition=current.record)
            current.finish()
        if "watched" in parts and lacking:
            say(watched_part.skip_note(lacking))
        elif "watched" in parts:
            current = parts["watched"]
            say(f"Run {current.run_id}: {watched_n:,} images, batch {batch_size}, "
                f"{watched_epochs} epoch(s), shown: " + "; ".join(MODES) + current.going_on())
            watched_part.run_watched_benchmark(
                n_images=watched_n, batch_size=batch_size, epochs=watched_epochs,
                timeout=args.timeout, data_dir=args.data_dir, progress=say,
                done={w for k, t, w in current.done if w}, on_condition=current.record)
            current.finish()
    except WorkerError as exc:
        kept = (f" The {len(current.written)} condition(s) finished before it are recorded; "
                f"go on with --run-id {current.run_id}." if current and current.written else "")
        print(f"{exc}\nNothing was written to {args.out} for that condition.{kept}",
              file=sys.stderr)
        return 1
    return 0


class _Part:
    """One part's run: what it already has, and each finished condition appended at once."""

    def __init__(self, part, run_id, done, out, n_images, batch_size, epochs, skipped, say):
        self.part, self.run_id, self.out, self.say = part, run_id, out, say
        self.sizes = {"n_images": n_images, "batch_size": batch_size, "epochs": epochs}
        self.done = {key for key in done if (key[2] is None) == (part == "copies")}
        self.skipped = skipped if part == "copies" else []
        self.earlier = self._read() if self.done else []
        alone = find_in(self.earlier, 1, None, BASELINE_MODE if part == "watched" else None)
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

    def going_on(self) -> str:
        return f"; going on: {len(self.done)} condition(s) recorded already" if self.done else ""

    def record(self, condition: dict) -> None:
        from gpulesson.results import append_record

        [record] = make_records([condition], run_id=self.run_id, baseline=self.baseline,
                                skipped=self.skipped, **self.sizes)
        append_record(self.out, record)
        self.written.append(record)
        if condition_key(condition) == (1, None, BASELINE_MODE if self.part == "watched"
                                        else None):
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
