"""Figures comparing CPU and GPU runs, and the model's results (headless-safe): every title
carries the data label, and colour never carries meaning alone (markers, hatches, text).
"""

import math
from collections.abc import Mapping

import numpy as np

from gpulesson.records.figkit import panels, title
from gpulesson.records.plots import image_grid

# Per-device styles: marker, line style, hatch (so that grey-scale prints still tell them apart).
STYLES = (
    {"marker": "o", "linestyle": "-", "hatch": "//", "color": "tab:blue"},
    {"marker": "s", "linestyle": "--", "hatch": "..", "color": "tab:orange"},
    {"marker": "^", "linestyle": ":", "hatch": "xx", "color": "tab:green"},
    {"marker": "D", "linestyle": "-.", "hatch": "\\\\", "color": "tab:purple"},
)
CORRECT, WRONG = "✓", "✗"
# Times that differ by this factor or more share a logarithmic axis (on a linear one a GPU's
# 0.3 s epoch beside a CPU's 20 s lies flat on the floor).
LOG_SPAN = 10
LOG_NOTE = "The time axis is logarithmic."


def needs_log_axis(values) -> bool:
    """Whether positive times span :data:`LOG_SPAN` or more (a linear axis hides the small ones)."""
    values = [float(v) for v in values if v is not None and float(v) > 0]
    return len(values) > 1 and max(values) / min(values) >= LOG_SPAN


def time_axis(ax, values, label: str) -> bool:
    """Label ``ax``'s y axis, logarithmic (and so labelled) where :func:`needs_log_axis`; whether it is."""
    log = needs_log_axis(values)
    if log:
        ax.set_yscale("log")
        plain_log_ticks(ax)
    ax.set_ylabel(f"{label}, log scale" if log else label)
    return log


def plain_log_ticks(ax) -> None:
    """Log-axis ticks at 1 and 3 times each power of ten, as plain numbers."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 3.0), numticks=30))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.yaxis.set_minor_locator(NullLocator())


def epoch_times(cpu_seconds, gpu_seconds, *, label, hardware=None, first_epoch="includes compiling"):
    """Line plot of every epoch's wall time on the CPU and the GPU (either list may be empty)."""
    runs = [(name, list(s)) for name, s in (("CPU", cpu_seconds), ("GPU", gpu_seconds))
            if s is not None and len(s)]
    if not runs:
        raise ValueError("epoch_times needs the epoch times of at least one run")
    fig, (ax,) = panels(1, (7, 4))
    for (name, seconds), style in zip(runs, STYLES, strict=False):  # more styles than runs
        epochs = np.arange(1, len(seconds) + 1)
        ax.plot(epochs, seconds, marker=style["marker"], linestyle=style["linestyle"],
                color=style["color"], label=name)
        # The warm-up epoch: hollow marker and a text note, not only its height.
        ax.plot([1], [seconds[0]], marker=style["marker"], markersize=13, markerfacecolor="none",
                markeredgecolor=style["color"], linestyle="none")
        ax.annotate(f"{name} epoch 1: warm-up\n({first_epoch})", (1, seconds[0]),
                    xytext=(12, 0), textcoords="offset points", va="center", fontsize=8)
    longest = max(len(s) for _, s in runs)
    if longest <= 20:  # whole epochs only
        ax.set_xticks(range(1, longest + 1))
    ax.set_xlabel("epoch")
    every = [v for _, s in runs for v in s]
    if time_axis(ax, every, "wall time per epoch (s)"):
        ax.set_ylim(min(every) / 2, max(every) * 3)  # room for the warm-up notes
    else:
        ax.set_ylim(0, 1.2 * max(every))
    ax.grid(alpha=0.3)
    ax.legend(title="device")
    if isinstance(hardware, Mapping):
        hardware = "; ".join(f"{k}: {v}" for k, v in hardware.items())
    title(fig, "Time per training epoch", label, hardware, fontsize="large")
    fig.tight_layout()
    return fig


def learning_curves(history, *, label):
    """Loss and accuracy per epoch, training and validation, from a ``History`` or its dict."""
    history = getattr(history, "history", history)
    if not history or "loss" not in history:
        raise ValueError(f"the history has no 'loss' (keys: {sorted(history or {})})")
    fig, axes = panels(2, (10, 4), across=True)
    acc = "accuracy" if "accuracy" in history else "acc"
    for ax, key, name in ((axes[0], "loss", "loss"), (axes[1], acc, "accuracy")):
        for prefix, part, style in (("", "training", STYLES[0]), ("val_", "validation", STYLES[1])):
            values = history.get(prefix + key)
            if values is None:
                continue
            epochs = np.arange(1, len(values) + 1)
            ax.plot(epochs, values, marker=style["marker"], linestyle=style["linestyle"],
                    color=style["color"], label=part)
        if ax.lines:
            ax.legend()
        else:
            ax.text(0.5, 0.5, f"no {name} recorded", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel("epoch")
        ax.set_ylabel(name)
        ax.set_title(name.capitalize())
        ax.grid(alpha=0.3)
    title(fig, "Learning curves", label, fontsize="large")
    fig.tight_layout()
    return fig


def _class_indices(y, name: str) -> np.ndarray:
    """Class indices from indices, or from one-hot/probability rows (their argmax)."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] > 1:
        return y.argmax(axis=1)
    if y.ndim == 2:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be class indices or rows of class scores, not shape {y.shape}")
    return y.astype(int)


def confusion_counts(y_true, y_pred, n_classes: int) -> np.ndarray:
    """``matrix[i, j]`` = how many images of true class ``i`` were predicted as class ``j``."""
    y_true, y_pred = _class_indices(y_true, "y_true"), _class_indices(y_pred, "y_pred")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"{len(y_true)} true labels but {len(y_pred)} predictions")
    for name, y in (("y_true", y_true), ("y_pred", y_pred)):
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"{name} holds classes outside 0..{n_classes - 1}")
    matrix = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(matrix, (y_true, y_pred), 1)
    return matrix


def confusion_matrix(y_true, y_pred, class_names, *, label):
    """``(fig, matrix)``: the confusion matrix (rows true, columns predicted) with every count written."""
    matrix = confusion_counts(y_true, y_pred, len(class_names))
    n = len(class_names)
    size = max(4.0, 0.55 * n + 2)
    fig, (ax,) = panels(1, (size + 1, size))
    image = ax.imshow(matrix, cmap="Blues")
    fig.colorbar(image, ax=ax, label="images")
    threshold = matrix.max() / 2 if matrix.size else 0
    for i in range(n):
        for j in range(n):
            ax.text(j, i, str(matrix[i, j]), ha="center", va="center", fontsize=8,
                    color="white" if matrix[i, j] > threshold else "black")
    ax.set_xticks(range(n), class_names, rotation=45, ha="right")
    ax.set_yticks(range(n), class_names)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    total = int(matrix.sum())
    accuracy = np.trace(matrix) / total if total else math.nan
    title(fig, "Confusion matrix", label, f"{total:,} images, {np.trace(matrix):,} correct "
          f"(accuracy {accuracy:.1%}); the diagonal holds the correct predictions", fontsize="large")
    fig.tight_layout()
    return fig, matrix


def prediction_grid(x, y_true, y_pred, class_names, *, label, n=20, ncols=10):
    """The first ``n`` images with predicted and true classes; mistakes marked by text, not colour alone."""
    y_true, y_pred = _class_indices(y_true, "y_true"), _class_indices(y_pred, "y_pred")
    fig, axes, n = image_grid(min(len(x), len(y_true), len(y_pred)), n, ncols, cell=(1.5, 1.9),
                              extra_height=0.6, what="prediction_grid")
    wrong = 0
    for i, ax in enumerate(axes):
        ax.set_xticks([])
        ax.set_yticks([])
        if i >= n:
            ax.axis("off")
            continue
        ax.imshow(x[i])
        true, pred = class_names[int(y_true[i])], class_names[int(y_pred[i])]
        if y_true[i] == y_pred[i]:
            ax.set_title(f"{CORRECT} {pred}", fontsize=8)
            for spine in ax.spines.values():
                spine.set_visible(False)
        else:
            wrong += 1
            ax.set_title(f"{WRONG} {pred}\n(true: {true})", fontsize=8, color="red")
            for spine in ax.spines.values():
                spine.set_color("red")
                spine.set_linewidth(3)
    title(fig, "Predictions", label, f"{WRONG} = wrong prediction (red frame): {wrong} of {n} shown",
          fontsize="large")
    fig.tight_layout()
    return fig
