"""Profile training steps of the lesson's CNN on each device, and record where their time goes.

    KERAS_BACKEND=jax python -m gpulesson.experiments.profile            # CPU, then GPU if visible
    KERAS_BACKEND=jax python -m gpulesson.experiments.profile --devices gpu --out my-profile.jsonl

Appends one record per device to ``--out``; ``--run-id`` goes on with an earlier run, skipping
the devices it has. Needs the Keras backend JAX (its profiler).
"""

from __future__ import annotations

import sys

from gpulesson.experiments import cli
from gpulesson.experiments.profile.measure import BATCH_SIZE, PROFILE_STEPS
from gpulesson.experiments.profile.records import EXPERIMENT, RESULTS_FILE
from gpulesson.machine.devices import KERAS_DEVICES as DEVICES

QUICK_STEPS = 4

COMMAND = cli.Command(
    "profile", __doc__,
    cli.devices(),
    cli.option("--batch-size", type=int, default=BATCH_SIZE,
               help=f"images per batch (default {BATCH_SIZE}; quick mode: at most 64)"),
    cli.option("--steps", type=int, default=None,
               help=f"batches profiled (default: GPU {PROFILE_STEPS['gpu']}, CPU "
                    f"{PROFILE_STEPS['cpu']}; quick mode {QUICK_STEPS})"),
    cli.quick("2 timed epochs and 4 profiled steps (also when LESSON_QUICK=1)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID, at_least_one=("batch_size", "steps"))
_parser = COMMAND.parser


def main(argv=None) -> int:
    _, args = COMMAND.parse(argv)
    import keras

    if keras.backend.backend() != "jax":
        print("The profile reads JAX's profiler: run it with KERAS_BACKEND=jax.", file=sys.stderr)
        return 2
    from gpulesson.datasets.settings import get_settings
    from gpulesson.experiments.profile.measure import measure
    from gpulesson.experiments.profile.page import describe
    from gpulesson.records.results import append_record

    devices = cli.devices_here(args.devices)
    run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id, lambda r: r["device_kind"])
    steps = args.steps or (QUICK_STEPS if args.quick else None)
    print(get_settings().describe(), flush=True)
    made = measure(devices=devices, batch_size=args.batch_size, repeats=cli.repeats_for(args.quick),
                   seed=args.seed, steps=dict.fromkeys(DEVICES, steps) if steps else None,
                   run_id=run_id, done=done, on_record=lambda r: append_record(args.out, r))
    return cli.say_measured(made, args.out, EXPERIMENT, run_id, describe)


if __name__ == "__main__":
    raise SystemExit(main())
