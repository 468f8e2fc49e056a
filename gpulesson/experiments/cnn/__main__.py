"""Record a CPU-vs-GPU run of the lesson's CNN, with the episode's own code, in a results file.

Each device trains, then predicts. Two experiments in one command (the training's records and
the prediction's, in one file), so it keeps a ``__main__`` of its own: a run continued with
``--run-id`` measures only the parts and devices it lacks, on the data it was measured on.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.cnn import inference
from gpulesson.experiments.cnn.measure import run_devices
from gpulesson.experiments.cnn.records import EXPERIMENT, RECORDS, RESULTS_FILE, describe
from gpulesson.records.results import append_record, read_records

PARTS = ("training", "inference")

COMMAND = cli.Command(
    "cnn", __doc__,
    cli.devices("devices to train on, in this order (default: cpu, then gpu if one is visible)"),
    cli.option("--parts", nargs="+", choices=PARTS, default=list(PARTS),
               help="what to measure on each device (default: both): the training, and the "
                    "prediction (throughput and latency)"),
    cli.EPOCHS,
    cli.option("--batch-size", type=int, default=256,
               help="images per batch (default 256; quick mode: at most 64)"),
    cli.out(RESULTS_FILE), cli.SEED, cli.RUN_ID,
    cli.option("--cpu-threads", type=int, default=None,
               help="CPU threads of TensorFlow or PyTorch (default: the cores this process may "
                    "use); recorded with the run, like XLA and the load average"),
    at_least_one=("batch_size", "cpu_threads"))
_parser = COMMAND.parser


def _left(out, experiment: str, run_id, devices) -> tuple[str, list[str]]:
    """``(run id, devices)``: those of ``devices`` the run has no ``experiment`` record of,
    said aloud when some are done."""
    run_id, done = cli.continue_run(out, experiment, run_id, lambda r: r["device_kind"])
    if done:
        left = [d for d in devices if d not in done]
        print(f"Run {run_id} has {experiment} on {', '.join(sorted(done))} already: "
              + (f"going on with {', '.join(left)}." if left else "nothing left to record."))
        return run_id, left
    return run_id, list(devices)


def _other_data(out, run_id, data: str) -> str | None:
    """The data of the run ``run_id`` in ``out`` when they are not ``data``, else None."""
    if not run_id or not Path(out).is_file():
        return None
    found = {r.get("data") for r in read_records(out, run_id=run_id)} - {data, None}
    return sorted(found)[0] if found else None


def main(argv=None) -> int:
    parser, args = COMMAND.parse(argv)
    cli.refuse_unwritable(parser, args.out, "--out")
    from gpulesson.machine.timing import set_cpu_threads

    # Before the framework runs anything: TensorFlow fixes its threads at its first operation.
    threads = set_cpu_threads(args.cpu_threads)
    from gpulesson.datasets.settings import get_settings
    from gpulesson.machine.devices import keras_device

    settings = get_settings()
    gpus = keras_device()["gpu_count"]
    devices = cli.devices_or_refuse(args.devices, gpus, "Keras")
    if devices is None:
        return 2

    mismatch = _other_data(args.out, args.run_id, settings.data)
    if mismatch:
        print(f"Run {args.run_id} was measured on the data {mismatch!r}, not {settings.data!r}: "
              f"set LESSON_DATA={mismatch} (and LESSON_QUICK as then) to go on with it.",
              file=sys.stderr)
        return 2
    run_id, train = _left(args.out, EXPERIMENT, args.run_id, devices)
    run_id, predict = _left(args.out, inference.EXPERIMENT, run_id, devices)
    train = train if "training" in args.parts else []
    predict = predict if "inference" in args.parts else []
    if not train and not predict:
        return 0
    from gpulesson import lesson

    print(settings.describe())
    print(f"CPU threads: {threads}; XLA (jit_compile): {lesson.JIT_COMPILE}")
    appended, keep = [], functools.partial(append_record, args.out)
    if train:
        appended += run_devices(train, settings, epochs=args.epochs, batch_size=args.batch_size,
                                seed=args.seed, run_id=run_id, on_record=keep)
        print(describe(RECORDS.read(args.out, run_id=run_id)))
    if predict:
        appended += inference.measure_inference(predict, settings, seed=args.seed,
                                                run_id=run_id, on_record=keep)
        print(inference.describe(inference.RECORDS.read(args.out, run_id=run_id)))
    cli.say_appended(appended, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
