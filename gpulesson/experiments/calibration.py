"""How the lesson's CNN learns the synthetic stand-in: accuracy per epoch, overfitting, confusions.

    python -m gpulesson.experiments.calibration          # full size: 45,000 / 5,000 / 10,000, 30 epochs
    python -m gpulesson.experiments.calibration --quick  # a tiny run, for the tests (also LESSON_QUICK=1)

The stand-in (:mod:`gpulesson.synthetic`) is meant to behave like CIFAR-10 with the lesson's CNN:
a test accuracy between :data:`TARGET_ACCURACY` after the workshop's :data:`WORKSHOP_EPOCHS`
epochs, overfitting within 30 epochs (the validation loss turns up while the training accuracy
keeps rising), and mistakes mostly between the two classes of a look-alike pair. This command
measures that with the episode's own model (:func:`gpulesson.lesson.build_cnn` and
:func:`gpulesson.lesson.compile_cnn`), trained on in-memory arrays split as the episode splits
its file (the last tenth of the training images is the validation set); after every epoch it
also predicts the test images. It appends one record to ``--out`` (default
:data:`RESULTS_FILE`): the history, the test accuracy and loss per epoch, the confusion matrices
after the workshop's epochs and after the last, the machine, versions, load average and date,
and a fingerprint of the generator, so that a changed stand-in shows that the record is stale.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

from gpulesson.experiments.common import add_out_option, add_seed_option
from gpulesson.results import (
    NOT_RECORDED,
    RESULTS_DIR,
    data_label,
    duration,
    hardware,
    make_record,
    new_run_id,
)
from gpulesson.timing import load_average

EXPERIMENT = "standin-calibration"
RESULTS_FILE = RESULTS_DIR / f"{EXPERIMENT}.jsonl"
WORKSHOP_EPOCHS = 3  # the episode trains this many epochs
TARGET_ACCURACY = (0.45, 0.70)  # test accuracy after WORKSHOP_EPOCHS, like CIFAR-10's
FULL = {"n_train": 50_000, "n_test": 10_000, "epochs": 30, "batch_size": 256}
QUICK = {"n_train": 2_000, "n_test": 500, "epochs": 2, "batch_size": 64}
FIGURES = ("calibration-learning-curves.svg", "calibration-confusion.svg")
FIGURE_COMMAND = "python fig/05-cpu-vs-gpu/calibration.py"


class CalibrationError(ValueError):
    """An option that cannot give a calibration run; the message says what to use."""


def generator_fingerprint(seed: int = 0) -> str:
    """A short hash of the stand-in's first images: it changes whenever the generator does."""
    from gpulesson.synthetic import CHUNK, make_synthetic

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
            raise CalibrationError(f"{name} must be a whole number >= 1, not {value!r}")
    if n_train < 20:
        raise CalibrationError(f"n_train={n_train} is too small: the validation set is its last "
                               "tenth, so use at least 20 images")
    if batch_size > n_train - n_train // 10:
        raise CalibrationError(f"batch_size={batch_size} is larger than the "
                               f"{n_train - n_train // 10} training images: use a smaller batch")
    return plan




def calibrate(n_train, n_test, epochs, batch_size, *, device="cpu", seed=42, data_seed=0,
              verbose=2) -> dict:
    """Train the lesson's CNN on the stand-in; the measured fields of a record (no environment).

    ``device`` is a Keras device name ("cpu", "gpu:0"); ``seed`` sets the initial weights and the
    shuffling, ``data_seed`` the stand-in.
    """
    import keras

    from gpulesson.compare_plots import confusion_counts
    from gpulesson.lesson import EpochTimer, build_cnn, compile_cnn
    from gpulesson.synthetic import N_CLASSES, make_synthetic

    check_plan(n_train, n_test, epochs, batch_size)
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
            if verbose:
                print(f"test accuracy after epoch {epoch + 1}: {tested['accuracy'][-1]:.4f}",
                      flush=True)
            if epoch + 1 in (WORKSHOP_EPOCHS, epochs):
                matrix = confusion_counts(y_test, predicted, N_CLASSES)
                tested["confusion"][str(epoch + 1)] = matrix.tolist()

    load_before = load_average()
    keras.utils.set_random_seed(seed)
    timer = EpochTimer(samples_per_epoch=cut)
    with keras.device(device):
        model = compile_cnn(build_cnn())
        history = model.fit(x[:cut], y[:cut], validation_data=(x[cut:], y[cut:]),
                            epochs=epochs, batch_size=batch_size,
                            callbacks=[timer, TestEveryEpoch()], verbose=verbose)
    return {
        "n_train": cut, "n_validation": n_train - cut, "n_test": n_test,
        "epochs": epochs, "batch_size": batch_size, "seed": seed, "data_seed": data_seed,
        "workshop_epochs": WORKSHOP_EPOCHS,
        "history": {key: [float(v) for v in values] for key, values in history.history.items()},
        "test_accuracy_per_epoch": tested["accuracy"],
        "test_loss_per_epoch": tested["loss"],
        "confusion": tested["confusion"],
        "epoch_seconds": timer.epoch_seconds,
        "training_seconds": timer.summary()["total_seconds"],
        "load_average": {"start": load_before, "end": load_average()},
        "generator": generator_fingerprint(data_seed),
    }


# ---------------------------------------------------------------------- what a record shows

def pair_share(matrix) -> float | None:
    """The share of the mistakes in ``matrix`` made between the two classes of a pair."""
    from gpulesson.synthetic import PAIRS

    matrix = np.asarray(matrix)
    mistakes = matrix.sum() - np.trace(matrix)
    if not mistakes:
        return None
    return float(sum(matrix[a, b] + matrix[b, a] for a, b in PAIRS) / mistakes)


def _most_confused(matrix) -> tuple[int, int]:
    """The two classes confused most often with each other (both directions together)."""
    matrix = np.asarray(matrix)
    both = matrix + matrix.T
    np.fill_diagonal(both, -1)
    a, b = np.unravel_index(int(both.argmax()), both.shape)
    return (int(min(a, b)), int(max(a, b)))


def findings(record: dict) -> dict:
    """What the record shows about the criteria of the module docstring, as plain values."""
    history = record["history"]
    tested = record["test_accuracy_per_epoch"]
    val_loss = history["val_loss"]
    low = int(np.argmin(val_loss))
    workshop = min(record["workshop_epochs"], len(tested))
    last = str(len(tested))
    return {
        "workshop_epochs": workshop,
        "workshop_accuracy": tested[workshop - 1],
        "best_accuracy": max(tested),
        "best_epoch": int(np.argmax(tested)) + 1,
        "final_accuracy": tested[-1],
        "final_train_accuracy": history["accuracy"][-1],
        "val_loss_low_epoch": low + 1,
        "val_loss_low": val_loss[low],
        "val_loss_final": val_loss[-1],
        # the validation loss turned up: its lowest point lies well before the end
        "overfits": low + 1 < len(val_loss) and val_loss[-1] > 1.1 * val_loss[low],
        "workshop_pair_share": pair_share(record["confusion"].get(str(workshop), np.eye(2))),
        "final_pair_share": pair_share(record["confusion"].get(last, np.eye(2))),
        "most_confused": _most_confused(record["confusion"][last]) if last in record["confusion"]
        else None,
    }


def describe(record: dict) -> str:
    """The run in a few sentences."""
    from gpulesson.synthetic import SYNTHETIC_CLASS_NAMES as NAMES

    found = findings(record)
    lines = [
        f"Data: {data_label([record])}; {record['n_train']:,} training, {record['n_validation']:,} "
        f"validation and {record['n_test']:,} test images; batch size {record['batch_size']}, "
        f"{record['epochs']} epochs in {duration(record['training_seconds'])}.",
        f"Test accuracy after {found['workshop_epochs']} epochs: {found['workshop_accuracy']:.3f} "
        f"(target {TARGET_ACCURACY[0]:.2f} to {TARGET_ACCURACY[1]:.2f}); best "
        f"{found['best_accuracy']:.3f} after {found['best_epoch']} epochs; last "
        f"{found['final_accuracy']:.3f} (training accuracy {found['final_train_accuracy']:.3f}).",
        f"Validation loss: lowest {found['val_loss_low']:.3f} after epoch {found['val_loss_low_epoch']}, "
        f"{found['val_loss_final']:.3f} at the end ("
        + ("overfitting" if found["overfits"] else "no clear overfitting") + ").",
    ]
    if found["final_pair_share"] is not None:
        a, b = found["most_confused"]
        lines.append(f"Mistakes between the two classes of a pair: {found['final_pair_share']:.0%} "
                     f"at the end; most confused: {NAMES[a]} and {NAMES[b]}.")
    return "\n".join(lines)


def reference_record(path=RESULTS_FILE) -> dict | None:
    """The newest record in the results file (None when there is none)."""
    from gpulesson.results import read_records

    path = Path(path).expanduser()
    if not path.is_file():
        return None
    records = read_records(path, experiment=EXPERIMENT)
    return records[-1] if records else None


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the newest record for the episode's instructor notes (``ref_calib_*``)."""
    from gpulesson.synthetic import SYNTHETIC_CLASS_NAMES as NAMES

    record = reference_record(path)
    keys = ("run", "date", "backend", "cpu", "n_train", "n_validation", "n_test", "epochs",
            "batch_size", "time", "workshop_epochs", "workshop_accuracy", "best_accuracy",
            "best_epoch", "final_accuracy", "final_train_accuracy", "val_loss_low_epoch",
            "pair_share", "most_confused")
    if record is None:
        return {f"ref_calib_{key}": NOT_RECORDED for key in keys}
    found = findings(record)
    backend = f"{record['backend']} {record['versions'].get(record['backend'], '')}".strip()
    pair = found["most_confused"]
    share = found["final_pair_share"]
    values = {
        "run": record["run_id"],
        "date": record["date"][:10],
        "backend": backend,
        "cpu": hardware([record])["CPU"],
        "n_train": f"{record['n_train']:,}",
        "n_validation": f"{record['n_validation']:,}",
        "n_test": f"{record['n_test']:,}",
        "epochs": str(record["epochs"]),
        "batch_size": str(record["batch_size"]),
        "time": duration(record["training_seconds"]),
        "workshop_epochs": str(found["workshop_epochs"]),
        # As the figures write accuracies (62.5 %, not 0.62), so that text and figure agree.
        "workshop_accuracy": f"{found['workshop_accuracy']:.1%}",
        "best_accuracy": f"{found['best_accuracy']:.1%}",
        "best_epoch": str(found["best_epoch"]),
        "final_accuracy": f"{found['final_accuracy']:.1%}",
        "final_train_accuracy": f"{found['final_train_accuracy']:.1%}",
        "val_loss_low_epoch": str(found["val_loss_low_epoch"]),
        "pair_share": f"{share:.0%}" if share is not None else NOT_RECORDED,
        "most_confused": f"{NAMES[pair[0]]} and {NAMES[pair[1]]}" if pair else NOT_RECORDED,
    }
    return {f"ref_calib_{key}": values[key] for key in keys}


# ---------------------------------------------------------------------------------- figures

def figures(records):
    """The learning curves and the confusion matrix after the workshop's epochs: ``(fig, fig)``."""
    from gpulesson.compare_plots import _STYLES, _subplots, _title, confusion_matrix
    from gpulesson.synthetic import SYNTHETIC_CLASS_NAMES

    if not records:
        raise ValueError("no calibration record: record one with "
                         "'python -m gpulesson.experiments.calibration'")
    record = records[-1]
    label, found, history = data_label([record]), findings(record), record["history"]
    curves, axes = _subplots(1, 2, figsize=(11, 4.2))
    series = {"loss": (("training", history["loss"]), ("validation", history["val_loss"]),
                       ("test", record["test_loss_per_epoch"])),
              "accuracy": (("training", history["accuracy"]), ("validation", history["val_accuracy"]),
                           ("test", record["test_accuracy_per_epoch"]))}
    for ax, (name, lines) in zip(axes, series.items(), strict=True):
        for style, (part, values) in zip(_STYLES, lines, strict=False):
            ax.plot(np.arange(1, len(values) + 1), values, label=part, color=style["color"],
                    marker=style["marker"], linestyle=style["linestyle"], markersize=4)
        ax.axvline(found["workshop_epochs"], color="grey", linestyle=":")
        ax.annotate(f"workshop: {found['workshop_epochs']} epochs",
                    (found["workshop_epochs"], 0.5), xycoords=("data", "axes fraction"),
                    rotation=90, ha="right", va="center", fontsize=8)
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.set_title(name.capitalize())
        ax.grid(alpha=0.3)
        ax.legend()
    _title(curves, "The lesson's CNN on the stand-in", label,
           f"{record['n_train']:,} training images, batch size {record['batch_size']}; "
           f"lowest validation loss after epoch {found['val_loss_low_epoch']}")
    curves.tight_layout()

    matrix = np.asarray(record["confusion"][str(found["workshop_epochs"])])
    truth = np.repeat(np.arange(matrix.shape[0]), matrix.sum(axis=1))
    predicted = np.concatenate([np.repeat(np.arange(matrix.shape[1]), row) for row in matrix])
    confusion, _ = confusion_matrix(truth, predicted, SYNTHETIC_CLASS_NAMES,
                                    label=f"{label}, after {found['workshop_epochs']} epochs")
    return curves, confusion


# ------------------------------------------------------------------------------ command line

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a tiny run for tests (also with LESSON_QUICK=1)")
    parser.add_argument("--epochs", type=int, default=None,
                        help=f"epochs (default {FULL['epochs']}; quick {QUICK['epochs']})")
    parser.add_argument("--n-train", type=int, default=None,
                        help=f"training and validation images (default {FULL['n_train']:,})")
    parser.add_argument("--n-test", type=int, default=None,
                        help=f"test images (default {FULL['n_test']:,})")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"images per batch (default {FULL['batch_size']})")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="where to train (default cpu; the accuracies do not depend on it)")
    add_out_option(parser, RESULTS_FILE)
    add_seed_option(parser)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    base = QUICK if quick else FULL
    try:
        given = {"n_train": args.n_train, "n_test": args.n_test, "epochs": args.epochs,
                 "batch_size": args.batch_size}
        plan = check_plan(**{key: base[key] if value is None else value
                             for key, value in given.items()})
    except CalibrationError as exc:
        print(f"error: {exc}. Nothing was measured or written.", file=sys.stderr)
        return 2
    from gpulesson.devices import KERAS_DEVICES, keras_device
    from gpulesson.results import append_record

    if args.device == "gpu" and not keras_device()["gpu_count"]:
        print("No GPU is visible to Keras: run with --device cpu. Nothing was measured or written.",
              file=sys.stderr)
        return 2
    print(f"Calibrating the stand-in: {plan['n_train']:,} images (a tenth for validation), "
          f"{plan['n_test']:,} test images, {plan['epochs']} epochs on the {args.device.upper()}",
          flush=True)
    fields = calibrate(**plan, device=KERAS_DEVICES[args.device], seed=args.seed)
    source = "gpulesson.experiments.calibration" + (" --quick" if quick else "")
    record = make_record(EXPERIMENT, data="synthetic", run_id=new_run_id(), source=source,
                         device_kind=args.device, **fields)
    if args.device == "cpu":
        record["device"] = "CPU"
    append_record(args.out, record)
    print(describe(record))
    print(f"Appended the record of run {record['run_id']} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
