"""The lesson's CNN trained on the stand-in, tested after every epoch."""

import hashlib

import numpy as np

from gpulesson.datasets.synthetic import CHUNK, N_CLASSES, make_synthetic
from gpulesson.experiments import cli
from gpulesson.experiments.calibration import FULL, QUICK, RECORDS, WORKSHOP_EPOCHS
from gpulesson.machine.timing import load_average


def generator_fingerprint(seed: int = 0) -> str:
    """A short hash of the stand-in's first images: it changes whenever the generator does."""
    (x, y), (xt, yt) = make_synthetic(CHUNK, CHUNK, seed=seed, progress=False)
    digest = hashlib.sha256()
    for array in (x, y, xt, yt):
        digest.update(array.tobytes())
    return digest.hexdigest()[:12]


def check_plan(n_train: int, n_test: int, epochs: int, batch_size: int) -> dict:
    """The run's sizes, checked before anything is generated, trained or written."""
    plan = {"n_train": n_train, "n_test": n_test, "epochs": epochs, "batch_size": batch_size}
    for name, value in plan.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a whole number >= 1, not {value!r}")
    if n_train < 20:
        raise ValueError(f"n_train={n_train} is too small: the validation set is its last "
                         "tenth, so use at least 20 images")
    if batch_size > n_train - n_train // 10:
        raise ValueError(f"batch_size={batch_size} is larger than the "
                         f"{n_train - n_train // 10} training images: use a smaller batch")
    return plan


def measure(args, *, run_id, done):
    """The command's one record: the episode's model trained on the stand-in as the episode splits
    it, tested after every epoch; the sizes and device checked before anything is trained."""
    base = QUICK if args.quick else FULL
    try:
        plan = check_plan(**{key: base[key] if getattr(args, key) is None else getattr(args, key)
                             for key in FULL})
    except ValueError as exc:
        cli.refuse(f"error: {exc}. Nothing was measured or written.")
    import keras

    from gpulesson.lesson import EpochTimer, build_cnn, compile_cnn
    from gpulesson.machine.devices import KERAS_DEVICES, keras_device
    from gpulesson.records.compare_plots import confusion_counts

    if args.device == "gpu" and not keras_device()["gpu_count"]:
        cli.refuse("No GPU is visible to Keras: run with --device cpu. Nothing was measured or written.")
    n_train, n_test, epochs, batch_size = plan.values()
    print(f"Calibrating the stand-in: {n_train:,} images (a tenth for validation), {n_test:,} test "
          f"images, {epochs} epochs on the {args.device.upper()}", flush=True)
    data_seed = 0
    (x, y), (x_test, y_test) = make_synthetic(n_train, n_test, seed=data_seed, progress=False)
    cut = n_train - n_train // 10  # as the episode's split_batches
    # Bytes, as the episode's generator gives them: the model scales them.
    tested = {"accuracy": [], "loss": [], "confusion": {}}

    class TestEveryEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            scores = self.model.predict(x_test, batch_size=batch_size, verbose=0)
            predicted = scores.argmax(axis=1)
            chosen = np.clip(scores[np.arange(len(y_test)), y_test], 1e-7, 1.0)
            tested["accuracy"].append(float((predicted == y_test).mean()))
            tested["loss"].append(float(-np.log(chosen).mean()))
            print(f"test accuracy after epoch {epoch + 1}: {tested['accuracy'][-1]:.4f}", flush=True)
            if epoch + 1 in (WORKSHOP_EPOCHS, epochs):
                matrix = confusion_counts(y_test, predicted, N_CLASSES)
                tested["confusion"][str(epoch + 1)] = matrix.tolist()

    load_before = load_average()
    keras.utils.set_random_seed(args.seed)  # the initial weights and the shuffling
    timer = EpochTimer(samples_per_epoch=cut)
    with keras.device(KERAS_DEVICES[args.device]):
        model = compile_cnn(build_cnn())
        history = model.fit(x[:cut], y[:cut], validation_data=(x[cut:], y[cut:]),
                            epochs=epochs, batch_size=batch_size,
                            callbacks=[timer, TestEveryEpoch()], verbose=2)
    yield RECORDS.record(
        run_id=run_id, source="gpulesson.experiments.calibration" + (" --quick" if args.quick else ""),
        device_kind=args.device, n_train=cut, n_validation=n_train - cut, n_test=n_test,
        epochs=epochs, batch_size=batch_size, seed=args.seed, data_seed=data_seed,
        workshop_epochs=WORKSHOP_EPOCHS,
        history={key: [float(v) for v in values] for key, values in history.history.items()},
        test_accuracy_per_epoch=tested["accuracy"], test_loss_per_epoch=tested["loss"],
        confusion=tested["confusion"], epoch_seconds=timer.epoch_seconds,
        training_seconds=timer.summary()["total_seconds"],
        load_average={"start": load_before, "end": load_average()},
        generator=generator_fingerprint(data_seed))
