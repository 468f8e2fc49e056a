"""Feeding the GPU: training throughput of the lesson's CNN from each input pipeline.

The benchmark's command line: it measures, appends the records, prints the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.common import QUICK_REPEATS
from gpulesson.experiments.feeding import measure as fm
from gpulesson.experiments.feeding import records as fr
from gpulesson.experiments.feeding.page import describe
from gpulesson.records.recordset import check_earlier

EPILOG = (f"Every condition: {fm.WARMUP} recorded warm-up epoch and at least {fm.REPEATS} timed "
          f"ones ({QUICK_REPEATS} with --quick). The reference's CPU part times "
          f"{fm.REFERENCE_CPU_STEPS} batches an epoch (--cpu-max-steps {fm.REFERENCE_CPU_STEPS} "
          f"--classic-max-steps {fm.REFERENCE_CPU_STEPS}): about 6 minutes on an idle 2-core "
          "machine (an extrapolation from a recorded run), several times longer on a busy "
          "one. The settings are the speed ladder's: python -m "
          "gpulesson.experiments.ladder.")

COMMAND = cli.Command(
    "feeding", __doc__,
    cli.devices("devices to measure, in this order (default: cpu, then gpu if visible)"),
    cli.option("--pipelines", nargs="+", choices=list(fr.PIPELINES), default=None,
               help="pipelines to measure (default: all that deliver the right data "
                    "on this Keras backend; the *-workers ones with TensorFlow only)"),
    cli.quick_default("--batch-size", "batch size of the pipeline comparison", fm.BATCH_SIZE,
                      fm.QUICK_BATCH_SIZE),
    cli.quick_default("--n-images", "training images", f"{fr.N_IMAGES:,}", f"{fm.QUICK_N_IMAGES:,}"),
    cli.quick_default("--repeats", "timed epochs of every condition, at least the lesson's rule",
                      f"and least {fm.REPEATS}", QUICK_REPEATS),
    cli.option("--warmup", type=int, default=fm.WARMUP,
               help=f"warm-up epochs, recorded but not counted (default and least "
                    f"{fm.WARMUP})"),
    cli.option("--max-steps", type=int, default=None,
               help="time only the first N batches of each epoch (default: all)"),
    cli.option("--cpu-max-steps", type=int, default=None,
               help="--max-steps for the CPU only (default: --max-steps); the "
                    f"reference uses {fm.REFERENCE_CPU_STEPS}"),
    cli.option("--classic-max-steps", type=int, default=None,
               help="at most N batches an epoch for the (slow) classic pipeline; the "
                    f"reference uses {fm.REFERENCE_CPU_STEPS}"),
    cli.option("--workers", type=int, default=None,
               help="worker processes of the *-workers pipelines, TensorFlow backend "
                    "only (default: half the usable cores, 2 to 8)"),
    cli.option("--chunks", action="store_true",
               help="also time the lesson's generator read alone on the host with "
                    "chunks of 1 and 4 batches, and lzf chunks with h5py's default "
                    "and a 64 MiB chunk cache"),
    cli.quick("tiny sizes (also when LESSON_QUICK=1), for tests"),
    cli.option("--data-dir", type=Path, default=None,
               help="folder for the data files (default: a temporary folder)"),
    cli.out(fr.RESULTS_FILE), cli.RUN_ID,
    at_least_one=("batch_size", "n_images", "repeats", "max_steps", "cpu_max_steps",
                  "classic_max_steps", "workers"), epilog=EPILOG)
_parser = COMMAND.parser


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    quick = args.quick
    options = {name: value if value is not None else (small if quick else default)
               for name, value, small, default in (
                   ("batch_size", args.batch_size, fm.QUICK_BATCH_SIZE, fm.BATCH_SIZE),
                   ("n_images", args.n_images, fm.QUICK_N_IMAGES, fr.N_IMAGES),
                   ("repeats", args.repeats, QUICK_REPEATS, fm.REPEATS))}
    if options["batch_size"] > options["n_images"]:
        parser.error(f"--batch-size {options['batch_size']} is larger than --n-images "
                     f"{options['n_images']}")
    if options["repeats"] < cli.repeats_for(quick):
        parser.error(f"--repeats must be at least {cli.repeats_for(quick)} (the lesson's rule: "
                     f"{fm.REPEATS} timed epochs, {QUICK_REPEATS} with --quick), not "
                     f"{options['repeats']}: make a slow condition smaller with --cpu-max-steps "
                     "or --classic-max-steps instead")
    if args.warmup < fm.WARMUP:
        parser.error(f"--warmup must be at least {fm.WARMUP} (the lesson's rule: a recorded "
                     f"warm-up), not {args.warmup}")

    from gpulesson.machine.devices import cpu_info
    from gpulesson.records.results import append_record

    devices = cli.devices_here(args.devices)  # PyTorch's malloc fixed for every record
    import keras  # after devices_here, which hides CUDA's start-up noise

    backend = keras.backend.backend()
    pipelines = args.pipelines or fr.pipelines_for(backend)
    try:
        fr.check_pipelines(pipelines, backend)
    except ValueError as exc:
        parser.error(str(exc))
    workers = args.workers if args.workers is not None else (
        2 if quick else max(2, min(8, int(cpu_info()["cores_usable"]) // 2)))
    run_id, done = cli.continue_run(args.out, fr.EXPERIMENT, args.run_id, fr.condition)
    earlier = fr.RECORDS.read(args.out, run_id=run_id) if done else []
    try:
        check_earlier(earlier, n_images=options["n_images"], backend=backend)
    except ValueError as exc:
        print(f"error: {exc}. Nothing was measured or written.", file=sys.stderr)
        return 2
    print(f"Run {run_id}: Keras backend {backend}; devices: {', '.join(devices)}; "
          f"{options['n_images']:,} images, batch {options['batch_size']}, "
          f"{options['repeats']} timed epoch(s) after {args.warmup} warm-up"
          + (f"; going on: {len(done)} condition(s) recorded already" if done else ""),
          flush=True)
    made = fm.run_benchmark(
        devices=devices, pipelines=pipelines, warmup=args.warmup,
        max_steps=args.max_steps, cpu_max_steps=args.cpu_max_steps,
        classic_max_steps=args.classic_max_steps,
        workers=workers, chunks=args.chunks, data_dir=args.data_dir, run_id=run_id, earlier=earlier,
        on_record=lambda r: append_record(args.out, r),
        progress=lambda line: print(line, flush=True), **options)
    print(describe(fr.RECORDS.read(args.out, run_id=run_id)))
    if made:
        cli.say_appended(made, args.out)
    else:
        print(f"Run {run_id} has every condition already: nothing appended to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
