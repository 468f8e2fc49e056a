"""The real CIFAR-10 loader, on small archives in the true format: download over HTTP and
file://, cache, pixel layout, and the errors a learner meets without internet."""

import pickle

import numpy as np
import pytest
from data_fixtures import MARK, closed_port_url, make_cifar_archive, no_proxy, serve_directory, write_tar_gz

from gpulesson.datasets.cifar10 import CLASS_NAMES, cifar10_source, load_cifar10
from gpulesson.errors import DataFileError, DataUnavailableError, LessonDataError


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    return make_cifar_archive(tmp_path_factory.mktemp("cifar-src"), n_per_batch=20, n_test=12)


@pytest.fixture(autouse=True)
def _direct_loopback(monkeypatch):
    no_proxy(monkeypatch)


def assert_same_as(archive, loaded):
    (x, y), (xt, yt) = loaded
    assert x.shape == (100, 32, 32, 3) and xt.shape == (12, 32, 32, 3)
    assert x.dtype == xt.dtype == y.dtype == yt.dtype == np.uint8
    assert y.shape == (100,) and yt.shape == (12,)
    np.testing.assert_array_equal(x, archive.x_train)
    np.testing.assert_array_equal(y, archive.y_train)
    np.testing.assert_array_equal(xt, archive.x_test)
    np.testing.assert_array_equal(yt, archive.y_test)


def test_http_download_then_served_from_cache(archive, tmp_path):
    cache = tmp_path / "keras"
    with serve_directory(archive.path.parent) as (base, requests):
        url = f"{base}/{archive.path.name}"
        assert_same_as(archive, load_cifar10(url, archive.sha256, cache_dir=cache, progress=False))
    assert requests == [f"/{archive.path.name}"]
    # the server is gone: the second call must come from the cache, checked by its hash
    assert_same_as(archive, load_cifar10(url, archive.sha256, cache_dir=cache, progress=False))
    assert (cache / "datasets" / "cifar-10-batches-py-target_archive").is_file()


def test_file_url_and_keras_cache_layout(archive, tmp_path):
    loaded = load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path, progress=False)
    assert_same_as(archive, loaded)
    # the same place keras.datasets.cifar10.load_data() extracts to, so the caches are shared
    assert (tmp_path / "datasets" / "cifar-10-batches-py-target" / "cifar-10-batches-py" / "test_batch").is_file()


def test_pixel_layout_is_channels_last(archive, tmp_path):
    (_, _), (xt, _) = load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path, progress=False)
    assert xt[0, MARK["row"], MARK["col"], MARK["channel"]] == MARK["value"]
    # the red plane comes first in the file: its first byte is the top-left red value
    with open(tmp_path / "datasets/cifar-10-batches-py-target/cifar-10-batches-py/test_batch", "rb") as f:
        raw = pickle.load(f, encoding="bytes")[b"data"]
    assert xt[5, 0, 0, 0] == raw[5, 0] and xt[5, 0, 1, 0] == raw[5, 1] and xt[5, 1, 0, 0] == raw[5, 32]
    assert xt[5, 0, 0, 1] == raw[5, 1024] and xt[5, 31, 31, 2] == raw[5, 3071]


def test_python3_pickles_without_meta_are_read(tmp_path):
    archive = make_cifar_archive(tmp_path / "src", n_per_batch=3, n_test=4, protocol=4, label_names=None)
    assert load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path / "c", progress=False)[1][0].shape == (4, 32, 32, 3)


def test_progress_messages_only_when_asked(archive, tmp_path, capsys):
    load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path / "a", progress=False)
    assert "Downloading" not in capsys.readouterr().out
    load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path / "b", progress=True)
    assert "Downloading data from" in capsys.readouterr().out


@pytest.mark.bad_input("no internet")
def test_unreachable_origin_explains_both_fixes(tmp_path):
    url = closed_port_url()
    with pytest.raises(DataUnavailableError) as err:
        load_cifar10(url, "0" * 64, cache_dir=tmp_path, progress=False)
    message = str(err.value)
    assert url in message
    assert "python -m gpulesson.datasets.prepare --data cifar10" in message
    assert "LESSON_DATA=synthetic" in message
    assert "login node" in message


@pytest.mark.bad_input("corrupt file")
def test_hash_mismatch_is_a_clear_error(archive, tmp_path):
    with pytest.raises(DataUnavailableError) as err:
        load_cifar10(archive.url, "1" * 64, cache_dir=tmp_path, progress=False)
    message = str(err.value)
    assert "1" * 64 in message and "SHA-256" in message and archive.url in message


@pytest.mark.bad_input("missing file")
def test_missing_http_file_is_unavailable(archive, tmp_path):
    with serve_directory(archive.path.parent) as (base, _):
        with pytest.raises(DataUnavailableError, match="404"):
            load_cifar10(f"{base}/nothing-here.tar.gz", None, cache_dir=tmp_path, progress=False)


@pytest.mark.bad_input("corrupt file")
def test_archive_without_the_batches(tmp_path):
    bad = write_tar_gz(tmp_path / "other.tar.gz", {"readme.txt": b"not CIFAR"}, folder="something-else")
    with pytest.raises(DataFileError) as err:
        load_cifar10(bad.as_uri(), None, cache_dir=tmp_path / "c", progress=False)
    assert "data_batch_1" in str(err.value) and "python -m gpulesson.datasets.prepare --data cifar10" in str(err.value)


def _archive_with(tmp_path, test_batch):
    good = make_cifar_archive(tmp_path / "src", n_per_batch=2, n_test=2)
    import tarfile

    files = {}
    with tarfile.open(good.path) as tar:
        for member in tar.getmembers():
            if member.isfile():
                files[member.name.split("/")[-1]] = tar.extractfile(member).read()
    files["test_batch"] = test_batch
    return write_tar_gz(tmp_path / "bad.tar.gz", files)


class Boom:
    def __reduce__(self):
        import os

        return (os.getcwd, ())


@pytest.mark.parametrize("payload, problem", [
    (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 1], b"x": Boom()}), "refusing to load"),
    (pickle.dumps({b"labels": [0, 1]}), "data"),
    (pickle.dumps({b"data": np.zeros((2, 1024), np.uint8), b"labels": [0, 1]}), "3072"),
    (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}), "labels"),
    (pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 10]}), "0..9"),
    (pickle.dumps([1, 2, 3]), "dict"),
    (b"garbage", "cannot be read"),
])
@pytest.mark.bad_input("corrupt file")
def test_bad_batches_are_refused_clearly(tmp_path, payload, problem):
    bad = _archive_with(tmp_path, payload)
    with pytest.raises(DataFileError) as err:
        load_cifar10(bad.as_uri(), None, cache_dir=tmp_path / "c", progress=False)
    assert "test_batch" in str(err.value) and problem in str(err.value)


@pytest.mark.bad_input("corrupt file")
def test_other_label_names_are_not_cifar10(tmp_path):
    archive = make_cifar_archive(tmp_path / "src", n_per_batch=2, n_test=2, label_names=[f"c{i}" for i in range(10)])
    with pytest.raises(LessonDataError, match="batches.meta"):
        load_cifar10(archive.url, archive.sha256, cache_dir=tmp_path / "c", progress=False)


def test_mirror_override_variables(monkeypatch):
    assert cifar10_source({}) == (
        "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
    )
    assert cifar10_source({"LESSON_CIFAR10_URL": "file:///m.tgz"})[1] == cifar10_source({})[1]
    monkeypatch.setenv("LESSON_CIFAR10_URL", "http://mirror/c.tgz")
    monkeypatch.setenv("LESSON_CIFAR10_SHA256", "ab" * 32)
    assert cifar10_source() == ("http://mirror/c.tgz", "ab" * 32)


def test_class_names():
    assert len(CLASS_NAMES) == 10 and CLASS_NAMES[0] == "airplane" and CLASS_NAMES[-1] == "truck"
