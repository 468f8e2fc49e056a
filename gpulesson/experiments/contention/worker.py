"""One training of the contention benchmark, in a process of its own (started by
:mod:`~gpulesson.experiments.contention.measure`): the lesson's CNN, generator and epoch timer
on the first ``--n-images`` of a data file, reported as one JSON line (``fit_start`` and
``fit_end`` are Unix times: the parent tells from them whether the copies overlapped).
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpulesson.experiments.contention.worker",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("data", help="lesson HDF5 data file")
    parser.add_argument("--n-images", type=int, required=True)
    parser.add_argument("--batch-size", type=int, required=True)
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--threads", type=int, default=None,
                        help="framework CPU threads (default: the cores this process may use); "
                             "TensorFlow and PyTorch only")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    import keras

    from gpulesson.experiments.contention.measure import threads_honoured
    from gpulesson.machine.timing import available_cores, set_cpu_threads

    backend = keras.backend.backend()
    threads = None
    if threads_honoured(backend):
        # Before the framework runs anything: TensorFlow fixes its threads at its first operation.
        threads = set_cpu_threads(args.threads)
    elif args.threads is not None:
        parser.error(f"--threads: Keras on {backend} has no per-process CPU thread setting")
    from gpulesson import lesson
    from gpulesson.machine import devices

    train = lesson.HDF5Batches(args.data, "train", args.batch_size, stop=args.n_images,
                               shuffle=True, seed=1)
    keras.utils.set_random_seed(args.seed)
    model = lesson.compile_cnn(lesson.build_cnn())
    timer = lesson.EpochTimer(samples_per_epoch=train.n_images)
    started = time.time()
    model.fit(train, epochs=args.epochs, shuffle=False,
              callbacks=[lesson.DataEpoch(train), timer], verbose=0)
    ended = time.time()
    seen = devices.keras_device()  # after fit: what the framework trained with could see
    print(json.dumps({"epoch_seconds": timer.epoch_seconds, "framework_threads": threads,
                      "backend": backend,
                      "devices_seen": {"device": seen["device"], "gpu_count": seen["gpu_count"]},
                      "cores": available_cores(), "fit_start": started, "fit_end": ended}),
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
