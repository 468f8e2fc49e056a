"""Choose, load and prepare the lesson's data (:mod:`gpulesson.datasets.settings`). Nothing silently
switches to synthetic data; a valid prepared file is used as it is, even read-only, offline.
"""

from pathlib import Path

import numpy as np

from gpulesson.datasets import hdf5
from gpulesson.datasets.settings import (
    DEFAULT_DATA_DIR,
    Settings,
    get_settings,
    hdf5_filename,
    prepare_command,
)
from gpulesson.errors import DataFileError, DataFolderError, check_writable, home_note, tidy_on_failure

# The training rows are shuffled once, with this seed, when a data file is written, so that any
# contiguous slice of the file is a random mix of classes (the episode's generator reads slices).
ROW_SEED = 0
FULL_BATCH_SIZE = 256  # the episode's batch size: one chunk of the file holds one batch


def load_arrays(settings: Settings, *, seed: int = 0, progress: bool = True):
    """``(train, test, source, class_names)`` for ``settings``: CIFAR-10 or the stand-in."""
    if settings.data == "cifar10":
        from gpulesson.datasets.cifar10 import CLASS_NAMES, cifar10_source, load_cifar10

        origin, sha256 = cifar10_source()
        (x_train, y_train), (x_test, y_test) = load_cifar10(origin, sha256, progress=progress)
        if settings.quick:
            x_train, y_train = x_train[: settings.n_train], y_train[: settings.n_train]
            x_test, y_test = x_test[: settings.n_test], y_test[: settings.n_test]
        return (x_train, y_train), (x_test, y_test), "cifar10", CLASS_NAMES
    if settings.data == "synthetic":
        from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES, make_synthetic

        train, test = make_synthetic(settings.n_train, settings.n_test, seed=seed, progress=progress)
        return train, test, "synthetic", SYNTHETIC_CLASS_NAMES
    raise ValueError(f"unknown data set {settings.data!r}")


def _mismatch(info: hdf5.Hdf5Info, settings: Settings, seed: int) -> str | None:
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
        from gpulesson.datasets.cifar10 import cifar10_source

        attrs["origin"] = cifar10_source()[0]
    return attrs


def lesson_file_attributes(settings: Settings, arrays, source: str, class_names, *,
                           seed: int = 0) -> dict:
    """What :func:`prepare` writes, for a file the episode writes itself: :func:`prepare` reuses it."""
    return hdf5.file_attributes(arrays, source=source, class_names=class_names,
                                attrs=_settings_attrs(settings, source, seed))


def shuffle_rows(x, y, seed: int = ROW_SEED):
    """``(x, y)`` with their rows in the one random order a lesson data file keeps them in."""
    order = np.random.default_rng(seed).permutation(len(y))
    return x[order], y[order]


def _cannot_write_here(path: Path, settings: Settings, problem: str,
                       reason: str) -> DataFolderError:
    """The short message for a data folder that has no usable file and cannot take one."""
    command = prepare_command(settings.data, settings.quick, path)
    own = f"~/{DEFAULT_DATA_DIR.name}"
    login = ""
    if settings.data == "cifar10":
        login = "\nCIFAR-10 needs the internet once: on a cluster, prepare it on a login node."
    return DataFolderError(
        f"{problem}, and the data folder {path.parent} cannot be written to ({reason}), so the "
        f"file cannot be prepared there. Either:\n"
        f"  - ask your instructor (whoever looks after that folder) to prepare it there:\n"
        f"        {command}\n"
        f"  - or use a data folder of your own{home_note()}: in JupyterLab, a first cell "
        f"%env LESSON_DATA_DIR={own}, then run the notebook again from the top; in a terminal, "
        f"export LESSON_DATA_DIR={own} or pass --data-dir DIR to python -m gpulesson.datasets.prepare."
        + login)


def prepare(settings: Settings | None = None, *, force: bool = False, out=None, seed: int = 0,
            progress: bool = True, arrays=None) -> Path:
    """The path of a valid HDF5 file for ``settings``, written only when none is there or ``force``
    (a valid file is only read). ``arrays``: already loaded."""
    settings = settings or get_settings()
    path = Path(out).expanduser() if out is not None else settings.hdf5_path
    problem = f"There is no prepared file {path}"
    if force and path.is_file():
        problem = (f"--force asks to re-create {path} (without --force a valid file there "
                   f"is used as it is)")
    if path.is_dir():
        raise DataFileError(f"{path} is a folder: name the file to write in it, e.g. "
                            f"--out {path / hdf5_filename(settings.data, settings.quick)}")
    if path.exists() and not force:
        try:
            info = hdf5.validate_hdf5(path, verify_checksum=True)
        except DataFileError as exc:
            why = hdf5.not_the_lessons(path)  # someone's own file is never replaced unasked
            if why is not None:
                raise hdf5.refuse_to_replace(path, why) from None
            problem = f"{path} cannot be used ({str(exc).splitlines()[0]})"
            print(f"{problem}; re-creating it.")
        else:
            why = _mismatch(info, settings, seed)
            if why is None:
                print(f"Reusing {path}: a valid {info.label} file "
                      f"({info.n_train:,} training / {info.n_test:,} test images).")
                return path
            problem = f"{path} does not match the settings ({why})"
            print(f"{problem}; re-creating it.")
    with tidy_on_failure(path.parent):  # a failed download leaves no empty folders
        # Before the download and the conversion: a folder we cannot write to stops us now.
        try:
            check_writable(path.parent)
        except DataFolderError as exc:
            if exc.reason == "a file, not a folder":
                raise
            raise _cannot_write_here(path, settings, problem, exc.reason) from None
        if arrays is None:
            arrays = load_arrays(settings, seed=seed, progress=progress)
        train, test, source, class_names = arrays
        if source != settings.data:
            raise ValueError(f"the arrays given are {source}, but the settings ask for "
                             f"{settings.data}: use load_arrays(settings)")
        # Written as the episode writes it: training rows shuffled once, a batch per chunk.
        hdf5.write_hdf5(path, shuffle_rows(*train), test, source=source, class_names=class_names,
                   attrs=_settings_attrs(settings, source, seed),
                   chunk_rows=settings.batch_size(FULL_BATCH_SIZE), progress=progress)
    print(f"Wrote {path}.")
    return path


def load_prepared(settings: Settings | None = None, *, seed: int = 0, progress: bool = True):
    """:func:`load_arrays`' result, read from the prepared file, its rows in their first order."""
    import h5py

    info = hdf5.validate_hdf5(prepare(settings or get_settings(), seed=seed, progress=progress))
    with h5py.File(info.path, "r") as f:
        x_train, y_train, x_test, y_test = (f[name][()] for name in hdf5.DATASETS)
    # Row i of the file is original row order[i]: argsort gives each original row's place.
    original = np.argsort(np.random.default_rng(ROW_SEED).permutation(len(y_train)))
    return (x_train[original], y_train[original]), (x_test, y_test), info.source, info.class_names
