"""A small MLP on the CPU and on the GPU, and a sweep of batch size x layer width.

    python -m gpulesson.experiments.small_models              # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.small_models --devices cpu gpu
    python -m gpulesson.experiments.small_models --parts sweep --batch-sizes 32 4096 \\
        --widths 16 4096

Checks everything asked for before measuring anything.
"""

from __future__ import annotations

import functools
import sys

from gpulesson.experiments import cli
from gpulesson.experiments.small_models import measure
from gpulesson.experiments.small_models.records import (
    EXPERIMENT,
    PARTS,
    RECORDS,
    RESULTS_FILE,
    SmallModelsError,
    describe_comparison,
    sweep_table,
)
from gpulesson.records.results import append_record

COMMAND = cli.Command(
    "small_models", __doc__,
    cli.option("--devices", nargs="+", default=None, metavar="DEVICE",
               help="cpu, gpu or both, in this order (default: cpu, then gpu if one is visible)"),
    cli.option("--parts", nargs="+", default=list(PARTS), metavar="PART",
               help="comparison (breast-cancer MLP; needs scikit-learn), sweep, or both (default)"),
    cli.option("--batch-sizes", nargs="+", type=int, default=None, metavar="N",
               help=f"sweep batch sizes (default {' '.join(map(str, measure.GRID['batch_sizes']))})"),
    cli.option("--widths", nargs="+", type=int, default=None, metavar="N",
               help=f"sweep layer widths (default {' '.join(map(str, measure.GRID['widths']))})"),
    cli.option("--rows", type=int, default=None,
               help=f"random rows per sweep epoch, at least {measure.MIN_BATCHES} batches "
                    f"(default {measure.GRID['n_rows']})"),
    cli.option("--epochs", type=int, default=None,
               help=f"epochs per sweep cell, the first not timed (default {measure.GRID['epochs']})"),
    cli.quick("a tiny run for tests (also with LESSON_QUICK=1)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID)
_parser = COMMAND.parser


def _plan(args) -> dict:
    unknown = [p for p in args.parts if p not in PARTS]
    if unknown:
        raise SmallModelsError(f"unknown part(s) {', '.join(unknown)}: use {' and/or '.join(PARTS)}")
    if "comparison" in args.parts:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise SmallModelsError(
                "scikit-learn is not installed, and the comparison on the breast-cancer data needs it: "
                "pip install scikit-learn==1.9.1, or record only the sweep with --parts sweep") from None
    base = measure.QUICK_GRID if args.quick else measure.GRID
    grid = measure.check_grid(args.batch_sizes or base["batch_sizes"], args.widths or base["widths"],
                              base["n_rows"] if args.rows is None else args.rows,
                              base["epochs"] if args.epochs is None else args.epochs)
    return {"parts": [p for p in PARTS if p in args.parts], "grid": grid,
            "comparison": measure.QUICK_COMPARISON if args.quick else measure.COMPARISON}


def main(argv=None) -> int:
    _, args = COMMAND.parse(argv)
    from gpulesson.machine.devices import keras_device

    quick = args.quick
    try:
        plan = _plan(args)
        gpus = keras_device()["gpu_count"]
        devices = measure.check_devices(cli.default_devices(args.devices, gpus), gpus)
    except SmallModelsError as exc:
        print(f"error: {exc}. Nothing was measured or written.", file=sys.stderr)
        return 2
    if args.devices is None and not gpus:
        print(f"{measure.SKIPPED_GPU}: recording the CPU only.")
    run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id, measure.condition)
    source = "gpulesson.experiments.small_models" + (" --quick" if quick else "")
    print(f"Run {run_id}: {', '.join(plan['parts'])} on {', '.join(devices)}"
          + (" (quick mode)" if quick else "")
          + (f"; going on: {len(done)} condition(s) recorded already" if done else ""), flush=True)
    shared = {"run_id": run_id, "seed": args.seed, "source": source, "done": done,
              "on_record": functools.partial(append_record, args.out)}

    for part in plan["parts"]:
        if part == "comparison":
            records = measure.run_comparison(devices, settings=plan["comparison"], **shared)
        else:
            records = measure.sweep(devices, **plan["grid"], **shared,
                                    progress=lambda line: print(line, flush=True))
        whole = RECORDS.read(args.out, run_id=run_id, part=part)
        if whole:
            print(describe_comparison(whole) if part == "comparison" else sweep_table(whole))
        if records:
            cli.say_appended(records, args.out, f"{part} record(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
