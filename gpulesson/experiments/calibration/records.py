"""The calibration's records: one a run, the newest the reference, and what a record shows."""

from __future__ import annotations

import numpy as np

from gpulesson.experiments.recordset import RecordSet
from gpulesson.records.results import data_label, duration

EXPERIMENT = "standin-calibration"
RECORDS = RecordSet(EXPERIMENT, ("run_id",))  # one record a run; the page reads the newest
RESULTS_FILE = RECORDS.results_file
WORKSHOP_EPOCHS = 3  # the episode trains this many epochs
TARGET_ACCURACY = (0.45, 0.70)  # test accuracy after WORKSHOP_EPOCHS, like CIFAR-10's


def pair_share(matrix) -> float | None:
    """The share of the mistakes in ``matrix`` made between the two classes of a pair."""
    from gpulesson.datasets.synthetic import PAIRS

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
    """What the record shows of the package's criteria, as plain values."""
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
    from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES as NAMES

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


def reference_record(path=None) -> dict | None:
    """The newest record in the results file (None when there is none)."""
    return (RECORDS.read(path) or [None])[-1]
