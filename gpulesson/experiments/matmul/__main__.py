"""Matrix multiplication on the CPU and on the GPU: latency and GFLOP/s against matrix size.

    python -m gpulesson.experiments.matmul                      # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.matmul --devices cpu gpu
    python -m gpulesson.experiments.matmul --quick --out my-matmul.jsonl

Appends one record per device and precision as it is made (one ``run_id`` for the command), then
prints the run as a table. ``--run-id`` goes on with an earlier run, measuring what it lacks.
"""

from __future__ import annotations

import sys

from gpulesson.experiments import cli
from gpulesson.experiments.matmul import measure as mm
from gpulesson.experiments.matmul.records import EXPERIMENT, RECORDS, RESULTS_FILE, amortised, describe

COMMAND = cli.Command(
    "matmul", __doc__,
    cli.devices("devices to measure, in this order (default: cpu, then gpu if visible)"),
    cli.option("--dtypes", nargs="+", choices=mm.DTYPES, default=list(mm.DTYPES),
               help="precisions to measure (default: all)"),
    cli.option("--sizes", nargs="+", type=int, default=None,
               help=f"matrix sizes n (default on the CPU {' '.join(map(str, mm.SIZES))}, "
                    f"on a GPU up to {mm.GPU_SIZES[-1]}; --quick: {' '.join(map(str, mm.QUICK_SIZES))})"),
    cli.quick_default("--repeats", f"timed calls and windows of calls per size, after {mm.WARMUP} "
                      "recorded warm-up call", mm.REPEATS, mm.QUICK_REPEATS),
    cli.option("--max-seconds", type=cli.positive_seconds, default=mm.MAX_SECONDS,
               help=f"skip sizes whose one call would take longer (default {mm.MAX_SECONDS:g})"),
    cli.quick("small sizes and few repeats (also when LESSON_QUICK=1)"),
    cli.out(RESULTS_FILE), cli.RUN_ID, at_least_one=("repeats",))
_parser = COMMAND.parser


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    try:
        sizes = mm.check_sizes(args.sizes) if args.sizes else (mm.QUICK_SIZES if args.quick else None)
    except ValueError as exc:
        parser.error(str(exc))
    repeats = args.repeats or cli.repeats_for(args.quick)
    from gpulesson.machine.devices import keras_device
    from gpulesson.records.results import append_record

    found = keras_device()
    devices = cli.default_devices(args.devices, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing was measured or "
              "written. Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        return 2
    print(f"Keras backend {found['backend']}; devices: {', '.join(devices)}; sizes: "
          + "; ".join(f"{d} {' '.join(map(str, sizes or mm.sizes_for(d)))}" for d in devices)
          + f"; {repeats} timed calls and windows each", flush=True)
    run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id,
                                    lambda r: (r["device_kind"], r["dtype"], amortised(r)))
    if not all(new for _, _, new in done):
        parser.error(f"run {run_id} in {args.out} was recorded with the older method (one "
                     "synchronised call a size, no throughput): start a new run, without --run-id")
    made = []
    for device in devices:
        for dtype in args.dtypes:
            if (device, dtype, True) in done:
                print(f"{device} {dtype}: recorded in run {run_id} already", flush=True)
                continue
            result = mm.sweep(device, dtype, sizes, repeats=repeats, max_seconds=args.max_seconds,
                              progress=lambda line: print(line, flush=True))
            made.append(RECORDS.record(run_id=run_id, source="gpulesson.experiments.matmul",
                                       repeats=repeats, warmup=mm.WARMUP, **result))
            append_record(args.out, made[-1])
    print(describe(RECORDS.read(args.out, run_id=run_id)))
    if made:
        cli.say_appended(made, args.out, "sweep(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
