"""The synthetic stand-in: CIFAR-shaped, balanced, deterministic, learnable but not trivial,
with its mistakes between look-alike pairs (the full-size calibration: tests/test_calibration.py)."""

import numpy as np
import pytest

from gpulesson.datasets import synthetic
from gpulesson.datasets.cifar10 import CLASS_NAMES
from gpulesson.datasets.synthetic import CHUNK, PAIRS, SYNTHETIC_CLASS_NAMES, make_synthetic


@pytest.fixture(scope="module")
def quick_set():
    return make_synthetic(2000, 500, seed=0, progress=False)


def test_shapes_dtypes_and_label_range(quick_set):
    (x, y), (xt, yt) = quick_set
    assert x.shape == (2000, 32, 32, 3) and xt.shape == (500, 32, 32, 3)
    assert x.dtype == xt.dtype == y.dtype == yt.dtype == np.uint8
    assert y.shape == (2000,) and yt.shape == (500,)
    assert set(np.unique(y)) == set(range(10)) == set(np.unique(yt))


@pytest.mark.parametrize("n", [2000, 1234, 7])
def test_labels_are_balanced(n):
    (_, y), _ = make_synthetic(n, 0, progress=False)
    counts = np.bincount(y, minlength=10)
    assert counts.sum() == n and counts.max() - counts.min() <= 1


def test_images_use_the_range_and_differ(quick_set):
    (x, _), _ = quick_set
    assert x.min() < 20 and x.max() > 235
    assert len({x[i].tobytes() for i in range(200)}) == 200


def test_class_names_are_not_cifar():
    assert len(SYNTHETIC_CLASS_NAMES) == 10 == len(set(SYNTHETIC_CLASS_NAMES))
    assert not set(SYNTHETIC_CLASS_NAMES) & set(CLASS_NAMES)


def test_the_pairs_are_documented_and_named_alike():
    """Five pairs cover the ten classes once; both names of a pair name the same kind of pattern."""
    assert sorted(c for pair in PAIRS for c in pair) == list(range(10))
    doc = " ".join(synthetic.__doc__.split())
    for a, b in PAIRS:
        first, second = SYNTHETIC_CLASS_NAMES[a], SYNTHETIC_CLASS_NAMES[b]
        assert first in doc and second in doc, (first, second)
        assert f"{a}/{b}" in doc, f"the docstring must say what pair {a}/{b} differs in"
        assert set(first.split()) & set(second.split()) - {"leaning"}, (first, second)


def test_same_seed_same_bytes_other_seed_other_data(quick_set):
    (x, y), (xt, yt) = quick_set
    (x2, y2), (xt2, yt2) = make_synthetic(2000, 500, seed=0, progress=False)
    assert x.tobytes() == x2.tobytes() and y.tobytes() == y2.tobytes()
    assert xt.tobytes() == xt2.tobytes() and yt.tobytes() == yt2.tobytes()
    (x3, y3), (xt3, _) = make_synthetic(2000, 500, seed=1, progress=False)
    assert not np.array_equal(x, x3) and not np.array_equal(y, y3) and not np.array_equal(xt, xt3)


def test_train_and_test_are_different_images(quick_set):
    (x, _), (xt, _) = quick_set
    assert not {img.tobytes() for img in x} & {img.tobytes() for img in xt}


def test_a_small_set_is_the_start_of_a_larger_one(quick_set):
    (x, y), (xt, yt) = quick_set
    (xs, ys), (xts, yts) = make_synthetic(CHUNK + 5, 100, seed=0, progress=False)
    assert np.array_equal(xs, x[: CHUNK + 5]) and np.array_equal(ys, y[: CHUNK + 5])
    # the test set is a stream of its own: it does not depend on n_train
    assert np.array_equal(xts, xt[:100]) and np.array_equal(yts, yt[:100])


@pytest.mark.bad_input("bad argument")
def test_invalid_sizes():
    with pytest.raises(ValueError, match="n_train"):
        make_synthetic(-1, 10, progress=False)
    with pytest.raises(ValueError, match="n_test"):
        make_synthetic(10, 2.5, progress=False)


def test_progress_bar_is_shown(capsys):
    make_synthetic(30, 10, progress=True)
    err = capsys.readouterr().err
    assert "synthetic train" in err and "30/30" in err
    make_synthetic(30, 10, progress=False)
    assert capsys.readouterr().err == ""


def test_a_large_set_is_made_whole():
    (x, y), (xt, yt) = make_synthetic(20_000, 4_000, progress=False)
    assert x.shape == (20_000, 32, 32, 3) and xt.shape == (4_000, 32, 32, 3)
    assert x.dtype == xt.dtype == np.uint8 and len(y) == 20_000 and len(yt) == 4_000
    assert sorted(np.unique(y)) == list(range(10)), "every class is there"


def test_classes_are_not_told_apart_by_mean_colour_alone(quick_set):
    """A nearest-class-mean classifier on the average colour must stay far from a CNN's accuracy."""
    (x, y), (xt, yt) = quick_set
    feats, feats_t = x.mean(axis=(1, 2)), xt.mean(axis=(1, 2))
    means = np.stack([feats[y == c].mean(axis=0) for c in range(10)])
    guess = np.argmin(((feats_t[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert (guess == yt).mean() < 0.4


EPOCHS = 5


def test_a_small_cnn_learns_it_and_confuses_the_pairs():
    """A small CNN: well above chance (10 %) but far from perfect, and most of its
    mistakes between the two classes of a look-alike pair (chance would put a ninth there)."""
    import keras
    from keras import layers

    from gpulesson.records.compare_plots import confusion_counts

    (x, y), (xt, yt) = make_synthetic(4000, 800, seed=0, progress=False)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((32, 32, 3)),
        layers.Rescaling(1 / 255),
        layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
    ])
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = model.fit(x, y, epochs=EPOCHS, batch_size=64, validation_data=(xt, yt), verbose=0)
    val = history.history["val_accuracy"]
    assert 0.3 <= max(val) <= 0.8, f"test accuracy per epoch: {val}"
    assert val[-1] > val[0] + 0.1, f"no learning curve: {val}"
    matrix = confusion_counts(yt, model.predict(xt, verbose=0), 10)
    mistakes = matrix.sum() - np.trace(matrix)
    within = sum(matrix[a, b] + matrix[b, a] for a, b in PAIRS)
    assert within / mistakes > 0.5, f"{within} of {mistakes} mistakes within a pair:\n{matrix}"
