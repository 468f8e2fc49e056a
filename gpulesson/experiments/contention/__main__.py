"""The lesson's CNN on a CPU shared with other work: k trainings at once.

Each number of copies started together, then again with each ``--cpu-threads`` per copy where
the Keras backend has a per-process thread setting (on JAX they are skipped, with a note kept
in the records). Each condition is appended as soon as it finishes, so a stopped command loses
only the one it was in; ``--run-id`` goes on with the conditions a run lacks. Measure on an
otherwise quiet machine: other programs would count as one more copy.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.contention import measure
from gpulesson.experiments.contention.records import (
    EXPERIMENT,
    RECORDS,
    RESULTS_FILE,
    condition_key,
    describe,
    find_in,
    make_records,
)

# Each size's default and its --quick value, in the order they are checked.
SIZES = {"n_images": (measure.N_IMAGES, measure.QUICK_N_IMAGES),
         "epochs": (measure.EPOCHS, measure.QUICK_EPOCHS),
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
    # Still accepted: the stage rehearsal's arguments name the part.
    cli.option("--parts", nargs="+", choices=("copies",), default=["copies"],
               help="what to measure: 'copies', k trainings at once (the only part)"),
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
    if size["batch_size"] > size["n_images"]:
        parser.error(f"--batch-size {size['batch_size']} is larger than "
                     f"--n-images {size['n_images']}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")

    say = functools.partial(print, flush=True)
    threads, skipped = list(args.cpu_threads), []
    if threads:
        note = measure.threads_skipped(measure.keras_backend(), threads)
        if note:
            say(f"Note: {note}.")
            threads, skipped = [], [note]
    run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id, condition_key)
    run = _Run(run_id, done, args.out, skipped, **size)
    mismatch = run.mismatch()
    if mismatch:
        print(f"error: {mismatch}. Nothing was measured or written.", file=sys.stderr)
        return 2

    copies = " ".join(map(str, sorted(set(args.copies))))
    going_on = f"; going on: {len(run.done)} condition(s) recorded already" if run.done else ""
    say(f"Run {run_id}: {size['n_images']:,} images, batch {size['batch_size']}, "
        f"{size['epochs']} epoch(s) per copy; copies {copies}"
        + "".join(f"; then {t} thread(s) each" for t in sorted(set(threads))) + going_on)
    try:
        measure.run_benchmark(args.copies, threads=threads, done=run.done,
                              on_condition=run.record, timeout=args.timeout,
                              data_dir=args.data_dir, progress=say, **size)
    except measure.WorkerError as exc:
        kept = (f" The {len(run.written)} condition(s) finished before it are recorded; "
                f"go on with --run-id {run_id}." if run.written else "")
        print(f"{exc}\nNothing was written to {args.out} for that condition.{kept}",
              file=sys.stderr)
        return 1
    whole = run.read()
    if whole:
        say(describe(whole))
    if run.written:
        cli.say_appended(run.written, args.out)
    else:
        say(f"Run {run_id} already had every copies condition: nothing measured.")
    return 0


class _Run:
    """The run's records so far, and each finished condition appended at once."""

    def __init__(self, run_id, done, out, skipped, **sizes):
        self.run_id, self.out, self.skipped, self.sizes = run_id, out, skipped, sizes
        # The (copies, threads) recorded already; a former watched part's records do not count.
        self.done = {(k, t) for k, t, watched in done if watched is None}
        self.earlier = self.read() if self.done else []
        alone = find_in(self.earlier, 1, None)
        self.baseline = alone["mean_epoch_seconds"] if alone else None
        self.written = []

    def read(self) -> list[dict]:
        return RECORDS.read(self.out, run_id=self.run_id, part="copies")

    def mismatch(self) -> str | None:
        """Why this command cannot go on with the run (other sizes), or None."""
        for record in self.earlier:
            other = {key: record.get(key) for key in self.sizes}
            if other != self.sizes:
                return (f"run {self.run_id} recorded its copies with "
                        + ", ".join(f"{k} {v}" for k, v in other.items())
                        + ", this command asks for "
                        + ", ".join(f"{k} {v}" for k, v in self.sizes.items())
                        + ": give the same sizes, or start a new run")
        return None

    def record(self, condition: dict) -> None:
        from gpulesson.records.results import append_record

        [record] = make_records([condition], run_id=self.run_id, baseline=self.baseline,
                                skipped=self.skipped, **self.sizes)
        append_record(self.out, record)
        self.written.append(record)
        if (condition["copies"], condition["threads"]) == (1, None):
            self.baseline = record["mean_epoch_seconds"]


if __name__ == "__main__":
    raise SystemExit(main())
