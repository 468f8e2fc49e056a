"""The lesson's batch jobs on a real one-node Slurm (tests/slurm_cluster.py).

The repository's own ``jobs/*.sbatch`` files are submitted with ``sbatch``, unchanged, from a
copy of the lesson; the site values (partition, account) come from ``_config.yml`` through
``source jobs/site.sh``, as on a cluster. Everything runs in quick synthetic mode. The four
jobs are submitted at once and run side by side as far as the node's cores allow; the tests
then check each. Every wait is bounded, and a failure shows the job's output and the daemons'
logs.
"""

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import lesson_files
from slurm_cluster import site_config

from gpulesson.datasets.load import prepare
from gpulesson.datasets.settings import get_settings
from gpulesson.experiments import sweep

EPOCHS = 3
PARALLEL = ["--per-replica-batch", "8", "--steps", "3", "--learning-rate", "0.05",
            "--base-batch", "32"]
ATOL = 1e-5  # as in tests/test_parallel.py
NOTEBOOK = "notebooks/01-introduction.ipynb"
JOB_TIMEOUT = 420
# Tasks 1 and 2 of the grid: both batch sizes that quick mode's validation split (200 images)
# allows, and both learning rates.
SWEEP_TASKS = (1, 2)


def submit_env(cluster, folder: Path) -> dict:
    """The environment a learner has after ``source jobs/site.sh`` in the lesson folder."""
    sourced = subprocess.run(["bash", "-c", "source jobs/site.sh && env -0"], cwd=folder,
                             env=cluster.env, check=True, capture_output=True, text=True)
    env = dict(item.split("=", 1) for item in sourced.stdout.split("\0") if "=" in item)
    # The jobs import gpulesson from the lesson folder they run in, as on a cluster.
    env.pop("PYTHONPATH", None)
    # This cluster has no conda: as at a site that names no conda environment, the jobs use the
    # lesson folder's .venv (this Python's environment).
    env.pop("LESSON_CONDA_ENV", None)
    return env


@pytest.fixture(scope="module")
def lesson(slurm, tmp_path_factory):
    """A copy of the lesson whose .venv is this environment, and the submit environment."""
    folder = lesson_files(tmp_path_factory.mktemp("lesson"))
    (folder / ".venv").symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    prepare(get_settings(), progress=False)  # the jobs share one data file: made once, here
    return folder, submit_env(slurm, folder)


@pytest.fixture(scope="module")
def jobs(slurm, lesson):
    """The four jobs, submitted at once (the first one first): {name: job id}."""
    folder, env = lesson
    submitted = {}
    # Slowed a little, so that Slurm's warning signal lands inside the second epoch.
    submitted["train"] = slurm.sbatch("jobs/train-cnn.sbatch", "--epochs", str(EPOCHS),
                                      "--batch-size", "64", cwd=folder,
                                      env={**env, "LESSON_BATCH_DELAY": "0.05"})
    # The single-node form of the multi-node job: 2 tasks on 1 node, one "GPU" each.
    submitted["multi"] = slurm.sbatch(
        "--nodes=1", "--ntasks-per-node=2", "--gres=gpu:2", "--cpus-per-task=2", "--mem=8G",
        "jobs/train-multi-node.sbatch", "--cpu-devices", "1", *PARALLEL,
        "--save-weights", str(folder / "results" / "weights-{process}.npz"), cwd=folder, env=env)
    submitted["notebook"] = slurm.sbatch("jobs/run-notebook.sbatch", NOTEBOOK, cwd=folder, env=env)
    # Not tasks 4 and 5: quick mode's validation split (200 images) is smaller than their batch
    # of 256 (which train_job refuses, rightly).
    submitted["sweep"] = slurm.sbatch(f"--array={','.join(map(str, SWEEP_TASKS))}",
                                      "jobs/sweep-array.sbatch",
                                      "--epochs", "1", cwd=folder, env=env)
    return submitted


def _log(folder, pattern):
    return [folder / "results" / pattern]


def _wait_until(condition, what, slurm, job_id, logs, timeout=JOB_TIMEOUT):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            slurm.run("scancel", job_id, check=False)
            raise AssertionError(f"no {what} after {timeout} s:\n{slurm.explain(job_id, logs)}")
        time.sleep(0.5)


def test_jobs_run_in_the_site_configs_partition(slurm, jobs):
    site = site_config()
    for name, job_id in jobs.items():
        for job in slurm.job(job_id):
            assert job["Partition"] == site["gpu_partition"], name
            assert job["Account"] == site["account"], name


@pytest.mark.bad_input("killed job")
def test_train_cnn_requeues_itself_on_slurms_signal_and_resumes(slurm, lesson, jobs):
    folder, _ = lesson
    job_id = jobs["train"]
    out, logs = folder / "results" / "jobs" / job_id, _log(folder, f"train-cnn-{job_id}.log")
    history = out / "history.csv"

    def rows():
        return list(csv.DictReader(history.open())) if history.exists() else []

    def backed_up():
        metadata = out / "backup" / "training_metadata.json"
        return metadata.exists() and json.loads(metadata.read_text()).get("epoch", 0) >= 1

    # Slurm's warning before the time limit (--signal=B:USR1@120), sent now instead of
    # 120 s before a limit: the same signal to the same process, the batch script.
    _wait_until(backed_up, "backup of the first epoch", slurm, job_id, logs)
    slurm.run("scancel", "--signal=USR1", "--batch", job_id)
    # The script stops the training and requeues the job, which then waits for its begin
    # time (Slurm holds a requeued job back for a while); the test lets it start at once.
    _wait_until(lambda: any(j.get("Restarts") == "1" and j.get("JobState") == "PENDING"
                            for j in slurm.job(job_id)), "requeued job", slurm, job_id, logs)
    stopped_at = len(rows())
    assert 1 <= stopped_at < EPOCHS, slurm.explain(job_id, logs)
    slurm.release_requeued(job_id)
    slurm.wait(job_id, timeout=JOB_TIMEOUT, explain=logs)

    log = logs[0].read_text()
    assert "time limit near: stopping the training and requeueing" in log
    assert "holds the 1 completed epoch(s)" in log and "The data order goes on from epoch 2" in log
    assert "start 0 on" in log and "start 1 on" in log
    # The same number of epochs as an uninterrupted run, each once, in order: continuous.
    assert [int(row["epoch"]) for row in rows()] == list(range(EPOCHS)), log
    record = json.loads((out / "record.json").read_text())
    assert record["restart_count"] == 1 and record["job_id"] == job_id
    assert len(record["history"]["loss"]) == EPOCHS
    assert not (out / "backup").exists()


def test_run_notebook_leaves_the_executed_notebook(slurm, lesson, jobs):
    folder, _ = lesson
    job_id = jobs["notebook"]
    slurm.wait(job_id, timeout=JOB_TIMEOUT, explain=_log(folder, f"gpulesson-{job_id}.log"))
    executed = folder / "results" / f"01-introduction-{job_id}.ipynb"
    cells = json.loads(executed.read_text())["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    assert code and all(cell["execution_count"] for cell in code)
    assert not any(out.get("output_type") == "error" for cell in code for out in cell["outputs"])
    # The source notebook stays clean.
    source = json.loads((folder / NOTEBOOK).read_text())["cells"]
    assert not any(cell.get("outputs") for cell in source)


def test_sweep_runs_as_a_job_array_and_gather_makes_the_table(slurm, lesson, jobs):
    folder, env = lesson
    job_id = jobs["sweep"]
    tasks = slurm.wait(job_id, timeout=2 * JOB_TIMEOUT,
                       explain=_log(folder, f"sweep-cnn-{job_id}_*.log"))
    assert sorted(int(task["ArrayTaskId"]) for task in tasks) == list(SWEEP_TASKS)
    sweep_dir = folder / "results" / "jobs" / f"sweep-{job_id}"
    gathered = subprocess.run([sys.executable, "-m", "gpulesson.experiments.sweep", "gather", str(sweep_dir)],
                              cwd=folder, env=env, check=False, capture_output=True, text=True,
                              timeout=120)
    assert gathered.returncode == 0, gathered.stdout + gathered.stderr
    rows = list(csv.DictReader((sweep_dir / "sweep.csv").open()))
    assert len(rows) == len(SWEEP_TASKS), rows
    grid = subprocess.run([sys.executable, "-m", "gpulesson.experiments.sweep", "list"], cwd=folder, env=env,
                          check=True, capture_output=True, text=True).stdout
    for row in rows:
        assert row["batch_size"] in grid and row["learning_rate"]
        assert row["epochs"] == "1" and row["status"] == "finished", row
    # Each task trained with its own grid point.
    assert sorted((int(row["batch_size"]), float(row["learning_rate"])) for row in rows) == sorted(
        (point["batch_size"], point["learning_rate"]) for point in map(sweep.grid_point, SWEEP_TASKS))
    assert (sweep_dir / "sweep.md").read_text().count("| finished |") == len(SWEEP_TASKS)


def test_two_tasks_under_srun_train_like_one_process(slurm, lesson, jobs, tmp_path):
    folder, env = lesson
    job_id = jobs["multi"]
    # The same training in one process on 2 devices, beside the job.
    reference = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.parallel", "train", "--cpu-devices", "2", *PARALLEL,
         "--save-weights", str(tmp_path / "one.npz")],
        cwd=folder, env={**env, "KERAS_BACKEND": "jax"}, check=False, capture_output=True,
        text=True, timeout=JOB_TIMEOUT)
    assert reference.returncode == 0, reference.stderr[-3000:]
    logs = _log(folder, f"train-multi-node-{job_id}.log")
    slurm.wait(job_id, timeout=JOB_TIMEOUT, explain=logs)
    log = logs[0].read_text()
    assert f"job {job_id}: 1 nodes" in log and "2 tasks" in log
    # The processes found each other from Slurm's variables alone.
    assert "2 device(s) in 2 process(es)" in log, log
    for rank in range(2):
        assert f"process {rank}: the weights on its 1 device(s) are identical" in log

    def weights(path):
        npz = np.load(path)
        return [npz[k] for k in sorted(npz, key=lambda k: int(k.split("_")[1]))]

    w0, w1 = (weights(folder / "results" / f"weights-{rank}.npz") for rank in range(2))
    one = weights(tmp_path / "one.npz")
    assert len(w0) == len(w1) == len(one) > 0
    assert max(float(np.abs(a - b).max()) for a, b in zip(w0, w1, strict=True)) == 0
    assert max(float(np.abs(a - b).max()) for a, b in zip(w0, one, strict=True)) < ATOL


def test_the_cluster_hands_out_the_stand_in_gpus(slurm, lesson):
    folder, env = lesson
    result = slurm.run("srun", "--gres=gpu:1", "--cpus-per-task=1", "--mem=1G", "--time=1",
                       "bash", "-c", "echo $CUDA_VISIBLE_DEVICES $SLURM_JOB_PARTITION",
                       cwd=folder, env=env, timeout=120)
    gpus, partition = result.stdout.split()
    assert gpus in {"0", "1", "2", "3"} and partition == site_config()["gpu_partition"]
