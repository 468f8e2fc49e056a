"""The input pipelines the feeding benchmark compares (:data:`~.measure.PIPELINES`), and their
data files: each a ``keras.utils.PyDataset`` of ``(images, labels)``, the images as bytes (the
model scales them), differing only in where the images come from and how they are read.
"""

import contextlib
import math
import os
import time
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import h5py
import keras
import numpy as np

from gpulesson.experiments.layouts import write_layout
from gpulesson.machine.timing import Budget

CLASS_NAMES = tuple(f"class {i}" for i in range(10))  # labels only: speed does not need names
# The data file each pipeline reads (None: no file), by its compression in the lesson format.
FILES: dict[str, str | None] = {
    "classic": "classic", "lesson": "none", "lesson-ahead": "none",
    "lesson-ahead-window1": "none", "lesson-lzf": "lzf", "lesson-gzip": "gzip",
    "lesson-workers": "none", "lesson-gzip-workers": "gzip", "ram": None, "device": None,
}
# The generator's own reader thread: name -> the generator's options beside it.
READ_AHEAD = {"lesson-ahead": {"read_ahead": True},
              "lesson-ahead-window1": {"read_ahead": True, "window": 1}}
# How the "device" pipeline takes its batches, by backend (a record's "method").
DEVICE_METHODS = {"jax": "compiled take", "torch": "slice view", "tensorflow": "eager slice"}
# The chunk layouts are read alone in windows of WINDOW blocks. A window's shuffled blocks are
# rarely neighbours, so a compressed chunk of 4 blocks is decompressed for each unless the chunk
# cache keeps it.
MIB, WINDOW = 2**20, 4


class ClassicBatches(keras.utils.PyDataset):
    """THE INSTRUCTIVE MISTAKE, as older tutorials publish it (episode 4's exercise): the shuffle
    never reaches ``__getitem__``, ``on_epoch_end`` reads the whole dataset to count it, and the
    file is opened in ``__init__``. ``full_reads`` checks the benchmark. Do not copy it."""

    def __init__(self, path, batch_size, shuffle=True):
        super().__init__()
        self.file = h5py.File(path, "r")
        self.batch_size, self.shuffle = batch_size, shuffle
        self.full_reads = 0
        self.on_epoch_end()

    def __len__(self):
        return math.ceil(len(self.indices) / self.batch_size)

    def __getitem__(self, index):
        start, stop = index * self.batch_size, (index + 1) * self.batch_size
        # Published with .astype("float32") / 255 here; bytes, as every pipeline feeds the
        # same model (it scales them): the mistakes measured are in the reading.
        return self.file["x"][start:stop], self.file["y"][start:stop]

    def on_epoch_end(self):
        self.indices = np.arange(len(self.file["x"][:]))
        self.full_reads += 1
        if self.shuffle:
            np.random.shuffle(self.indices)

    def close(self):
        self.file.close()


class ArrayBatches(keras.utils.PyDataset):
    """Batches sliced from arrays in RAM or on a device, in a new seeded order each epoch (the
    images within a batch keep theirs: shuffling them would add a gather)."""

    def __init__(self, x, y, batch_size, *, seed=0):
        super().__init__()
        if len(x) != len(y) or not 1 <= batch_size <= len(x):
            raise ValueError(f"need as many labels as images ({len(x)}, {len(y)}) and a "
                             f"batch size from 1 to {len(x)}, not {batch_size}")
        self.x, self.y, self.batch_size = x, y, int(batch_size)
        self.seed, self.epoch = seed, -1
        self.on_epoch_end()  # epoch 0's order

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        first = int(self.batch_order[index]) * self.batch_size
        last = min(first + self.batch_size, len(self.x))
        return self.x[first:last], self.y[first:last]

    def on_epoch_end(self):
        self.epoch += 1
        self.batch_order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self))


class FirstBatches(keras.utils.PyDataset):
    """The first ``n_batches`` batches of each epoch of ``dataset``; its ``on_epoch_end``
    still runs every epoch, so whatever it does there (the classic generator's count) is paid."""

    def __init__(self, dataset, n_batches, **kwargs):
        super().__init__(**kwargs)
        self.dataset, self.n_batches = dataset, int(n_batches)

    def __len__(self):
        return self.n_batches

    def __getitem__(self, index):
        if not 0 <= index < self.n_batches:
            raise IndexError(f"batch {index} of {self.n_batches}")
        return self.dataset[index]

    def on_epoch_end(self):
        self.dataset.on_epoch_end()


def to_device(x, y, keras_device: str):
    """``x`` and ``y`` copied once to ``keras_device`` as backend tensors, the images as bytes.
    On the CPU the "device" is the host's RAM: the RAM case plus one conversion."""
    with keras.device(keras_device):
        return keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(y, dtype="int32")


class EpochsOf(keras.utils.PyDataset):
    """The batches of an iterator that spans every epoch (Grain's repeated dataset), ``steps``
    an epoch, through Keras' ``PyDataset`` path, which ends each epoch at its last batch (given
    the iterator itself, Keras 3.15.1 runs out of data in the last epoch: a test shows it).
    Read in order: ``fit(shuffle=False)``."""

    def __init__(self, iterable, steps: int):
        super().__init__()
        self._iterator, self.steps, self._expected = iter(iterable), int(steps), 0
        self._last = (None, None)  # Keras looks at batch 0 once before it trains

    def __len__(self):
        return self.steps

    def __getitem__(self, index):
        if index == self._last[0]:  # asked again once: the look, then the step
            batch, self._last = self._last[1], (None, None)
            return batch
        if index != self._expected:
            raise RuntimeError(f"batch {index} asked for, {self._expected} is next: an "
                               "iterator is read in order, so train with fit(shuffle=False)")
        self._expected = (index + 1) % self.steps
        self._last = (index, next(self._iterator))
        return self._last[1]


def grain_workers() -> int:
    """Grain's worker processes beside training: the usable cores less one for the training
    loop and one for the device's runtime, from 1 to 4."""
    return max(1, min(4, len(os.sched_getaffinity(0)) - 2))


def device_method(name: str) -> dict:
    """The record's ``method`` of the ``device`` pipeline on this backend; {} for the others."""
    return {"method": DEVICE_METHODS[keras.backend.backend()]} if name == "device" else {}


def write_lesson_file(path, x, y, *, chunk_rows: int, compression) -> None:
    """A lesson data file of ``x, y`` (its test split a few images: the benchmark trains only)."""
    from gpulesson.datasets.hdf5 import write_hdf5

    write_hdf5(path, (x, y), (x[:16], y[:16]), source="synthetic", class_names=CLASS_NAMES,
               chunk_rows=chunk_rows, compression=compression, progress=False)


def write_files(directory, x, y, kinds, *, batch_size: int) -> dict[str, Path]:
    """``{kind: path}`` of the data files written: "classic" (guessed chunks + gzip), or
    lesson data files with chunks of ``batch_size`` images, "none", "lzf" or "gzip"."""
    paths = {}
    for kind in dict.fromkeys(kinds):
        path = Path(directory) / f"feeding-{kind}-{batch_size}.h5"
        if kind == "classic":
            write_layout(path, x, y, "auto chunks + gzip")
        else:  # "none", "lzf" or "gzip"
            write_lesson_file(path, x, y, chunk_rows=batch_size,
                              compression=None if kind == "none" else kind)
        paths[kind] = path
    return paths


def file_info(path) -> dict:
    """Chunk shape, compression and size of the images in a data file (for the records)."""
    with h5py.File(path, "r") as f:
        x = f["x"] if "x" in f else f["x_train"]
        return {"chunks": None if x.chunks is None else [int(c) for c in x.chunks],
                "compression": x.compression,
                "file_mb": round(os.path.getsize(path) / 1e6, 3)}


def make_pipeline(name: str, *, batch_size: int, files=None, arrays=None, device_arrays=None,
                  workers: int = 2, seed: int = 0):
    """The PyDataset of pipeline ``name``: ``files`` from :func:`write_files`, ``arrays`` in
    RAM, ``device_arrays`` from :func:`to_device`."""
    if name == "classic":
        return ClassicBatches(files["classic"], batch_size)
    if name == "device" and keras.backend.backend() == "jax":
        from gpulesson.lesson.feeding import DeviceBatches

        return DeviceBatches(*device_arrays, batch_size, seed=seed)
    if name in ("ram", "device"):
        x, y = arrays if name == "ram" else device_arrays
        return ArrayBatches(x, y, batch_size, seed=seed)
    from gpulesson.lesson import HDF5Batches

    options = READ_AHEAD.get(name, {})
    if name.endswith("-workers"):
        options = {"workers": int(workers), "use_multiprocessing": True}
    return HDF5Batches(files[FILES[name]], "train", batch_size, shuffle=True, seed=seed,
                       **options)


def limit(dataset, max_steps: int | None):
    """``dataset``, or its first ``max_steps`` batches, read with the same workers."""
    if max_steps is None or max_steps >= len(dataset):
        return dataset
    return FirstBatches(dataset, max_steps, workers=dataset.workers,
                        use_multiprocessing=dataset.use_multiprocessing,
                        max_queue_size=dataset.max_queue_size)


@contextlib.contextmanager
def chunk_cache(cache_mib: int | None):
    """Inside the block, the lesson's generator opens its files with a chunk cache of
    ``cache_mib`` MiB (None: h5py's default)."""
    from gpulesson.lesson import core

    before = core.h5py
    if cache_mib is not None:
        core.h5py = SimpleNamespace(File=partial(before.File, rdcc_nbytes=cache_mib * MIB))
    try:
        yield
    finally:
        core.h5py = before


def time_reading(path, batch_size: int, *, cache_mib=None, warmup: int, repeats: int,
                 seed: int = 0) -> Budget:
    """Epochs of the lesson's generator over the training split of ``path``, read alone."""
    from gpulesson.lesson import HDF5Batches

    budget = Budget(warmup, repeats)
    with chunk_cache(cache_mib):
        batches = HDF5Batches(path, "train", batch_size, shuffle=True, seed=seed, window=WINDOW)
        while not budget.done():
            start = time.perf_counter()
            for index in range(len(batches)):
                batches[index]
            budget.seconds.append(time.perf_counter() - start)
            batches.on_epoch_end()
        batches._file.close()  # the next condition may ask for another cache
    return budget
