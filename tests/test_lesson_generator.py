"""The episode's data generator (HDF5Batches in gpulesson.lesson, generated from episode 4).

The test data carry their row number in the pixels (first pixel: three base-256 digits) and
label = row % 10, so every batch can be checked: which rows it holds, and that every image
still has its own label.
"""

import pickle
import re

import h5py
import numpy as np
import pytest

from gpulesson import lesson
from gpulesson.datasets.hdf5 import write_hdf5
from gpulesson.errors import DataFileError

N_TRAIN, N_TEST, BATCH = 1000, 130, 64  # 1000 = 15 * 64 + 40: a last, partial batch
CLASSES = [f"class {i}" for i in range(10)]


def encoded(n: int):
    x = np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    rows = np.arange(n)
    x[:, 0, 0] = np.stack([rows // 65536, rows // 256 % 256, rows % 256], axis=1)
    return x, (rows % 10).astype(np.uint8)


def rows_of(x: np.ndarray) -> np.ndarray:
    digits = x[:, 0, 0].astype(np.int64)
    return digits[:, 0] * 65536 + digits[:, 1] * 256 + digits[:, 2]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_hdf5(tmp_path_factory.mktemp("gen") / "synthetic.h5", encoded(N_TRAIN), encoded(N_TEST),
                      source="synthetic", class_names=CLASSES, progress=False)


def epoch(batches) -> list[np.ndarray]:
    """The rows of every batch of one epoch, checking the labels on the way."""
    out = []
    for i in range(len(batches)):
        x, y = batches[i]
        assert x.dtype == np.uint8  # bytes as stored: the model scales them (Rescaling)
        assert y.dtype == np.int32
        rows = rows_of(x)
        np.testing.assert_array_equal(y, rows % 10)  # every image kept its own label
        out.append(rows)
    return out


def at_epoch(batches, number: int) -> list[np.ndarray]:
    """The rows of every batch of epoch ``number`` (as the DataEpoch callback sets it)."""
    batches.epoch = number
    return epoch(batches)


def membership(rows: list[np.ndarray]) -> set[frozenset]:
    return {frozenset(r.tolist()) for r in rows}


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("start, stop", [(0, None), (100, 900)])
def test_every_image_exactly_once_per_epoch(path, shuffle, start, stop):
    batches = lesson.HDF5Batches(path, "train", BATCH, start=start, stop=stop, shuffle=shuffle)
    expected = np.arange(start, stop or N_TRAIN)
    assert len(batches) == -(-len(expected) // BATCH)
    for number in range(3):
        rows = at_epoch(batches, number)
        np.testing.assert_array_equal(np.sort(np.concatenate(rows)), expected)


def test_last_partial_batch(path):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True)
    for number in range(3):
        sizes = [len(rows) for rows in at_epoch(batches, number)]
        assert sizes == [BATCH] * 15 + [N_TRAIN - 15 * BATCH]  # the short batch stays last
    with pytest.raises(IndexError):
        batches[len(batches)]


@pytest.mark.parametrize("window", [1, 4, 100])
def test_batch_membership_changes_between_epochs_while_reads_stay_contiguous(path, window):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=3, window=window)
    first, second = at_epoch(batches, 0), at_epoch(batches, 1)
    if window == 1:
        # One block per window: only the order of the blocks changes, no new batch members,
        # and each batch is its block as stored (mixing it would only reorder the batch).
        assert membership(first) == membership(second)
        assert [rows[0] for rows in first] != [rows[0] for rows in second]
        for rows in first + second:
            np.testing.assert_array_equal(rows, np.arange(rows[0], rows[0] + len(rows)))
    else:
        assert not membership(first) & membership(second)  # no batch is repeated
    for rows in (first, second):
        for at in range(0, len(rows), window):
            mixed = np.concatenate(rows[at:at + window])
            blocks = set((mixed // BATCH).tolist())
            # A window's images come from whole blocks of the file, read as contiguous slices.
            assert len(blocks) == min(window, len(rows) - at)
            assert sorted(mixed.tolist()) == sorted(r for b in blocks
                                                    for r in range(b * BATCH, min((b + 1) * BATCH, N_TRAIN)))


def test_on_epoch_end_moves_on_to_the_next_epochs_mix(path):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=4)
    first = at_epoch(batches, 0)
    batches.on_epoch_end()
    assert batches.epoch == 1
    following = epoch(batches)
    assert all(np.array_equal(a, b) for a, b in zip(following, at_epoch(batches, 1)))
    assert membership(first) != membership(following)


def test_unshuffled_order_is_the_file_order(path):
    batches = lesson.HDF5Batches(path, "test", BATCH)
    np.testing.assert_array_equal(np.concatenate(at_epoch(batches, 0)), np.arange(N_TEST))
    np.testing.assert_array_equal(np.concatenate(at_epoch(batches, 5)), np.arange(N_TEST))


def test_a_batch_depends_only_on_seed_epoch_and_index(path):
    def batches_of(seed, number, window=4):
        return at_epoch(lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=seed,
                                           window=window), number)

    one, again = batches_of(1, 2), batches_of(1, 2)
    assert all(np.array_equal(a, b) for a, b in zip(one, again))
    assert not np.array_equal(np.concatenate(one), np.concatenate(batches_of(2, 2)))
    # Reading batches out of order, or another epoch in between, changes nothing.
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=1)
    at_epoch(batches, 0)
    batches.epoch = 2
    backwards = [rows_of(batches[i][0]) for i in reversed(range(len(batches)))][::-1]
    assert all(np.array_equal(a, b) for a, b in zip(one, backwards))


def test_file_is_opened_lazily_once_per_process(path, monkeypatch):
    opened = []
    real_file = h5py.File

    def counting_file(*args, **kwargs):
        opened.append(args[0])
        return real_file(*args, **kwargs)

    monkeypatch.setattr(lesson.h5py, "File", counting_file)
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True)
    assert batches._file is None  # construction checks the file's metadata and keeps nothing open
    opened.clear()
    at_epoch(batches, 0)
    at_epoch(batches, 1)
    assert len(opened) == 1  # one handle for all batches and epochs
    copy = pickle.loads(pickle.dumps(batches))  # what a worker process gets
    assert copy._file is None and copy._cached == (None, None) and copy.epoch == batches.epoch
    batches._pid = -1  # as seen from a forked child: the parent's handle must not be used
    batches._cached = (None, None)
    batches[0]
    assert len(opened) == 2


def test_each_window_is_read_once(path, monkeypatch):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, window=4)
    reads = []
    real = batches._read_window
    monkeypatch.setattr(batches, "_read_window",
                        lambda number, epoch: reads.append((number, epoch)) or real(number, epoch))
    at_epoch(batches, 0)
    # 16 batches, 4 windows: one read of 4 blocks each, all of epoch 0
    assert reads == [(0, 0), (1, 0), (2, 0), (3, 0)]


@pytest.mark.parametrize("window", [1, 4])
def test_the_block_order_is_drawn_once_an_epoch(path, monkeypatch, window):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, window=window)
    seeds = []
    real = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng", lambda seed: seeds.append(tuple(seed)) or real(seed))
    for number in range(2):
        at_epoch(batches, number)
    # Per epoch one order of the blocks, (seed, epoch); with windows of 4, also one mix a
    # window, (seed, epoch, window); with window=1 no mix at all.
    orders = [seed for seed in seeds if len(seed) == 2]
    assert orders == [(0, 0), (0, 1)]
    assert len(seeds) - len(orders) == (2 * 4 if window == 4 else 0)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": N_TRAIN + 1}, "batch_size=1001 is more than the 1000 images of rows 0:1000"),
    ({"batch_size": 200, "start": 900}, "the 100 images of the validation split (rows 900:1000, "
                                        "the last tenth of 'train')"),
    ({"batch_size": 0}, "batch_size must be at least 1, not 0"),
    ({"batch_size": 256 / 4}, "BATCH_SIZE = 256 // 4"),
    ({"start": 900, "stop": 100}, "rows 900:100 are not within"),
    ({"stop": N_TRAIN + 5}, "not within the 1000 rows"),
    ({"split": "validation"}, "split must be 'train' or 'test'"),
    ({"window": 0}, "window=0 must be at least 1"),
])
@pytest.mark.bad_input("bad argument")
def test_bad_arguments_get_clear_errors(path, kwargs, message):
    kwargs = {"split": "train", "batch_size": BATCH, **kwargs}
    with pytest.raises(ValueError, match=re.escape(message)):
        lesson.HDF5Batches(path, **kwargs)


@pytest.mark.bad_input("missing file")
def test_missing_file_names_the_preparation_step(tmp_path):
    with pytest.raises(DataFileError, match=r"does not exist.*\n.*python -m gpulesson.datasets.prepare --data synthetic"):
        lesson.HDF5Batches(tmp_path / "synthetic.h5")


@pytest.mark.bad_input("corrupt file")
def test_wrong_shaped_dataset_is_refused(path, tmp_path):
    bad = tmp_path / "synthetic.h5"
    with h5py.File(path) as src, h5py.File(bad, "w") as dst:
        for name in ("y_train", "x_test", "y_test"):
            src.copy(name, dst)
        dst.attrs.update(src.attrs)
        dst["x_train"] = np.zeros((N_TRAIN, 28, 28, 1), np.uint8)  # MNIST-shaped, not CIFAR-shaped
    with pytest.raises(DataFileError, match=r"x_train is uint8 \(1000, 28, 28, 1\), expected uint8 \(N, 32, 32, 3\)"):
        lesson.HDF5Batches(bad)


@pytest.mark.bad_input("corrupt file")
def test_a_file_that_is_not_hdf5_is_refused(tmp_path):
    bad = tmp_path / "cifar10.h5"
    bad.write_bytes(b"not an HDF5 file")
    with pytest.raises(DataFileError, match=r"not an HDF5 file(.|\n)*gpulesson.datasets.prepare --data cifar10"):
        lesson.HDF5Batches(bad)
