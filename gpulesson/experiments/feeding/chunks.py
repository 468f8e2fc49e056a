"""The chunk shape and the chunk cache, on the machine that runs the benchmark: the lesson's
generator read alone (its ``__getitem__`` over an epoch, shuffled, in order; no Keras, no
device), as each file layout of :data:`CONDITIONS` gives it.

Chunks of one block (one batch) are what the lesson writes: a window of 4 blocks is 4 reads of
whole chunks. Chunks of a window (4 blocks) could make a read larger, but the shuffled blocks of
a window are rarely neighbours, so each block reads a quarter of a chunk. Compressed, that
quarter costs the whole chunk's decompression, unless the chunk cache (1 MiB per dataset by
default, less than one 3 MB chunk) keeps the chunk for its other blocks: the last condition
gives it 64 MiB. (lzf, the compression the page suggests where one is needed: gzip would
take minutes of the node's time here.) The records are loader rows of group ``"chunks"``; the
page's pipelines never read them (:func:`gpulesson.experiments.feeding.records.find`).

Imports h5py and the lesson's generator when it measures.
"""

from __future__ import annotations

import contextlib
import time
from functools import partial
from pathlib import Path

from gpulesson.experiments.common import Budget

GROUP = "chunks"
MIB = 2**20
# (blocks per chunk, compression, chunk cache in MiB or None for h5py's default); window 4.
CONDITIONS = ((1, None, None), (4, None, None), (4, "lzf", None), (4, "lzf", 64))
WINDOW = 4


def label(blocks: int, compression: str | None, cache_mib: int | None) -> str:
    """A condition in words: "chunks of 4 blocks, lzf, 64 MiB cache"."""
    words = [f"chunks of {blocks} block{'s' if blocks > 1 else ''}", compression or "uncompressed"]
    return ", ".join(words + ([f"{cache_mib} MiB cache"] if cache_mib else []))


@contextlib.contextmanager
def chunk_cache(cache_mib: int | None):
    """Inside the block, the lesson's generator opens its files with a chunk cache of
    ``cache_mib`` MiB (None: h5py's default)."""
    from gpulesson.lesson import core

    before = core.h5py
    if cache_mib is not None:
        core.h5py = _WithCache(before, cache_mib * MIB)
    try:
        yield
    finally:
        core.h5py = before


class _WithCache:
    """h5py, whose ``File`` opens with a given chunk cache."""

    def __init__(self, h5py, nbytes: int):
        self.File = partial(h5py.File, rdcc_nbytes=nbytes)


def time_reading(path, batch_size: int, *, cache_mib=None, warmup: int, repeats: int,
                 seed: int = 0) -> Budget:
    """Epochs of the lesson's generator over the training split of ``path``, read alone: each
    epoch a new shuffled order of windows of :data:`WINDOW` blocks."""
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


def write_chunked(directory, x, y, *, batch_size: int, blocks: int, compression) -> Path:
    """A lesson data file of ``x, y`` whose chunks hold ``blocks`` batches; its path."""
    from gpulesson.experiments.feeding.pipelines import CLASS_NAMES
    from gpulesson.hdf5 import write_hdf5

    path = Path(directory) / f"chunks-{blocks}x{batch_size}-{compression or 'none'}.h5"
    if not path.is_file():
        write_hdf5(path, (x, y), (x[:16], y[:16]), source="synthetic", class_names=CLASS_NAMES,
                   chunk_rows=blocks * batch_size, compression=compression, progress=False)
    return path
