"""Record a CPU-vs-GPU run of the lesson's CNN, with the episode's own code, in a results file.

    LESSON_DATA=synthetic python -m gpulesson.experiments.cnn            # CPU, then GPU if visible
    python -m gpulesson.experiments.cnn --devices gpu --epochs 11 --out my-runs.jsonl

It runs what the notebook of the episode "Training a CNN on the CPU and on the GPU" runs (the
generator, model and training function come from :mod:`gpulesson.lesson`, which is generated
from that episode): same data split, same initial weights on every device, per-epoch times,
evaluation. Each device trains by the lesson's measurement rule
(:mod:`gpulesson.experiments.common`): one warm-up epoch, recorded but not averaged, then five
timed epochs (two in quick mode), whose median and range the pages show; ``--epochs`` counts
both, the warm-up included. Each device's run is appended as one record (sharing a ``run_id``) to ``--out``,
by default the lesson's reference results file, from which the episode's reference figures
and numbers are drawn. The data come from the settings (``LESSON_DATA``, ``LESSON_QUICK``,
``LESSON_DATA_DIR``), as in the notebooks. Any Keras backend works (``KERAS_BACKEND``).
"""

from __future__ import annotations

import argparse
import sys

from gpulesson.devices import KERAS_DEVICES as DEVICES
from gpulesson.experiments.cnn.measure import run_devices
from gpulesson.experiments.cnn.records import EXPERIMENT, RESULTS_FILE, describe
from gpulesson.experiments.common import (
    add_epochs_option,
    add_out_option,
    add_run_id_option,
    add_seed_option,
    continue_run,
    default_devices,
    say_appended,
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices to train on, in this order (default: cpu, then gpu if one is visible)")
    add_epochs_option(parser)
    parser.add_argument("--batch-size", type=int, default=256,
                        help="images per batch (default 256; quick mode: at most 64)")
    add_out_option(parser, RESULTS_FILE)
    add_seed_option(parser)
    add_run_id_option(parser)
    parser.add_argument("--cpu-threads", type=int, default=None,
                        help="CPU threads of TensorFlow or PyTorch (default: the cores this process "
                             "may use); recorded with the run, like XLA and the load average")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cpu_threads is not None and args.cpu_threads < 1:
        parser.error(f"--cpu-threads must be at least 1, not {args.cpu_threads}")
    from gpulesson.timing import set_cpu_threads

    # Before the framework runs anything: TensorFlow fixes its threads at its first operation.
    threads = set_cpu_threads(args.cpu_threads)
    from gpulesson.devices import keras_device
    from gpulesson.results import append_record, read_records
    from gpulesson.settings import get_settings

    settings = get_settings()
    gpus = keras_device()["gpu_count"]
    devices = default_devices(args.devices, gpus)
    if "gpu" in devices and not gpus:
        print("No GPU is visible to Keras: run with --devices cpu, or on a machine with a GPU.",
              file=sys.stderr)
        return 2
    if args.devices is None and not gpus:
        print("No GPU visible: recording the CPU run only.")

    run_id, done = continue_run(args.out, EXPERIMENT, args.run_id, lambda r: r["device_kind"])
    if done:
        print(f"Run {run_id} has {', '.join(sorted(done))} already: "
              + (f"going on with {', '.join(d for d in devices if d not in done)}."
                 if set(devices) - done else "nothing left to record."))
        devices = [d for d in devices if d not in done]
    if not devices:
        return 0
    from gpulesson import lesson

    print(settings.describe())
    print(f"CPU threads: {threads}; XLA (jit_compile): {lesson.JIT_COMPILE}")
    records = run_devices(devices, settings, epochs=args.epochs, batch_size=args.batch_size,
                          seed=args.seed, run_id=run_id,
                          on_record=lambda record: append_record(args.out, record))
    print(describe(read_records(args.out, experiment=EXPERIMENT, run_id=run_id)))
    say_appended(records, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
