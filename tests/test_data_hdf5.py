"""HDF5 files: atomic writes, provenance and checksum, chunking, and validation errors that
name the file and the command that fixes it."""

import json
from datetime import datetime

import h5py
import numpy as np
import pytest
from data_fixtures import small_arrays

import gpulesson
from gpulesson.datasets import hdf5
from gpulesson.datasets.hdf5 import DATASETS, arrays_checksum, read_hdf5, validate_hdf5, write_hdf5
from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES
from gpulesson.errors import DataFileError


def write_small(path, **kwargs):
    train, test = small_arrays()
    kwargs.setdefault("source", "synthetic")
    kwargs.setdefault("class_names", SYNTHETIC_CLASS_NAMES)
    kwargs.setdefault("progress", False)
    return write_hdf5(path, train, test, **kwargs)


@pytest.fixture
def good_file(tmp_path):
    return write_small(tmp_path / "synthetic-quick.h5", attrs={"seed": 3, "quick": True})


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir())


def test_round_trip_and_info(good_file):
    (x, y), (xt, yt) = small_arrays()
    info = validate_hdf5(good_file, verify_checksum=True)
    assert (info.source, info.synthetic, info.n_train, info.n_test) == ("synthetic", True, 40, 10)
    assert info.label == "synthetic stand-in (not CIFAR-10)"
    assert info.class_names == SYNTHETIC_CLASS_NAMES and info.path == good_file
    got_x, got_y = read_hdf5(good_file, "train")
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_y, y)
    got_x, got_y = read_hdf5(good_file, "test", start=2, stop=5)
    np.testing.assert_array_equal(got_x, xt[2:5])
    np.testing.assert_array_equal(got_y, yt[2:5])
    with pytest.raises(ValueError, match="split"):
        read_hdf5(good_file, "validation")


def test_provenance_attributes(good_file):
    with h5py.File(good_file) as f:
        attrs = dict(f.attrs)
        assert set(hdf5.PROVENANCE) <= set(attrs)
        assert attrs["source"] == "synthetic" and bool(attrs["synthetic"]) is True
        assert attrs["gpulesson_version"] == gpulesson.__version__
        assert attrs["h5py_version"] == h5py.__version__ and attrs["numpy_version"] == np.__version__
        assert attrs["format_version"] == 1 and attrs["seed"] == 3
        assert list(attrs["class_names"]) == list(SYNTHETIC_CLASS_NAMES)
        created = datetime.fromisoformat(attrs["created"])
        assert created.utcoffset().total_seconds() == 0
        assert json.loads(attrs["shapes"])["x_train"] == [40, 32, 32, 3]
        assert json.loads(attrs["dtypes"])["y_test"] == "uint8"
        # the stored checksum is the one of the data as read back from the file
        assert attrs["checksum_sha256"] == arrays_checksum(f)
    train, test = small_arrays()
    assert arrays_checksum({"x_train": train[0], "y_train": train[1], "x_test": test[0], "y_test": test[1]}) == attrs["checksum_sha256"]


def test_checksum_depends_on_every_array():
    (x, y), (xt, yt) = small_arrays()
    base = {"x_train": x, "y_train": y, "x_test": xt, "y_test": yt}
    digests = {arrays_checksum(base)}
    for name in DATASETS:
        changed = dict(base)
        changed[name] = base[name].copy()
        changed[name].flat[-1] ^= 1
        digests.add(arrays_checksum(changed))
    assert len(digests) == 1 + len(DATASETS)


def test_chunks_are_whole_batches(tmp_path):
    path = write_small(tmp_path / "c.h5", chunk_rows=16, compression="gzip")
    with h5py.File(path) as f:
        assert f["x_train"].chunks == (16, 32, 32, 3) and f["y_train"].chunks == (16,)
        assert f["x_test"].chunks == (10, 32, 32, 3)  # never larger than the data
        assert f["x_train"].compression == "gzip"
    with h5py.File(write_small(tmp_path / "d.h5")) as f:
        assert f["x_train"].compression is None


def test_progress_bar(tmp_path, capsys):
    write_small(tmp_path / "p.h5", progress=True)
    err = capsys.readouterr().err
    assert "Writing p.h5" in err and "50/50" in err


def test_creates_parent_folder_and_replaces(tmp_path):
    path = write_small(tmp_path / "a" / "b" / "f.h5")
    assert validate_hdf5(path).n_train == 40
    (x, y), test = small_arrays(n_train=30)
    write_hdf5(path, (x, y), test, source="synthetic", class_names=SYNTHETIC_CLASS_NAMES, progress=False)
    assert validate_hdf5(path).n_train == 30
    assert leftovers(path.parent) == ["f.h5"]


@pytest.mark.parametrize("exc_type", [RuntimeError, KeyboardInterrupt])
@pytest.mark.bad_input("interrupted write")
def test_interrupted_write_leaves_nothing(tmp_path, monkeypatch, exc_type):
    calls = []
    original = h5py.Dataset.__setitem__

    def fail_half_way(self, key, value):
        calls.append(key)
        if len(calls) == 3:  # after the file and some data exist
            raise exc_type("interrupted")
        return original(self, key, value)

    monkeypatch.setattr(h5py.Dataset, "__setitem__", fail_half_way)
    with pytest.raises(exc_type):
        write_small(tmp_path / "new.h5", chunk_rows=8)
    assert len(calls) == 3
    assert leftovers(tmp_path) == []


@pytest.mark.bad_input("interrupted write")
def test_failed_rewrite_keeps_the_good_file(good_file, monkeypatch):
    before = good_file.read_bytes()

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(h5py.Dataset, "__setitem__", fail)
    with pytest.raises(KeyboardInterrupt):
        write_small(good_file)
    assert good_file.read_bytes() == before
    assert leftovers(good_file.parent) == [good_file.name]
    monkeypatch.undo()
    validate_hdf5(good_file, verify_checksum=True)


@pytest.mark.parametrize("change, match", [
    (lambda tr, te: ((tr[0][..., 0], tr[1]), te), "x_train"),
    (lambda tr, te: ((tr[0].astype(np.float32), tr[1]), te), "x_train"),
    (lambda tr, te: (tr, (te[0], te[1][:-1])), "y_test"),
    (lambda tr, te: (tr, (te[0], te[1] + 10)), "labels"),
])
@pytest.mark.bad_input("bad argument")
def test_writer_refuses_wrong_arrays(tmp_path, change, match):
    train, test = change(*small_arrays())
    with pytest.raises(ValueError, match=match):
        write_hdf5(tmp_path / "w.h5", train, test, source="synthetic", class_names=SYNTHETIC_CLASS_NAMES, progress=False)
    assert leftovers(tmp_path) == []


@pytest.mark.bad_input("bad argument")
def test_writer_refuses_unknown_source_and_reserved_attrs(tmp_path):
    with pytest.raises(ValueError, match="source"):
        write_small(tmp_path / "w.h5", source="mnist")
    with pytest.raises(ValueError, match="checksum_sha256"):
        write_small(tmp_path / "w.h5", attrs={"checksum_sha256": "x"})


# --- validation errors: each names the file, the problem and the fix -------------------------

def expect_error(path, *parts, verify=False):
    with pytest.raises(DataFileError) as err:
        validate_hdf5(path, verify_checksum=verify)
    message = str(err.value)
    assert str(path) in message
    assert "python -m gpulesson.datasets.prepare" in message
    for part in parts:
        assert part in message, message
    return message


@pytest.mark.bad_input("missing file")
def test_missing_files_say_how_to_prepare_them(tmp_path):
    message = expect_error(tmp_path / "cifar10.h5", "does not exist", "--data cifar10", "login node")
    assert f"--data-dir {tmp_path}" in message
    message = expect_error(tmp_path / "synthetic-quick.h5", "--data synthetic --quick")
    assert "login node" not in message
    expect_error(tmp_path / "mine.h5", f"--out {tmp_path}/mine.h5")


@pytest.mark.bad_input("truncated file")
def test_truncated_file(good_file):
    data = good_file.read_bytes()
    good_file.write_bytes(data[: len(data) // 2])
    expect_error(good_file, "truncated", "--data synthetic --quick")


@pytest.mark.bad_input("corrupt file")
def test_random_bytes(tmp_path):
    path = tmp_path / "cifar10.h5"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    expect_error(path, "not an HDF5 file", "--data cifar10")


@pytest.mark.bad_input("truncated file")
def test_empty_file(tmp_path):
    path = tmp_path / "synthetic.h5"
    path.touch()
    expect_error(path, "not an HDF5 file")


def rewrite(path, name, data):
    with h5py.File(path, "a") as f:
        del f[name]
        f[name] = data


@pytest.mark.bad_input("corrupt file")
def test_missing_dataset(good_file):
    with h5py.File(good_file, "a") as f:
        del f["y_test"]
    expect_error(good_file, "y_test", "missing")


def test_wrong_shape(good_file):
    rewrite(good_file, "x_train", np.zeros((40, 32, 32), np.uint8))
    expect_error(good_file, "x_train", "(40, 32, 32)")


@pytest.mark.bad_input("corrupt file")
def test_wrong_dtype(good_file):
    rewrite(good_file, "x_test", np.zeros((10, 32, 32, 3), np.float32))
    expect_error(good_file, "x_test", "float32")


@pytest.mark.bad_input("bad labels")
def test_labels_not_integer(good_file):
    rewrite(good_file, "y_train", np.zeros(40, np.float64))
    expect_error(good_file, "y_train", "integer")


def test_length_mismatch(good_file):
    rewrite(good_file, "y_train", np.zeros(39, np.uint8))
    expect_error(good_file, "40 images", "39 labels")


@pytest.mark.bad_input("bad labels")
def test_labels_out_of_range(good_file):
    rewrite(good_file, "y_test", np.full(10, 12, np.uint8))
    expect_error(good_file, "y_test", "12", "10 classes")


@pytest.mark.bad_input("corrupt file")
def test_missing_provenance(good_file):
    with h5py.File(good_file, "a") as f:
        del f.attrs["source"]
    expect_error(good_file, "provenance", "source")


def test_tampered_data_fail_the_checksum(good_file):
    validate_hdf5(good_file, verify_checksum=True)
    with h5py.File(good_file, "a") as f:
        f["x_test"][0, 0, 0, 0] ^= 255
    validate_hdf5(good_file)  # structure is fine; only the checksum notices
    expect_error(good_file, "checksum", "--data synthetic --quick", verify=True)
    with pytest.raises(DataFileError):
        read_hdf5(good_file.parent / "nothing.h5")
