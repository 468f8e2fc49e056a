"""The calibration's figures (``fig/05-cpu-vs-gpu/calibration.py``), from the newest record."""

from __future__ import annotations

import numpy as np

from gpulesson.experiments.calibration.records import findings
from gpulesson.records.results import data_label

FIGURES = ("calibration-learning-curves.svg", "calibration-confusion.svg")
FIGURE_COMMAND = "python fig/05-cpu-vs-gpu/calibration.py"


def figures(records):
    """The learning curves and the confusion matrix after the workshop's epochs: ``(fig, fig)``."""
    from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES
    from gpulesson.records.compare_plots import _STYLES, _subplots, _title, confusion_matrix

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
