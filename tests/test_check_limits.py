"""The readiness check reads the workshop's limits from Slurm (gpulesson/check/limits.py): the
partitions' MaxTime, the QOS and account limits on hours and GPUs for the class; in the job, the
partition it landed on and a CUDA module left loaded; for a learner, the space in the home folder
and the self-check command. Slurm here is a fake: scontrol and sacctmgr on the PATH that print
what a site's would."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import ROOT

from gpulesson.check import limits
from gpulesson.check.__main__ import main as check_main
from gpulesson.check.report import FAIL, OK, SKIP
from gpulesson.settings import get_settings

SITE = {"gpu_partition": "gpu", "cpu_partition": "compute", "account": "ws", "class_size": 25}
SESSIONS = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_schedule"]["sessions"]


def fake_slurm(tmp_path, monkeypatch, *, max_time="12:00:00", qos="", assoc=None):
    """scontrol and sacctmgr (None: no accounting) printing these answers."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "scontrol").write_text(
        f'#!/bin/sh\necho "PartitionName=$3 AllowGroups=ALL QoS={qos or "N/A"} '
        f'MaxTime={max_time} State=UP"\n')
    if assoc is not None:
        qos_row = f"{qos}||8|gres/gpu=4|gres/gpu=100" if qos else ""
        (tools / "sacctmgr").write_text(
            f'#!/bin/sh\ncase "$*" in *" qos "*) echo "{qos_row}";; *) printf "%s\\n" '
            f'"{assoc}";; esac\n')
    for tool in tools.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")


def test_slurm_times_and_gpu_counts_are_read_as_slurm_writes_them():
    assert limits.minutes("12:00:00") == 720 and limits.minutes("1-00:00:00") == 1440
    assert limits.minutes("2-12") == 3600 and limits.minutes("90") == 90
    assert limits.minutes("30:30") == 30.5 and limits.minutes("UNLIMITED") is None
    assert limits.gpus("cpu=8,gres/gpu=4") == 4 and limits.gpus("gres/gpu:a100=2,gres/gpu:h100=1") == 3
    assert limits.gpus("cpu=8") is None


def test_limits_that_allow_the_sessions_pass(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, qos="workshop", assoc="ws|||gres/gpu=2|gres/gpu=40")
    times, accounts = limits.check_limits(SITE)
    assert times.status == OK and "gpu" in times.detail and "compute" in times.detail
    assert accounts.status == OK, accounts.detail


@pytest.mark.bad_input("bad argument")
def test_a_maxtime_shorter_than_a_session_fails_naming_both(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, max_time="2:00:00")
    times, accounts = limits.check_limits(SITE)
    longest = max(SESSIONS, key=lambda s: s["hours"])
    assert times.status == FAIL and "MaxTime 2:00:00" in times.detail
    assert f"the {longest['label']}'s {longest['hours']} h" in times.detail
    assert accounts.status == SKIP and "sacctmgr" in accounts.detail  # no accounting here


@pytest.mark.bad_input("bad argument")
def test_gpu_limits_too_small_for_the_class_fail_with_the_limit_and_the_need(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, qos="workshop", assoc="ws||1:00:00||gres/gpu=10")
    _, accounts = limits.check_limits(SITE)
    gpu = next(s for s in SESSIONS if s["gpus"])
    assert accounts.status == FAIL
    assert f"account ws GrpTRES allows 10 GPU(s) for 25 learners, the {gpu['label']} needs " \
           f"{25 * gpu['gpus']}" in accounts.detail
    assert "account ws MaxWall 1:00:00" in accounts.detail


def test_without_slurm_the_limits_are_not_checked_and_say_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    times, accounts = limits.check_limits(SITE)
    assert (times.status, accounts.status) == (SKIP, SKIP)


@pytest.mark.bad_input("bad argument")
def test_a_cuda_module_left_loaded_and_a_job_on_the_cpu_partition_fail():
    loaded = {"LD_LIBRARY_PATH": "/apps/cuda/12.4/lib64:/usr/lib", "LOADEDMODULES": "cuda/12.4"}
    item = limits.module_item(loaded)
    assert item.status == FAIL and "cuda/12.4" in item.detail and "module purge" in item.fix
    assert limits.module_item({"LD_LIBRARY_PATH": "/usr/lib"}).status == OK
    moved = limits.partition_item(SITE, {"SLURM_JOB_PARTITION": "compute"})
    assert moved.status == FAIL and "compute, not gpu" in moved.detail
    assert limits.partition_item(SITE, {"SLURM_JOB_PARTITION": "gpu"}).status == OK
    assert limits.partition_item(SITE, {}).status == SKIP


def test_the_home_folder_needs_room_for_the_data_unless_it_is_prepared(tmp_path, monkeypatch):
    settings = get_settings({"LESSON_DATA": "synthetic", "LESSON_DATA_DIR": str(tmp_path)})
    monkeypatch.setattr(limits.shutil, "disk_usage", lambda path: SimpleNamespace(free=0.5e9))
    short = limits.home_item(settings)
    assert short.status == FAIL and "0.5 GB free" in short.detail and "1.0 GB" in short.detail
    Path(settings.hdf5_path).write_bytes(b"prepared")
    assert limits.home_item(settings).status == OK  # only the work files: 0.3 GB


def test_the_learners_self_check_is_one_command_documented_for_the_week_before(capsys):
    status = check_main(["--learner"])
    out = capsys.readouterr().out
    assert out.startswith("Your setup for the workshop") and status in (0, 1)
    for name in ("Space in your home folder", "No CUDA module loaded"):
        assert name in out
    for page in ("setup.md", "guide.md"):
        assert "python -m gpulesson.check --learner" in (ROOT / page).read_text(encoding="utf-8"), page
