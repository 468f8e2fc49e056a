"""MNIST for the PyTorch episode, and its synthetic, MNIST-shaped stand-in (``LESSON_DATA=synthetic``;
no fallback). The real one is read by torchvision from ``<LESSON_DATA_DIR>/MNIST/raw/``.

    python -m gpulesson.datasets.mnist            # download MNIST once, e.g. on a login node
"""

import argparse
import gzip
import os
import shutil
import sys
import urllib.error
from pathlib import Path

import numpy as np

from gpulesson.datasets.settings import QUICK_N_TEST, QUICK_N_TRAIN, Settings, get_settings
from gpulesson.errors import (
    DataFileError,
    DataFolderError,
    DataUnavailableError,
    LessonDataError,
    cannot_write_file,
)

MNIST_CLASS_NAMES = tuple(str(digit) for digit in range(10))
RAW_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
             "t10k-labels-idx1-ubyte")
MNIST_N_TRAIN, MNIST_N_TEST = 60_000, 10_000
SIZE = 28
# ITU-R BT.601 luma weights: how bright each colour channel looks.
_GREY = np.array([0.299, 0.587, 0.114], dtype=np.float32)
TORCH_INSTALL = "python -m pip install -r requirements/torch.txt"


def raw_folder(root: str | os.PathLike) -> Path:
    """Where torchvision's MNIST looks for the four IDX files under ``root``."""
    return Path(root).expanduser() / "MNIST" / "raw"


def _unpack_archives(raw: Path) -> None:
    """Unpack ``NAME.gz`` into ``NAME`` where only the archive is there."""
    for name in RAW_FILES:
        target, archive = raw / name, raw / f"{name}.gz"
        if target.is_file() or not archive.is_file():
            continue
        partial = target.with_name(target.name + ".part")
        try:
            with gzip.open(archive, "rb") as source, open(partial, "wb") as out:
                shutil.copyfileobj(source, out)
        except (OSError, EOFError) as exc:
            partial.unlink(missing_ok=True)
            raise DataFileError(f"{archive} is not a complete gzip archive ({exc}): delete it and "
                                "download MNIST again (python -m gpulesson.datasets.mnist)") from exc
        partial.replace(target)


def load_mnist(root: str | os.PathLike, *, download: bool = True):
    """Real MNIST as ``((x_train, y_train), (x_test, y_test))``, read (or downloaded) by torchvision."""
    root = Path(root).expanduser()
    raw = raw_folder(root)
    _unpack_archives(raw)
    try:
        from torchvision.datasets import MNIST
    except ImportError as exc:
        raise DataUnavailableError(
            "Reading MNIST needs torchvision, which is not installed here. Install "
            f"PyTorch and torchvision with\n    {TORCH_INSTALL}\n"
            "or choose the synthetic stand-in, which needs neither: LESSON_DATA=synthetic.") from exc
    present = all((raw / name).is_file() for name in RAW_FILES)
    unwritable = None if present or not download else cannot_write_file(raw / RAW_FILES[0])
    if unwritable:  # a read-only folder is not the internet's fault: said before any download
        raise DataFolderError(
            f"MNIST is not in {raw}, and it cannot be downloaded there ({unwritable}). "
            f"Download it into a data folder of your own with\n"
            f"    python -m gpulesson.datasets.mnist --data-dir ~/gpulesson-data\n"
            f"and set LESSON_DATA_DIR=~/gpulesson-data, or ask your instructor to run "
            f"python -m gpulesson.datasets.mnist --data-dir {root}.")
    try:
        splits = [MNIST(root, train=train, download=download) for train in (True, False)]
    except (RuntimeError, OSError, urllib.error.URLError) as exc:
        if present:
            raise DataFileError(f"the MNIST files in {raw} cannot be read ({exc}); "
                                "delete them and download MNIST again") from exc
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = (f"the download failed ({first})" if download
                  else "the files are missing and downloading is switched off")
        raise DataUnavailableError(
            f"MNIST could not be loaded: {reason}\n"
            f"It is read from {raw} (the files {', '.join(RAW_FILES)}, or the same names with .gz).\n"
            "Compute nodes often have no internet: download it once on a login node with\n"
            "    python -m gpulesson.datasets.mnist\n"
            "(with the same LESSON_DATA_DIR), or copy the four files into that folder.\n"
            "Or choose the synthetic stand-in explicitly: LESSON_DATA=synthetic.") from exc
    except (AssertionError, ValueError, TypeError, KeyError) as exc:
        raise DataFileError(f"the files in {raw} are not valid MNIST IDX files ({exc!r}); "
                            "delete them and download MNIST again") from exc
    return tuple((split.data.numpy(), split.targets.numpy()) for split in splits)


def synthetic_mnist(n_train: int, n_test: int, seed: int = 0, progress: bool = False):
    """The MNIST-shaped stand-in: the CIFAR-shaped one, grey and cropped to 28 x 28."""
    from gpulesson.datasets.synthetic import make_synthetic

    splits = make_synthetic(n_train, n_test, seed=seed, progress=progress)
    result = []
    for images, labels in splits:
        margin = (images.shape[1] - SIZE) // 2
        crop = images[:, margin:margin + SIZE, margin:margin + SIZE, :]
        grey = np.rint(crop.astype(np.float32) @ _GREY)
        result.append((np.clip(grey, 0, 255).astype(np.uint8), labels.astype(np.int64)))
    return tuple(result)


def load_data(settings: Settings | None = None, *, seed: int = 0):
    """``(train, test, data, class_names)`` of the episode for ``settings``; ``data`` is the results label."""
    settings = settings or get_settings()
    n_train = QUICK_N_TRAIN if settings.quick else MNIST_N_TRAIN
    n_test = QUICK_N_TEST if settings.quick else MNIST_N_TEST
    if settings.is_synthetic:
        from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES

        train, test = synthetic_mnist(n_train, n_test, seed=seed)
        return train, test, "synthetic_mnist", SYNTHETIC_CLASS_NAMES
    train, test = load_mnist(settings.data_dir)
    train = (train[0][:n_train], train[1][:n_train])
    test = (test[0][:n_test], test[1][:n_test])
    return train, test, "mnist", MNIST_CLASS_NAMES


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Download MNIST into the lesson's data folder (run it where there is internet).")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the folder (default: LESSON_DATA_DIR, else ~/gpulesson-data)")
    args = parser.parse_args(argv)
    root = args.data_dir or get_settings().data_dir
    try:
        (x_train, _), (x_test, _) = load_mnist(root)
    except LessonDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"MNIST is ready in {raw_folder(root)}: {len(x_train):,} training and "
          f"{len(x_test):,} test images.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
