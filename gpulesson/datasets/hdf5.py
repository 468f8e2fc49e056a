"""The HDF5 files the notebooks read: written atomically (under a temporary name, renamed when
complete), a training batch a chunk, with their provenance; and validated.
"""

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from gpulesson import __version__
from gpulesson.datasets.settings import DATA_CHOICES, LABELS, hdf5_filename, keep_earlier, prepare_command
from gpulesson.errors import DataFileError, LessonDataError, check_writable, how_to_set

DATASETS = ("x_train", "y_train", "x_test", "y_test")
IMAGE_SHAPE = (32, 32, 3)
FORMAT_VERSION = 1
# Attributes every valid file has; the writer sets them, the validator requires them.
PROVENANCE = ("source", "synthetic", "label", "class_names", "created", "gpulesson_version",
              "h5py_version", "numpy_version", "format_version", "shapes", "dtypes",
              "checksum_sha256")
# Every file :func:`atomic_hdf5` writes carries this attribute: a file without it (or the lesson's
# provenance) is someone else's, kept under a new name rather than written over.
WRITER_MARK = "gpulesson_writer"
LESSON_MARKS = {"gpulesson_version", "source", "checksum_sha256"}  # a data file's own provenance
_HASH_ROWS = 4096  # rows hashed at a time: bounded memory for any file size
# The names the lesson gives its data files: a damaged file of one of these names is its own.
LESSON_FILE_NAMES = frozenset(hdf5_filename(data, quick) for data in DATA_CHOICES
                              for quick in (False, True))


@dataclass(frozen=True)
class Hdf5Info:
    """What :func:`validate_hdf5` found in a valid file."""

    path: Path
    source: str
    synthetic: bool
    label: str
    class_names: tuple[str, ...]
    n_train: int
    n_test: int
    attrs: dict = field(default_factory=dict, repr=False)


def arrays_checksum(arrays: Mapping) -> str:
    """SHA-256 over the four arrays with their dtypes and shapes; writer and validator share it."""
    sha = hashlib.sha256()
    for name in DATASETS:
        array = arrays[name]
        sha.update(f"{name}|{np.dtype(array.dtype).str}|{tuple(array.shape)}|".encode())
        for start in range(0, len(array), _HASH_ROWS):
            sha.update(np.ascontiguousarray(array[start : start + _HASH_ROWS]).tobytes())
    return sha.hexdigest()


def _split_problem(split: str, x, y: np.ndarray, n_classes: int) -> str | None:
    """What is wrong with one split's images ``x`` and labels ``y`` (writer's and reader's rule)."""
    if x.dtype != np.uint8 or x.ndim != 4 or x.shape[1:] != IMAGE_SHAPE:
        return f"x_{split} is {x.dtype} {x.shape}, expected uint8 (N, 32, 32, 3)"
    if y.ndim != 1 or y.dtype.kind not in "iu":
        return f"y_{split} is {y.dtype} {y.shape}, expected 1-D integer labels"
    if len(x) != len(y) or len(x) == 0:
        return f"x_{split} has {len(x)} images but y_{split} has {len(y)} labels"
    if y.min() < 0 or y.max() >= n_classes:
        return f"y_{split} has labels from {y.min()} to {y.max()}, but there are {n_classes} classes"
    return None


def _check_arrays(train, test, n_classes: int) -> dict[str, np.ndarray]:
    """The arrays by name, after checking they are what the validator will demand."""
    arrays = {}
    for split, (x, y) in (("train", train), ("test", test)):
        x, y = np.asarray(x), np.asarray(y)
        problem = _split_problem(split, x, y, n_classes)
        if problem:
            raise ValueError(problem)
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, y
    return arrays


def _provenance(arrays, source, class_names, attrs) -> dict:
    import h5py

    if source not in DATA_CHOICES:
        raise ValueError(f"source must be one of {DATA_CHOICES}, not {source!r}")
    clash = set(attrs or {}) & set(PROVENANCE)
    if clash:
        raise ValueError(f"attrs may not override the provenance attributes {sorted(clash)}")
    return {"source": source, "synthetic": source == "synthetic", "label": LABELS[source],
            "class_names": np.array(list(class_names), dtype=h5py.string_dtype()),
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "gpulesson_version": __version__, "h5py_version": h5py.__version__,
            "numpy_version": np.__version__, "format_version": FORMAT_VERSION,
            "shapes": json.dumps({name: list(a.shape) for name, a in arrays.items()}),
            "dtypes": json.dumps({name: a.dtype.name for name, a in arrays.items()}),
            "checksum_sha256": arrays_checksum(arrays), **(attrs or {})}


def file_attributes(arrays: Mapping, *, source: str, class_names, attrs: Mapping | None = None) -> dict:
    """The root attributes :func:`write_hdf5` gives a file of ``arrays`` (by name)."""
    checked = _check_arrays((arrays["x_train"], arrays["y_train"]),
                            (arrays["x_test"], arrays["y_test"]), len(class_names))
    return _provenance(checked, source, class_names, attrs)


@contextlib.contextmanager
def atomic_hdf5(path):
    """An HDF5 file open for writing, renamed onto ``path`` only when the block completes (a
    file there that the lesson did not make is first kept under a new name)."""
    import h5py

    path = Path(path).expanduser()
    if path.is_dir():
        raise DataFileError(f"{path} is a folder: name a file in it, e.g. {path / 'mine.h5'}")
    # A read-only folder: a message naming it, not an HDF5 traceback.
    check_writable(path.parent, setting=None)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs[WRITER_MARK] = __version__
            yield f
        if (path.exists() or path.is_symlink()) and not made_by_lesson(path):
            keep_earlier(path)  # someone's own file: kept under a new name, said in one line
        os.replace(tmp, path)
    except BaseException:  # never leave a half-written file
        tmp.unlink(missing_ok=True)
        raise


def write_hdf5(path, train, test, *, source: str, class_names, attrs: Mapping | None = None,
               chunk_rows: int = 256, compression=None, progress: bool = True) -> Path:
    """Write ``train`` and ``test`` to ``path`` atomically, ``chunk_rows`` images a chunk."""
    from tqdm.auto import tqdm

    path = Path(path).expanduser()
    arrays = _check_arrays(train, test, len(class_names))
    provenance = _provenance(arrays, source, class_names, attrs)
    total = sum(len(arrays[name]) for name in ("x_train", "x_test"))
    with atomic_hdf5(path) as f, tqdm(total=total, desc=f"Writing {path.name}", unit="img",
                                      disable=not progress) as bar:
        f.attrs.update(provenance)
        for name in DATASETS:
            array = arrays[name]
            rows = min(chunk_rows, len(array))
            dataset = f.create_dataset(name, shape=array.shape, dtype=array.dtype,
                                       chunks=(rows, *array.shape[1:]), compression=compression)
            for start in range(0, len(array), rows):
                dataset[start : start + rows] = array[start : start + rows]
                if name.startswith("x"):
                    bar.update(len(array[start : start + rows]))
    return path


def _attribute_names(path: Path) -> set | None:
    """The root attributes of the HDF5 file ``path``; None where it is not HDF5 or damaged."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return set(f.attrs)
    except _H5_DAMAGE:
        return None


def made_by_lesson(path) -> bool:
    """Whether ``path`` is an HDF5 file this package wrote (marked, or with the lesson's provenance)."""
    keys = _attribute_names(Path(path).expanduser()) or set()
    return WRITER_MARK in keys or LESSON_MARKS <= keys


def not_the_lessons(path) -> str | None:
    """Why the existing ``path`` is not a data file the lesson may replace; None if it may (a
    damaged file of one of the lesson's names may)."""
    path = Path(path).expanduser()
    if path.is_dir():
        return "it is a folder"
    keys = _attribute_names(path)
    if keys is None:
        return None if path.name in LESSON_FILE_NAMES else "it is not an HDF5 file the lesson wrote"
    return None if LESSON_MARKS <= keys else "it is an HDF5 file that the lesson did not write"


def refuse_to_replace(path, why: str) -> DataFileError:
    """The one line that keeps someone's file ``path``: how to choose another name, or force."""
    path = Path(path).expanduser()
    return DataFileError(
        f"{path} is not a data file of the lesson ({why}), so it is left as it is: write the "
        f"data file under another name (--out NEW.h5), or pass --force to write there "
        f"({path.name} is then kept under a new name).")


def _guess_source(path: Path, source=None, quick=None) -> tuple[str | None, bool]:
    """Source and quick mode of a data file: from its attributes if known, else from its name."""
    stem = path.name.lower()
    if source not in DATA_CHOICES:
        source = next((s for s in DATA_CHOICES if stem.startswith(s)), None)
    return source, bool("-quick" in stem if quick is None else quick)


def _fix_command(path: Path, source=None, quick=None) -> str:
    source, quick = _guess_source(path, source, quick)
    if source is None:  # an unusual name: give the command for either data set
        return prepare_command("cifar10", quick, path) + "   (or --data synthetic)"
    return prepare_command(source, quick, path)


def _file_error(path: Path, problem: str, attrs: Mapping | None = None) -> DataFileError:
    attrs = attrs or {}
    if "source" not in attrs and path.name not in LESSON_FILE_NAMES:
        # Not the lesson's file: no command that would write over it.
        return DataFileError(
            f"{path}: {problem}. It is not a data file of the lesson: use the lesson's own "
            f"file, which python -m gpulesson.datasets.prepare --data cifar10 (or --data synthetic) "
            f"prepares in the data folder, without touching {path.name}.")
    command = _fix_command(path, attrs.get("source"), attrs.get("quick"))
    return DataFileError(f"{path}: {problem}.\nRe-create it with:\n    {command}")


def _missing_file_error(path: Path) -> DataFileError:
    where = ("" if _guess_source(path)[0] == "synthetic" else
             " on a login node (compute nodes often have no internet to download CIFAR-10;"
             " the home directory is usually shared with them)")
    return DataFileError(f"{path} does not exist. The data files are not part of the lesson "
                         f"repository: prepare this one{where} with:\n    {_fix_command(path)}")


def _plain(value):
    """An attribute value as plain Python (h5py gives numpy scalars and arrays)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.decode()
    return value


def _inspect(f, path: Path, verify_checksum: bool) -> Hdf5Info:
    attrs = {key: _plain(value) for key, value in f.attrs.items()}

    def fail(problem):
        return _file_error(path, problem, attrs)

    missing = [name for name in DATASETS if name not in f]
    if missing:
        raise fail(f"the dataset(s) {', '.join(missing)} are missing")
    absent = [key for key in PROVENANCE if key not in attrs]
    if absent:
        raise fail(f"provenance attribute(s) {', '.join(absent)} are missing (not written by gpulesson?)")
    if attrs["format_version"] != FORMAT_VERSION:
        raise fail(f"format_version is {attrs['format_version']}, this gpulesson reads {FORMAT_VERSION}")
    source = attrs["source"]
    if source not in DATA_CHOICES or bool(attrs["synthetic"]) != (source == "synthetic"):
        raise fail(f"its provenance is inconsistent (source={source!r}, synthetic={attrs['synthetic']!r})")
    class_names = tuple(str(n) for n in attrs["class_names"])
    sizes = {}
    for split in ("train", "test"):
        # Labels are small (N bytes): checking them all is cheap.
        problem = _split_problem(split, f[f"x_{split}"], f[f"y_{split}"][()], len(class_names))
        if problem:
            raise fail(problem)
        sizes[split] = len(f[f"x_{split}"])
    if verify_checksum and arrays_checksum(f) != attrs["checksum_sha256"]:
        raise fail("its data do not match the stored SHA-256 checksum (modified or damaged)")
    return Hdf5Info(path=path, source=source, synthetic=source == "synthetic",
                    label=LABELS[source], class_names=class_names, n_train=sizes["train"],
                    n_test=sizes["test"], attrs=attrs)


def open_handles(path) -> list:
    """The h5py file identifiers this process holds open on ``path`` (any name for it)."""
    import h5py

    target = os.path.realpath(Path(path).expanduser())
    found = []
    for fid in h5py.h5f.get_obj_ids(types=h5py.h5f.OBJ_FILE):
        with contextlib.suppress(Exception):  # an identifier closed meanwhile has no name
            if os.path.realpath(os.fsdecode(fid.name)) == target:
                found.append(fid)
    return found


def close_open_handles(path) -> int:
    """Close every handle this process holds on ``path``; returns how many files were open."""
    import h5py

    handles = open_handles(path)
    for fid in handles:
        with contextlib.suppress(Exception):  # closing one closes the others of its file too
            h5py.File(fid).close()
    return len(handles)


# What h5py raises for a damaged or truncated file: OSError when opening, KeyError ("bad object
# header version number") when opening a dataset, RuntimeError or ValueError for broken ids.
_H5_DAMAGE = (OSError, KeyError, RuntimeError, ValueError)


def validate_hdf5(path, verify_checksum: bool = False) -> Hdf5Info:
    """Check that ``path`` is a complete lesson data file; raise :class:`DataFileError` if not.
    (A file replaced while this process holds it looks damaged: the handles are closed, and it
    is read once more.)"""
    import h5py

    path = Path(path).expanduser()
    if path.is_dir():
        raise DataFileError(f"{path} is a folder, not a data file: name the HDF5 file in it, "
                            f"e.g. {path / hdf5_filename('cifar10', False)}")
    if not path.is_file():
        raise _missing_file_error(path)
    if not h5py.is_hdf5(path):
        close_open_handles(path)
        raise _file_error(path, "this is not an HDF5 file (empty, overwritten or corrupt)")
    for retry in (True, False):  # once more from the disk after closing this process's handles
        try:
            return _read_info(path, verify_checksum)
        except _H5_DAMAGE as exc:
            _check_lock(path, exc)
            if not (retry and close_open_handles(path)):
                raise _file_error(path, f"the file is truncated or damaged ({exc})") from exc


def _check_lock(path: Path, exc: Exception) -> None:
    """A file HDF5 cannot lock is not damaged: some shared filesystems refuse HDF5's lock."""
    if isinstance(exc, OSError) and "unable to lock file" in str(exc):
        raise LessonDataError(
            f"HDF5 cannot lock {path} to read it ({exc}): the filesystem of {path.parent} "
            "(often a shared one) does not support the file locks HDF5 takes by default. "
            "Reading needs none: switch them off with HDF5_USE_FILE_LOCKING=FALSE, set before "
            "h5py is imported.\n" + how_to_set("HDF5_USE_FILE_LOCKING", "FALSE")) from None


def _read_info(path: Path, verify_checksum: bool) -> Hdf5Info:
    import h5py

    with h5py.File(path, "r") as f:
        return _inspect(f, path, verify_checksum)


def read_hdf5(path, split: str = "train", start: int = 0, stop: int | None = None):
    """Read ``(x, y)`` rows ``start:stop`` of one split (for small reads; validates first)."""
    import h5py

    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    info = validate_hdf5(path)
    try:
        with h5py.File(info.path, "r") as f:
            return f[f"x_{split}"][start:stop], f[f"y_{split}"][start:stop]
    except OSError as exc:
        raise _file_error(info.path, f"reading failed ({exc})", info.attrs) from exc
