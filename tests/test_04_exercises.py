"""Episode 4's exercises and its classic generator, taken from the episode and run.

- Each exercise cell is its solution with blanks: line for line the same, a ``____`` standing for
  what the solution writes there.
- The solution of "Write a PyDataset" hands out the training rows in file order, every image
  once, the last batch short, and counts the images from the metadata.
- The solution of "Guessed chunks and gzip" writes what the page says: guessed chunks, gzip, and a
  batch of whole images spread over many chunks.
- The classic generator does what the page measures: its shuffle leaves batch 0 as it was, and
  its ``on_epoch_end`` reads every image.
"""

import re

import h5py
import jupytext
import numpy as np
import pytest
from conftest import ROOT

from gpulesson.datasets.hdf5 import atomic_hdf5, write_hdf5

EPISODE = ROOT / "_episodes" / "04-data-pipeline.md"
N_TRAIN, BATCH = 1000, 64  # 15 full batches and one of 40
CLASSES = [f"class {i}" for i in range(10)]


def code_cells() -> list:
    notebook = jupytext.reads(EPISODE.read_text(encoding="utf-8"), fmt="myst")
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def exercise_pairs() -> list[tuple[str, str]]:
    cells = code_cells()
    return [(cell.source, cells[i + 1].source) for i, cell in enumerate(cells)
            if "exercise" in cell.metadata.get("tags", [])]


def solution_with(text: str) -> str:
    found = [solution for _, solution in exercise_pairs() if text in solution]
    assert len(found) == 1, f"one solution holds {text!r}"
    return found[0]


def cell_with(text: str) -> str:
    found = [cell.source for cell in code_cells() if text in cell.source]
    assert len(found) == 1, f"one cell holds {text!r}"
    return found[0]


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """A lesson file whose images carry their row number in the first pixel."""
    def rows(n):
        x = np.random.default_rng(0).integers(0, 256, (n, 32, 32, 3), dtype=np.uint8)
        x[:, 0, 0] = np.stack([np.arange(n) // 256, np.arange(n) % 256, np.zeros(n)], axis=1)
        return x, (np.arange(n) % 10).astype(np.uint8)

    return write_hdf5(tmp_path_factory.mktemp("ex") / "synthetic.h5", rows(N_TRAIN), rows(100),
                      source="synthetic", class_names=CLASSES, chunk_rows=BATCH, progress=False)


def row_numbers(x: np.ndarray) -> np.ndarray:
    return x[:, 0, 0, 0].astype(int) * 256 + x[:, 0, 0, 1]


def test_the_episode_has_its_three_code_exercises():
    assert len(exercise_pairs()) == 3


@pytest.mark.parametrize("exercise, solution", exercise_pairs(), ids=["floats", "chunks", "pydataset"])
def test_each_exercise_is_its_solution_with_blanks(exercise, solution):
    asked, answered = exercise.splitlines(), solution.splitlines()
    assert len(asked) == len(answered)
    blanks = 0
    for line, filled in zip(asked, answered):
        pattern = ".+?".join(re.escape(part) for part in line.split("____"))
        assert re.fullmatch(pattern, filled), (line, filled)
        blanks += line.count("____")
    assert blanks >= (1 if "predicted_mb" in exercise else 3)


def test_the_pydataset_solution_hands_out_the_file_in_order(path, capsys):
    namespace = {"h5py": h5py, "my_file": path, "BATCH_SIZE": BATCH}
    exec(solution_with("class FileBatches"), namespace)
    assert capsys.readouterr().out.strip() == f"16 batches; the last holds 40 images; {N_TRAIN} in all"
    batches = namespace["FileBatches"](path, BATCH)
    assert batches.file is None  # nothing open until the first read
    assert len(batches) == 16
    rows = np.concatenate([row_numbers(batches[i][0]) for i in range(len(batches))])
    np.testing.assert_array_equal(rows, np.arange(N_TRAIN))
    labels = np.concatenate([batches[i][1] for i in range(len(batches))])
    np.testing.assert_array_equal(labels, rows % 10)


def test_the_chunks_solution_writes_guessed_gzip_chunks(path, tmp_path, capsys):
    class Settings:
        work_dir = tmp_path

    with h5py.File(path, "r") as f:
        x_train = f["x_train"][()]
    namespace = {"h5py": h5py, "atomic_hdf5": atomic_hdf5, "settings": Settings, "my_file": path,
                 "BATCH_SIZE": BATCH, "x_train": x_train}
    exec(solution_with("guessed-chunks.h5"), namespace)
    printed = capsys.readouterr().out
    assert printed.count("images/s") == 2 and "guessed-chunks.h5 x_train: chunks" in printed
    with h5py.File(tmp_path / "guessed-chunks.h5", "r") as f:
        images = f["x_train"]
        assert images.compression == "gzip"
        # Like with like: the bytes stored for x_train in each file, not the files' sizes.
        assert f"{images.id.get_storage_size() / 1e6:.1f} MB stored" in printed
        # One batch of whole images spreads over many of the guessed chunks.
        touched = np.prod([-(-size // chunk) for size, chunk in
                           zip((BATCH, 32, 32, 3), images.chunks)])
        assert touched > 1


def test_the_classic_generators_shuffle_leaves_batch_zero_and_it_reads_every_image(
        path, monkeypatch, capsys):
    import keras  # noqa: F401 (the cell imports it)

    namespace = {"h5py": h5py, "np": np}
    exec(cell_with("class ClassicGenerator"), namespace)
    read = []
    real = h5py.Dataset.__getitem__

    def counting(dataset, selection):
        values = real(dataset, selection)
        if dataset.name == "/x_train":
            read.append(len(values))
        return values

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    classic = namespace["ClassicGenerator"](path, BATCH)
    first = classic[0][0]
    read.clear()
    classic.on_epoch_end()
    assert read == [N_TRAIN]  # every image, only to count them
    np.testing.assert_array_equal(classic[0][0], first)
    # The page's measuring cell says the same.
    namespace.update(my_file=path, BATCH_SIZE=BATCH)
    exec(cell_with("classic = ClassicGenerator(my_file, BATCH_SIZE)"), namespace)
    assert "batch 0 holds the same images after the shuffle: True" in capsys.readouterr().out
