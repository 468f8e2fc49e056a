"""The readiness check reads the workshop's limits from Slurm (gpulesson/classroom/check/limits.py): the
partitions' MaxTime, the QOS and account limits on hours and GPUs for the class; in the job, the
partition it landed on and a CUDA module left loaded; for a learner, the space in the home folder
and the self-check command. Slurm here is a fake: scontrol and sacctmgr on the PATH that print
what a site's would."""

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from conftest import ROOT

from gpulesson.classroom.check import limits
from gpulesson.classroom.check.__main__ import main as check_main
from gpulesson.classroom.check.report import FAIL, OK, SKIP
from gpulesson.datasets.settings import get_settings

SITE = {"gpu_partition": "gpu", "cpu_partition": "compute", "account": "ws", "class_size": 25}
SESSIONS = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_schedule"]["sessions"]


def fake_tools(tmp_path, monkeypatch, path="/usr/bin:/bin", **scripts):
    """Commands on the PATH, each a shell script of these lines."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    for name, body in scripts.items():
        (tools / name).write_text(f"#!/bin/sh\n{body}\n")
        (tools / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{path}" if path else str(tools))


def fake_slurm(tmp_path, monkeypatch, *, max_time="12:00:00", qos="", assoc=None, members=""):
    """scontrol and sacctmgr (assoc None: no accounting) printing these answers; ``members``:
    the rows of sacctmgr -P show assoc account=... format=User,GrpTRES,MaxTRES,MaxJobs."""
    scripts = {"scontrol": f'echo "PartitionName=$3 AllowGroups=ALL QoS={qos or "N/A"} '
                           f'MaxTime={max_time} State=UP"'}
    if assoc is not None:
        qos_row = f"{qos}||8|gres/gpu=4|gres/gpu=100" if qos else ""
        scripts["sacctmgr"] = (f'case "$*" in *" qos "*) echo "{qos_row}";; *MaxJobs*) printf '
                               f"'{members}';; *) printf \"%s\\n\" \"{assoc}\";; esac")
    fake_tools(tmp_path, monkeypatch, **scripts)


def test_slurm_times_and_gpu_counts_are_read_as_slurm_writes_them():
    assert limits.minutes("12:00:00") == 720 and limits.minutes("1-00:00:00") == 1440
    assert limits.minutes("2-12") == 3600 and limits.minutes("90") == 90
    assert limits.minutes("30:30") == 30.5 and limits.minutes("UNLIMITED") is None
    assert limits.gpus("cpu=8,gres/gpu=4") == 4 and limits.gpus("gres/gpu:a100=2,gres/gpu:h100=1") == 3
    assert limits.gpus("cpu=8") is None


def test_limits_that_allow_the_sessions_pass(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, qos="workshop", assoc="ws|||gres/gpu=2|gres/gpu=40")
    times, accounts, *_ = limits.check_limits(SITE)
    assert times.status == OK and "gpu" in times.detail and "compute" in times.detail
    assert accounts.status == OK, accounts.detail


@pytest.mark.bad_input("bad argument")
def test_a_maxtime_shorter_than_a_session_fails_naming_both(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, max_time="2:00:00")
    times, accounts, members, _ = limits.check_limits(SITE)
    longest = max(SESSIONS, key=lambda s: s["hours"])
    assert times.status == FAIL and "MaxTime 2:00:00" in times.detail
    assert f"the {longest['label']}'s {longest['hours']} h" in times.detail
    assert accounts.status == SKIP and "sacctmgr" in accounts.detail  # no accounting here
    assert members.status == SKIP and "ask your site" in members.detail


@pytest.mark.bad_input("bad argument")
def test_gpu_limits_too_small_for_the_class_fail_with_the_limit_and_the_need(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, qos="workshop", assoc="ws||1:00:00||gres/gpu=10")
    _, accounts, *_ = limits.check_limits(SITE)
    gpu = next(s for s in SESSIONS if s["gpus"])
    assert accounts.status == FAIL
    assert f"account ws GrpTRES allows 10 GPU(s) for 25 learners, the {gpu['label']} needs " \
           f"{25 * gpu['gpus']}" in accounts.detail
    assert "account ws MaxWall 1:00:00" in accounts.detail


def test_without_slurm_the_limits_are_not_checked_and_say_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    items = limits.check_limits(SITE)
    assert [item.status for item in items] == [SKIP] * 4, items


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
    monkeypatch.setenv("PATH", str(tmp_path))  # no quota tool: the file system's free space
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
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "python -m gpulesson.classroom.check --learner" in text, page


# The quota tools' own output (quota-tools 4.x with -s -w; Lustre's lfs quota -h), for alice.
QUOTA = """Disk quotas for user alice (uid 1001):
     Filesystem   space   quota   limit   grace   files   quota   limit   grace
nfs.example.org:/export/home  {used}  20480M  22528M            4210       0       0
"""
LFS = """Disk quotas for usr alice (uid 1001):
     Filesystem    used   quota   limit   grace   files   quota   limit   grace
        /lustre  4.883G     50G     60G       -   10234       0       0       -
"""


def test_quota_and_lfs_quota_are_read_as_they_print_them():
    assert limits.size_gb("20480M") == pytest.approx(21.47, abs=0.01)
    assert limits.size_gb("21000M*") == pytest.approx(22.02, abs=0.01)  # * : over the quota
    assert limits.size_gb("4.883G") == pytest.approx(5.243, abs=0.001)
    assert limits.size_gb("1048576") == pytest.approx(1.074, abs=0.001)  # bare: 1 KiB blocks
    (row,) = limits.parse_quota(QUOTA.format(used="18432M"))
    assert row["filesystem"] == "nfs.example.org:/export/home" and row["soft"] == limits.size_gb("20480M")
    assert limits.left_gb(row) == pytest.approx((21.47 - 19.33, 21.47), abs=0.01)
    (lustre,) = limits.parse_quota(LFS.replace("        /lustre", "/lustre-with-a-long-name\n"))
    assert lustre["filesystem"] == "/lustre-with-a-long-name" and lustre["hard"] == 60 * 1024**3 / 1e9
    assert limits.parse_quota("Disk quotas for user alice (uid 1001): none\n") == []
    assert limits.left_gb({"used": 3.0, "soft": 0.0, "hard": 0.0}) is None  # 0: no limit


@pytest.mark.bad_input("bad argument")
def test_a_home_quota_too_small_for_a_learner_fails_naming_the_need(tmp_path, monkeypatch):
    fake_tools(tmp_path, monkeypatch, path="", quota=f"printf '{QUOTA.format(used='18432M')}'; exit 1")
    item = limits.quota_item({"data_dir": ""})
    need = limits.ENV_GB + limits.PIP_CACHE_GB + limits.DATA_GB + limits.WORK_GB
    assert item.status == FAIL and "2.1 GB left of 21.5 GB" in item.detail
    assert f"needs about {need:.1f} GB" in item.detail and "quota per learner" in item.fix
    fake_tools(tmp_path, monkeypatch, path="", quota=f"printf '{QUOTA.format(used='2048M')}'")
    assert limits.quota_item({"data_dir": "/shared/data"}).status == OK
    monkeypatch.setattr(limits.shutil, "disk_usage", lambda path: SimpleNamespace(free=900e9))
    settings = get_settings({"LESSON_DATA": "synthetic", "LESSON_DATA_DIR": str(tmp_path)})
    fake_tools(tmp_path, monkeypatch, path="", quota=f"printf '{QUOTA.format(used='21000M*')}'")
    home = limits.home_item(settings)  # the file system is nearly empty; the quota is not
    assert home.status == FAIL and "0.0 GB left under your quota" in home.detail


def test_on_lustre_the_quota_comes_from_lfs_for_the_home_mount(tmp_path, monkeypatch):
    fake_tools(tmp_path, monkeypatch, path="",
               lfs=f'[ "$*" = "quota -h -u alice /lustre" ] && printf \'{LFS}\'')
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setattr(limits, "_mount", lambda path: ("mgs@o2ib:/scratch", "/lustre", "lustre"))
    item = limits.quota_item({})
    assert item.status == OK and "lfs quota: 48.4 GB left of 53.7 GB on /lustre" in item.detail


def test_without_a_quota_tool_the_quota_is_not_checked_and_says_how_by_hand(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    item = limits.quota_item({})
    assert item.status == SKIP and "quota -s" in item.detail and "lfs quota" in item.detail


MEMBERS = "|gres/gpu=40||\\nalice|||\\nbob||gres/gpu=1|\\n"


@pytest.mark.bad_input("bad argument")
def test_learners_in_the_account_with_no_gpu_or_no_job_fail(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    fake_slurm(tmp_path, monkeypatch, assoc="", members=MEMBERS)
    item = limits.members_item(SITE)
    assert item.status == OK and "2 user(s) in ws for 25 learners" in item.detail
    assert "MaxTRES gres/gpu=1" in item.detail
    fake_slurm(tmp_path, monkeypatch, assoc="",
               members=MEMBERS + "carol||gres/gpu=0|\\ndave|gres/gpu=2||0\\n")
    item = limits.members_item({**SITE, "class_size": None})
    assert item.status == FAIL and "user carol may hold 0 GPUs" in item.detail
    assert "user dave may run no job (MaxJobs=0)" in item.detail
    assert "no class_size in the site values" in item.detail and "ask your site" in item.fix


def test_an_account_whose_other_users_slurm_hides_is_left_to_ask_by_hand(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    fake_slurm(tmp_path, monkeypatch, assoc="", members="|gres/gpu=40||\\nalice|||\\n")
    item = limits.members_item(SITE)
    assert item.status == SKIP and "no user of ws but you" in item.detail
    assert limits.members_item({}).status == SKIP
