"""The readiness check's job part on a real one-node Slurm (tests/slurm_cluster.py).

``python -m gpulesson.classroom.check`` submits its job to the site config's GPU partition, as on a
cluster: the job runs the checks with the kernel's Python and settings, trains a few steps of
the lesson's CNN on the CPU, and finds no GPU (the cluster's GPUs are stand-ins), which it says
with the fix. A job that never starts (its partition down) is cancelled after --queue-wait,
with a clear message.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from slurm_cluster import site_config
from test_check import KERNEL_ENV, by_name, data_env, prepared_settings, write_kernel

from gpulesson.classroom.check.report import FAIL, OK, SKIP, items_from_json

QUEUE_WAIT = 3


@pytest.fixture(scope="module")
def settings():
    """A prepared quick synthetic file, in a folder the job's user can read."""
    folder = Path(tempfile.mkdtemp(prefix="gpulesson-check-"))
    folder.chmod(0o755)
    yield prepared_settings(folder)
    shutil.rmtree(folder, ignore_errors=True)


def run_check(slurm, tmp_path, settings, *args, env=None):
    """python -m gpulesson.classroom.check against the cluster, with a kernel of this Python (and ``env``
    on the login node): (result, items by name, the JSON)."""
    write_kernel(tmp_path, sys.executable, {**KERNEL_ENV, **data_env(settings)})
    env = {**slurm.env, "JUPYTER_PATH": str(tmp_path), **(env or {})}
    env.pop("PYTHONPATH", None)  # the job imports gpulesson from the lesson folder, as on a cluster
    out = tmp_path / "check.json"
    result = subprocess.run([sys.executable, "-m", "gpulesson.classroom.check", "--json", str(out), *args],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    data = json.loads(out.read_text()) if out.exists() else {}
    return result, by_name(items_from_json(data)), data


def test_the_job_runs_on_the_gpu_partition_and_says_no_gpu_with_the_fix(slurm, tmp_path, settings):
    # A class folder as the guide has it made (chmod 1777), where the job can reach it.
    folder = settings.data_dir.parent / "class"
    folder.mkdir()
    folder.chmod(0o1777)
    result, items, data = run_check(slurm, tmp_path, settings, "--queue-wait", "120",
                                    "--time-limit", "10", env={"LESSON_CLASS_RESULTS": str(folder)})
    printed = result.stdout + result.stderr
    assert result.returncode == 1 and data["mode"] == "cluster", printed
    job = items["Job on the GPU partition"]
    assert job.status == OK, printed
    job_id = job.detail.split()[1]
    [record] = slurm.job(job_id)
    assert record["Partition"] == site_config()["gpu_partition"] and record["JobState"] == "COMPLETED"
    # Inside the job: the kernel's settings, the data, a few training steps on the CPU.
    for name in ("Kernel's settings", "Data read on this node", "Training steps on the CPU",
                 "Class folder written from this node"):
        assert [i.status for i in items_from_json(data) if i.name == name][-1] == OK, printed
    assert items["Class folder written from this node"].where == "job"
    assert str(folder) in items["Class folder written from this node"].detail
    assert list(folder.iterdir()) == []
    # No GPU: one ✗ with the fix, and what could not be checked without one.
    gpu = items["GPUs (nvidia-smi)"]
    assert gpu.status == FAIL and gpu.detail.startswith("no GPU") and "gres_example" in gpu.fix
    assert gpu.where == "job"
    assert items["GPU in Keras and driver"].status == SKIP
    assert items["Training steps on the GPU"].status == SKIP
    assert "In the job, on a compute node:\n" in result.stdout
    assert "✗ GPUs (nvidia-smi): no GPU" in result.stdout


@pytest.mark.bad_input("killed job")
def test_a_job_the_queue_does_not_start_is_cancelled_after_the_queue_wait(slurm, tmp_path, settings):
    # The GPU partition held down: Slurm queues the job but starts nothing there.
    partition = site_config()["gpu_partition"]
    slurm.run("scontrol", "update", f"PartitionName={partition}", "State=DOWN")
    try:
        result, items, _ = run_check(slurm, tmp_path, settings, "--queue-wait", str(QUEUE_WAIT))
    finally:
        slurm.run("scontrol", "update", f"PartitionName={partition}", "State=UP")
    assert result.returncode == 1, result.stdout + result.stderr
    job = items["Job on the GPU partition"]
    assert job.status == FAIL and f"did not start within {QUEUE_WAIT} s" in job.detail
    assert "cancelled" in job.detail and "--queue-wait" in job.fix
    job_id = job.detail.split()[1]
    [record] = slurm.job(job_id)
    assert record["JobState"] == "CANCELLED", record
    assert "GPUs (nvidia-smi)" not in items


@pytest.mark.bad_input("bad argument")
def test_a_partition_slurm_does_not_know_is_refused_with_the_setting_to_correct(slurm, tmp_path,
                                                                              settings):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["lesson_site"]["gpu_partition"] = "no-such-partition"
    copy = tmp_path / "_config.yml"
    copy.write_text(yaml.safe_dump(config))
    result, items, _ = run_check(slurm, tmp_path, settings, "--config", str(copy))
    assert result.returncode == 1
    assert items["Partitions in Slurm"].status == FAIL
    job = items["Job on the GPU partition"]
    assert job.status == FAIL and job.detail.startswith("sbatch refused it")
    assert "--partition=no-such-partition" in job.fix
