"""Choose, load and prepare the lesson's data according to :mod:`gpulesson.settings`.

The choice between CIFAR-10 and the synthetic stand-in is always explicit (``settings.data``):
if CIFAR-10 cannot be downloaded, the error says how to fix that, and nothing silently
switches to synthetic data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpulesson.errors import DataFileError, check_writable
from gpulesson.hdf5 import Hdf5Info, file_attributes, validate_hdf5, write_hdf5
from gpulesson.settings import Settings, get_settings

# The training rows are shuffled once, with this seed, when a data file is written, so that any
# contiguous slice of the file is a random mix of classes (the episode's generator reads slices).
ROW_SEED = 0
FULL_BATCH_SIZE = 256  # the episode's batch size: one chunk of the file holds one batch


def load_arrays(settings: Settings, *, seed: int = 0, progress: bool = True):
    """``(train, test, source, class_names)`` for ``settings``; train and test are ``(x, y)``.

    CIFAR-10 comes from :func:`gpulesson.cifar10.load_cifar10` (the origin can be overridden
    with ``LESSON_CIFAR10_URL``); quick mode keeps its first ``n_train`` / ``n_test`` images.
    The synthetic stand-in is made at exactly the settings' sizes from ``seed``.
    """
    if settings.data == "cifar10":
        from gpulesson.cifar10 import CLASS_NAMES, cifar10_source, load_cifar10

        origin, sha256 = cifar10_source()
        (x_train, y_train), (x_test, y_test) = load_cifar10(origin, sha256, progress=progress)
        if settings.quick:
            x_train, y_train = x_train[: settings.n_train], y_train[: settings.n_train]
            x_test, y_test = x_test[: settings.n_test], y_test[: settings.n_test]
        return (x_train, y_train), (x_test, y_test), "cifar10", CLASS_NAMES
    if settings.data == "synthetic":
        from gpulesson.synthetic import SYNTHETIC_CLASS_NAMES, make_synthetic

        train, test = make_synthetic(settings.n_train, settings.n_test, seed=seed, progress=progress)
        return train, test, "synthetic", SYNTHETIC_CLASS_NAMES
    raise ValueError(f"unknown data set {settings.data!r}")


def _mismatch(info: Hdf5Info, settings: Settings, seed: int) -> str | None:
    """Why an existing valid file is not the one these settings ask for (None if it is)."""
    if info.source != settings.data:
        return f"it holds {info.label}, not {settings.label}"
    if info.attrs.get("quick") != settings.quick:
        return "it was made for the other mode (quick / full size)"
    if info.synthetic and info.attrs.get("seed") != seed:
        return f"it was made with seed {info.attrs.get('seed')}, not {seed}"
    if info.attrs.get("train_row_seed") != ROW_SEED:
        return "its training rows are not shuffled the way the lesson writes them"
    return None


def _settings_attrs(settings: Settings, source: str, seed: int) -> dict:
    attrs = {"quick": settings.quick, "train_row_seed": ROW_SEED}
    if source == "synthetic":
        attrs["seed"] = seed
    else:
        from gpulesson.cifar10 import cifar10_source

        attrs["origin"] = cifar10_source()[0]
    return attrs


def lesson_file_attributes(settings: Settings, arrays, source: str, class_names, *,
                           seed: int = 0) -> dict:
    """The attributes of a data file that the episode writes itself with h5py: the same as
    :func:`prepare` writes, so that :func:`prepare` reuses that file (``arrays``: the four
    datasets by name, training rows already shuffled with :data:`ROW_SEED`)."""
    return file_attributes(arrays, source=source, class_names=class_names,
                           attrs=_settings_attrs(settings, source, seed))


def shuffle_rows(x, y, seed: int = ROW_SEED):
    """``(x, y)`` with their rows in the one random order a lesson data file keeps them in."""
    order = np.random.default_rng(seed).permutation(len(y))
    return x[order], y[order]


def prepare(settings: Settings | None = None, *, force: bool = False, out=None, seed: int = 0,
            progress: bool = True, arrays=None) -> Path:
    """Make sure the HDF5 file for ``settings`` exists and is valid; returns its path.

    An existing file is checked (including its checksum) and reused if it is valid and matches
    the settings; otherwise, or with ``force``, it is (re-)written from :func:`load_arrays`.
    ``out`` overrides the file name (default ``settings.hdf5_path``). ``arrays``: what
    :func:`load_arrays` returned for these settings, if the caller has it already (it is not
    loaded twice). Prints one line per step.
    """
    settings = settings or get_settings()
    path = Path(out).expanduser() if out is not None else settings.hdf5_path
    if path.exists() and not force:
        try:
            info = validate_hdf5(path, verify_checksum=True)
        except DataFileError as exc:
            print(f"{path} cannot be used ({str(exc).splitlines()[0]}); re-creating it.")
        else:
            why = _mismatch(info, settings, seed)
            if why is None:
                print(f"Reusing {path}: a valid {info.label} file "
                      f"({info.n_train:,} training / {info.n_test:,} test images).")
                return path
            print(f"{path} does not match the settings ({why}); re-creating it.")
    # Before the download and the conversion: a folder we cannot write to stops us now.
    check_writable(path.parent)
    if arrays is None:
        arrays = load_arrays(settings, seed=seed, progress=progress)
    train, test, source, class_names = arrays
    if source != settings.data:
        raise ValueError(f"the arrays given are {source}, but the settings ask for {settings.data}: "
                         "use load_arrays(settings)")
    # Written as the episode writes it: training rows shuffled once, a batch per chunk.
    write_hdf5(path, shuffle_rows(*train), test, source=source, class_names=class_names,
               attrs=_settings_attrs(settings, source, seed),
               chunk_rows=settings.batch_size(FULL_BATCH_SIZE), progress=progress)
    print(f"Wrote {path}.")
    return path


def dataset_label(path_or_settings) -> str:
    """The human label of the data (for plot titles and tables), from settings or a data file."""
    if isinstance(path_or_settings, (Settings, Hdf5Info)):
        return path_or_settings.label
    return validate_hdf5(path_or_settings).label
