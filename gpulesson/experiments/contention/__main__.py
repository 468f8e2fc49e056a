"""The lesson's CNN on a CPU shared with other work: k trainings at once, or a browser.

    python -m gpulesson.experiments.contention                     # both parts
    python -m gpulesson.experiments.contention --parts copies --copies 1 2 4 --cpu-threads 1 2
    python -m gpulesson.experiments.contention --quick --out my-contention.jsonl

Part "copies": for each number of copies it starts that many identical trainings together, each
a process of its own, and records their epoch times and the load average seen while they ran;
then it repeats each with every number of framework threads per copy given by
``--cpu-threads`` (default: one thread; ``--cpu-threads`` alone: none).

Part "watched": one training of the episode's size in a JupyterLab notebook open in headless
Chromium on this machine, with Keras' progress bar and with one line an epoch, and the same
training with its output going to a file (no browser); see
:mod:`gpulesson.experiments.contention.watched`.

Each part's records are appended as one run once all its conditions have finished: a training
that fails or runs past ``--timeout`` stops the command with its error, and the results file is
left as it was. Measure on an otherwise quiet machine: other programs would count as one more
copy.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from gpulesson.experiments.cli import add_out_option, say_appended
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
    run_benchmark,
)
from gpulesson.experiments.contention.page import LESSON_EPOCH_IMAGES
from gpulesson.experiments.contention.records import RESULTS_FILE, describe, make_records
from gpulesson.experiments.contention.watched import MODES, run_watched_benchmark

PARTS = ("copies", "watched")
WATCHED_EPOCHS = 3  # the workshop's epochs: the bar's output grows over all of them


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gpulesson.experiments.contention",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--copies", nargs="+", type=int, default=list(COPIES),
                        help=f"numbers of trainings at once (default "
                             f"{' '.join(map(str, COPIES))})")
    parser.add_argument("--cpu-threads", nargs="*", type=int, default=[1],
                        help="also run each number of copies with this many framework CPU "
                             "threads per copy (default 1; give none to skip)")
    parser.add_argument("--n-images", type=int, default=None,
                        help=f"training images per epoch (default {N_IMAGES:,}; --quick: "
                             f"{QUICK_N_IMAGES})")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"epochs per copy (default {EPOCHS}; --quick: {QUICK_EPOCHS})")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"images per batch (default {BATCH_SIZE}; --quick: "
                             f"{QUICK_BATCH_SIZE})")
    parser.add_argument("--timeout", type=float, default=TIMEOUT,
                        help=f"seconds one condition may take, all copies together (default "
                             f"{TIMEOUT:g})")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (also when LESSON_QUICK=1), for tests")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder for the data file (default: a temporary folder)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="what to measure, each recorded as a run of its own: 'copies', "
                             "k trainings at once; 'watched', one training shown live in "
                             "JupyterLab in Chromium or not (needs Chromium and Playwright) "
                             "(default: both)")
    parser.add_argument("--watched-n-images", type=int, default=None,
                        help=f"training images of the watched part (default {LESSON_EPOCH_IMAGES:,}, "
                             f"the episode's epoch; --quick: {QUICK_N_IMAGES})")
    parser.add_argument("--watched-epochs", type=int, default=None,
                        help=f"epochs of the watched part (default {WATCHED_EPOCHS}, the "
                             f"workshop's; --quick: {QUICK_EPOCHS + 1})")
    add_out_option(parser, RESULTS_FILE)
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    n_images = args.n_images or (QUICK_N_IMAGES if quick else N_IMAGES)
    epochs = args.epochs or (QUICK_EPOCHS if quick else EPOCHS)
    batch_size = args.batch_size or (QUICK_BATCH_SIZE if quick else BATCH_SIZE)
    watched_n = args.watched_n_images or (QUICK_N_IMAGES if quick else LESSON_EPOCH_IMAGES)
    watched_epochs = args.watched_epochs or (QUICK_EPOCHS + 1 if quick else WATCHED_EPOCHS)
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
    runs = []
    try:
        if "copies" in args.parts:
            say(f"{n_images:,} images, batch {batch_size}, {epochs} epoch(s) per copy; copies "
                f"{' '.join(map(str, sorted(set(args.copies))))}"
                + "".join(f"; then {t} thread(s) each" for t in sorted(set(args.cpu_threads))))
            conditions = run_benchmark(args.copies, threads=args.cpu_threads,
                                       n_images=n_images, batch_size=batch_size,
                                       epochs=epochs, timeout=args.timeout,
                                       data_dir=args.data_dir, progress=say)
            runs.append((conditions, n_images, epochs))
        if "watched" in args.parts:
            say(f"{watched_n:,} images, batch {batch_size}, {watched_epochs} epoch(s), shown: "
                + "; ".join(MODES))
            conditions = run_watched_benchmark(n_images=watched_n, batch_size=batch_size,
                                               epochs=watched_epochs, timeout=args.timeout,
                                               data_dir=args.data_dir, progress=say)
            runs.append((conditions, watched_n, watched_epochs))
    except WorkerError as exc:
        print(f"{exc}\nNothing was written to {args.out}.", file=sys.stderr)
        return 1
    from gpulesson.results import append_record, new_run_id

    for conditions, images, n_epochs in runs:
        records = make_records(conditions, run_id=new_run_id(), n_images=images,
                               batch_size=batch_size, epochs=n_epochs)
        for record in records:
            append_record(args.out, record)
        say(describe(records))
        say_appended(records, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
