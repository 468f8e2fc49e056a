"""One process start of the ladder: the data read once, then each rung of the part not yet
recorded for this start, one record each (:func:`one_start`)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def _cache_files(folder: str | None) -> int:
    return sum(len(files) for _, _, files in os.walk(folder)) if folder and Path(folder).is_dir() else 0


def _data(path, cut: int, keras_device: str, test_batch: int) -> dict:
    from gpulesson.experiments.feeding.pipelines import to_device
    from gpulesson.hdf5 import read_hdf5

    (x, y), (test_x, test_y) = read_hdf5(path, "train", stop=cut), read_hdf5(path, "test")
    y, test = y.astype("int32"), (test_x, test_y.astype("int32"))
    return {"path": path, "cut": cut, "x": x, "y": y, "test_batch": test_batch,
            "device": to_device(x, y, keras_device), "test_device": to_device(*test, keras_device)}


def one_start(args) -> int:
    import jax
    import keras

    from gpulesson.data import prepare
    from gpulesson.devices import keras_device, keras_device_name
    from gpulesson.experiments.cli import devices_here
    from gpulesson.experiments.common import BusyMeter
    from gpulesson.experiments.feeding.pipelines import grain_workers
    from gpulesson.experiments.ladder import measure
    from gpulesson.experiments.ladder.limit import train_limit
    from gpulesson.experiments.ladder.records import (
        RECORDS,
        RUNGS,
        epochs_for,
        limit_options,
        measurement_record,
        rungs_of,
    )
    from gpulesson.hdf5 import validate_hdf5
    from gpulesson.results import append_record
    from gpulesson.settings import get_settings

    if keras.backend.backend() != "jax":
        raise SystemExit("the ladder runs on JAX: set KERAS_BACKEND=jax")
    cache = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if cache:
        jax.config.update("jax_compilation_cache_dir", cache)
    config = get_settings()
    devices = devices_here(args.devices or (["gpu"] if keras_device()["gpu_count"] else ["cpu"]))
    path = prepare(config)
    n_rows = validate_hdf5(path).n_train
    cut = n_rows - n_rows // 10  # as lesson.split_batches: the last tenth validates
    base = config.batch_size(256)
    earlier = RECORDS.read(args.out, run_id=args.run_id)
    done = {RECORDS.key(r) for r in earlier}
    failed = 0
    for device in devices:
        kd = keras_device_name(device)
        data = _data(path, cut, kd, 4 * base)
        for name in args.rungs or rungs_of(args.part):
            if (device, name, args.start) in done:
                continue
            before, began, meter = _cache_files(cache), time.perf_counter(), BusyMeter()
            rung = dict(RUNGS[name])
            if name == "limit+best":  # at the batch and precision of the run's best stream rung
                rung.update(limit_options(earlier))
            epochs = epochs_for(rung, config.quick)
            try:
                if rung["part"] == "limit":
                    options = {**measure.chosen(rung, base, cut),
                               "precision": rung["precision"], "batch": rung["batch"]}
                    watch = measure.EpochWatch(device, cut)
                    model = measure.build(rung, options, kd, args.seed)
                    method = train_limit(name, watch=watch, model=model, options=options,
                                         data=data, epochs=epochs, seed=args.seed)
                    watched = {**watch.fields(), "limit_method": method}
                else:
                    options, watched = measure.train_rung(name, device=device, keras_device=kd,
                                                          data=data, base=base, epochs=epochs,
                                                          seed=args.seed)
            except Exception as exc:  # one rung the device cannot run: the others still can
                print(f"{device} {name}: skipped, {type(exc).__name__}: {str(exc)[:300]}",
                      flush=True)
                failed += 1
                continue
            record = measurement_record(
                run_id=args.run_id, rung=name, start=args.start, device=device, watched=watched,
                chosen=options, n_images=cut, data=config.data,
                extra={"cache": {"files_before": before, "files_added": _cache_files(cache) - before},
                       "rung_wall_seconds": time.perf_counter() - began, "quick": config.quick,
                       **({"grain_workers": grain_workers()}
                          if rung["feed"] == "grain" else {}), **meter.read()})
            append_record(args.out, record)
            print(f"start {args.start} {device} {name:28} first {watched['epoch_seconds'][0]:.2f} s, "
                  f"median {record['median_epoch_seconds']:.3f} s, test accuracy "
                  f"{record['test_accuracy']:.3f}", flush=True)
            keras.backend.clear_session()
    return int(failed > 0)
