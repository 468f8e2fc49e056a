"""Episode 4's data order under ``model.fit``, on every Keras backend, with and without workers.

Each training image carries its row number in its first pixel (three base-256 digits), and a
layer inside the model records the rows it receives during ``fit`` (the model runs eagerly, so
the layer sees real values; the data path, from the generator through Keras' adapters, is the
one every training uses). What ``fit`` delivered is compared with the generator's own batches
for each epoch, computed here from (seed, epoch, index) alone: equal means every image once per
epoch, the same batches in every run with that seed (on the CPU and the GPU alike), and,
since the generator's batches change, new batch members every epoch.

Worker threads with the JAX and PyTorch backends are tested for what Keras 3.15 does: batches
fetched ahead before training (when ``fit`` inspects the data) and at the end of each epoch are
handed out in the next one, so an epoch repeats and omits images. The episode therefore trains
without workers; if that test starts failing, Keras has fixed it and the episode can say so.
The generator's own reading ahead (``read_ahead=True``, one reader thread that reads the next
window, into the next epoch at an epoch's end) must deliver exactly the batches of the generator
without it, on every backend, with ``DataEpoch`` and without it.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from gpulesson import lesson
from gpulesson.datasets.hdf5 import write_hdf5
from gpulesson.machine.devices import backend_installed

N_TRAIN, BATCH, EPOCHS, SEED = 300, 16, 3, 5  # 19 batches, the last one short
CLASSES = [f"class {i}" for i in range(10)]

# Shared with the other scripts that fit in a backend's own process (test_09_grain.py): each
# image carries its row number in its first pixel, and a layer of an eagerly run model records
# the rows that fit hands it.
RECORDING = textwrap.dedent("""
    import keras
    import numpy as np

    class RecordRows(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.rows = []

        def call(self, x):
            try:
                pixels = keras.ops.convert_to_numpy(x[:, 0, 0, :])
            except Exception:
                # Symbolic shapes while Keras builds the model: no values to record.
                return x
            digits = np.rint(pixels).astype(np.int64)  # bytes, cast to float by Keras
            rows = digits[:, 0] * 65536 + digits[:, 1] * 256 + digits[:, 2]
            self.rows.append(rows.tolist())
            return x

    def recording_model():
        # (a model that records the rows it is fed, its recording layer)
        keras.utils.set_random_seed(0)
        record = RecordRows()
        inputs = keras.Input((32, 32, 3))
        hidden = keras.layers.GlobalAveragePooling2D()(record(inputs))
        model = keras.Model(inputs, keras.layers.Dense(10, activation="softmax")(hidden))
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy",
                      run_eagerly=True)
        return model, record
""")

FIT = RECORDING + textwrap.dedent("""
    import json, sys
    from gpulesson import lesson

    path, modes = sys.argv[1], sys.argv[2].split("|")
    # mode -> (the generator's options, with DataEpoch)
    OPTIONS = {"none": ({}, True), "threads": ({"workers": 2}, True),
               "processes": ({"workers": 2, "use_multiprocessing": True}, True),
               "ahead": ({"read_ahead": True}, True),
               "ahead, threads": ({"read_ahead": True, "workers": 2}, True),
               "no callback": ({}, False),
               "ahead, no callback": ({"read_ahead": True}, False)}

    out = {"backend": keras.backend.backend()}
    for mode in modes:
        model, record = recording_model()
        options, callback = OPTIONS[mode]
        batches = lesson.HDF5Batches(path, "train", %(batch)d, shuffle=True,
                                     seed=%(seed)d, **options)
        model.fit(batches, epochs=%(epochs)d, shuffle=False, verbose=0,
                  callbacks=[lesson.DataEpoch(batches)] if callback else [])
        out[mode] = record.rows
    print(json.dumps(out))
""" % {"batch": BATCH, "seed": SEED, "epochs": EPOCHS})


def encoded(n: int):
    x = np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
    rows = np.arange(n)
    x[:, 0, 0] = np.stack([rows // 65536, rows // 256 % 256, rows % 256], axis=1)
    return x, (rows % 10).astype(np.uint8)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_hdf5(tmp_path_factory.mktemp("order") / "synthetic.h5", encoded(N_TRAIN),
                      encoded(50), source="synthetic", class_names=CLASSES, progress=False)


def expected_batches(path) -> list[list[list[int]]]:
    """The generator's batches of each epoch, from (seed, epoch, index) alone."""
    batches = lesson.HDF5Batches(path, "train", BATCH, shuffle=True, seed=SEED)
    epochs = []
    for number in range(EPOCHS):
        batches.epoch = number
        epochs.append([np.sort(encoded_rows(batches[i][0])).tolist() for i in range(len(batches))])
    return epochs


def encoded_rows(x) -> np.ndarray:
    digits = np.asarray(x[:, 0, 0]).astype(np.int64)
    return digits[:, 0] * 65536 + digits[:, 1] * 256 + digits[:, 2]


def delivered(path, backend: str, modes: list[str]) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": str(Path(__file__).parents[1])}
    result = subprocess.run([sys.executable, "-c", FIT, str(path), "|".join(modes)],
                            capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["backend"] == backend
    return out


def by_epoch(steps: list[list[int]], n_batches: int) -> list[list[list[int]]]:
    assert len(steps) == EPOCHS * n_batches, "fit ran another number of steps"
    return [[sorted(rows) for rows in steps[e * n_batches:(e + 1) * n_batches]] for e in range(EPOCHS)]


def exactly_once(epoch: list[list[int]]) -> bool:
    return sorted(row for rows in epoch for row in rows) == list(range(N_TRAIN))


def installed(backend: str):
    return pytest.param(backend, marks=pytest.mark.skipif(not backend_installed(backend),
                                                          reason=f"{backend} is not installed"))


# Where the lesson relies on each route: no workers and the generator's own reading ahead
# everywhere; workers (threads and processes) are correct with TensorFlow, whose fit does not
# inspect the data first.
CORRECT = {"tensorflow": ["none", "ahead", "threads", "processes", "ahead, threads"],
           "jax": ["none", "ahead"], "torch": ["none", "ahead"]}
CARRIED_OVER = {"tensorflow": [], "jax": ["threads"], "torch": ["threads"]}


@pytest.mark.parametrize("backend", [installed(b) for b in ("tensorflow", "jax", "torch")])
def test_fit_delivers_the_generators_batches_exactly_once_per_epoch(path, backend):
    expected = expected_batches(path)
    n_batches = len(expected[0])
    assert all(exactly_once(epoch) for epoch in expected)
    # New batch members every epoch: no batch of one epoch recurs in the next.
    for before, after in zip(expected, expected[1:]):
        assert not {tuple(b) for b in before} & {tuple(b) for b in after}

    out = delivered(path, backend, CORRECT[backend] + CARRIED_OVER[backend]
                    + ["no callback", "ahead, no callback"])
    for mode in CORRECT[backend]:
        # The same batches, in the same order, as the generator defines: every run with
        # this seed, on any backend and device, trains on exactly these.
        assert by_epoch(out[mode], n_batches) == expected, f"{backend}, workers: {mode}"
    # Without DataEpoch the epochs are numbered by on_epoch_end (which fit also calls once
    # before training): other epochs of the same generator, read ahead or not alike.
    plain = by_epoch(out["no callback"], n_batches)
    assert by_epoch(out["ahead, no callback"], n_batches) == plain
    assert all(exactly_once(epoch) for epoch in plain)
    assert plain[0] != expected[0]
    for mode in CARRIED_OVER[backend]:
        epochs = by_epoch(out[mode], n_batches)
        assert not all(exactly_once(epoch) for epoch in epochs), (
            f"Keras now delivers every image once with {backend} and workers ({mode}): "
            "the episode's callout on workers can be updated")


class CountingBatches(lesson.HDF5Batches):
    """The lesson's generator, counting the windows of blocks it reads from the file."""

    windows_read = 0

    def _read_window(self, number, epoch):
        self.windows_read += 1
        return super()._read_window(number, epoch)


def test_fit_reorders_a_pydatasets_batches_unless_it_is_told_not_to(path):
    """``fit(shuffle=True)``, Keras's default, also reorders a PyDataset's batches: the
    generator then reads a window for almost every batch. With ``IN_ORDER``, which every
    experiment passes, it reads each window once (as episode 4's ``shuffle=False``). Read
    through the data adapter that ``fit`` uses, on any backend."""
    from keras.src.trainers.data_adapters import get_data_adapter

    from gpulesson.records.pagewords import IN_ORDER

    reads, delivered = {}, {}
    for name, options in (("in order", IN_ORDER), ("fit's default", {"shuffle": True})):
        batches = CountingBatches(path, "train", BATCH, shuffle=True, seed=SEED)
        labels = [y for _, y in get_data_adapter(batches, **options).get_numpy_iterator()]
        reads[name], delivered[name] = batches.windows_read, np.concatenate(labels)
    windows = -(-len(batches) // batches.window)
    assert reads["in order"] == windows, reads
    assert reads["fit's default"] > 2 * windows, reads
    # The same images either way: only the reading differs.
    assert sorted(delivered["in order"]) == sorted(delivered["fit's default"])


def test_a_page_names_the_runs_recorded_while_fit_reordered_the_batches():
    from gpulesson.records.pagewords import ORDER_FIELD, reordered_note

    old = [{"run_id": "r2"}, {"run_id": "r1"}, {"run_id": "r2"}]
    said = reordered_note([*old, {"run_id": "r3", ORDER_FIELD: False}], "the batches")
    assert said.startswith("In runs r1 and r2, `fit` reordered the batches (its default")
    assert reordered_note(old[:1], "x").startswith("In run r2, ")
    assert reordered_note([{"run_id": "r3", ORDER_FIELD: False}], "x") == ""
