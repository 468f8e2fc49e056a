"""The lesson's CNN trained by k processes at once on one CPU: what sharing the cores costs.

    python -m gpulesson.experiments.contention                     # 1, 2, 3 copies at once
    python -m gpulesson.experiments.contention --copies 1 2 4 --cpu-threads 1 2
    python -m gpulesson.experiments.contention --quick --out my-contention.jsonl

For each number of copies it starts that many identical trainings together, each a process of
its own, and records their epoch times and the load average seen while they ran; then it repeats
each with every number of framework threads per copy given by ``--cpu-threads`` (default: one
thread; ``--cpu-threads`` alone: none). The records of all
conditions are appended once every condition has finished: a copy that fails or runs past
``--timeout`` stops the command with its error, and the results file is left as it was.
Measure on an otherwise quiet machine: other programs would count as one more copy.
"""

from __future__ import annotations

import argparse
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
from gpulesson.experiments.contention.records import RESULTS_FILE, describe, make_records


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
    for name, value in (("--n-images", n_images), ("--epochs", epochs),
                        ("--batch-size", batch_size), *(("--copies", k) for k in args.copies),
                        *(("--cpu-threads", t) for t in args.cpu_threads)):
        if value < 1:
            parser.error(f"{name} must be at least 1, not {value}")
    if batch_size > n_images:
        parser.error(f"--batch-size {batch_size} is larger than --n-images {n_images}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")

    from gpulesson.results import append_record, new_run_id

    print(f"{n_images:,} images, batch {batch_size}, {epochs} epoch(s) per copy; copies "
          f"{' '.join(map(str, sorted(set(args.copies))))}"
          + "".join(f"; then {t} thread(s) each" for t in sorted(set(args.cpu_threads))),
          flush=True)
    try:
        conditions = run_benchmark(args.copies, threads=args.cpu_threads, n_images=n_images,
                                   batch_size=batch_size, epochs=epochs, timeout=args.timeout,
                                   data_dir=args.data_dir,
                                   progress=lambda line: print(line, flush=True))
    except WorkerError as exc:
        print(f"{exc}\nNothing was written to {args.out}.", file=sys.stderr)
        return 1
    run_id = new_run_id()
    records = make_records(conditions, run_id=run_id, n_images=n_images,
                           batch_size=batch_size, epochs=epochs)
    for record in records:
        append_record(args.out, record)
    print(describe(records))
    say_appended(records, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
