"""Episode 4's first cells on the guide's shared data folder: the prepared file is read as it is.

The instructor prepares the data file in a folder learners can only read; the node has no
network. The episode's cells, taken from the episode itself and run in order, must read that file
without Keras' CIFAR-10 loader and without writing into the folder, and the learner's own file
("write the file yourself") goes to their work folder. That file is the one ``prepare()`` writes:
same datasets, same row order (the training rows shuffled once with ROW_SEED), same chunks, same
attributes (but the time of writing), so ``prepare()`` accepts it.
"""

import socket

import h5py
import jupytext
import numpy as np
import pytest
from conftest import ROOT
from test_shared_data_folder import prepared_folder, read_only, snapshot

from gpulesson.datasets import cifar10
from gpulesson.datasets import load as data

EPISODE = ROOT / "_episodes" / "04-data-pipeline.md"


def episode_cells() -> list[str]:
    """The sources of the episode's code cells, in order (those of the complete notebook)."""
    notebook = jupytext.reads(EPISODE.read_text(encoding="utf-8"), fmt="myst")
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"
            and "exercise" not in cell.metadata.get("tags", [])]


def cell_with(text: str) -> str:
    found = [source for source in episode_cells() if text in source]
    assert len(found) == 1, f"episode 4 has one cell with {text!r}"
    return found[0]


def contents(path) -> dict:
    with h5py.File(path, "r") as f:
        return {"data": {name: f[name][()] for name in f},
                "chunks": {name: f[name].chunks for name in f},
                "attrs": {key: np.asarray(value).tolist() for key, value in f.attrs.items()
                          if key != "created"}}


def never(*args, **kwargs):
    raise AssertionError("the episode loaded the data (Keras' CIFAR-10 loader or the stand-in's "
                         "maker) although a prepared file was there")


def no_network(sock, address, *args):
    raise OSError(101, f"Network is unreachable (the test is offline): {address}")


@pytest.fixture(scope="module", params=["synthetic", "cifar10"])
def episode_run(request, tmp_path_factory):
    """The episode's first cell, the given cell that shuffles the arrays and names the learner's
    file, the cell that writes it and the cell that looks inside it, run on a read-only shared
    folder, offline, with the loaders forbidden."""
    source = request.param
    folder = tmp_path_factory.mktemp(f"episode-file-{source}")
    settings = prepared_folder(folder / "shared", source)
    before = snapshot(settings.data_dir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LESSON_DATA", source)
        patch.setenv("LESSON_QUICK", "1")
        patch.setenv("LESSON_DATA_DIR", str(settings.data_dir))
        patch.setenv("LESSON_WORK_DIR", str(folder / "work"))
        patch.setattr(data, "load_arrays", never)
        patch.setattr(cifar10, "load_cifar10", never)
        patch.setattr(socket.socket, "connect", no_network)
        patch.setattr(socket.socket, "connect_ex", no_network)
        namespace = {}
        with read_only(settings.data_dir):
            first = episode_cells()[0]
            assert "load_prepared(settings)" in first, "the first cell reads the prepared file"
            # The given cell shuffles the arrays and names my_file; the typed cell writes it.
            for cell in (first, cell_with("my_file = settings.work_dir"),
                         cell_with("with atomic_hdf5(my_file)"),
                         cell_with("with h5py.File(my_file, \"r\") as f:\n    for name")):
                exec(cell, namespace)
    return settings, namespace, folder, before


def test_the_first_cells_read_the_shared_file_and_write_nothing_there(episode_run):
    settings, namespace, folder, before = episode_run
    assert snapshot(settings.data_dir) == before
    assert namespace["my_file"].parent == folder / "work"
    assert namespace["source"] == settings.data


def test_the_episode_writes_what_prepare_writes(episode_run):
    settings, namespace, _, _ = episode_run
    mine, theirs = contents(namespace["my_file"]), contents(settings.hdf5_path)
    assert mine["chunks"] == theirs["chunks"] and mine["attrs"] == theirs["attrs"]
    assert mine["data"].keys() == theirs["data"].keys()
    for name in mine["data"]:
        np.testing.assert_array_equal(mine["data"][name], theirs["data"][name])


def test_training_rows_are_shuffled_once_with_the_recorded_seed(episode_run):
    settings, namespace, _, _ = episode_run
    stored = contents(namespace["my_file"])
    x, y = namespace["x_train"], namespace["y_train"]
    order = np.random.default_rng(data.ROW_SEED).permutation(len(y))
    np.testing.assert_array_equal(stored["data"]["y_train"], y[order])
    np.testing.assert_array_equal(stored["data"]["x_train"], x[order])
    assert stored["attrs"]["train_row_seed"] == data.ROW_SEED
    assert stored["chunks"]["x_train"] == (settings.batch_size(256), 32, 32, 3)


def test_prepare_accepts_the_learners_file(episode_run, capsys):
    settings, namespace, _, _ = episode_run
    capsys.readouterr()
    assert data.prepare(settings, out=namespace["my_file"], progress=False) == namespace["my_file"]
    assert "Reusing" in capsys.readouterr().out
