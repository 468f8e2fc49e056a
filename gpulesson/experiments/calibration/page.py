"""The calibration on the page: episode 5's ``ref_calib_*`` values, from the newest record."""

from __future__ import annotations

from gpulesson.experiments.calibration.records import RESULTS_FILE, findings, reference_record
from gpulesson.experiments.pagewords import backend_version, day
from gpulesson.records.results import NOT_RECORDED, hardware


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the newest record for the episode's instructor notes (``ref_calib_*``)."""
    from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES as NAMES

    record = reference_record(path)
    keys = ("date", "backend", "cpu", "n_train", "epochs", "batch_size", "workshop_epochs",
            "workshop_accuracy", "best_accuracy", "best_epoch", "final_train_accuracy",
            "val_loss_low_epoch", "pair_share", "most_confused")
    if record is None:
        return {f"ref_calib_{key}": NOT_RECORDED for key in keys}
    found = findings(record)
    pair = found["most_confused"]
    share = found["final_pair_share"]
    values = {
        "date": day(record),
        "backend": backend_version(record),
        "cpu": hardware([record])["CPU"],
        "n_train": f"{record['n_train']:,}",
        "epochs": str(record["epochs"]),
        "batch_size": str(record["batch_size"]),
        "workshop_epochs": str(found["workshop_epochs"]),
        # As the figures write accuracies (62.5 %, not 0.62), so that text and figure agree.
        "workshop_accuracy": f"{found['workshop_accuracy']:.1%}",
        "best_accuracy": f"{found['best_accuracy']:.1%}",
        "best_epoch": str(found["best_epoch"]),
        "final_train_accuracy": f"{found['final_train_accuracy']:.1%}",
        "val_loss_low_epoch": str(found["val_loss_low_epoch"]),
        "pair_share": f"{share:.0%}" if share is not None else NOT_RECORDED,
        "most_confused": f"{NAMES[pair[0]]} and {NAMES[pair[1]]}" if pair else NOT_RECORDED,
    }
    return {f"ref_calib_{key}": values[key] for key in keys}
