"""The episode's data generator (HDF5Batches in gpulesson/lesson.py, generated from episode 04).

The test data carry their row number in the pixels (first pixel: three base-256 digits) and
label = row % 10, so every batch can be checked: which rows it holds, and that every image
still has its own label.
"""

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pytest

from gpulesson import lesson
from gpulesson.errors import DataFileError
from gpulesson.hdf5 import write_hdf5

N_TRAIN, N_TEST, BATCH = 1000, 130, 64  # 1000 = 15 * 64 + 40: a last, partial batch
CLASSES = [f"class {i}" for i in range(10)]


def encoded(n: int):
    x = np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    rows = np.arange(n)
    x[:, 0, 0] = np.stack([rows // 65536, rows // 256 % 256, rows % 256], axis=1)
    return x, (rows % 10).astype(np.uint8)


def rows_of(x: np.ndarray) -> np.ndarray:
    digits = np.rint(x[:, 0, 0] * 255).astype(np.int64)
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
        assert x.dtype == np.float32 and 0.0 <= x.min() and x.max() <= 1.0
        assert y.dtype == np.int32
        rows = rows_of(x)
        np.testing.assert_array_equal(y, rows % 10)  # every image kept its own label
        out.append(rows)
    return out


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("start, stop", [(0, None), (100, 900)])
def test_every_image_exactly_once_per_epoch(path, shuffle, start, stop):
    batches = lesson.HDF5Batches(path, "train", BATCH, start=start, stop=stop, shuffle=shuffle)
    expected = np.arange(start, stop or N_TRAIN)
    assert len(batches) == -(-len(expected) // BATCH)
    for _ in range(3):
        rows = epoch(batches)
        np.testing.assert_array_equal(np.sort(np.concatenate(rows)), expected)
        batches.on_epoch_end()


def test_last_partial_batch(path):
    batches = lesson.HDF5Batches(path, "train", BATCH)
    sizes = [len(batches[i][1]) for i in range(len(batches))]
    assert sizes == [BATCH] * 15 + [N_TRAIN - 15 * BATCH]
    with pytest.raises(IndexError):
        batches[len(batches)]


def test_shuffled_order_changes_between_epochs_but_reads_stay_contiguous(path):
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=3)
    first = epoch(batches)
    batches.on_epoch_end()
    second = epoch(batches)
    assert not np.array_equal(np.concatenate(first), np.concatenate(second))  # new order
    assert [r.min() for r in first] != [r.min() for r in second]  # new batch order
    for rows in first + second:
        assert not np.array_equal(rows, np.sort(rows)) or len(rows) == 1  # shuffled within the batch
        # ... but each batch is one contiguous slice of the file: no random access.
        np.testing.assert_array_equal(np.sort(rows), np.arange(rows.min(), rows.min() + len(rows)))


def test_unshuffled_order_is_the_file_order(path):
    batches = lesson.HDF5Batches(path, "test", BATCH)
    np.testing.assert_array_equal(np.concatenate(epoch(batches)), np.arange(N_TEST))


def test_shuffling_is_reproducible_from_the_seed(path):
    def first_epoch(seed):
        return np.concatenate(epoch(lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=seed)))

    np.testing.assert_array_equal(first_epoch(1), first_epoch(1))
    assert not np.array_equal(first_epoch(1), first_epoch(2))


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
    epoch(batches)
    batches.on_epoch_end()
    epoch(batches)
    assert len(opened) == 1  # one handle for all batches and epochs
    copy = pickle.loads(pickle.dumps(batches))  # what a worker process gets
    assert copy._file is None and copy.epoch == batches.epoch
    batches._pid = -1  # as seen from a forked child: the parent's handle must not be used
    batches[0]
    assert len(opened) == 2


WORKERS = textwrap.dedent("""
    import sys
    import numpy as np
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter
    from gpulesson import lesson
    from test_lesson_generator import N_TRAIN, rows_of

    batches = lesson.HDF5Batches(sys.argv[1], "train", 64, shuffle=True, workers=2, use_multiprocessing=True)
    batches[0]  # the parent opens the file first: the workers must still open their own
    adapter = PyDatasetAdapter(batches, shuffle=False)
    orders = []
    for _ in range(2):
        adapter.on_epoch_begin()
        pairs = [(x, y) for x, y in adapter.get_numpy_iterator()]
        adapter.on_epoch_end()
        rows = rows_of(np.concatenate([x for x, _ in pairs]))
        np.testing.assert_array_equal(np.concatenate([y for _, y in pairs]), rows % 10)
        np.testing.assert_array_equal(np.sort(rows), np.arange(N_TRAIN))
        orders.append(rows)
    assert not np.array_equal(*orders)
    print("ok")
""")


def test_worker_processes_see_every_image_once(path):
    # In a fresh interpreter: forking a process that has started JAX's threads (as other tests
    # do) can deadlock, and the lesson runs its workers from a plain kernel too.
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    result = subprocess.run([sys.executable, "-c", WORKERS, str(path)], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": N_TRAIN + 1}, "batch_size=1001 must be between 1 and the number of images"),
    ({"batch_size": 0}, "batch_size=0"),
    ({"start": 900, "stop": 100}, "rows 900:100 are not within"),
    ({"stop": N_TRAIN + 5}, "not within the 1000 rows"),
    ({"split": "validation"}, "split must be 'train' or 'test'"),
])
@pytest.mark.bad_input("bad argument")
def test_bad_arguments_get_clear_errors(path, kwargs, message):
    kwargs = {"split": "train", "batch_size": BATCH, **kwargs}
    with pytest.raises(ValueError, match=message):
        lesson.HDF5Batches(path, **kwargs)


@pytest.mark.bad_input("missing file")
def test_missing_file_names_the_preparation_step(tmp_path):
    with pytest.raises(DataFileError, match=r"does not exist.*\n.*python -m gpulesson.prepare --data synthetic"):
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
    with pytest.raises(DataFileError, match=r"not an HDF5 file(.|\n)*gpulesson.prepare --data cifar10"):
        lesson.HDF5Batches(bad)
