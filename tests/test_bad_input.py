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

import h5py
import numpy as np
import pytest

import bad_input
from data_fixtures import small_arrays
from gpulesson import data, lesson
from gpulesson.experiments import parallel, train_job
from gpulesson.errors import DataFileError
from gpulesson.hdf5 import validate_hdf5, write_hdf5
from gpulesson.settings import Settings
from gpulesson.synthetic import SYNTHETIC_CLASS_NAMES


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
                 "python -m gpulesson.prepare --data synthetic --quick"):
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
