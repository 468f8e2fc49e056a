"""The calibration on the page: what the newest record shows, episode 5's ``ref_calib_*`` values."""

import numpy as np

from gpulesson.datasets.synthetic import PAIRS
from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES as NAMES
from gpulesson.experiments.calibration import RECORDS, RESULTS_FILE, TARGET_ACCURACY
from gpulesson.records.compare_plots import STYLES, confusion_matrix
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import run_values
from gpulesson.records.results import NOT_RECORDED, data_label, duration

FIGURES = ("calibration-learning-curves.svg", "calibration-confusion.svg")
FIGURE_FOLDER = "fig/05-cpu-vs-gpu"


def reference_run(path=None) -> list[dict]:
    """The newest record, as the page and the figures read it; [] without one."""
    return RECORDS.read(path)[-1:]


def pair_share(matrix) -> float | None:
    """The share of the mistakes in ``matrix`` made between the two classes of a pair."""
    matrix = np.asarray(matrix)
    mistakes = matrix.sum() - np.trace(matrix)
    return float(sum(matrix[a, b] + matrix[b, a] for a, b in PAIRS) / mistakes) if mistakes else None


def _most_confused(matrix) -> tuple[int, int]:
    """The two classes confused most often with each other (both directions together)."""
    both = np.asarray(matrix) + np.transpose(matrix)
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


def describe(records) -> str:
    """The run (its one record) in a few sentences."""
    record = records[-1]
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


# Each value as the figures write it (accuracies as 62.5 %, not 0.62), so that text and figure agree.
PERCENT = "{:.1%}".format
SHOWN = {"workshop_epochs": str, "workshop_accuracy": PERCENT, "best_accuracy": PERCENT,
         "best_epoch": str, "final_train_accuracy": PERCENT, "val_loss_low_epoch": str}


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """Text snippets of the newest record for the episode's instructor notes (``ref_calib_*``)."""
    records = reference_run(path)
    values = run_values("ref_calib", records, "date", "backend", "cpu", "n_train", "epochs",
                        "batch_size")
    found = findings(records[-1]) if records else {}
    values |= {f"ref_calib_{key}": show(found[key]) if found else NOT_RECORDED
               for key, show in SHOWN.items()}
    pair, share = found.get("most_confused"), found.get("final_pair_share")
    values["ref_calib_pair_share"] = f"{share:.0%}" if share is not None else NOT_RECORDED
    values["ref_calib_most_confused"] = f"{NAMES[pair[0]]} and {NAMES[pair[1]]}" if pair else NOT_RECORDED
    return values


def figures(records):
    """The learning curves and the confusion matrix after the workshop's epochs: ``(fig, fig)``."""
    need(records, "record one with 'python -m gpulesson.experiments.calibration'")
    record = records[-1]
    label, found, history = data_label([record]), findings(record), record["history"]
    curves, axes = panels(2, (11, 4.2), across=True)
    for ax, name in zip(axes, ("loss", "accuracy"), strict=True):
        lines = (("training", history[name]), ("validation", history[f"val_{name}"]),
                 ("test", record[f"test_{name}_per_epoch"]))
        for style, (part, values) in zip(STYLES, lines, strict=False):
            ax.plot(np.arange(1, len(values) + 1), values, label=part, color=style["color"],
                    marker=style["marker"], linestyle=style["linestyle"], markersize=4)
        ax.axvline(found["workshop_epochs"], color="grey", linestyle=":")
        ax.annotate(f"workshop: {found['workshop_epochs']} epochs",
                    (found["workshop_epochs"], 0.5), xycoords=("data", "axes fraction"),
                    rotation=90, ha="right", va="center", fontsize=8)
        ax.set(xlabel="epoch", ylabel=name, title=name.capitalize())
        ax.grid(alpha=0.3)
        ax.legend()
    title(curves, "The lesson's CNN on the stand-in", label,
          f"{record['n_train']:,} training images, batch size {record['batch_size']}; "
          f"lowest validation loss after epoch {found['val_loss_low_epoch']}", fontsize="large")
    curves.tight_layout()

    matrix = np.asarray(record["confusion"][str(found["workshop_epochs"])])
    truth = np.repeat(np.arange(matrix.shape[0]), matrix.sum(axis=1))
    predicted = np.concatenate([np.repeat(np.arange(matrix.shape[1]), row) for row in matrix])
    confusion, _ = confusion_matrix(truth, predicted, NAMES,
                                    label=f"{label}, after {found['workshop_epochs']} epochs")
    return curves, confusion
