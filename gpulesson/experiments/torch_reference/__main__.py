"""Record a CPU-vs-GPU run of the PyTorch episode's CNN, with the episode's own code, in a results file.

Each device's record is appended as soon as it is done; ``--run-id`` goes on with an earlier run,
training only on the devices it lacks, and the summary printed is the whole run's.
"""

from __future__ import annotations

import importlib.util
import sys

from gpulesson.experiments import cli
from gpulesson.experiments.cnn import describe
from gpulesson.experiments.recordset import check_earlier
from gpulesson.experiments.torch_reference.measure import DEVICES, INSTALL, prepare, run_devices
from gpulesson.experiments.torch_reference.records import EXPERIMENT, RECORDS, RESULTS_FILE

FULL_BATCH_SIZE = 128

COMMAND = cli.Command(
    "torch_reference", __doc__,
    cli.devices("devices to train on, in this order (default: cpu, then gpu if one is visible)",
                choices=DEVICES),
    cli.EPOCHS,
    cli.option("--batch-size", type=int, default=FULL_BATCH_SIZE,
               help=f"images per batch (default {FULL_BATCH_SIZE}; quick mode: at most 64)"),
    cli.option("--threads", type=int, default=None,
               help="CPU threads for PyTorch (default: PyTorch's choice)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID)
_parser = COMMAND.parser


def main(argv=None) -> int:
    _, args = COMMAND.parse(argv)
    if importlib.util.find_spec("torch") is None:
        print(f"PyTorch is not installed: {INSTALL}", file=sys.stderr)
        return 2
    import torch

    from gpulesson.datasets.settings import get_settings

    if args.threads:
        torch.set_num_threads(args.threads)
    gpus = torch.cuda.is_available()
    devices = cli.devices_or_refuse(args.devices, gpus, "PyTorch")
    if devices is None:
        return 2

    run_id, done = cli.continue_run(args.out, EXPERIMENT, args.run_id,
                                    lambda record: record["device_kind"])

    def whole_run() -> list[dict]:
        return RECORDS.read(args.out, run_id=run_id)

    settings = get_settings()
    # The rule: one warm-up epoch, then the timed ones (fewer in quick mode), unless --epochs.
    epochs = cli.default_epochs(settings.quick) if args.epochs is None else args.epochs
    if done:
        left = [d for d in devices if d not in done]
        print(f"Run {run_id} has {', '.join(sorted(done))} already: "
              + (f"going on with {', '.join(left)}." if left else "nothing left to record."))
        devices = left
        if not devices:
            print(describe(whole_run(), full_epochs=epochs))
            return 0
    train_set, test_set, data, initial_state = prepare(settings, args.seed)
    batch_size = settings.batch_size(args.batch_size)
    try:
        check_earlier(whole_run() if done else [], data=data, n_train=len(train_set),
                      batch_size=batch_size, epochs=epochs)
    except ValueError as exc:
        print(f"error: {exc}. Nothing was trained or written.", file=sys.stderr)
        return 2
    print(f"Run {run_id}: {len(train_set):,} training and {len(test_set):,} test images; "
          f"{epochs} epochs of batch size {batch_size}; PyTorch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU threads", flush=True)

    records = run_devices(devices, initial_state, train_set, test_set, epochs,
                          batch_size=batch_size, data=data, run_id=run_id, out=args.out)
    print(describe(whole_run(), full_epochs=epochs))
    cli.say_appended(records, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
