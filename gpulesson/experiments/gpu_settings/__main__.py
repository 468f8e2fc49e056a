"""Train the lesson's CNN once per setting and record each epoch, rate and test accuracy.

    KERAS_BACKEND=jax python -m gpulesson.experiments.gpu_settings        # the GPU if visible, else the CPU
    KERAS_BACKEND=jax python -m gpulesson.experiments.gpu_settings --settings default spe bf16

From the lesson's default (its generator on the lesson's HDF5 file, batch 256, float32, one step
per execution), one setting at a time: steps per execution, mixed bfloat16, a larger batch with
the learning rate scaled linearly, the data in RAM, the data on the device, Grain's workers.
Then the target: the settings that helped, fed from the file read once onto the device, and the
same fed from RAM. Every setting trains from the same initial weights for the rule's warm-up and
timed epochs (6; 3 in quick mode) and is evaluated on the test split. The data come from the
settings (``LESSON_DATA``, ``LESSON_QUICK``). One record per setting is appended to ``--out``;
``--run-id`` goes on with an earlier run, skipping the settings it has.
"""

from __future__ import annotations

import argparse

from gpulesson.devices import KERAS_DEVICES as DEVICES
from gpulesson.experiments.common import (
    add_out_option,
    add_run_id_option,
    add_seed_option,
    repeats_for,
    say_measured,
)
from gpulesson.experiments.gpu_settings.records import (
    EXPERIMENT,
    RESULTS_FILE,
    SETTINGS,
    TARGETS,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m gpulesson.experiments.gpu_settings",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices (default: the GPU if one is visible, else the CPU)")
    parser.add_argument("--settings", nargs="+", choices=[*SETTINGS, *TARGETS], default=None,
                        help="settings to measure, in this order (default: all, targets last)")
    parser.add_argument("--quick", action="store_true",
                        help="2 timed epochs (also when LESSON_QUICK=1)")
    add_out_option(parser, RESULTS_FILE)
    add_seed_option(parser)
    add_run_id_option(parser)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from gpulesson.devices import keras_device
    from gpulesson.experiments.common import devices_here
    from gpulesson.experiments.gpu_settings.measure import measure
    from gpulesson.experiments.gpu_settings.page import describe
    from gpulesson.results import append_record, new_run_id, read_records
    from gpulesson.settings import get_settings

    settings = get_settings()
    quick = args.quick or settings.quick
    devices = devices_here(args.devices or (["gpu"] if keras_device()["gpu_count"] else ["cpu"]))
    run_id = args.run_id or new_run_id()
    earlier = (read_records(args.out, experiment=EXPERIMENT, run_id=run_id)
               if args.run_id and args.out.is_file() else [])
    print(settings.describe(), flush=True)
    made = measure(devices=devices, repeats=repeats_for(quick), seed=args.seed,
                   settings=args.settings, run_id=run_id, earlier=earlier,
                   on_record=lambda r: append_record(args.out, r))
    return say_measured(made, args.out, EXPERIMENT, run_id, describe)


if __name__ == "__main__":
    raise SystemExit(main())
