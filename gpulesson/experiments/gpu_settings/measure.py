"""Measuring the settings: the lesson's CNN trained once per setting, from the same weights.

Each setting (:data:`~gpulesson.experiments.gpu_settings.records.SETTINGS`) builds the lesson's
CNN (:func:`gpulesson.lesson.build_cnn`) from the same seed, compiles it as
:func:`gpulesson.lesson.compile_cnn` does with the setting's learning rate, precision and
steps per execution, and trains it on the 45,000 training images of the lesson's HDF5 file (its
last tenth is the validation split, not used here) for the rule's warm-up and timed epochs. The
test split is evaluated after the last epoch. Then the target rows combine the settings that
helped (:func:`~gpulesson.experiments.gpu_settings.records.helped`), fed from the device and
from RAM.

Keras is imported when first needed: importing this module imports no framework.
"""

from __future__ import annotations

import time

from gpulesson.experiments.common import IN_ORDER, WARMUP, Budget, BusyMeter, synced_epoch_timer
from gpulesson.experiments.gpu_settings.records import (
    SETTINGS,
    TARGETS,
    helped,
    measurement_record,
    options,
)


def _arrays(path, cut: int):
    """The training images before ``cut`` and their labels, read once from the file; and the
    seconds it took."""
    import h5py

    started = time.perf_counter()
    with h5py.File(path, "r") as f:
        x, y = f["x_train"][:cut], f["y_train"][:cut].astype("int32")
    return (x, y), time.perf_counter() - started


def _feed(chosen: dict, *, path, cut: int, keras_device: str, epochs: int, seed: int):
    """``(fit's keyword arguments, callbacks, extra record fields)`` of a setting's feed."""
    from gpulesson import lesson
    from gpulesson.experiments.feeding import pipelines as fp

    batch, feed = chosen["batch_size"], chosen["feed"]
    if feed == "generator":
        train = lesson.HDF5Batches(path, "train", batch, stop=cut, shuffle=True, seed=seed)
        return {"x": train, **IN_ORDER}, [lesson.DataEpoch(train)], {}
    if feed.startswith("grain-"):
        from gpulesson.lesson.feeding import grain_blocks

        dataset, steps = grain_blocks(path, epochs, batch, seed=seed,
                                      workers=int(feed.split("-")[1]), stop=cut)
        return {"x": dataset, "steps_per_epoch": steps, **IN_ORDER}, [], {}
    arrays, seconds = _arrays(path, cut)
    if feed == "device":
        started = time.perf_counter()
        batches = fp.make_pipeline("device", batch_size=batch, seed=seed,
                                   device_arrays=fp.to_device(*arrays, keras_device))
        seconds += time.perf_counter() - started
        return ({"x": batches, **IN_ORDER}, [],
                {"load_seconds": seconds, **fp.device_method("device")})
    return ({"x": fp.make_pipeline("ram", batch_size=batch, arrays=arrays, seed=seed),
             **IN_ORDER}, [], {"load_seconds": seconds})


def _model(keras_device: str, chosen: dict, seed: int):
    import keras

    from gpulesson import lesson
    from gpulesson.experiments.feeding.measure import precision_policy

    with keras.device(keras_device), precision_policy(chosen["precision"]):
        keras.utils.set_random_seed(seed)
        model = lesson.build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(chosen["learning_rate"]),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=lesson.JIT_COMPILE,
                      steps_per_execution=chosen["steps_per_execution"])
    return model


def measure(*, devices, repeats: int, warmup: int = WARMUP, seed: int = 42, settings=None,
            run_id: str, earlier=(), on_record=None, progress=print) -> list[dict]:
    """Measure every setting (``settings``: default all, then the targets) on each device;
    returns the records, calling ``on_record(record)`` as each is made. Conditions that
    ``earlier`` records of the run have are skipped, and the targets' choice reads them too."""
    import keras

    from gpulesson import lesson
    from gpulesson.data import prepare
    from gpulesson.devices import keras_device_name
    from gpulesson.hdf5 import validate_hdf5
    from gpulesson.lesson.feeding import flops_per_image
    from gpulesson.settings import get_settings

    config = get_settings()
    path = prepare(config)
    n_rows = validate_hdf5(path).n_train
    cut = n_rows - n_rows // 10  # as lesson.split_batches: the last tenth validates
    names = list(settings or [*SETTINGS, *TARGETS])
    earlier, made = list(earlier), []
    done = {(r["device_kind"], r["setting"]) for r in earlier}
    epochs = warmup + repeats
    for device in devices:
        keras_device = keras_device_name(device)
        for name in names:
            if (device, name) in done:
                continue
            combined = helped([*earlier, *made], device) if name in TARGETS else []
            chosen = options(name, combined)
            budget = Budget(warmup, repeats)
            meter = BusyMeter()
            try:
                model = _model(keras_device, chosen, seed)
                fit, callbacks, extra = _feed(chosen, path=path, cut=cut, epochs=epochs,
                                              keras_device=keras_device, seed=seed)
                with keras.device(keras_device):
                    model.fit(**fit, epochs=epochs, verbose=0,
                              callbacks=[synced_epoch_timer(budget), *callbacks])
                    busy = meter.read()
                    test = lesson.HDF5Batches(path, "test", 256)
                    loss, accuracy = model.evaluate(test, verbose=0)
            except Exception as exc:  # one setting the device cannot run: the others still can
                progress(f"{device} {name}: skipped, {type(exc).__name__}: {str(exc)[:200]}")
                continue
            what = (SETTINGS[name][0] if name in SETTINGS else
                    f"{' + '.join(combined) or 'the default settings'}, fed from the "
                    f"{'device (DeviceBatches)' if name == 'target' else 'RAM'}").replace("the RAM", "RAM")
            record = measurement_record(
                budget, run_id=run_id, device=device, setting=name, what=what, chosen=chosen,
                n_images=cut, forward_flops=flops_per_image(model), test_accuracy=accuracy,
                test_loss=loss, data=config.data,
                extra={**extra, **busy, **({"combined": combined} if name in TARGETS else {})})
            made.append(record)
            if on_record:
                on_record(record)
            summary = record["summary"]
            progress(f"{device} {name:10} epoch {summary['median']:.3f} s "
                     f"({summary['min']:.3f}-{summary['max']:.3f}), "
                     f"{record['achieved_tflops']:.3g} TFLOP/s, test accuracy {accuracy:.3f}")
            del model
    return made
