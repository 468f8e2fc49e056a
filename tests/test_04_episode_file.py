"""The HDF5 file learners write in episode 4 is the file ``prepare()`` writes.

The episode's cell is taken from the episode itself and run, so that the test follows the
text: same datasets, same row order (the training rows shuffled once with ROW_SEED), same
chunks, same attributes (but the time of writing); ``prepare()`` then reuses that file.
"""

import re

import h5py
import numpy as np
import pytest
from conftest import ROOT

from gpulesson import data
from gpulesson.settings import get_settings

EPISODE = ROOT / "_episodes" / "04-data-pipeline.md"
CELL = re.compile(r"```\{code-cell\} ipython3\n(?P<code>(?:(?!```).)*?with atomic_hdf5\(path\)(?:(?!```).)*)```",
                  re.DOTALL)


def episode_cell() -> str:
    cells = CELL.findall(EPISODE.read_text(encoding="utf-8"))
    assert len(cells) == 1, "episode 4 has one cell that writes the data file"
    return cells[0]


def contents(path) -> dict:
    with h5py.File(path, "r") as f:
        return {"data": {name: f[name][()] for name in f},
                "chunks": {name: f[name].chunks for name in f},
                "attrs": {key: np.asarray(value).tolist() for key, value in f.attrs.items()
                          if key != "created"}}


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    import dataclasses

    folder = tmp_path_factory.mktemp("episode-file")
    settings = dataclasses.replace(get_settings(), data_dir=folder / "episode")
    train, test, source, class_names = data.load_arrays(settings, progress=False)
    namespace = {"np": np, "settings": settings, "source": source, "class_names": class_names,
                 "x_train": train[0], "y_train": train[1], "x_test": test[0], "y_test": test[1]}
    exec(episode_cell(), namespace)
    prepared = data.prepare(dataclasses.replace(settings, data_dir=folder / "prepared"),
                            progress=False)
    return settings, namespace["path"], prepared, train


def test_the_episode_writes_what_prepare_writes(both):
    _, written, prepared, _ = both
    mine, theirs = contents(written), contents(prepared)
    assert mine["chunks"] == theirs["chunks"] and mine["attrs"] == theirs["attrs"]
    assert mine["data"].keys() == theirs["data"].keys()
    for name in mine["data"]:
        np.testing.assert_array_equal(mine["data"][name], theirs["data"][name])


def test_training_rows_are_shuffled_once_with_the_recorded_seed(both):
    settings, written, _, (x, y) = both
    stored = contents(written)
    order = np.random.default_rng(data.ROW_SEED).permutation(len(y))
    np.testing.assert_array_equal(stored["data"]["y_train"], y[order])
    np.testing.assert_array_equal(stored["data"]["x_train"], x[order])
    assert stored["attrs"]["train_row_seed"] == data.ROW_SEED
    assert stored["chunks"]["x_train"] == (settings.batch_size(256), 32, 32, 3)


def test_prepare_reuses_the_episodes_file_and_renews_an_unshuffled_one(both, capsys):
    settings, written, _, (x, y) = both
    assert data.prepare(settings, progress=False) == written
    assert "Reusing" in capsys.readouterr().out
    # A file from before the rows were shuffled is written again, the lesson's way.
    from gpulesson.hdf5 import write_hdf5

    old = settings.data_dir / "old" / written.name
    write_hdf5(old, (x, y), (x[:10], y[:10]), source=settings.data, progress=False,
               class_names=data.load_arrays(settings, progress=False)[3],
               attrs={"quick": settings.quick, "seed": 0})
    data.prepare(settings, out=old, progress=False)
    assert "not shuffled the way the lesson writes them" in capsys.readouterr().out
    assert contents(old)["attrs"]["train_row_seed"] == data.ROW_SEED
