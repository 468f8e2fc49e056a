"""Every writer of the lesson keeps a file it did not make, and bad input to the lesson's
commands gets one paragraph naming the real cause and what to do (never a traceback).

Writers: ``atomic_hdf5`` (episode 4's own file and its guessed-chunks file, the layouts of
episode 9), ``write_hdf5`` (through it: ``prepare``, the feeding benchmark's files),
``keep_earlier`` and ``workcopy`` (tests/test_nothing_overwritten.py, tests/test_make.py).
"""

import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from gpulesson.classroom import workcopy
from gpulesson.datasets import load as data
from gpulesson.datasets import mnist, prepare
from gpulesson.datasets.hdf5 import WRITER_MARK, atomic_hdf5, made_by_lesson
from gpulesson.datasets.settings import Settings
from gpulesson.errors import DataFileError, DataFolderError, show_message_only_in_commands

ROOT = Path(__file__).resolve().parents[1]


def someones_files(folder: Path, name: str) -> dict[str, bytes]:
    """A text file and someone's own HDF5 file, as a learner may keep under a lesson's name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"text-{name}").write_text("mine\n")
    with h5py.File(folder / f"hdf5-{name}", "w") as f:
        f["measurements"] = np.arange(5)
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def kept(folder: Path, before: dict[str, bytes]) -> None:
    """Each file of ``before`` is still in ``folder``, unchanged, under its name or a new one."""
    now = sorted(p.read_bytes() for p in folder.iterdir() if p.is_file())
    for content in before.values():
        assert content in now


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("name", ["guessed-chunks.h5", "synthetic-quick.h5"])
def test_atomic_hdf5_keeps_a_file_it_did_not_make(tmp_path, capsys, name):
    """Episode 4's cells write my_file and guessed-chunks.h5 in the work folder."""
    before = someones_files(tmp_path, name)
    for kind in ("text", "hdf5"):
        path = tmp_path / f"{kind}-{name}"
        with atomic_hdf5(path) as f:
            f["x_train"] = np.zeros((4, 32, 32, 3), np.uint8)
        line, = capsys.readouterr().out.splitlines()
        assert line.startswith(f"Your earlier {path.name} is kept as ") and str(tmp_path) in line
        assert made_by_lesson(path) and h5py.File(path).attrs[WRITER_MARK]
    kept(tmp_path, before)
    assert len(list(tmp_path.iterdir())) == 4
    # Its own file, written again: replaced, without a word.
    with atomic_hdf5(tmp_path / f"text-{name}") as f:
        f["x_train"] = np.ones((4, 32, 32, 3), np.uint8)
    assert capsys.readouterr().out == "" and len(list(tmp_path.iterdir())) == 4


@pytest.mark.bad_input("bad argument")
def test_atomic_hdf5_names_a_folder_in_one_line(tmp_path):
    with pytest.raises(DataFileError, match="is a folder: name a file in it") as failed:
        with atomic_hdf5(tmp_path) as f:
            f["x"] = np.zeros(3)
    assert "\n" not in str(failed.value) and list(tmp_path.iterdir()) == []


@pytest.mark.bad_input("bad argument")
def test_the_feeding_files_keep_someones_files(tmp_path, capsys):
    """``python -m gpulesson.experiments.feeding --data-dir D`` writes feeding-{classic,none}-64.h5."""
    from gpulesson.experiments.feeding.pipelines import write_files

    for kind in ("classic", "none"):
        (tmp_path / f"feeding-{kind}-64.h5").write_text("mine\n")
    x = np.zeros((128, 32, 32, 3), np.uint8)
    y = np.arange(128) % 10
    paths = write_files(tmp_path, x, y, ["classic", "none"], batch_size=64)
    assert all(made_by_lesson(p) for p in paths.values())
    assert len(capsys.readouterr().out.splitlines()) == 2
    assert sorted(p.read_text() for p in tmp_path.iterdir() if not made_by_lesson(p)) == \
        ["mine\n", "mine\n"]


@pytest.mark.bad_input("bad argument")
def test_prepare_force_keeps_someones_file_under_a_new_name(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LESSON_WORK_DIR", str(tmp_path / "work"))
    target = tmp_path / "thesis.h5"
    target.write_text("three years of work\n")
    assert prepare.main(["--data", "synthetic", "--quick", "--out", str(target), "--force"]) == 0
    assert "Your earlier thesis.h5 is kept as" in capsys.readouterr().out
    kept(tmp_path, {"thesis.h5": b"three years of work\n"})


@pytest.mark.bad_input("unwritable folder")
def test_prepare_force_in_a_read_only_folder_names_force(tmp_path, monkeypatch, capsys):
    """A valid file in the instructor's read-only folder: --force is what cannot be done."""
    monkeypatch.setenv("LESSON_WORK_DIR", str(tmp_path / "work"))
    settings = Settings(data="synthetic", quick=True, data_dir=tmp_path / "shared")
    data.prepare(settings, progress=False)

    def read_only(folder, *args, **kwargs):
        raise DataFolderError(f"{folder} is read-only", "Read-only file system")

    monkeypatch.setattr(data, "check_writable", read_only)
    code = prepare.main(["--data", "synthetic", "--quick", "--data-dir", str(settings.data_dir),
                         "--force"])
    err = capsys.readouterr().err
    assert code == 1 and "There is no prepared file" not in err, err
    assert err.startswith(f"error: --force asks to re-create {settings.hdf5_path}") and \
        "without --force a valid file there is used as it is" in err


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("form", ["separate", "joined"])
def test_prepare_out_ending_in_a_slash_names_a_folder(tmp_path, monkeypatch, capsys, form):
    monkeypatch.chdir(tmp_path)
    out = ["--out", "newdir/"] if form == "separate" else ["--out=newdir/"]
    assert prepare.main(["--data", "synthetic", "--quick", *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out newdir/synthetic-quick.h5" in err, err
    assert "--data-dir newdir" in err and list(tmp_path.iterdir()) == []


@pytest.mark.bad_input("interrupted write")
def test_ctrl_c_in_prepare_is_one_line_and_leaves_no_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LESSON_WORK_DIR", str(tmp_path / "work"))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(data, "load_arrays", interrupted)
    folder = tmp_path / "data"
    code = prepare.main(["--data", "synthetic", "--quick", "--data-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 130 and err.startswith("Stopped: no data file was written") and \
        err.count("\n") == 1
    assert not folder.exists() or list(folder.iterdir()) == []


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("variable, value, cause", [
    ("LESSON_QUICK", "maybe", "LESSON_QUICK='maybe' is not understood"),
    ("LESSON_WORK_DIR", "/etc/passwd", "names the file /etc/passwd, not a folder"),
])
def test_a_bad_setting_stops_a_command_with_its_message(tmp_path, variable, value, cause):
    """Under any ``python -m gpulesson...`` command that reads the settings (here the CNN
    benchmark, which does not catch them): the message, no traceback."""
    env = {**os.environ, "LESSON_WORK_DIR": str(tmp_path), variable: value}
    done = subprocess.run([sys.executable, "-m", "gpulesson.experiments.cnn", "--devices", "cpu",
                           "--out", str(tmp_path / "runs.jsonl")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"error: {variable}={value!r}" if variable == "LESSON_QUICK"
                                  else f"error: {variable}={value}") and cause in done.stderr


def test_only_the_lessons_commands_get_the_short_messages(monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    assert not show_message_only_in_commands("myscript") and sys.excepthook is sys.__excepthook__
    assert show_message_only_in_commands("gpulesson.datasets.prepare")
    assert sys.excepthook is not sys.__excepthook__


@pytest.mark.bad_input("unwritable folder")
def test_mnist_in_a_read_only_folder_is_not_blamed_on_the_internet(monkeypatch, tmp_path,
                                                                   capsys):
    pytest.importorskip("torchvision")
    monkeypatch.setattr(mnist, "cannot_write_file",
                        lambda path: f"cannot write {path}: Read-only file system")
    assert mnist.main(["--data-dir", str(tmp_path / "shared")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: MNIST is not in") and "cannot be downloaded there" in err
    assert "internet" not in err and "--data-dir ~/gpulesson-data" in err


@pytest.mark.bad_input("unwritable folder")
def test_workcopy_says_what_to_do_without_an_errno(tmp_path, capsys, monkeypatch):
    lesson = tmp_path / "lesson"
    (lesson / workcopy.SOURCE).mkdir(parents=True)
    (lesson / workcopy.SOURCE / "01-a.ipynb").write_text("{}")
    blocked = tmp_path / "file"
    blocked.write_text("a file")
    assert workcopy.main(["--lesson", str(lesson), "--to", str(blocked / "mine")]) == 1
    err = capsys.readouterr().err
    assert "[Errno" not in err and err.startswith(f"error: cannot copy the notebooks into "
                                                  f"{blocked / 'mine'}") and "--to" in err


@pytest.mark.bad_input("unwritable folder")
def test_workcopy_outside_the_lesson_never_writes_into_someone_elses(tmp_path, capsys,
                                                                    monkeypatch):
    """A shared environment's package lives in the instructor's folder: run outside a lesson
    folder, the default would copy into it."""
    own = tmp_path / "mine"
    (own / workcopy.SOURCE).mkdir(parents=True)
    (own / "setup.md").write_text("setup")
    (own / workcopy.SOURCE / "01-a.ipynb").write_text("{}")
    monkeypatch.chdir(own / workcopy.SOURCE)
    assert workcopy.lesson_folder(Path.cwd()) == own
    assert workcopy.main([]) == 0 and (own / workcopy.DEFAULT_TARGET / "01-a.ipynb").is_file()
    instructors = tmp_path / "instructor"
    instructors.mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(workcopy, "LESSON_ROOT", instructors)
    monkeypatch.setattr(workcopy.os, "access", lambda path, mode: Path(path) != instructors)
    assert workcopy.lesson_folder(Path.cwd(), instructors) == instructors
    assert workcopy.main(["--lesson", str(instructors)]) == 1
    err = capsys.readouterr().err
    assert "is not your lesson folder" in err and "--to" in err
    assert list(instructors.iterdir()) == []


@pytest.mark.bad_input("corrupt file")
def test_the_check_names_broken_yaml_in_its_config(tmp_path, capsys):
    from gpulesson.classroom.check.__main__ import parse

    config = tmp_path / "_config.yml"
    config.write_text("lesson_site:\n  a: [1, 2\n  b: 3\n")
    with pytest.raises(SystemExit) as stopped:
        parse(["--config", str(config), "--json", str(tmp_path / "check.json")])
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert stopped.value.code == 2 and "Traceback" not in last
    assert f"{config} is not valid YAML at line 3" in last and "correct it" in last
    config.write_text("- just\n- a list\n")
    with pytest.raises(SystemExit):
        parse(["--config", str(config), "--json", str(tmp_path / "check.json")])
    assert "holds no settings" in capsys.readouterr().err
