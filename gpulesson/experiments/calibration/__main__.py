"""How the lesson's CNN learns the synthetic stand-in: accuracy per epoch, overfitting, confusions.

    python -m gpulesson.experiments.calibration          # full size: 45,000 / 5,000 / 10,000, 30 epochs
    python -m gpulesson.experiments.calibration --quick  # a tiny run, for the tests (also LESSON_QUICK=1)

Appends one record to ``--out``.
"""

from __future__ import annotations

import sys

from gpulesson.experiments import cli
from gpulesson.experiments.calibration.measure import FULL, QUICK, CalibrationError, calibrate, check_plan
from gpulesson.experiments.calibration.records import RECORDS, RESULTS_FILE, describe
from gpulesson.records.results import new_run_id

COMMAND = cli.Command(
    "calibration", __doc__,
    cli.quick("a tiny run for tests (also with LESSON_QUICK=1)"),
    cli.option("--epochs", type=int, default=None,
               help=f"epochs (default {FULL['epochs']}; quick {QUICK['epochs']})"),
    cli.option("--n-train", type=int, default=None,
               help=f"training and validation images (default {FULL['n_train']:,})"),
    cli.option("--n-test", type=int, default=None, help=f"test images (default {FULL['n_test']:,})"),
    cli.option("--batch-size", type=int, default=None,
               help=f"images per batch (default {FULL['batch_size']})"),
    cli.option("--device", choices=("cpu", "gpu"), default="cpu",
               help="where to train (default cpu; the accuracies do not depend on it)"),
    cli.out(RESULTS_FILE), cli.SEED)
_parser = COMMAND.parser


def main(argv=None) -> int:
    _, args = COMMAND.parse(argv)
    base = QUICK if args.quick else FULL
    try:
        plan = check_plan(**{key: base[key] if getattr(args, key) is None else getattr(args, key)
                             for key in FULL})
    except CalibrationError as exc:
        print(f"error: {exc}. Nothing was measured or written.", file=sys.stderr)
        return 2
    from gpulesson.machine.devices import KERAS_DEVICES, keras_device
    from gpulesson.records.results import append_record

    if args.device == "gpu" and not keras_device()["gpu_count"]:
        print("No GPU is visible to Keras: run with --device cpu. Nothing was measured or written.",
              file=sys.stderr)
        return 2
    print(f"Calibrating the stand-in: {plan['n_train']:,} images (a tenth for validation), "
          f"{plan['n_test']:,} test images, {plan['epochs']} epochs on the {args.device.upper()}",
          flush=True)
    fields = calibrate(**plan, device=KERAS_DEVICES[args.device], seed=args.seed)
    source = "gpulesson.experiments.calibration" + (" --quick" if args.quick else "")
    record = RECORDS.record(run_id=new_run_id(), source=source, device_kind=args.device, **fields)
    append_record(args.out, record)
    print(describe(record))
    print(f"Appended the record of run {record['run_id']} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
