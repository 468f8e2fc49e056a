"""``gpulesson.readahead.ProcessReadAhead``: what the reading process leaves behind and how it
fails. (Its batches, under ``fit`` on every backend: ``test_04_data_order``; when the epoch
changes under it: ``test_09_ceiling``.)"""

import gc
import os
import pickle

import numpy as np
import pytest
from conftest import random_hdf5

from gpulesson.lesson import HDF5Batches
from gpulesson.readahead import ProcessReadAhead, ReaderError
from gpulesson.timing import process_running


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return random_hdf5(tmp_path_factory.mktemp("process"), 100, seed=1)


def shared_files() -> set[str]:
    folder = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return {n for n in os.listdir(folder) if n.startswith("gpulesson-readahead-")} if folder else set()


def test_close_ends_the_process_and_leaves_no_file(path):
    before = shared_files()
    reader = ProcessReadAhead(HDF5Batches(path, "train", 16), depth=2)
    pid = reader._process.pid
    assert process_running(pid) and shared_files() == before  # the buffer's name is gone once mapped
    x, y = reader[len(reader) - 1]  # the short last batch
    assert x.shape == (100 % 16, 32, 32, 3) and x.dtype == np.uint8 and y.dtype == np.int32
    reader.close()
    reader._process.wait(timeout=10)
    assert not process_running(pid)
    with pytest.raises(ReaderError, match="closed: make a new one"):
        reader[0]


def test_a_dropped_reader_ends_its_process(path):
    reader = ProcessReadAhead(HDF5Batches(path, "train", 16), depth=2)
    process = reader._process
    del reader
    gc.collect()
    assert process.wait(timeout=10) is not None


def test_an_error_in_the_reading_process_reaches_the_caller_with_its_traceback(path):
    batches = HDF5Batches(path, "train", 16, shuffle=True)
    reader = ProcessReadAhead(batches, depth=2)
    batches.epoch = "seven"  # not a number: the reading process cannot seed its mix
    with pytest.raises(ReaderError, match="failed at batch 0(.|\n)*seed"):
        reader[0]
    with pytest.raises(ReaderError, match="closed"):  # out of step: it stopped
        reader[1]


def test_a_reading_process_that_died_is_reported(path):
    reader = ProcessReadAhead(HDF5Batches(path, "train", 16), depth=2)
    reader._process.kill()
    reader._process.wait()
    with pytest.raises(ReaderError, match="ended .exit code -9."):
        reader[3]


class Local:  # a class the new process cannot import: it lives in this test module
    def __len__(self):
        return 1


def test_batches_that_cannot_travel_and_a_reader_that_cannot_either(path):
    unpicklable = HDF5Batches(path, "train", 16)
    unpicklable.hook = lambda: None
    with pytest.raises(TypeError, match="cannot be pickled.*define their class in a module"):
        ProcessReadAhead(unpicklable)
    with pytest.raises(ReaderError, match="failed at start"):
        ProcessReadAhead(Local())
    with ProcessReadAhead(HDF5Batches(path, "train", 16), depth=1) as reader:
        with pytest.raises(TypeError, match="without workers"):
            pickle.dumps(reader)
    with pytest.raises(ValueError, match="depth=0"):
        ProcessReadAhead(HDF5Batches(path, "train", 16), depth=0)


def test_no_room_for_the_buffer_is_an_error_that_leaves_nothing_behind(path, monkeypatch):
    import errno
    import subprocess

    import gpulesson.readahead as readahead

    def full(handle, offset, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    started = []
    popen = subprocess.Popen

    def remember(*args, **kwargs):
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(readahead.os, "posix_fallocate", full, raising=False)
    monkeypatch.setattr(readahead.subprocess, "Popen", remember)
    before = shared_files()
    with pytest.raises(ReaderError, match="no room for the reading buffer.*smaller depth"):
        ProcessReadAhead(HDF5Batches(path, "train", 16), depth=2)
    assert started and started[0].wait(timeout=10) is not None
    assert shared_files() == before
