"""Helpers for the gpulesson data tests: small CIFAR-10 archives in the real format, a
loopback HTTP server, and small HDF5 files.

CIFAR-10 itself can never be downloaded in the tests; instead they build archives exactly like
``cifar-10-python.tar.gz`` (a ``cifar-10-batches-py/`` folder of pickled dicts with bytes keys;
``b'data'`` is uint8 (N, 3072): the red plane, then green, then blue, each 32x32 row-major).
"""

import functools
import hashlib
import http.server
import pickle
import socket
import tarfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CIFAR_NAMES = [
    "airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
]
# A pixel the tests set on purpose: image 0 of the test batch, row 3, column 7, green channel.
MARK = {"row": 3, "col": 7, "channel": 1, "value": 201}


@dataclass
class CifarArchive:
    path: Path
    sha256: str
    x_train: np.ndarray  # channels last, as load_cifar10 must return them
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray

    @property
    def url(self) -> str:
        return self.path.as_uri()


def sha256_of(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _batch_bytes(images_rgb_planes: np.ndarray, labels, title: str, protocol: int) -> bytes:
    batch = {
        b"batch_label": title.encode(),
        b"labels": [int(v) for v in labels],
        b"data": images_rgb_planes,
        b"filenames": [f"image_{i:05d}.png".encode() for i in range(len(labels))],
    }
    return pickle.dumps(batch, protocol=protocol)


def make_cifar_archive(
    directory: Path, n_per_batch: int = 20, n_test: int = 12, seed: int = 0,
    protocol: int = 2, label_names=CIFAR_NAMES, mark: bool = True,
) -> CifarArchive:
    """Write ``cifar-10-python.tar.gz`` with 5 training batches and a test batch into directory."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    n_train = 5 * n_per_batch
    planes = {
        "train": rng.integers(0, 256, size=(n_train, 3072), dtype=np.uint8),
        "test": rng.integers(0, 256, size=(n_test, 3072), dtype=np.uint8),
    }
    if mark:  # the flat index of (channel, row, col) in a row of b'data'
        flat = MARK["channel"] * 1024 + MARK["row"] * 32 + MARK["col"]
        planes["test"][0, flat] = MARK["value"]
    labels = {"train": rng.integers(0, 10, n_train), "test": rng.integers(0, 10, n_test)}

    files = {
        f"data_batch_{i + 1}": _batch_bytes(
            planes["train"][i * n_per_batch : (i + 1) * n_per_batch],
            labels["train"][i * n_per_batch : (i + 1) * n_per_batch],
            f"training batch {i + 1} of 5", protocol,
        )
        for i in range(5)
    }
    files["test_batch"] = _batch_bytes(planes["test"], labels["test"], "testing batch 1 of 1", protocol)
    if label_names is not None:
        meta = {
            b"label_names": [n.encode() for n in label_names],
            b"num_cases_per_batch": n_per_batch,
            b"num_vis": 3072,
        }
        files["batches.meta"] = pickle.dumps(meta, protocol=protocol)
    archive = write_tar_gz(directory / "cifar-10-python.tar.gz", files)

    def channels_last(p):
        return p.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)

    return CifarArchive(
        path=archive, sha256=sha256_of(archive),
        x_train=channels_last(planes["train"]), y_train=labels["train"].astype(np.uint8),
        x_test=channels_last(planes["test"]), y_test=labels["test"].astype(np.uint8),
    )


def write_tar_gz(path: Path, files: dict[str, bytes], folder: str = "cifar-10-batches-py") -> Path:
    """A .tar.gz holding ``folder/<name>`` for each of files (as the real archive does)."""
    staging = path.parent / f"{path.name}.staging"
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            file = staging / folder / name
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)
            tar.add(file, arcname=f"{folder}/{name}")
    return path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the test output clean
        pass


@contextmanager
def serve_directory(directory: Path):
    """Serve ``directory`` over HTTP on 127.0.0.1 (a free port) in a thread; yields the base URL
    and a list that records the requested paths."""
    requests: list[str] = []

    class Handler(_QuietHandler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(directory))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def closed_port_url(name: str = "cifar-10-python.tar.gz") -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused), like a site without network."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/{name}"


def small_arrays(n_train: int = 40, n_test: int = 10, seed: int = 0):
    """Random CIFAR-shaped ``(train, test)`` for HDF5 tests (labels cover all 10 classes)."""
    rng = np.random.default_rng(seed)

    def split(n):
        return rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), (np.arange(n) % 10).astype(np.uint8)

    return split(n_train), split(n_test)


def no_proxy(monkeypatch):
    """Make urllib reach 127.0.0.1 directly even where a proxy is configured."""
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
