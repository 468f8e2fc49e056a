"""``jobs/train-torch-ddp.sbatch`` on the suite's real one-node Slurm (tests/slurm_cluster.py).

The script is submitted unchanged, from a copy of the lesson, in its single-node form: 2 tasks
on 1 node, started by ``srun``, one stand-in "GPU" each, so the processes train on the CPU
through gloo. Slurm's warning before the time limit is sent in the middle of the run: the job
must stop its tasks, requeue itself, resume after the last checkpoint and end with the weights
of one process trained on the same global batch (tolerance as in tests/test_torch_ddp.py).
Skips, saying how to enable it, where Slurm cannot start.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import lesson_files
from test_slurm_jobs import JOB_TIMEOUT, _wait_until, submit_env
from test_torch_ddp import ATOL, EPOCHS, TRAIN, max_difference, rank_fingerprints, weights

from gpulesson.experiments.torch_ddp.command import CHECKPOINT, load_checkpoint


@pytest.fixture(scope="module")
def lesson(slurm, tmp_path_factory):
    folder = lesson_files(tmp_path_factory.mktemp("lesson"))
    (folder / ".venv").symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    return folder, submit_env(slurm, folder)


@pytest.mark.bad_input("killed job")
def test_two_srun_tasks_requeue_resume_and_train_like_one_process(slurm, lesson, tmp_path):
    folder, env = lesson
    # Slowed a little, so that Slurm's warning lands before the last epoch.
    job_id = slurm.sbatch("--nodes=1", "--ntasks-per-node=2", "--gres=gpu:2",
                          "--cpus-per-task=1", "--mem=8G", "jobs/train-torch-ddp.sbatch",
                          *TRAIN, "--per-replica-batch", "8", cwd=folder,
                          env={**env, "LESSON_BATCH_DELAY": "0.5"})
    out = folder / "results" / "jobs" / f"torch-ddp-{job_id}"
    logs = [folder / "results" / f"train-torch-ddp-{job_id}.log"]

    def completed():
        try:
            checkpoint = load_checkpoint(out / CHECKPOINT)
        except ValueError:
            return 0
        return checkpoint["epoch"] if checkpoint else 0

    _wait_until(lambda: completed() >= 1, "checkpoint of the first epoch", slurm, job_id, logs)
    # Slurm's warning before the time limit (--signal=B:USR1@120), sent now.
    slurm.run("scancel", "--signal=USR1", "--batch", job_id)
    _wait_until(lambda: any(j.get("Restarts") == "1" and j.get("JobState") == "PENDING"
                            for j in slurm.job(job_id)), "requeued job", slurm, job_id, logs)
    done = completed()
    assert 1 <= done < EPOCHS, slurm.explain(job_id, logs)
    # Slurm holds a requeued job back for a while; the test lets it start sooner.
    slurm.release_requeued(job_id)

    # The same training in one process, beside the job.
    one = tmp_path / "one"
    reference = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.torch_ddp", *TRAIN,
         "--per-replica-batch", "16", "--out-dir", str(one)],
        cwd=folder, env=env, check=False, capture_output=True, text=True, timeout=JOB_TIMEOUT)
    assert reference.returncode == 0, reference.stdout[-3000:] + reference.stderr[-3000:]
    slurm.wait(job_id, timeout=JOB_TIMEOUT, explain=logs)

    log = logs[0].read_text()
    assert "start 0: 1 nodes" in log and "start 1: 1 nodes" in log and "2 tasks" in log, log
    # The tasks found each other from Slurm's variables alone.
    assert "2 process(es) (srun), backend gloo" in log, log
    assert "time limit near: stopping the tasks and requeueing" in log
    assert f"holds {done} completed epoch(s)" in log and f"Resuming after epoch {done}" in log
    # The replicas ended identical (the tasks share the log, so their lines may interleave).
    resumed = log.split(f"Resuming after epoch {done}")[1]
    prints = rank_fingerprints(resumed)
    assert sorted(prints) == ["0", "1"] and len(set(prints.values())) == 1, log
    record = json.loads((out / "record.json").read_text())
    assert record["restart_count"] == 1 and record["job_id"] == job_id
    assert record["launcher"] == "srun" and record["world_size"] == 2
    assert len(record["loss"]) == EPOCHS and not (out / CHECKPOINT).exists()
    assert max_difference(weights(out), weights(one)) < ATOL
