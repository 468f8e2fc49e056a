"""The CNN as a batch job (gpulesson.experiments.train_job) and the job-array sweep
(gpulesson.experiments.sweep).

The training run is real (quick synthetic data, a few seconds an epoch on two cores): a run
killed with SIGKILL in the middle of an epoch and started again, which must resume after the
last completed epoch and end as a finished run does (every epoch once, its files, one record).
Runs that nothing stops are the Slurm sweep's tasks (tests/test_slurm_jobs.py).
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from test_jobs import lesson_folder

from gpulesson.datasets.load import prepare
from gpulesson.datasets.settings import get_settings
from gpulesson.experiments import sweep, train_job
from gpulesson.records.results import read_records

EPOCHS = 4
# Slows each of the 29 batches of an epoch, so that a kill lands in the middle of one.
BATCH_DELAY = "0.04"


def _command(out, results, *extra):
    return [sys.executable, "-m", "gpulesson.experiments.train_job", "--epochs", str(EPOCHS),
            "--batch-size", "64", "--out-dir", str(out), "--results-file", str(results), *extra]


def _run(command, **kwargs):
    return subprocess.run(command, check=False, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          **kwargs)


def _wait_for(log, text, process, timeout=120):
    """Wait until ``text`` is in the file ``log`` (the process's output)."""
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert process.poll() is None, f"the job ended before {text!r}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} after {timeout} s:\n{log.read_text()}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def data_file():
    return prepare(get_settings(), progress=False)


@pytest.fixture(scope="module")
def resumed(data_file, tmp_path_factory):
    """A run killed (SIGKILL) in the middle of epoch 3, then started again.

    Returns (out folder, results file, state after the kill, output of the second start)."""
    tmp = tmp_path_factory.mktemp("resumed")
    out, results, log = tmp / "runs" / "killed", tmp / "results.jsonl", tmp / "first.log"
    env = {**os.environ, "LESSON_BATCH_DELAY": BATCH_DELAY}
    with open(log, "w") as f:
        process = subprocess.Popen(_command(out, results), stdout=f, stderr=subprocess.STDOUT,
                                   cwd=ROOT, env=env)
        try:
            _wait_for(log, f"Epoch 3/{EPOCHS} started", process)
            time.sleep(0.3)  # into epoch 3, far from its end (29 batches of >= 0.04 s)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait()
    killed = {
        "history": train_job.read_history(out / "history.csv"),
        "backup": json.loads((out / "backup" / "training_metadata.json").read_text()),
        "record": (out / "record.json").exists(),
        "log": log.read_text(),
    }
    again = _run(_command(out, results))
    assert again.returncode == 0, again.stdout + again.stderr
    return out, results, killed, again.stdout


@pytest.mark.bad_input("killed job")
def test_a_killed_run_loses_only_the_epoch_it_was_in(resumed):
    killed = resumed[2]
    assert f"Epoch 4/{EPOCHS} started" not in killed["log"], "the kill came too late"
    assert [row["epoch"] for row in killed["history"]] == [0, 1]
    assert killed["backup"]["epoch"] == 2  # two completed epochs backed up
    assert not killed["record"]


@pytest.mark.bad_input("killed job")
def test_the_restarted_run_resumes_after_the_last_completed_epoch(resumed):
    out, _, killed, output = resumed
    assert "Resuming from the backup after epoch 2." in output
    assert f"Epoch 1/{EPOCHS} started" not in output and f"Epoch 2/{EPOCHS} started" not in output
    assert f"Epoch 3/{EPOCHS} started" in output
    history = train_job.read_history(out / "history.csv")
    with open(out / "history.csv") as f:
        raw_epochs = [int(row["epoch"]) for row in csv.DictReader(f)]
    # Every epoch once (at most one repeated, had the kill come between its row and its backup).
    assert [row["epoch"] for row in history] == list(range(EPOCHS))
    assert len(raw_epochs) - len(set(raw_epochs)) <= 1
    # The resumed epochs go on from the backup's weights: a restart from scratch (same seed,
    # same initial weights) would give a first loss like epoch 1's.
    losses = [row["loss"] for row in history]
    assert losses[:2] == [row["loss"] for row in killed["history"]]
    # (the stand-in is as hard as CIFAR-10, so the loss falls slowly but steadily: the resumed
    # epoch ends below both epochs before the kill)
    assert losses[2] < min(losses[:2]), losses
    assert losses[3] < losses[0], losses
    # The data order goes on from the backup's epoch (each epoch has its own shuffle).
    assert "The data order goes on from epoch 3." in output


def test_a_finished_run_leaves_its_files_and_no_backup(resumed):
    import keras

    out, results, *_ = resumed
    assert not (out / "backup").exists(), "the backup is removed once the run is finished"
    record = json.loads((out / "record.json").read_text())
    assert record["experiment"] == train_job.EXPERIMENT == "cnn-batch-job"
    assert record["epochs"] == EPOCHS and len(record["epoch_seconds"]) == EPOCHS
    assert len(record["history"]["val_loss"]) == EPOCHS
    assert record["batch_size"] == 64 and record["learning_rate"] == 1e-3
    assert record["best_val_loss"] == min(record["history"]["val_loss"])
    assert 0.1 < record["test_accuracy"] <= 1 and record["data"] == "synthetic"
    assert read_records(results) == [record], "one record, appended to the results file"
    for name in ("best.keras", "model.keras"):
        assert keras.saving.load_model(out / name).count_params() == 787_530


def test_running_a_finished_run_again_does_nothing(resumed):
    out, results, *_ = resumed
    before = (out / "history.csv").read_text()
    again = _run(_command(out, results))
    assert again.returncode == 0 and "finished already" in again.stdout
    assert (out / "history.csv").read_text() == before and len(read_records(results)) == 1


@pytest.mark.bad_input("bad argument")
def test_refuses_an_out_dir_of_a_run_with_other_parameters(resumed, capsys):
    out, results, *_ = resumed
    params = (out / "params.json").read_text()
    code = train_job.main(["--epochs", str(EPOCHS + 1), "--batch-size", "64", "--out-dir", str(out),
                           "--results-file", str(results)])
    assert code == 2
    message = capsys.readouterr().err
    assert "other parameters" in message and f"epochs {EPOCHS} -> {EPOCHS + 1}" in message
    assert (out / "params.json").read_text() == params


@pytest.mark.bad_input("bad argument")
def test_refuses_a_folder_that_is_not_a_runs(tmp_path, data_file, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    assert train_job.main(["--out-dir", str(tmp_path)]) == 2
    assert "no params.json" in capsys.readouterr().err


@pytest.mark.bad_input("missing file")
def test_a_missing_data_file_names_the_prepare_command(tmp_path, capsys):
    code = train_job.main(["--data", str(tmp_path / "synthetic-quick.h5"), "--out-dir", str(tmp_path / "o")])
    assert code == 2
    assert "python -m gpulesson.datasets.prepare --data synthetic" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.bad_input("bad argument")
def test_a_batch_larger_than_the_validation_data_is_refused_before_writing(tmp_path, data_file, capsys):
    assert train_job.main(["--batch-size", "1000", "--out-dir", str(tmp_path / "o")]) == 2
    assert "batch_size=1000" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("args", [["--epochs", "0"], ["--batch-size", "-3"], ["--epochs", "two"],
                                  ["--learning-rate", "0"], ["--device", "tpu"]])
@pytest.mark.bad_input("bad argument")
def test_bad_arguments_are_argparse_errors(args, capsys):
    with pytest.raises(SystemExit) as exit_:
        train_job.main(args)
    assert exit_.value.code == 2 and "error: argument" in capsys.readouterr().err


def test_job_ids_come_from_slurm():
    assert train_job.job_id({}) == "local"
    assert train_job.job_id({"SLURM_JOB_ID": "77"}) == "77"
    assert train_job.job_id({"SLURM_JOB_ID": "78", "SLURM_ARRAY_JOB_ID": "70",
                             "SLURM_ARRAY_TASK_ID": "3"}) == "70_3"


@pytest.mark.bad_input("killed job")
def test_the_job_script_requeues_itself_when_slurm_signals(tmp_path, data_file):
    """jobs/train-cnn.sbatch outside Slurm: USR1 to the script stops the training, requeues."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "scontrol.calls"
    (bin_dir / "scontrol").write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    (bin_dir / "scontrol").chmod(0o755)
    out, log = tmp_path / "out", tmp_path / "job.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "4242",
           "LESSON_BATCH_DELAY": BATCH_DELAY}
    with open(log, "w") as f:
        script = subprocess.Popen(["bash", str(ROOT / "jobs" / "train-cnn.sbatch"), "--epochs", "3",
                                   "--batch-size", "64", "--out-dir", str(out),
                                   "--results-file", str(tmp_path / "r.jsonl")],
                                  stdout=f, stderr=subprocess.STDOUT, env=env,
                                  cwd=lesson_folder(tmp_path / "lesson"))
        try:
            _wait_for(log, "Epoch 2/3 started", script)
            script.send_signal(signal.SIGUSR1)
            assert script.wait(timeout=60) == 0, log.read_text()
        finally:
            script.kill()
    text = log.read_text()
    assert calls.read_text() == "requeue 4242\n"
    assert "Stopped by SIGTERM" in text and "the 1 completed epoch(s)" in text
    assert json.loads((out / "backup" / "training_metadata.json").read_text())["epoch"] == 1
    assert not (out / "record.json").exists()


# --- The sweep --------------------------------------------------------------------------------

def test_the_grid_has_every_combination_once():
    points = [sweep.grid_point(i) for i in range(len(sweep.GRID_POINTS))]
    combos = {(p["batch_size"], p["learning_rate"]) for p in points}
    assert len(points) == len(combos) == 6
    assert combos == {(b, lr) for b in sweep.GRID["batch_size"] for lr in sweep.GRID["learning_rate"]}


def test_a_tasks_parameters_are_train_job_arguments():
    parsed = train_job.COMMAND.parser().parse_args(sweep.arguments(sweep.grid_point(3)))
    assert (parsed.batch_size, parsed.learning_rate) == (128, 3e-4)


@pytest.mark.parametrize("index", [-1, 6, 100])
@pytest.mark.bad_input("bad argument")
def test_a_bad_task_index_is_a_clear_error(index, capsys):
    with pytest.raises(IndexError, match="use 0-5"):
        sweep.grid_point(index)
    assert sweep.main(["params", "--index", str(index)]) == 2
    assert f"task index {index} is not in the grid" in capsys.readouterr().err


def test_the_array_script_matches_the_grid(capsys):
    text = (ROOT / "jobs" / "sweep-array.sbatch").read_text()
    assert f"#SBATCH --array=0-{len(sweep.GRID_POINTS) - 1}\n" in text
    assert sweep.main(["params", "--index", "0"]) == 0
    assert capsys.readouterr().out == "--batch-size 64 --learning-rate 0.001\n"


def test_gather_makes_one_table_of_the_runs(resumed, tmp_path, capsys):
    # The real run twice, and one that is not finished, in one sweep folder.
    runs = tmp_path / "sweep-1"
    for name in ("task-0", "task-1"):
        shutil.copytree(resumed[0], runs / name)
    (runs / "task-2").mkdir()
    params = json.loads((resumed[0] / "params.json").read_text())
    params["params"]["batch_size"] = 128
    (runs / "task-2" / "params.json").write_text(json.dumps(params))
    assert sweep.main(["gather", str(runs)]) == 0
    table = (runs / "sweep.md").read_text()
    assert "synthetic stand-in (not CIFAR-10)" in table and capsys.readouterr().out.startswith(table)
    with open(runs / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert [row["run"] for row in rows] == ["task-0", "task-1", "task-2"]
    record = json.loads((runs / "task-1" / "record.json").read_text())
    assert float(rows[1]["test_accuracy"]) == record["test_accuracy"]
    assert float(rows[1]["best_val_accuracy"]) == max(record["history"]["val_accuracy"])
    assert rows[2]["status"] == f"not finished (0/{EPOCHS} epochs)" and rows[2]["batch_size"] == "128"
    assert f"| task-1 | 64 | 0.001 | {EPOCHS} | {record['best_val_accuracy']:.3f} |" in table


@pytest.mark.bad_input("bad argument")
def test_gather_refuses_no_runs_and_mixed_data(resumed, tmp_path, capsys):
    assert sweep.main(["gather", str(tmp_path)]) == 2
    assert "no train_job runs" in capsys.readouterr().err
    for name in ("a", "b"):
        shutil.copytree(resumed[0], tmp_path / name)
    record = json.loads((tmp_path / "b" / "record.json").read_text())
    record.update(data="cifar10", data_label="CIFAR-10")
    (tmp_path / "b" / "record.json").write_text(json.dumps(record))
    assert sweep.main(["gather", str(tmp_path)]) == 2
    assert "mix data sources" in capsys.readouterr().err


@pytest.mark.bad_input("killed job")
def test_ctrl_c_stops_cleanly_and_says_how_to_resume(data_file, tmp_path):
    out, results, log = tmp_path / "run", tmp_path / "results.jsonl", tmp_path / "run.log"
    env = {**os.environ, "LESSON_BATCH_DELAY": BATCH_DELAY}
    with open(log, "w") as f:
        process = subprocess.Popen(_command(out, results), stdout=f, stderr=subprocess.STDOUT,
                                   cwd=ROOT, env=env)
        try:
            _wait_for(log, f"Epoch 2/{EPOCHS} started", process)
            time.sleep(0.3)
            process.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends
            code = process.wait(timeout=120)
        finally:
            process.kill()
            process.wait()
    text = log.read_text()
    assert code == 128 + signal.SIGINT, text
    assert "Stopped by SIGINT" in text and "the 1 completed epoch(s)" in text
    assert "Traceback" not in text
    assert len(train_job.read_history(out / "history.csv")) == 1
