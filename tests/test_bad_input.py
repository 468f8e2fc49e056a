"""Bad input and faults that no other test file tried, and the one-line count of them all.

The other tests of bad input live next to the code they test and are marked
``@pytest.mark.bad_input(kind)``; tests/bad_input.py lists the kinds and prints the count.
Each test here checks both halves of the promise: a clear message (what is wrong, what to do)
and nothing lost (no half-written file, the good file kept, no state changed).
"""

import os
import subprocess
import sys
from collections import Counter

import bad_input
import h5py
import numpy as np
import pytest
from conftest import ROOT
from data_fixtures import small_arrays

from gpulesson import lesson
from gpulesson.datasets import load as data
from gpulesson.datasets.hdf5 import validate_hdf5, write_hdf5
from gpulesson.datasets.settings import Settings
from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES
from gpulesson.errors import DataFileError
from gpulesson.experiments import parallel, train_job


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def out_of_range_labels(tmp_path):
    """A lesson file whose training labels include 10 and 255 (the classes are 0..9)."""
    path = write_hdf5(tmp_path / "synthetic-quick.h5", *small_arrays(n_train=40, n_test=10),
                      source="synthetic", class_names=SYNTHETIC_CLASS_NAMES, progress=False)
    with h5py.File(path, "a") as f:
        f["y_train"][7] = 10
        f["y_train"][33] = 255
    return path


# --- out-of-range labels, where the lesson reads them ------------------------------------------

@pytest.mark.bad_input("bad labels")
def test_the_data_generator_refuses_out_of_range_labels(out_of_range_labels):
    before = out_of_range_labels.read_bytes()
    with pytest.raises(DataFileError) as failed:
        lesson.HDF5Batches(out_of_range_labels, split="train", batch_size=8)
    message = str(failed.value)
    for part in (str(out_of_range_labels), "y_train", "255", "10 classes",
                 "python -m gpulesson.datasets.prepare --data synthetic --quick"):
        assert part in message, message
    # The learner's file is left as it was, for them to look at or re-create.
    assert out_of_range_labels.read_bytes() == before


@pytest.mark.bad_input("bad labels")
def test_a_training_job_refuses_out_of_range_labels_before_writing(out_of_range_labels,
                                                                   tmp_path, capsys):
    out = tmp_path / "run"
    code = train_job.main(["--data", str(out_of_range_labels), "--out-dir", str(out),
                           "--epochs", "1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "No usable data file" in err and "y_train" in err and "10 classes" in err, err
    assert "Traceback" not in err
    assert not out.exists()


# --- the wrong Keras backend -------------------------------------------------------------------

@pytest.mark.bad_input("wrong backend")
def test_data_parallel_training_refuses_another_backend(monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "torch")
    with pytest.raises(RuntimeError) as failed:
        parallel.use_jax()
    # Either message names the backend it needs and how to get it.
    assert "KERAS_BACKEND=jax" in str(failed.value), failed.value
    # Nothing was switched behind the learner's back.
    assert os.environ["KERAS_BACKEND"] == "torch"


# --- an interrupted conversion ------------------------------------------------------------------

@pytest.mark.bad_input("interrupted write")
def test_an_interrupted_conversion_keeps_the_good_file(tmp_path, monkeypatch, capsys):
    """Ctrl-C while prepare re-writes the data file: the previous file survives whole."""
    settings = Settings("synthetic", quick=True, data_dir=tmp_path)
    path = data.prepare(settings, progress=False)
    before = path.read_bytes()
    original, calls = h5py.Dataset.__setitem__, []

    def interrupted(self, key, value):
        calls.append(key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return original(self, key, value)

    monkeypatch.setattr(h5py.Dataset, "__setitem__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.prepare(settings, force=True, seed=3, progress=False)
    monkeypatch.undo()
    assert len(calls) == 3, "the write was not interrupted half-way"
    assert path.read_bytes() == before
    assert files_in(tmp_path) == [path.name]  # no half-written or temporary file
    # The next start finds the good file and says so.
    capsys.readouterr()
    assert data.prepare(settings, progress=False) == path
    assert "Reusing" in capsys.readouterr().out
    validate_hdf5(path, verify_checksum=True)


@pytest.mark.bad_input("interrupted write")
def test_an_interrupted_first_conversion_leaves_no_file(tmp_path, monkeypatch):
    settings = Settings("synthetic", quick=True, data_dir=tmp_path)

    def interrupted(self, key, value):
        raise KeyboardInterrupt

    monkeypatch.setattr(h5py.Dataset, "__setitem__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.prepare(settings, progress=False)
    monkeypatch.undo()
    assert files_in(tmp_path) == []
    # What the learner then meets is the clear "does not exist, prepare it" message.
    with pytest.raises(DataFileError, match="does not exist"):
        validate_hdf5(settings.hdf5_path)


# --- the register and the summary line ----------------------------------------------------------

def test_the_summary_line_counts_per_kind_in_the_registers_order():
    line = bad_input.summary_line(Counter({"no GPU": 2, "missing file": 3, "corrupt file": 1}))
    assert line == ("Bad input and faults: 6 tried (missing file 3, corrupt file 1, no GPU 2): "
                    "each got a clear message, nothing lost.")
    assert "\n" not in line


def test_the_summary_line_says_how_many_failed():
    line = bad_input.summary_line({"missing file": 3, "killed job": 2},
                                  {"killed job": 1})
    assert line.startswith("Bad input and faults: 5 tried (missing file 3, killed job 2): ")
    assert "1 of them did NOT get a clear message or lost something (killed job 1)" in line
    assert "each got a clear message" not in line
    assert bad_input.summary_line({}) == "Bad input and faults: none tried."


def test_the_tally_counts_passed_failed_and_skipped_tests():
    class Report:
        def __init__(self, nodeid, when, outcome, kind="missing file"):
            self.nodeid, self.when, self.outcome = nodeid, when, outcome
            self.user_properties = [("bad_input_kind", kind)] if kind else []
            self.passed, self.failed = outcome == "passed", outcome == "failed"
            self.skipped = outcome == "skipped"

    tally = bad_input._Tally()
    for report in [
        Report("a", "setup", "passed"), Report("a", "call", "passed"),
        Report("a", "teardown", "passed"),
        Report("b", "setup", "passed"), Report("b", "call", "failed", "killed job"),
        Report("b", "teardown", "passed", "killed job"),
        Report("c", "setup", "skipped"), Report("c", "teardown", "passed"),
        Report("d", "call", "passed", kind=None),  # not marked: not counted
    ]:
        tally.add(report)
    tried, failed = tally.counts()
    assert tried == Counter({"missing file": 1, "killed job": 1})
    assert failed == Counter({"killed job": 1})


def test_every_kind_the_issue_names_is_registered():
    for kind in ("missing file", "corrupt file", "truncated file", "interrupted write",
                 "no internet", "no GPU", "wrong backend", "bad labels", "killed job"):
        assert kind in bad_input.KINDS


CONFTEST = f"""
import sys
sys.path.insert(0, {os.path.dirname(bad_input.__file__)!r})
import bad_input

def pytest_configure(config):
    bad_input.configure(config)

def pytest_terminal_summary(terminalreporter):
    bad_input.terminal_summary(terminalreporter)
"""


def run_pytest(folder, test_file):
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_x.py").write_text(test_file)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "--strict-markers", "-o", "addopts=", str(folder)],
                          cwd=folder, capture_output=True, text=True, timeout=120)


def test_the_line_is_printed_at_the_end_of_a_run(tmp_path):
    done = run_pytest(tmp_path, (
        "import pytest\n"
        "@pytest.mark.bad_input('missing file')\n"
        "def test_ok():\n    pass\n"
        "@pytest.mark.bad_input('killed job')\n"
        "def test_lost_something():\n    assert False\n"
        "@pytest.mark.bad_input('no GPU')\n"
        "def test_skipped():\n    pytest.skip('a GPU is visible')\n"
        "def test_unmarked():\n    pass\n"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("Bad input")]
    assert lines == ["Bad input and faults: 2 tried (missing file 1, killed job 1): 1 of them "
                     "did NOT get a clear message or lost something (killed job 1); see the "
                     "failures above."], done.stdout


def test_an_unknown_kind_is_refused(tmp_path):
    done = run_pytest(tmp_path, (
        "import pytest\n"
        "@pytest.mark.bad_input('no such kind')\n"
        "def test_x():\n    pass\n"))
    assert done.returncode != 0
    assert "the kind must be one of" in done.stdout + done.stderr, done.stdout + done.stderr


# --- the command-line tools: one line each, argparse's way, and --help that helps ---------------

COMMANDS = {  # module: how its main() is called with argv
    "gpulesson.datasets.prepare": lambda argv: __import__("gpulesson.datasets.prepare", fromlist=["main"]).main(argv),
    "gpulesson.machine.devices": lambda argv: __import__("gpulesson.machine.devices", fromlist=["main"]).main(argv),
    "gpulesson.classroom.check": lambda argv: __import__("gpulesson.classroom.check.__main__",
                                               fromlist=["main"]).main(argv),
    "gpulesson.experiments.train_job": lambda argv: train_job.main(argv),
    "gpulesson.experiments.cnn": lambda argv: __import__("gpulesson.experiments.cnn.__main__",
                                                         fromlist=["main"]).main(argv),
}


def _last_line(text: str) -> str:
    assert "Traceback" not in text, text
    return text.strip().splitlines()[-1]


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_helps_with_help_and_names_itself(module, capsys):
    with pytest.raises(SystemExit) as stopped:
        COMMANDS[module](["--help"])
    out = capsys.readouterr().out
    assert stopped.value.code == 0 and out.startswith(f"usage: python -m {module}"), out
    assert "CPU:" not in out, "it ran instead of helping"


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_refuses_an_unknown_option_as_a_usage_error(module, capsys):
    with pytest.raises(SystemExit) as stopped:
        COMMANDS[module](["--no-such-option"])
    line = _last_line(capsys.readouterr().err)
    assert stopped.value.code == 2
    assert line == f"python -m {module}: error: unrecognized arguments: --no-such-option"


@pytest.mark.bad_input("bad argument")
def test_the_cnn_command_refuses_batch_size_0_as_train_job_does(capsys):
    from gpulesson.experiments.cnn.__main__ import main

    for command, module in ((main, "cnn"), (train_job.main, "train_job")):
        with pytest.raises(SystemExit) as stopped:
            command(["--batch-size", "0"])
        line = _last_line(capsys.readouterr().err)
        assert stopped.value.code == 2 and "--batch-size" in line and " 0" in line, line
        assert line.startswith(f"python -m gpulesson.experiments.{module}: error: ")
        assert "BATCH_SIZE =" not in line and "//" not in line  # no notebook syntax


@pytest.mark.bad_input("wrong backend")
def test_a_backend_keras_does_not_have_stops_train_job_in_one_terminal_line(monkeypatch,
                                                                           tmp_path, capsys):
    monkeypatch.setenv("KERAS_BACKEND", "foo")
    with pytest.raises(SystemExit) as stopped:
        train_job.main(["--data", "synthetic", "--out-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("python -m gpulesson.experiments.train_job: error: KERAS_BACKEND asks "
                          "Keras for the backend 'foo', which Keras does not have")
    assert "export KERAS_BACKEND=tensorflow" in err and "run the command again" in err
    assert "kernel" not in err.lower() and "%env" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.bad_input("wrong backend")
def test_the_device_report_fails_when_keras_cannot_start(tmp_path):
    env = {**os.environ, "KERAS_BACKEND": "foo", "KERAS_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "gpulesson.machine.devices"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "backend 'foo', which Keras does not have" in done.stdout
    assert "training will run on the CPU" not in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("Keras cannot start, so no training")


@pytest.mark.bad_input("bad argument")
def test_a_file_named_as_the_data_folder_is_called_a_file(tmp_path):
    from gpulesson.datasets.settings import get_settings
    from gpulesson.errors import SettingsError

    file = tmp_path / "notes.txt"
    file.write_text("mine")
    for name in ("LESSON_DATA_DIR", "LESSON_WORK_DIR"):
        with pytest.raises(SettingsError) as failed:
            get_settings({name: str(file)})
        first = str(failed.value).splitlines()[0]
        assert first == (f"{name}={file} names the file {file}, not a folder: name a folder, "
                         f"e.g. ~/gpulesson-{'data' if 'DATA' in name else 'work'}.")
        assert "instructor" not in str(failed.value)
    assert file.read_text() == "mine"


@pytest.mark.bad_input("bad argument")
def test_a_data_dir_under_a_file_is_called_so(tmp_path, capsys):
    from gpulesson.datasets.prepare import main

    file = tmp_path / "notes.txt"
    file.write_text("mine")
    assert main(["--data", "synthetic", "--quick", "--data-dir", str(file / "data")]) == 1
    line = _last_line(capsys.readouterr().err)
    assert line == (f"error: {file} is a file, not a folder, so {file / 'data'} cannot be a "
                    f"folder: name a folder in LESSON_DATA_DIR or --data-dir.")


@pytest.mark.bad_input("unwritable folder")
def test_home_unset_is_named_where_the_advice_says_home(monkeypatch, tmp_path):
    from gpulesson.datasets.settings import ensure_work_dir
    from gpulesson.errors import DataFolderError, check_writable

    monkeypatch.delenv("HOME", raising=False)
    for attempt in (lambda: check_writable("/proc/gpulesson-data"),
                    lambda: ensure_work_dir("/proc/gpulesson-work", tmp_path)):
        with pytest.raises(DataFolderError) as failed:
            attempt()
        assert "HOME is not set here, so ~ is " in str(failed.value), failed.value
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(DataFolderError) as failed:
        check_writable("/proc/gpulesson-data")
    assert "HOME" not in str(failed.value)


@pytest.mark.bad_input("missing file")
def test_the_check_refuses_a_missing_config_in_one_line(capsys):
    from gpulesson.classroom.check.__main__ import parse

    with pytest.raises(SystemExit) as stopped:
        parse(["--config", "/nonexistent.yml"])
    assert stopped.value.code == 2
    assert _last_line(capsys.readouterr().err) == (
        "python -m gpulesson.classroom.check: error: argument --config: /nonexistent.yml does not exist: "
        f"name the lesson's _config.yml (default: {ROOT / '_config.yml'})")


@pytest.mark.bad_input("bad argument")
def test_the_checks_json_into_a_missing_folder_makes_no_folder(tmp_path, capsys):
    from gpulesson.classroom.check.__main__ import parse

    target = tmp_path / "not" / "there" / "check.json"
    with pytest.raises(SystemExit) as stopped:
        parse(["--json", str(target)])
    assert stopped.value.code == 2
    line = _last_line(capsys.readouterr().err)
    assert f"argument --json: the folder {target.parent} does not exist: create it first" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.bad_input("no internet")
def test_a_failed_cifar10_prepare_leaves_no_empty_folders(tmp_path, monkeypatch):
    from data_fixtures import closed_port_url, no_proxy

    from gpulesson.errors import DataUnavailableError

    no_proxy(monkeypatch)
    monkeypatch.setenv("LESSON_CIFAR10_URL", closed_port_url())
    keras_home = tmp_path / "keras"
    keras_home.mkdir()
    monkeypatch.setenv("KERAS_HOME", str(keras_home))
    settings = Settings("cifar10", quick=True, data_dir=tmp_path / "new" / "data")
    with pytest.raises(DataUnavailableError):
        data.prepare(settings, progress=False)
    assert files_in(tmp_path) == ["keras"] and not (keras_home / "datasets").exists()


def test_the_ceilings_tf_data_pipeline_is_not_shuffled_twice():
    """fit's shuffle does not apply to a tf.data.Dataset (Keras warns if it is asked for): the
    pipeline shuffles itself, so the page of episode 9 shows no raw UserWarning."""
    import warnings

    from gpulesson.experiments.ceiling.measure import _feeds

    x = np.zeros((64, 32, 32, 3), np.uint8)
    y = np.zeros(64, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ((name, feed),) = _feeds(["tfdata"], x=x, y=y, path=None, batch_size=32,
                                 keras_device="cpu")
    assert name == "tfdata" and feed["shuffle"] is False


def test_no_recorded_page_shows_a_raw_warning():
    import json as json_module

    for path in sorted((ROOT / "executed").glob("*.ipynb")):
        cells = json_module.loads(path.read_text())["cells"]
        text = "".join("".join(output.get("text", "")) for cell in cells
                       for output in cell.get("outputs", []))
        assert "UserWarning" not in text and "DeprecationWarning" not in text, path.name
