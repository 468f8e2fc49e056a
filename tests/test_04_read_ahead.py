"""Episode 4's generator reading ahead (``HDF5Batches(read_ahead=True)``), outside ``fit``.

Under ``fit`` on every backend the order is tested in test_04_data_order.py. Here: the batches
are those the seed says (computed from the rule the episode states, not from the generator),
also when batches are asked for out of order or from several threads; one reader thread, never
two reads of the file at once; the thread ends with its generator and at the interpreter's exit;
copies for worker processes (pickled or forked) read on their own.
"""

import gc
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from test_04_data_order import CLASSES, encoded, encoded_rows

from gpulesson import lesson
from gpulesson.datasets.hdf5 import write_hdf5

N_TRAIN, BATCH, SEED = 300, 16, 5  # 19 blocks, the last one short


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_hdf5(tmp_path_factory.mktemp("ahead") / "synthetic.h5", encoded(N_TRAIN),
                      encoded(50), source="synthetic", class_names=CLASSES, progress=False)


def seeds_batches(epoch: int, window: int, start: int = 0, stop: int = N_TRAIN):
    """Rows of each batch as the episode states the rule: blocks of one batch in the order of
    rng(seed, epoch), a short last block last; a window of blocks mixed by rng(seed, epoch,
    window number), cut into batches."""
    n = stop - start
    n_blocks, n_full = -(-n // BATCH), n // BATCH
    order = np.arange(n_blocks)
    order[:n_full] = np.random.default_rng([SEED, epoch]).permutation(n_full)
    batches = []
    for number in range(-(-n_blocks // window)):
        blocks = np.sort(order[number * window:(number + 1) * window])
        rows = np.concatenate([np.arange(b * BATCH, min((b + 1) * BATCH, n)) for b in blocks])
        if len(blocks) > 1:
            rows = rows[np.random.default_rng([SEED, epoch, number]).permutation(len(rows))]
        batches += [(start + rows[i:i + BATCH]).tolist() for i in range(0, len(rows), BATCH)]
    return batches


@pytest.mark.parametrize("window", [1, 3, 4])
@pytest.mark.parametrize("read_ahead", [False, True])
def test_the_batches_are_the_ones_the_seed_says_in_any_order_of_asking(path, window, read_ahead):
    batches = lesson.HDF5Batches(path, "train", BATCH, stop=280, shuffle=True, seed=SEED,
                                 window=window, read_ahead=read_ahead)
    expected = {e: seeds_batches(e, window, stop=280) for e in range(3)}
    # In order over three epochs (read ahead across the epochs' ends), then jumping about.
    asked = [(e, i) for e in range(3) for i in range(len(batches))]
    rng = np.random.default_rng(1)
    asked += [(int(rng.integers(3)), int(rng.integers(len(batches)))) for _ in range(40)]
    for epoch, index in asked:
        batches.epoch = epoch
        x, y = batches[index]
        assert encoded_rows(x).tolist() == expected[epoch][index], (epoch, index)
        assert (y == encoded_rows(x) % 10).all()  # every image with its label


def test_a_split_without_shuffle_reads_neighbouring_blocks_in_one_read(path):
    reads = []

    class Counting(lesson.HDF5Batches):
        def _datasets(self):
            images, labels = super()._datasets()
            return Recorded(images), labels

    class Recorded:
        def __init__(self, images):
            self.images = images

        def __getitem__(self, rows):
            reads.append(rows)
            return self.images[rows]

    batches = Counting(path, "train", BATCH, start=270, window=4, read_ahead=True)
    rows = np.concatenate([encoded_rows(batches[i][0]) for i in range(len(batches))])
    assert rows.tolist() == list(range(270, N_TRAIN))
    batches._ahead[1].result()  # the next epoch's window, read ahead: wait for it
    # two blocks, the last one short: one read, this epoch's and the next one's
    assert reads == [slice(270, 300)] * 2


class Watched(lesson.HDF5Batches):
    """Records how many windows are read at once, and in which threads."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.watch = threading.Lock()
        self.reading, self.most, self.threads = 0, 0, set()

    def _read_window(self, number, epoch):
        with self.watch:
            self.reading += 1
            self.most = max(self.most, self.reading)
            self.threads.add(threading.current_thread().name)
        time.sleep(0.002)  # long enough for another read to overlap, if one could
        try:
            return super()._read_window(number, epoch)
        finally:
            with self.watch:
                self.reading -= 1

    def __getstate__(self):
        return {k: v for k, v in super().__getstate__().items() if k != "watch"}


def test_one_reader_thread_never_reads_twice_at_once_even_for_several_callers(path):
    batches = Watched(path, "train", BATCH, shuffle=True, seed=SEED, window=2, read_ahead=True)
    expected = seeds_batches(0, 2)
    wrong = []

    def caller(seed):
        rng = np.random.default_rng(seed)
        for index in rng.integers(len(batches), size=30):
            if encoded_rows(batches[int(index)][0]).tolist() != expected[index]:
                wrong.append(int(index))

    callers = [threading.Thread(target=caller, args=(s,)) for s in range(4)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join()
    assert not wrong
    assert batches.most == 1, "two windows were read from the file at once"
    assert len(batches.threads) == 1 and threading.main_thread().name not in batches.threads


def reader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("HDF5Batches")]


def test_the_reader_thread_is_one_per_generator_and_ends_with_it(path):
    before = set(reader_threads())
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, read_ahead=True)
    assert not set(reader_threads()) - before  # started at the first read, not before
    for epoch in range(4):  # as in four runs of fit
        batches.epoch = epoch
        for i in range(len(batches)):
            batches[i]
    (reader,) = set(reader_threads()) - before
    del batches
    gc.collect()
    reader.join(timeout=10)
    assert not reader.is_alive()


def test_the_interpreter_exits_while_a_window_is_read_ahead(path):
    script = ("import sys; from gpulesson import lesson\n"
              "b = lesson.HDF5Batches(sys.argv[1], 'train', 16, shuffle=True, window=1,"
              " read_ahead=True)\n"
              "b[0]; print('read')\n")  # the next window is being read as the script ends
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "read", result.stderr[-2000:]


def test_a_pickled_copy_reads_the_same_batches_with_its_own_reader(path):
    batches = Watched(path, "train", BATCH, shuffle=True, seed=SEED, read_ahead=True)
    batches.epoch = 1
    first = encoded_rows(batches[0][0]).tolist()  # its reader has started and reads ahead
    copy = pickle.loads(pickle.dumps(batches))
    copy.watch = threading.Lock()
    assert copy._reader is None and copy._ahead is None and copy._file is None
    assert [encoded_rows(copy[i][0]).tolist() for i in range(len(copy))] == seeds_batches(1, 4)
    assert encoded_rows(batches[0][0]).tolist() == first


def _read_in_child(queue):
    queue.put([encoded_rows(FORKED[i][0]).tolist() for i in range(len(FORKED))])


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the default on Linux only")
def test_a_forked_process_starts_its_own_reader(path):
    global FORKED
    FORKED = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=SEED, read_ahead=True)
    FORKED[0]  # the parent's reader thread runs, and has a window read ahead
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_read_in_child, args=(queue,))
    child.start()
    rows = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert rows == seeds_batches(0, 4)
