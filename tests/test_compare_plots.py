"""CPU/GPU comparison figures and the model's result figures."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest

from gpulesson.datasets.settings import LABELS
from gpulesson.records import compare_plots as cp

LABEL = LABELS["synthetic"]
CLASSES = ["cat", "dog", "ship"]


@pytest.fixture(autouse=True)
def close_figures():
    # A missing glyph (e.g. ✓/✗) only warns; make it fail the test instead.
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        yield
        for number in plt.get_fignums():  # render, so missing glyphs and layout problems show up
            plt.figure(number).canvas.draw()
    plt.close("all")


def texts(fig):
    return [t.get_text() for t in fig.findobj(lambda o: hasattr(o, "get_text"))]


def test_epoch_times_marks_the_warm_up():
    fig = cp.epoch_times([5.0, 2.0, 2.1], [3.0, 0.2, 0.2], label=LABEL,
                         hardware={"CPU": "AMD EPYC, 2 cores", "GPU": "NVIDIA H100"})
    assert LABEL in fig.get_suptitle() and "NVIDIA H100" in fig.get_suptitle()
    ax = fig.axes[0]
    lines = [line for line in ax.lines if line.get_label() in ("CPU", "GPU")]
    assert [line.get_marker() for line in lines] == ["o", "s"]
    assert sum("warm-up" in t for t in texts(fig)) == 2
    np.testing.assert_allclose(lines[1].get_ydata(), [3.0, 0.2, 0.2])


def test_epoch_times_with_one_run_only():
    fig = cp.epoch_times([5.0, 2.0], None, label=LABEL, hardware="laptop")
    assert LABEL in fig.get_suptitle()
    with pytest.raises(ValueError):
        cp.epoch_times(None, [], label=LABEL)


def test_learning_curves_two_panels():
    history = {"loss": [2.0, 1.5, 1.2], "val_loss": [2.1, 1.7, 1.6],
               "accuracy": [0.2, 0.4, 0.5], "val_accuracy": [0.2, 0.35, 0.4]}
    fig = cp.learning_curves(history, label=LABEL)
    assert LABEL in fig.get_suptitle()
    loss_ax, acc_ax = fig.axes[:2]
    assert [line.get_label() for line in loss_ax.lines] == ["training", "validation"]
    np.testing.assert_allclose(acc_ax.lines[1].get_ydata(), history["val_accuracy"])
    assert loss_ax.lines[0].get_linestyle() != loss_ax.lines[1].get_linestyle()
    fig = cp.learning_curves({"loss": [1.0, 0.5]}, label=LABEL)
    assert "no accuracy recorded" in texts(fig)


def test_confusion_matrix_counts():
    y_true = [0, 0, 0, 1, 1, 2, 2, 2, 2]
    y_pred = [0, 0, 1, 1, 2, 2, 2, 0, 2]
    fig, matrix = cp.confusion_matrix(y_true, y_pred, CLASSES, label=LABEL)
    expected = np.array([[2, 1, 0], [0, 1, 1], [1, 0, 3]])
    np.testing.assert_array_equal(matrix, expected)
    assert matrix.sum() == len(y_true)
    assert np.trace(matrix) == sum(t == p for t, p in zip(y_true, y_pred))
    assert LABEL in fig.get_suptitle() and "6 correct" in fig.get_suptitle()
    cell_texts = [t.get_text() for t in fig.axes[0].texts]
    assert cell_texts == [str(v) for v in expected.flat]


@pytest.mark.bad_input("bad labels")
def test_confusion_matrix_accepts_scores_and_checks_classes():
    scores = np.eye(3)[[0, 2, 1]]
    _, matrix = cp.confusion_matrix(np.array([[0], [2], [2]]), scores, CLASSES, label=LABEL)
    np.testing.assert_array_equal(np.diag(matrix), [1, 0, 1])
    with pytest.raises(ValueError, match="outside"):
        cp.confusion_counts([0, 3], [0, 1], 3)
    with pytest.raises(ValueError, match="predictions"):
        cp.confusion_counts([0, 1], [0], 3)


def test_prediction_grid_marks_exactly_the_mistakes():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (12, 8, 8, 3), dtype=np.uint8)
    y_true = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2])
    y_pred = np.array([0, 1, 1, 0, 0, 2, 0, 1, 2, 2, 1, 2])
    fig = cp.prediction_grid(x, y_true, y_pred, CLASSES, label=LABEL, n=10, ncols=5)
    assert LABEL in fig.get_suptitle() and "3 of 10" in fig.get_suptitle()
    shown = [ax for ax in fig.axes if ax.images]
    assert len(shown) == 10
    titles = [ax.get_title() for ax in shown]
    marked = [i for i, t in enumerate(titles) if cp.WRONG in t]
    assert marked == [i for i in range(10) if y_true[i] != y_pred[i]] == [2, 4, 9]
    assert titles[2] == f"{cp.WRONG} dog\n(true: ship)"
    assert all(t.startswith(cp.CORRECT) for i, t in enumerate(titles) if i not in marked)
    assert shown[2].spines["left"].get_linewidth() == 3 and not shown[0].spines["left"].get_visible()
    np.testing.assert_array_equal(shown[3].images[0].get_array(), x[3])
