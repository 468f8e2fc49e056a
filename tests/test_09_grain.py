"""Episode 9's library route: the stored blocks of the lesson's HDF5 file through Grain
(``grain_blocks``) and through PyTorch's ``DataLoader`` (``torch_blocks``), inside ``model.fit``.

As in test_04_data_order.py, each image carries its row number in its first pixel and a layer
of an eagerly run model records the rows ``fit`` hands it. Checked on JAX and PyTorch: every
image exactly once per epoch, a new order every epoch, the stored blocks as batches (the short
last one kept), the same order on both backends for one seed. And Grain's two silent traps, on
the pipelines that fall into them: without ``repeat`` and ``steps_per_epoch`` every epoch has
the same order; a ``DataLoader`` with ``IndexSampler(num_epochs)`` batching single images makes
batches that straddle epochs. If a trap test fails, Grain or Keras changed: update the episode.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_04_data_order import RECORDING, encoded, encoded_rows

from gpulesson.datasets.hdf5 import write_hdf5
from gpulesson.machine.devices import backend_installed

pytest.importorskip("grain", reason="Grain is not installed: pip install -r requirements/common.txt "
                    "-c requirements/constraints.txt (no Windows build)")

N_TRAIN, BATCH, EPOCHS, SEED = 300, 16, 3, 5  # 19 blocks, the last one of 12 images
N_BLOCKS = -(-N_TRAIN // BATCH)

FIT = RECORDING + textwrap.dedent("""
    import json, sys
    from gpulesson import lesson
    from gpulesson.lesson.feeding import grain_blocks

    path, modes = sys.argv[1], sys.argv[2].split(",")
    N, BATCH, EPOCHS, SEED = json.loads(sys.argv[3])


    def feed(mode):
        # (data, fit's keyword arguments) of each way in.
        import grain

        if mode == "lesson":
            dataset, steps = grain_blocks(path, EPOCHS, BATCH, seed=SEED)
            return dataset, {"steps_per_epoch": steps}
        if mode == "workers":  # the same pipeline, read by a worker process
            dataset, steps = grain_blocks(path, EPOCHS, BATCH, seed=SEED, workers=1)
            return dataset, {"steps_per_epoch": steps}
        if mode == "torch":
            from gpulesson.lesson.feeding import torch_blocks

            return torch_blocks(path, BATCH, seed=SEED), {}
        if mode == "no-repeat":  # trap 1: no repeat, no steps_per_epoch
            blocks = lesson.HDF5Batches(path, "train", BATCH, window=1)
            return grain.MapDataset.source(blocks).shuffle(seed=SEED).to_iter_dataset(), {}
        if mode == "index-sampler":  # trap 2: single images, batched by the loader
            x, y = lesson.HDF5Batches(path, "train", N, window=1)[0]
            images = [(x[i], y[i]) for i in range(N)]
            sampler = grain.samplers.IndexSampler(
                num_records=N, num_epochs=EPOCHS, shuffle=True, seed=SEED)
            loader = grain.DataLoader(data_source=images, sampler=sampler,
                                      operations=[grain.transforms.Batch(BATCH)])
            return loader, {"steps_per_epoch": -(-N // BATCH)}
        raise ValueError(mode)


    out = {"backend": keras.backend.backend()}
    for mode in modes:
        model, record = recording_model()
        data, options = feed(mode)
        model.fit(data, epochs=EPOCHS, shuffle=False, verbose=0, **options)
        out[mode] = record.rows
    print(json.dumps(out))
""")

# What each backend runs: the lesson's routes on both, the traps once (they are Keras' and
# Grain's, not a backend's).
MODES = {"jax": ["lesson", "workers", "no-repeat", "index-sampler"], "torch": ["lesson", "torch"]}


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_hdf5(tmp_path_factory.mktemp("grain") / "synthetic.h5", encoded(N_TRAIN),
                      encoded(50), source="synthetic", class_names=[f"c{i}" for i in range(10)],
                      chunk_rows=BATCH, progress=False)


_DELIVERED = {}


def delivered(path, backend: str) -> dict:
    """The rows of every step of each mode's fit on ``backend`` (one subprocess per backend)."""
    if backend not in _DELIVERED:
        if not backend_installed(backend):
            pytest.skip(f"{backend} is not installed")
        env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu",
               "PYTHONPATH": str(Path(__file__).parents[1])}
        sizes = json.dumps([N_TRAIN, BATCH, EPOCHS, SEED])
        result = subprocess.run([sys.executable, "-c", FIT, str(path), ",".join(MODES[backend]), sizes],
                                capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        out = json.loads(result.stdout.strip().splitlines()[-1])
        assert out["backend"] == backend
        _DELIVERED[backend] = out
    return _DELIVERED[backend]


def epochs_of(steps: list[list[int]]) -> list[list[list[int]]]:
    assert len(steps) == EPOCHS * N_BLOCKS, f"fit ran {len(steps)} steps"
    return [steps[e * N_BLOCKS:(e + 1) * N_BLOCKS] for e in range(EPOCHS)]


def exactly_once(epoch: list[list[int]]) -> bool:
    return sorted(row for rows in epoch for row in rows) == list(range(N_TRAIN))


STORED = sorted(list(range(s, min(s + BATCH, N_TRAIN))) for s in range(0, N_TRAIN, BATCH))


@pytest.mark.parametrize("backend, mode", [("jax", "lesson"), ("torch", "lesson"),
                                           ("torch", "torch")])
def test_the_lessons_routes_give_every_image_once_per_epoch_in_new_orders(path, backend, mode):
    epochs = epochs_of(delivered(path, backend)[mode])
    for epoch in epochs:
        assert exactly_once(epoch)
        # The stored blocks are the batches, the short last one kept whole.
        assert sorted(sorted(rows) for rows in epoch) == STORED
    orders = [[rows[0] for rows in epoch] for epoch in epochs]
    assert len({tuple(order) for order in orders}) == EPOCHS, "an epoch repeats the last order"


def test_grain_gives_the_same_order_on_both_backends(path):
    assert delivered(path, "jax")["lesson"] == delivered(path, "torch")["lesson"]


def test_a_worker_process_gives_fit_the_same_batches_in_the_same_order(path):
    """workers=1 inside fit (with the absl workaround, JAX installed): what no worker gives."""
    assert delivered(path, "jax")["workers"] == delivered(path, "jax")["lesson"]


def test_flip_crop_shifts_and_flips_each_image_and_keeps_its_label():
    import numpy as np

    from gpulesson.lesson.feeding import flip_crop

    x, y = encoded(64)
    out, labels = flip_crop((x, y), np.random.default_rng(3))
    assert out.dtype == x.dtype and out.shape == x.shape and labels is y
    padded = np.pad(x, ((0, 0), (4, 4), (4, 4), (0, 0)), mode="reflect")
    crops = [{(padded[i, dy:dy + 32, dx:dx + 32][:, ::f]).tobytes() for dy in range(9)
              for dx in range(9) for f in (1, -1)} for i in range(len(x))]
    assert all(out[i].tobytes() in crops[i] for i in range(len(x)))  # its own image, moved
    assert not np.array_equal(out, x)  # 64 images: some shifted or flipped
    again, _ = flip_crop((x, y), np.random.default_rng(3))
    assert np.array_equal(out, again)


def test_augmented_blocks_are_the_same_with_and_without_a_worker(path):
    """Grain seeds augment's generator from the seed and the block's place, not the process."""
    from gpulesson.lesson.feeding import flip_crop, grain_blocks

    def blocks(workers):
        dataset, _ = grain_blocks(path, 2, BATCH, seed=SEED, augment=flip_crop, workers=workers)
        return [(x.copy(), y.copy()) for x, y in dataset]

    alone, by_worker = blocks(0), blocks(1)
    assert len(alone) == len(by_worker) == 2 * N_BLOCKS
    for (x0, y0), (x1, y1) in zip(alone, by_worker, strict=True):
        assert (x0 == x1).all() and (y0 == y1).all()
    # a new augmentation in each epoch: the two epochs' sets of blocks differ
    epochs = [sorted(x.tobytes() for x, _ in alone[e * N_BLOCKS:(e + 1) * N_BLOCKS]) for e in (0, 1)]
    assert epochs[0] != epochs[1]


def test_trap_without_repeat_every_epoch_has_the_same_order(path):
    epochs = epochs_of(delivered(path, "jax")["no-repeat"])
    assert all(exactly_once(epoch) for epoch in epochs)
    assert all(epoch == epochs[0] for epoch in epochs), (
        "fit now gets a new order every epoch without repeat: update episode 9's traps")


def test_trap_an_index_sampler_over_images_straddles_epochs(path):
    epochs = epochs_of(delivered(path, "jax")["index-sampler"])
    assert not all(exactly_once(epoch) for epoch in epochs), (
        "every image once per epoch with IndexSampler(num_epochs): update episode 9's traps")


def test_grain_blocks_ends_after_its_epochs_and_keeps_rows(path):
    """In-process: as many blocks as epochs x steps, then the end; start/stop select rows."""
    from gpulesson.lesson.feeding import grain_blocks

    dataset, steps = grain_blocks(path, 2, BATCH, seed=SEED)
    items = list(dataset)
    assert steps == N_BLOCKS and len(items) == 2 * N_BLOCKS
    assert sorted(len(y) for x, y in items[:N_BLOCKS])[0] == N_TRAIN % BATCH
    dataset, steps = grain_blocks(path, 1, BATCH, start=32, stop=96)
    rows = sorted(int(r) for x, y in dataset for r in encoded_rows(x))
    assert steps == 4 and rows == list(range(32, 96))
