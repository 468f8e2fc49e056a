"""Bad values of the experiments' shared command line (gpulesson/experiments/cli.py): one line
each, saying what to do, before anything is measured or written."""

import importlib
import os

import pytest

from gpulesson import errors
from gpulesson.experiments.cli import continue_run
from gpulesson.experiments.cnn import RESULTS_FILE as CNN_RESULTS
from gpulesson.records.results import append_record, make_record, new_run_id

# Each command's main, whether its package has a __main__.py or declares its command.
cnn_main, matmul_main = (importlib.import_module(f"gpulesson.experiments.{name}.__main__").main
                         for name in ("cnn", "matmul"))

pytestmark = pytest.mark.bad_input("bad argument")


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1]


def results_with_runs(path, *run_ids):
    for run_id in run_ids:
        append_record(path, make_record("matmul", data="synthetic", run_id=run_id,
                                        environment={"date": "2026-11-28T12:00:00Z",
                                                     "backend": "tensorflow", "device": "CPU"}))
    return path


def test_out_must_name_a_results_file_not_a_model_or_data_file(tmp_path, capsys):
    model = tmp_path / "cifar-cnn.keras"
    model.write_bytes(b"my model")
    with pytest.raises(SystemExit) as stopped:
        cnn_main(["--devices", "cpu", "--out", str(model)])
    line = one_error_line(capsys)
    assert stopped.value.code == 2 and "is not a results file" in line
    assert "--out cifar-cnn.jsonl" in line
    assert model.read_bytes() == b"my model"


def test_the_default_out_refused_to_a_learner_says_to_name_their_own(monkeypatch, capsys):
    """A lesson folder the learner cannot write to (an instructor's shared copy)."""
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if mode == os.W_OK
                        else real_access(path, mode))
    with pytest.raises(SystemExit) as stopped:
        cnn_main(["--devices", "cpu"])
    line = one_error_line(capsys)
    assert stopped.value.code == 2 and "reference results files" in line
    assert f"--out ~/gpulesson-work/{CNN_RESULTS.name}" in line
    # Elsewhere, a read-only file is named as such, with no word of reference files.
    assert errors.cannot_write_file(__file__).endswith("cannot be written to (read-only)")


def test_an_unknown_run_id_is_refused_naming_the_runs_the_file_has(tmp_path, capsys):
    out = results_with_runs(tmp_path / "m.jsonl", "20261127T100000Z-aaaaaa",
                            "20261128T100000Z-bbbbbb")
    before = out.read_bytes()
    with pytest.raises(SystemExit) as stopped:
        matmul_main(["--devices", "cpu", "--sizes", "4", "--run-id", "nosuchrun",
                     "--out", str(out)])
    line = one_error_line(capsys)
    assert stopped.value.code == 2 and line.startswith("error: --run-id nosuchrun:")
    assert "20261127T100000Z-aaaaaa, 20261128T100000Z-bbbbbb" in line
    assert "leave --run-id out" in line and out.read_bytes() == before


def test_a_known_run_id_or_a_new_one_of_its_form_goes_on(tmp_path):
    out = results_with_runs(tmp_path / "m.jsonl", "20261127T100000Z-aaaaaa")
    assert continue_run(out, "matmul", "20261127T100000Z-aaaaaa", lambda r: r["run_id"]) == (
        "20261127T100000Z-aaaaaa", {"20261127T100000Z-aaaaaa"})
    fresh = new_run_id()  # as tools/reference.py gives a stage's first command
    assert continue_run(out, "matmul", fresh, lambda r: r) == (fresh, set())
    # No file yet: nothing to go on with, and nothing to name.
    assert continue_run(tmp_path / "new.jsonl", "matmul", "r1", lambda r: r) == ("r1", set())


@pytest.mark.parametrize("seconds", ["0", "-1", "nan"])
def test_a_time_limit_that_would_skip_every_size_is_refused(tmp_path, capsys, seconds):
    out = tmp_path / "m.jsonl"
    with pytest.raises(SystemExit) as stopped:
        matmul_main(["--devices", "cpu", "--max-seconds", seconds, "--out", str(out)])
    line = one_error_line(capsys)
    assert stopped.value.code == 2 and "argument --max-seconds: must be more than 0" in line
    assert not out.exists()
