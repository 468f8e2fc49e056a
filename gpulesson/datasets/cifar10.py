"""The real CIFAR-10: downloaded under the name Keras' own loader uses (so its cache serves a node
without internet), and its pickled batches read with an unpickler that only rebuilds numpy arrays.
``LESSON_CIFAR10_URL`` and ``LESSON_CIFAR10_SHA256`` name a mirror and its archive's checksum.
"""

import contextlib
import io
import os
import pickle
import urllib.error
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from gpulesson.datasets.settings import LABELS
from gpulesson.errors import DataFileError, DataUnavailableError, how_to_set, tidy_on_failure

CLASS_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
               "truck")
CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
CIFAR10_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"

# The name keras.datasets.cifar10.load_data() gives get_file (Keras 3.15): same name, same cache.
KERAS_FNAME = "cifar-10-batches-py-target"
BATCHES_DIR = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCH = "test_batch"
META_FILE = "batches.meta"

# Everything a CIFAR-10 batch pickle may reference: numpy array reconstruction (numpy 1 and 2
# spellings). _codecs.encode is how Python 3 writes bytes at pickle protocol 2 (e.g. a re-packed
# mirror); it only encodes text. Dicts, lists, ints and strings need no globals at all.
_ALLOWED_GLOBALS = frozenset({("numpy", "ndarray"), ("numpy", "dtype"),
                              ("numpy.core.multiarray", "_reconstruct"),
                              ("numpy._core.multiarray", "_reconstruct"), ("_codecs", "encode")})


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a data file")


def cifar10_source(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(url, sha256)`` to download CIFAR-10 from, honouring the mirror override variables."""
    env = os.environ if environ is None else environ
    url = env.get("LESSON_CIFAR10_URL", "").strip() or CIFAR10_URL
    sha256 = env.get("LESSON_CIFAR10_SHA256", "").strip() or CIFAR10_SHA256
    return url, sha256


def _download_reason(exc: Exception, file_hash: str | None) -> str:
    """The cause of a get_file failure in a few words (Keras wraps urllib's errors in Exception)."""
    cause = exc.__context__
    if isinstance(cause, urllib.error.HTTPError):
        return f"HTTP error {cause.code}: {cause.reason}"
    if isinstance(cause, urllib.error.URLError):
        return str(cause.reason)
    text = str(exc)
    if isinstance(exc, ValueError) and "hash" in text:
        return (f"the downloaded archive does not have the expected SHA-256 {file_hash}: "
                "the download was incomplete or the server sent another file")
    return text or type(exc).__name__


def load_cifar10(origin: str = CIFAR10_URL, file_hash: str | None = CIFAR10_SHA256,
                 cache_dir: str | os.PathLike | None = None, progress: bool = True):
    """CIFAR-10 as ``((x_train, y_train), (x_test, y_test))``, downloaded once into the Keras cache."""
    from keras.utils import get_file  # lazy: keeps `import gpulesson` instant

    # The Keras cache folder get_file uses: cache_dir, else $KERAS_HOME, else ~/.keras.
    cache = Path(cache_dir or os.environ.get("KERAS_HOME") or "~/.keras").expanduser()
    # Keras prints its download progress bar on stdout; hide it when asked to be quiet.
    quiet = contextlib.nullcontext() if progress else contextlib.redirect_stdout(io.StringIO())
    try:
        # A failed download leaves no empty folders behind (Keras makes datasets/ in the cache).
        with tidy_on_failure(cache / "datasets"), quiet:
            # get_file silently falls back to /tmp/.keras when the folder does not exist yet.
            with contextlib.suppress(OSError):
                cache.mkdir(parents=True, exist_ok=True)
            extracted = get_file(fname=KERAS_FNAME, origin=origin, extract=True,
                                 file_hash=file_hash, cache_dir=str(cache))
    except Exception as exc:  # get_file raises bare Exception for URL failures
        raise DataUnavailableError(
            f"Could not get CIFAR-10 from {origin} ({_download_reason(exc, file_hash)}).\n"
            "Compute nodes of a cluster often have no internet access. Either:\n"
            "  1. on a login node (which has internet) run once\n"
            "         python -m gpulesson.datasets.prepare --data cifar10\n"
            f"     It downloads CIFAR-10 into the Keras cache ({cache / 'datasets'}) and writes the "
            "HDF5 file the notebooks read (add --quick for the quick-mode file); or\n"
            "  2. choose the synthetic stand-in explicitly with LESSON_DATA=synthetic "
            f"(results are then labelled '{LABELS['synthetic']}').\n"
            + how_to_set("LESSON_DATA", "synthetic")) from exc
    return read_batches(Path(extracted) / BATCHES_DIR, origin=origin)


def read_batches(batches_dir: str | os.PathLike, origin: str = CIFAR10_URL):
    """Parse an extracted ``cifar-10-batches-py`` folder (any number of images per batch)."""
    batches_dir = Path(batches_dir)
    names = [*TRAIN_BATCHES, TEST_BATCH]
    missing = [name for name in names if not (batches_dir / name).is_file()]
    if missing:
        raise DataFileError(
            f"{batches_dir} does not hold the CIFAR-10 batches (missing: {', '.join(missing)}). "
            f"The archive from {origin} is not the CIFAR-10 python version, or its extraction "
            "failed. Delete the folder and the '*_archive' file next to it in the Keras cache, "
            "then run again: python -m gpulesson.datasets.prepare --data cifar10")
    class_names = _read_class_names(batches_dir / META_FILE)
    train = [_read_batch(batches_dir / name, len(class_names)) for name in TRAIN_BATCHES]
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    x_test, y_test = _read_batch(batches_dir / TEST_BATCH, len(class_names))
    return (x_train, y_train), (x_test, y_test)


def _bad_batch(path: Path, problem: str) -> DataFileError:
    return DataFileError(
        f"{path} is not a valid CIFAR-10 batch: {problem}. Delete the cached CIFAR-10 files in "
        f"{path.parent.parent} and download again: python -m gpulesson.datasets.prepare --data cifar10")


def _unpickle(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            # The files were written by Python 2: 'bytes' keeps its strings as bytes.
            obj = _RestrictedUnpickler(f, encoding="bytes").load()
    except Exception as exc:
        raise _bad_batch(path, f"cannot be read ({exc})") from exc
    if not isinstance(obj, dict):
        raise _bad_batch(path, f"holds a {type(obj).__name__}, not a dict")
    # Keys are bytes in the real files; accept str keys from files re-written by Python 3.
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _read_class_names(path: Path) -> tuple[str, ...]:
    """The class names from ``batches.meta``: they must be CIFAR-10's (not e.g. CIFAR-100's)."""
    if path.is_file():
        labels = _unpickle(path).get("label_names", [])
        names = tuple(n.decode() if isinstance(n, bytes) else str(n) for n in labels)
        if names != CLASS_NAMES:
            raise _bad_batch(path, f"its label names {names} are not the CIFAR-10 classes")
    return CLASS_NAMES


def _read_batch(path: Path, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    batch = _unpickle(path)
    if "data" not in batch or "labels" not in batch:
        raise _bad_batch(path, f"it has keys {sorted(batch)}, expected 'data' and 'labels'")
    data = batch["data"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        shape = getattr(data, "shape", None)
        dtype = getattr(data, "dtype", type(data).__name__)
        raise _bad_batch(path, f"'data' is {dtype} of shape {shape}, expected uint8 (N, 3072)")
    labels = np.asarray(batch["labels"])
    if labels.shape != (len(data),):
        raise _bad_batch(path, f"{labels.size} labels for {len(data)} images")
    if labels.size and (labels.min() < 0 or labels.max() >= n_classes):
        raise _bad_batch(path, f"labels range from {labels.min()} to {labels.max()}, "
                               f"expected 0..{n_classes - 1}")
    # Each row is the red plane, then green, then blue, each 32x32 row-major: to channels last.
    x = np.ascontiguousarray(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
    return x, labels.astype(np.uint8)
