"""Nothing a user owns is written over without their word, and an output is checked before the
work that produces it.

- ``python -m gpulesson.datasets.prepare --out FILE`` replaces only a file of the lesson (one whose HDF5
  attributes mark it so, or a damaged file under one of the lesson's own names): a text file,
  someone's own HDF5 file or a folder is refused in one line that says how to choose another
  name or pass ``--force``; no error message recommends a command that would write over it.
- A model or a file saved in an earlier run of a notebook is kept under a new name
  (``settings.keep_earlier``), said in one line.
- The commands check where they will write before they train: ``experiments.cnn --out``,
  ``train_job --results-file``, and notebook 05 its work folder in its first cell.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from gpulesson.datasets.prepare import main as prepare_main
from gpulesson.datasets.settings import keep_earlier
from gpulesson.experiments import train_job

ROOT = Path(__file__).resolve().parents[1]
UNWRITABLE = Path("/proc/gpulesson-test/out.jsonl")  # /proc takes no new files, not even root's


def one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.fixture
def quiet_env(monkeypatch, tmp_path):
    for name in ("LESSON_DATA", "LESSON_QUICK", "LESSON_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LESSON_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LESSON_WORK_DIR", str(tmp_path / "work"))


def own_hdf5(path: Path) -> Path:
    with h5py.File(path, "w") as f:
        f["measurements"] = np.arange(10)
        f.attrs["author"] = "me"
    return path


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("make", ["text", "hdf5"])
def test_prepare_never_replaces_a_file_that_is_not_the_lessons(tmp_path, capsys, quiet_env,
                                                               make):
    target = tmp_path / ("thesis.txt" if make == "text" else "thesis.h5")
    if make == "text":
        target.write_text("three years of work\n")
    else:
        own_hdf5(target)
    before = target.read_bytes()
    code = prepare_main(["--data", "synthetic", "--quick", "--out", str(target)])
    line = one_line(capsys.readouterr().err)
    assert code == 1 and target.read_bytes() == before
    assert str(target) in line and "not a data file of the lesson" in line
    assert "--out NEW.h5" in line and "--force" in line, line
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["data", target.name]) or \
        sorted(p.name for p in tmp_path.iterdir()) == [target.name]
    # With their word, it is replaced.
    assert prepare_main(["--data", "synthetic", "--quick", "--out", str(target), "--force"]) == 0
    assert h5py.is_hdf5(target) and target.read_bytes() != before


def test_prepare_replaces_its_own_damaged_or_other_files(tmp_path, capsys, quiet_env):
    """The lesson's own files are still replaced unasked: one of other settings (its attributes
    say so) and a damaged one under the lesson's own name."""
    out = tmp_path / "mine.h5"
    assert prepare_main(["--data", "synthetic", "--quick", "--out", str(out), "--seed", "1"]) == 0
    assert prepare_main(["--data", "synthetic", "--quick", "--out", str(out)]) == 0
    assert "does not match the settings" in capsys.readouterr().out
    damaged = tmp_path / "data" / "synthetic-quick.h5"
    damaged.parent.mkdir()
    damaged.write_bytes(b"\0" * 100)
    assert prepare_main(["--data", "synthetic", "--quick"]) == 0
    assert h5py.is_hdf5(damaged)


@pytest.mark.bad_input("bad argument")
def test_prepare_out_a_folder_is_named_a_folder(tmp_path, capsys, quiet_env):
    folder = tmp_path / "somewhere"
    folder.mkdir()
    assert prepare_main(["--data", "synthetic", "--quick", "--out", str(folder)]) == 1
    line = one_line(capsys.readouterr().err)
    assert f"{folder} is a folder" in line and f"--out {folder / 'synthetic-quick.h5'}" in line
    assert list(folder.iterdir()) == []


@pytest.mark.bad_input("corrupt file")
@pytest.mark.parametrize("make", ["text", "hdf5"])
def test_train_job_recommends_no_command_that_writes_over_the_file(tmp_path, capsys, make):
    target = tmp_path / ("thesis.txt" if make == "text" else "thesis.h5")
    if make == "text":
        target.write_text("three years of work\n")
    else:
        own_hdf5(target)
    code = train_job.main(["--data", str(target), "--out-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"--out {target}" not in err and "--force" not in err, err
    assert "not a data file of the lesson" in err and "python -m gpulesson.datasets.prepare" in err


@pytest.mark.bad_input("bad argument")
def test_a_folder_given_as_the_data_file_is_named_a_folder(tmp_path, capsys):
    code = train_job.main(["--data", str(tmp_path), "--out-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and f"{tmp_path} is a folder, not a data file" in err, err
    assert "does not exist" not in err


def test_an_earlier_model_is_kept_under_a_new_name_said_in_one_line(tmp_path, capsys):
    path = tmp_path / "cifar-cnn.keras"
    assert keep_earlier(path) == path and capsys.readouterr().out == ""  # nothing there yet
    path.write_bytes(b"first model")
    assert keep_earlier(path) == path and not path.exists()
    line = one_line(capsys.readouterr().out)
    kept = list(tmp_path.iterdir())
    assert len(kept) == 1 and kept[0].read_bytes() == b"first model"
    assert kept[0].name.startswith("cifar-cnn.") and kept[0].name.endswith(".keras")
    assert line == f"Your earlier cifar-cnn.keras is kept as {kept[0].name} in {tmp_path}."
    # Again within the same minute: a name of its own, nothing lost.
    path.write_bytes(b"second model")
    os.utime(path, (kept[0].stat().st_mtime, kept[0].stat().st_mtime))
    keep_earlier(path)
    assert sorted(p.read_bytes() for p in tmp_path.iterdir()) == [b"first model",
                                                                   b"second model"]


def test_the_notebooks_keep_the_learners_earlier_models():
    """Episodes 5 and 7 save models under fixed names: through keep_earlier."""
    for name in ("05-cpu-vs-gpu.ipynb", "07-small-models.ipynb"):
        code = "".join("".join(cell["source"]) for cell in json.loads(
            (ROOT / "notebooks" / name).read_text())["cells"] if cell["cell_type"] == "code")
        saves = code.count(".keras\")")
        assert saves and code.count("keep_earlier(settings.work_dir / ") == saves, name


@pytest.mark.bad_input("unwritable folder")
@pytest.mark.parametrize("out", [UNWRITABLE, "folder"])
def test_the_cnn_command_checks_its_out_file_before_training(tmp_path, monkeypatch, capsys,
                                                             out):
    from gpulesson.experiments.cnn import __main__ as cnn_main
    from gpulesson.experiments.cnn import measure

    def never(*args, **kwargs):
        raise AssertionError("it trained before checking where the records go")

    monkeypatch.setattr(measure, "train", never)
    out = tmp_path if out == "folder" else out
    with pytest.raises(SystemExit) as stopped:
        cnn_main.main(["--devices", "cpu", "--out", str(out)])
    line = capsys.readouterr().err.strip().splitlines()[-1]  # argparse: the usage, then this
    assert stopped.value.code == 2, line
    assert line.startswith("python -m gpulesson.experiments.cnn: error: argument --out: "), line
    assert str(out) in line


@pytest.mark.bad_input("unwritable folder")
def test_the_training_job_checks_its_results_file_before_training(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        train_job.main(["--data", "synthetic", "--results-file", str(UNWRITABLE),
                        "--out-dir", str(tmp_path / "run")])
    assert stopped.value.code == 2
    assert f"argument --results-file: cannot write {UNWRITABLE}: /proc takes no new file" in \
        capsys.readouterr().err
    assert not (tmp_path / "run").exists()


@pytest.mark.bad_input("unwritable folder")
def test_notebook_05_checks_the_work_folder_in_its_first_cell(tmp_path):
    """Before its training: the first code cell stops on a work folder that cannot be made."""
    cells = [cell for cell in json.loads((ROOT / "notebooks" / "05-cpu-vs-gpu.ipynb")
                                         .read_text())["cells"] if cell["cell_type"] == "code"]
    first = next(source for cell in cells if "settings.work_dir" in (source := "".join(cell["source"])))
    assert cells.index(next(c for c in cells if "".join(c["source"]) == first)) <= 1
    assert "fit(" not in first
    env = {**os.environ, "LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
           "LESSON_DATA_DIR": str(tmp_path / "data"), "LESSON_WORK_DIR": str(UNWRITABLE.parent),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", first], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)
    assert done.returncode != 0
    assert "DataFolderError: Cannot create or write to your work folder /proc" in done.stderr
    assert not (tmp_path / "data").exists(), "it went on to prepare the data"
