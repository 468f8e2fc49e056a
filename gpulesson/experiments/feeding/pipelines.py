"""The input pipelines that the feeding benchmark compares, and their data files.

Every pipeline is a ``keras.utils.PyDataset`` that hands ``model.fit`` batches of
``(images, labels)``: images as bytes (uint8, 0..255, scaled by the model's ``Rescaling``
layer on the device), labels integers. They differ only in where the images come from and how
they are read:

``classic``
    The instructive mistake: the generator that older tutorials publish (the exercise "Spot
    the broken shuffle" of episode 4), reading a gzip-compressed HDF5 file written with
    ``chunks=True`` (h5py guesses the chunk shape: (6250, 4, 4, 1) for 50,000 CIFAR-shaped
    images, so one batch of whole images touches hundreds of compressed chunks). It slices
    the file per batch and reads the *whole* dataset at the end of every epoch to count it.
    :class:`ClassicBatches` implements it once, here, so that it can be measured; nothing else
    should copy it.
``lesson``, ``lesson-lzf``, ``lesson-gzip``
    The lesson's generator (:class:`gpulesson.lesson.HDF5Batches`) on a lesson data file whose
    chunks are whole batches, uncompressed or compressed (smaller file, more CPU work per batch).
``lesson-workers``, ``lesson-gzip-workers``
    The same with Keras' worker processes (``workers``, ``use_multiprocessing=True``): each
    process opens its own file handle and reads batches ahead while the model trains. Measured
    with the TensorFlow backend only: with JAX and PyTorch, Keras 3 hands out batches read
    ahead in one epoch in the next (:data:`~gpulesson.experiments.feeding.records.WRONG_DATA_WITH_WORKERS`).
``lesson-ahead``, ``lesson-ahead-window1``
    The lesson's generator reading ahead (``read_ahead=True``): one thread of its own reads
    the next window of blocks while the model trains, on every backend; with ``window=1``
    each batch is a stored block, not mixed.
``ram``
    The whole data set read once into an array in RAM (:class:`ArrayBatches`), batches sliced
    from it: no file at all.
``device``
    The whole data set copied once to the device the model runs on (:func:`to_device`), batches
    taken there. With JAX, by the lesson's :class:`gpulesson.lesson.feeding.DeviceBatches`: a
    new order of all images drawn on the device every epoch, each batch one compiled call with
    indices already there, so nothing goes from host to device per step. With PyTorch a slice
    of the device tensor (a view); with TensorFlow an eager slice. Each record keeps how
    (``method``, :func:`device_method`): records made before it sliced ``jax.Array`` eagerly in
    ``__getitem__``, which sends every slice's start from the host and dispatches it from the
    thread that dispatches the steps, and the page no longer shows them.

No TensorFlow here: keras, numpy, h5py.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import h5py
import keras
import numpy as np

from gpulesson.experiments.feeding.records import (  # noqa: F401 (the names of the pipelines live there)
    DEVICE_METHODS,
    FILES,
    HDF5_PIPELINES,
    PIPELINES,
    READ_AHEAD,
    WORKER_PIPELINES,
    check_pipelines,
)
from gpulesson.experiments.layouts import write_layout

CLASS_NAMES = tuple(f"class {i}" for i in range(10))  # labels only: speed does not need names


# --- the instructive mistake -----------------------------------------------------------------

class ClassicBatches(keras.utils.PyDataset):
    """THE INSTRUCTIVE MISTAKE, as older tutorials publish it (episode 4's exercise).

    Kept as published, with its three problems: the shuffle of ``self.indices`` never
    reaches ``__getitem__``; ``on_epoch_end`` reads the whole dataset (``x[:]``) only to
    count it, every epoch; the file is opened in ``__init__`` (unsafe with worker
    processes, so the benchmark never gives it any). Here it reads the datasets ``x`` and
    ``y`` of a :func:`gpulesson.experiments.layouts.write_layout` file. ``full_reads`` counts the
    whole-dataset reads (added to check the benchmark; not part of the mistake).
    """

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


# --- arrays in RAM or on the device ----------------------------------------------------------

class ArrayBatches(keras.utils.PyDataset):
    """Batches sliced from arrays that are already in memory: numpy arrays in RAM, or
    backend tensors on a device (see :func:`to_device`).

    Like the lesson's generator, every epoch visits the batches in a new (seeded) order;
    within a batch the images keep their order (shuffling them would add a gather of every
    batch; the batches' order is what an epoch needs). Slicing a tensor on the device gives
    a tensor on the same device: the batch never visits the host.
    """

    def __init__(self, x, y, batch_size, *, shuffle=True, seed=0):
        super().__init__()
        if len(x) != len(y) or not 1 <= batch_size <= len(x):
            raise ValueError(f"need as many labels as images ({len(x)}, {len(y)}) and a "
                             f"batch size from 1 to {len(x)}, not {batch_size}")
        self.x, self.y, self.batch_size = x, y, int(batch_size)
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self.batch_order = self._order()

    @property
    def n_images(self):
        return len(self.x)

    def __len__(self):
        return math.ceil(len(self.x) / self.batch_size)

    def _order(self):
        if not self.shuffle:
            return np.arange(len(self))
        return np.random.default_rng([self.seed, self.epoch]).permutation(len(self))

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"batch {index} of {len(self)}")
        first = int(self.batch_order[index]) * self.batch_size
        last = min(first + self.batch_size, len(self.x))
        return self.x[first:last], self.y[first:last]

    def on_epoch_end(self):
        self.epoch += 1
        self.batch_order = self._order()


class FirstBatches(keras.utils.PyDataset):
    """The first ``n_batches`` batches of an epoch of ``dataset`` (a partial epoch, for slow
    devices). The wrapped dataset's ``on_epoch_end`` still runs every epoch, so whatever
    it does there (the classic generator's count) is still paid."""

    def __init__(self, dataset, n_batches, **kwargs):
        super().__init__(**kwargs)
        if not 1 <= n_batches <= len(dataset):
            raise ValueError(f"n_batches must be from 1 to {len(dataset)}, not {n_batches}")
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
    """Copy ``x`` and ``y`` once to ``keras_device`` ("cpu" or "gpu:0") as backend tensors.

    ``keras.ops.convert_to_tensor`` inside ``keras.device(...)`` places the new tensor on that
    device: with JAX a ``jax.Array`` committed to the GPU (``jax.device_put``), with PyTorch a
    ``torch.Tensor`` on ``cuda:0``. Slices of it (``x[a:b]``) are computed there and stay
    there, and Keras passes such batches to the model without a copy: the host only sends the
    slice's start and stop. On the CPU the "device" is the host's RAM, so this is the RAM case
    plus one conversion. 50,000 CIFAR-shaped images take 154 MB as bytes (614 MB as float32).
    The images keep their dtype (bytes: the model scales them).
    """

    with keras.device(keras_device):
        x_dev = keras.ops.convert_to_tensor(x)
        y_dev = keras.ops.convert_to_tensor(y, dtype="int32")
    return x_dev, y_dev


class EpochsOf(keras.utils.PyDataset):
    """The batches of an iterator that spans every epoch (Grain's repeated dataset, as
    :func:`gpulesson.lesson.feeding.grain_blocks` makes it), ``steps`` an epoch, through Keras'
    ``PyDataset`` path, which ends each epoch at its last batch. Given the iterator itself with
    ``steps_per_epoch``, Keras 3.15.1 fills the epoch's last call of ``steps_per_execution``
    steps with the next epoch's first batches, and the last epoch runs out of data (a test
    shows it). Read in order: ``fit(shuffle=False)``."""

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
    """Grain's worker processes beside training: the cores this process may use, less one for
    the training loop and one for the device's runtime, from 1 to 4."""
    return max(1, min(4, len(os.sched_getaffinity(0)) - 2))


def device_method(name: str) -> dict:
    """The ``method`` field of a record of pipeline ``name``: how the ``device`` pipeline takes
    its batches with this process's Keras backend (:data:`DEVICE_METHODS`); {} for the others."""
    return {"method": DEVICE_METHODS[keras.backend.backend()]} if name == "device" else {}


# --- the data files --------------------------------------------------------------------------

def file_path(directory, kind: str, batch_size: int) -> Path:
    return Path(directory) / f"feeding-{kind}-{batch_size}.h5"


def write_files(directory, x, y, kinds, *, batch_size: int) -> dict[str, Path]:
    """Write the data files the pipelines need; ``{kind: path}``.

    ``"classic"``: datasets ``x``/``y`` with ``chunks=True`` + gzip
    (:func:`gpulesson.experiments.layouts.write_layout`, layout "auto chunks + gzip"). ``"none"``,
    ``"lzf"``, ``"gzip"``: lesson data files (:func:`gpulesson.hdf5.write_hdf5`, validated by
    the lesson's generator) with chunks of ``batch_size`` images, compressed or not; their test
    split holds a few images only (the benchmark trains, it does not evaluate).
    """
    from gpulesson.hdf5 import write_hdf5

    paths = {}
    for kind in dict.fromkeys(kinds):
        path = file_path(directory, kind, batch_size)
        if kind == "classic":
            write_layout(path, x, y, "auto chunks + gzip")
        elif kind in ("none", "lzf", "gzip"):
            test = (x[:16], y[:16])
            write_hdf5(path, (x, y), test, source="synthetic", class_names=CLASS_NAMES,
                       chunk_rows=batch_size, compression=None if kind == "none" else kind,
                       progress=False)
        else:
            raise ValueError(f"unknown file kind {kind!r}")
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
    """The PyDataset of pipeline ``name`` over the training images.

    ``files``: from :func:`write_files`; ``arrays``: ``(x, y)`` uint8/int32 in RAM;
    ``device_arrays``: ``(x, y)`` from :func:`to_device`.
    """
    check_pipelines([name])
    if name == "classic":
        return ClassicBatches(files["classic"], batch_size)
    if name == "device" and keras.backend.backend() == "jax":
        from gpulesson.lesson.feeding import DeviceBatches

        return DeviceBatches(*device_arrays, batch_size, seed=seed)
    if name in ("ram", "device"):
        x, y = arrays if name == "ram" else device_arrays
        return ArrayBatches(x, y, batch_size, shuffle=True, seed=seed)
    from gpulesson.lesson import HDF5Batches

    options = READ_AHEAD.get(name, {})
    if name in WORKER_PIPELINES:
        options = {"workers": int(workers), "use_multiprocessing": True}
    return HDF5Batches(files[FILES[name]], "train", batch_size, shuffle=True, seed=seed,
                       **options)


def limit(dataset, max_steps: int | None):
    """``dataset``, or its first ``max_steps`` batches when it has more (:class:`FirstBatches`,
    with the same workers, so that a partial epoch is read the same way)."""
    if max_steps is None or max_steps >= len(dataset):
        return dataset
    return FirstBatches(dataset, max_steps, workers=dataset.workers,
                        use_multiprocessing=dataset.use_multiprocessing,
                        max_queue_size=dataset.max_queue_size)
