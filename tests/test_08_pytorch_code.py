"""Episode 8, the same comparison in PyTorch: MNIST through torchvision and its stand-in, the
lesson's PyTorch code, and the episode's idioms. The run records, figures and the notebook
without PyTorch are tested in test_08_pytorch.py."""

import copy
import gzip
import re
import struct
import sys

import numpy as np
import pytest
from conftest import ROOT

from gpulesson.datasets import mnist
from gpulesson.datasets.settings import LABELS, QUICK_N_TEST, QUICK_N_TRAIN, Settings
from gpulesson.errors import DataFileError, DataUnavailableError

torch = pytest.importorskip("torch", reason="PyTorch is an optional extra (requirements/torch.txt)")

pytestmark = pytest.mark.usefixtures("no_network")
EPISODE = ROOT / "_episodes" / "08-pytorch.md"



@pytest.fixture
def one_thread():
    """One PyTorch thread: fast and steady on a busy two-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def write_idx_gz(path, array):
    """An IDX file (the MNIST format: big-endian header, then the bytes), gzip-compressed."""
    array = np.asarray(array, dtype=np.uint8)
    header = struct.pack(">I", 0x0800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


def tiny_mnist(root, n_train=20, n_test=10):
    """Four tiny MNIST archives in root/MNIST/raw/, as a download leaves them; returns the arrays."""
    rng = np.random.default_rng(7)
    raw = mnist.raw_folder(root)
    raw.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for prefix, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        write_idx_gz(raw / f"{prefix}-images-idx3-ubyte.gz", images)
        write_idx_gz(raw / f"{prefix}-labels-idx1-ubyte.gz", labels)
        arrays[prefix] = (images, labels)
    return arrays


@pytest.fixture
def unreachable_mirrors(monkeypatch, tmp_path):
    """torchvision's MNIST mirrors replaced by a folder that does not exist (no download works)."""
    from torchvision.datasets import MNIST

    monkeypatch.setattr(MNIST, "mirrors", [(tmp_path / "no-mirror").as_uri() + "/"])


# --- MNIST through torchvision, offline ------------------------------------------------------

def test_mnist_is_read_from_archives_in_torchvisions_folder(tmp_path, unreachable_mirrors):
    made = tiny_mnist(tmp_path)
    (x_train, y_train), (x_test, y_test) = mnist.load_mnist(tmp_path)
    np.testing.assert_array_equal(x_train, made["train"][0])
    np.testing.assert_array_equal(y_train, made["train"][1])
    np.testing.assert_array_equal(x_test, made["t10k"][0])
    np.testing.assert_array_equal(y_test, made["t10k"][1])
    assert x_train.dtype == np.uint8 and x_train.shape == (20, 28, 28) and y_train.dtype == np.int64
    # the archives were unpacked where torchvision reads the files, and they are read again offline
    assert all((mnist.raw_folder(tmp_path) / name).is_file() for name in mnist.RAW_FILES)
    (x_again, _), _ = mnist.load_mnist(tmp_path, download=False)
    np.testing.assert_array_equal(x_again, x_train)


def test_load_data_gives_mnist_unless_the_stand_in_is_chosen(tmp_path, unreachable_mirrors):
    tiny_mnist(tmp_path, n_train=30, n_test=12)
    train, test, data, names = mnist.load_data(Settings("cifar10", quick=True, data_dir=tmp_path))
    assert data == "mnist" and LABELS[data] == "MNIST" and names == tuple("0123456789")
    assert len(train[0]) == 30 and len(test[0]) == 12
    train, test, data, _ = mnist.load_data(Settings("synthetic", quick=True, data_dir=tmp_path))
    assert data == "synthetic_mnist" and "not MNIST" in LABELS[data]
    assert (len(train[0]), len(test[0])) == (QUICK_N_TRAIN, QUICK_N_TEST)


@pytest.mark.bad_input("no internet")
def test_missing_mnist_without_network_says_what_to_do(tmp_path, unreachable_mirrors):
    with pytest.raises(DataUnavailableError) as failed:
        mnist.load_mnist(tmp_path)
    message = str(failed.value)
    for part in ("download failed", str(mnist.raw_folder(tmp_path)), "python -m gpulesson.datasets.mnist",
                 "login node", "LESSON_DATA=synthetic", "train-images-idx3-ubyte"):
        assert part in message, part
    with pytest.raises(DataUnavailableError, match="downloading is switched off"):
        mnist.load_mnist(tmp_path, download=False)
    # never a silent switch to the stand-in
    with pytest.raises(DataUnavailableError):
        mnist.load_data(Settings("cifar10", quick=True, data_dir=tmp_path))


@pytest.mark.bad_input("corrupt file")
def test_damaged_files_are_reported_as_such(tmp_path, unreachable_mirrors):
    tiny_mnist(tmp_path)
    raw = mnist.raw_folder(tmp_path)
    archive = raw / "t10k-labels-idx1-ubyte.gz"
    archive.write_bytes(archive.read_bytes()[:12])
    with pytest.raises(DataFileError, match="not a complete gzip archive"):
        mnist.load_mnist(tmp_path)
    assert not (raw / "t10k-labels-idx1-ubyte").exists()
    archive.unlink()
    (raw / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x0f\x07" + bytes(40))
    with pytest.raises(DataFileError, match="not valid MNIST IDX files"):
        mnist.load_mnist(tmp_path)


@pytest.mark.bad_input("missing package")
def test_missing_torchvision_is_explained(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torchvision", None)
    monkeypatch.setitem(sys.modules, "torchvision.datasets", None)
    with pytest.raises(DataUnavailableError, match=r"requirements/torch.txt[\s\S]*LESSON_DATA=synthetic"):
        mnist.load_mnist(tmp_path)


@pytest.mark.bad_input("no internet")
def test_download_command(tmp_path, unreachable_mirrors, capsys):
    assert mnist.main(["--data-dir", str(tmp_path)]) == 1
    assert "python -m gpulesson.datasets.mnist" in capsys.readouterr().err
    tiny_mnist(tmp_path)
    assert mnist.main(["--data-dir", str(tmp_path)]) == 0
    assert "20 training and 10 test images" in capsys.readouterr().out


# --- the stand-in ----------------------------------------------------------------------------

def test_stand_in_is_mnist_shaped_balanced_and_reproducible():
    from gpulesson.datasets.synthetic import make_synthetic

    (x_train, y_train), (x_test, _) = mnist.synthetic_mnist(200, 50, seed=3)
    assert x_train.shape == (200, 28, 28) and x_test.shape == (50, 28, 28)
    assert x_train.dtype == np.uint8 and y_train.dtype == np.int64
    assert set(np.bincount(y_train, minlength=10)) == {20}
    again = mnist.synthetic_mnist(200, 50, seed=3)
    np.testing.assert_array_equal(again[0][0], x_train)
    assert not np.array_equal(mnist.synthetic_mnist(200, 50, seed=4)[0][0], x_train)
    # the grey, centre-cropped images of the CIFAR-shaped stand-in, with its labels
    (colour, labels), _ = make_synthetic(200, 50, seed=3, progress=False)
    np.testing.assert_array_equal(labels, y_train)
    expected = np.rint(colour[:, 2:30, 2:30].astype(np.float32) @ np.float32([0.299, 0.587, 0.114]))
    np.testing.assert_array_equal(x_train, expected.astype(np.uint8))
    assert x_train.std() > 20  # not blank


# --- the episode's PyTorch code --------------------------------------------------------------

def datasets(n_train, n_test):
    from gpulesson.lesson import torch as lesson_torch

    (x_train, y_train), (x_test, y_test) = mnist.synthetic_mnist(n_train, n_test)
    mean, std = float(x_train.mean() / 255), float(x_train.std() / 255)
    return (lesson_torch.to_dataset(x_train, y_train, mean, std),
            lesson_torch.to_dataset(x_test, y_test, mean, std))


def initial(seed=42):
    from gpulesson.lesson import torch as lesson_torch

    torch.manual_seed(seed)
    return copy.deepcopy(lesson_torch.SmallCNN().state_dict())


def test_to_dataset_layout_and_standardisation():
    train_set, _ = datasets(100, 10)
    images, labels = train_set.tensors
    assert images.shape == (100, 1, 28, 28) and images.dtype == torch.float32 and labels.dtype == torch.int64
    assert abs(images.mean().item()) < 1e-3 and abs(images.std().item() - 1) < 1e-2


def test_whole_batches_are_the_row_by_row_loaders_batches_in_its_order():
    from torch.utils.data import DataLoader, TensorDataset

    from gpulesson.lesson.torch import batches

    data = TensorDataset(torch.arange(70).float().unsqueeze(1) * 10, torch.arange(70))
    for shuffle in (True, False):
        row_by_row = DataLoader(data, batch_size=16, shuffle=shuffle,
                                generator=torch.Generator().manual_seed(3))
        whole = batches(data, 16, shuffle=shuffle, generator=torch.Generator().manual_seed(3))
        pairs = list(zip(row_by_row, whole, strict=True))
        assert [len(y) for _, (_, y) in pairs] == [16, 16, 16, 16, 6]  # the short last batch
        for (x_rows, y_rows), (x_whole, y_whole) in pairs:
            assert torch.equal(x_rows, x_whole) and torch.equal(y_rows, y_whole)
            assert torch.equal(x_whole[:, 0], y_whole.float() * 10)  # images stay with labels
        seen = torch.cat([y for _, y in whole])
        assert sorted(seen.tolist()) == list(range(70))  # every row once per epoch
        if shuffle:
            assert seen.tolist() != list(range(70))


def test_whole_batches_take_one_indexing_step_per_batch():
    from torch.utils.data import TensorDataset

    from gpulesson.lesson.torch import batches

    class Counted(TensorDataset):
        calls = 0

        def __getitem__(self, index):
            Counted.calls += 1
            return super().__getitem__(index)

    data = Counted(torch.zeros(50, 1), torch.zeros(50))
    assert len(list(batches(data, 16))) == 4
    assert Counted.calls == 4


def test_training_learns_the_stand_in_in_quick_mode(one_thread):
    from gpulesson.lesson import torch as lesson_torch

    train_set, test_set = datasets(QUICK_N_TRAIN, QUICK_N_TEST)
    run = lesson_torch.train_on("cpu", initial(), train_set, test_set, 2, batch_size=64, verbose=False)
    assert run["train_loss"][1] < run["train_loss"][0] < 2.4
    assert run["test_accuracy"] > 0.3, "chance is 0.1"
    assert len(run["epoch_seconds"]) == 2 and all(s > 0 for s in run["epoch_seconds"])
    assert run["evaluation_seconds"] > 0 and run["device"] == "cpu" and run["batch_size"] == 64


def test_same_initial_weights_give_the_same_first_step(one_thread):
    from gpulesson.lesson import torch as lesson_torch

    train_set, test_set = datasets(64, 20)
    state = initial()
    before = lesson_torch.state_fingerprint(state)
    runs = [lesson_torch.train_on("cpu", state, train_set, test_set, 1, batch_size=64, verbose=False)
            for _ in range(2)]
    assert runs[0]["start_weights"] == runs[1]["start_weights"] == before
    assert runs[0]["train_loss"] == runs[1]["train_loss"]
    after = [lesson_torch.state_fingerprint(run["model"].state_dict()) for run in runs]
    assert after[0] == after[1] != before
    assert lesson_torch.state_fingerprint(state) == before, "training must not change the initial weights"
    other = lesson_torch.train_on("cpu", initial(seed=1), train_set, test_set, 1, batch_size=64,
                                  verbose=False)
    assert other["start_weights"] != before and other["train_loss"] != runs[0]["train_loss"]



# --- the episode's text ----------------------------------------------------------------------

def code_cells():
    return re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```", EPISODE.read_text(encoding="utf-8"),
                      flags=re.DOTALL | re.MULTILINE)


def test_the_episode_teaches_modern_pytorch():
    code = "\n".join(code_cells())
    for old in ("Variable", "volatile", ".data[0]", ".cuda()", "size_average", "from torch.autograd"):
        assert old not in code, f"old idiom {old!r} in the episode's code"
    for new in ('torch.device("cuda" if torch.cuda.is_available() else "cpu")', "model.to(device)",
                ".to(device)", "optimizer.zero_grad()", "loss.backward()", ".item()", "model.eval()",
                "torch.no_grad()", "torch.cuda.synchronize", "load_state_dict", "copy.deepcopy",
                "torch.manual_seed"):
        assert new in code, f"{new!r} is missing from the episode's code"
    text = EPISODE.read_text(encoding="utf-8")
    callout = text[text.index(":::{callout} If you meet old code"):]
    for old in ("Variable(x, volatile=True)", "loss.data[0]", "loss.item()", "torch.no_grad()"):
        assert old in callout, old


def test_the_episode_code_fits_the_page():
    for cell in code_cells():
        for line in cell.splitlines():
            assert len(line) <= 78, line


