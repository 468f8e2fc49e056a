"""The readiness check, python -m gpulesson.classroom.check, without Slurm: the login node's checks, each
with a fault made on purpose, the checklist and its JSON, the laptop path and the learners' check.
The job part under a real Slurm: tests/test_check_slurm.py."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from gpulesson.classroom.check import login, report
from gpulesson.classroom.check.report import FAIL, OK, SKIP
from gpulesson.datasets.load import prepare
from gpulesson.datasets.settings import get_settings

KERNEL_ENV = login.kernel_env_expected()


def by_name(items):
    return {item.name: item for item in items}


@pytest.fixture
def open_folder():
    """A folder every user can enter (pytest's own are closed to others)."""
    folder = Path(tempfile.mkdtemp(prefix="gpulesson-check-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def settings(open_folder):
    return prepared_settings(open_folder)


def prepared_settings(open_folder: Path):
    """Settings of a prepared quick synthetic file in a folder others can read."""
    data = open_folder / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    chosen = get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
                           "LESSON_DATA_DIR": str(data)})
    prepare(chosen, progress=False)
    chosen.hdf5_path.chmod(0o644)
    return chosen


def write_kernel(folder: Path, python: str, env: dict) -> Path:
    """A kernel spec "gpulesson" in folder/kernels (put folder on JUPYTER_PATH)."""
    spec = folder / "kernels" / login.KERNEL / "kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                "display_name": f"Python ({login.KERNEL})", "language": "python",
                                "env": env}))
    return spec


def data_env(settings) -> dict:
    return {"LESSON_DATA": settings.data, "LESSON_QUICK": "1",
            "LESSON_DATA_DIR": str(settings.data_dir)}


# --- the kernel ----------------------------------------------------------------------------

def test_the_lessons_environment_passes_as_the_kernel(tmp_path, monkeypatch):
    write_kernel(tmp_path, sys.executable, KERNEL_ENV)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    items, python, env = login.check_kernel()
    assert [item.status for item in items] == [OK, OK, OK], report.text(items)
    assert python == sys.executable and env == KERNEL_ENV
    # The settings are the Makefile's kernel target's.
    assert KERNEL_ENV["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert KERNEL_ENV["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"


@pytest.mark.bad_input("missing package")
def test_a_kernel_whose_python_lacks_the_pinned_packages_is_named_with_the_fix(tmp_path, monkeypatch):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    write_kernel(tmp_path, python, KERNEL_ENV)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    items = by_name(login.check_kernel()[0])
    packages = items["Kernel's packages"]
    keras_pin = login.pinned_packages()["keras"][0]
    assert packages.status == FAIL and f"keras=={keras_pin}" in packages.detail
    assert packages.fix.startswith(f"install the lesson's pins into that Python: {python} -m pip")


@pytest.mark.bad_input("missing package")
def test_a_kernel_missing_or_without_the_settings_says_to_register_it(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "user"))
    items = login.check_kernel("no-such-kernel")[0]
    assert [item.status for item in items] == [FAIL] and "make kernel" in items[0].fix
    # On a cluster, make kernel would register a .venv with the CPU-only TensorFlow: the fix
    # registers the site's conda environment with the setup page's command, settings included.
    site = login.site_values()
    assert (f"on a cluster, conda activate {site['conda_env']}, then python -m ipykernel install "
            "--user --name no-such-kernel") in items[0].fix
    assert "--env XLA_PYTHON_CLIENT_PREALLOCATE false" in items[0].fix
    assert items[0].fix.endswith("on a laptop, make kernel")
    write_kernel(tmp_path, sys.executable, {})
    items = by_name(login.check_kernel()[0])
    assert items["Kernel's settings"].status == FAIL
    assert "XLA_PYTHON_CLIENT_PREALLOCATE=false" in items["Kernel's settings"].detail


# --- the data and the class folder -------------------------------------------------------

def test_a_prepared_file_others_can_read_passes(settings):
    [item] = login.check_data(settings)
    assert item.status == OK and str(settings.hdf5_path) in item.detail


@pytest.mark.bad_input("missing file")
def test_a_data_file_others_cannot_read_is_named_with_the_chmod(settings):
    settings.hdf5_path.chmod(0o600)
    [item] = login.check_data(settings)
    assert item.status == FAIL and "not readable by other users" in item.detail
    assert item.fix == f"chmod o+r {settings.hdf5_path}"
    settings.hdf5_path.chmod(0o644)
    settings.data_dir.chmod(0o700)
    [item] = login.check_data(settings)
    assert item.status == FAIL and item.fix == f"chmod o+x {settings.data_dir}"
    # A learner's own file need not be shared.
    assert login.check_data(settings, shared=False)[0].status == OK


@pytest.mark.bad_input("corrupt file")
def test_a_damaged_or_missing_data_file_says_how_to_prepare_it(settings):
    settings.hdf5_path.write_bytes(b"not HDF5")
    [item] = login.check_data(settings)
    assert item.status == FAIL and item.fix.startswith("prepare it: ") and "--data synthetic" in item.fix
    settings.hdf5_path.unlink()
    assert login.check_data(settings)[0].status == FAIL
    # On a laptop the synthetic stand-in is made at its first use.
    assert login.check_data(settings, shared=False)[0].status == OK


@pytest.mark.bad_input("missing file")
def test_a_learners_data_file_not_there_is_a_failure_with_the_prepare_cell_as_its_fix(open_folder):
    # Episode 1's setup check runs first, and again after the cell that prepares the file:
    # missing is a ✗, with that cell as its fix.
    for data in ("cifar10", "synthetic"):
        chosen = get_settings({"LESSON_DATA": data, "LESSON_DATA_DIR": str(open_folder / "new")})
        [item] = login.check_data(chosen, shared=False, learner=True)
        assert item.status == FAIL and "has not been prepared" in item.detail, item
        assert item.fix.startswith("run the cell below that calls prepare(settings), then the check again")
        assert ("downloads CIFAR-10" in item.fix) == (data == "cifar10")
    assert login.check_data(chosen, shared=False)[0].status == OK  # a laptop: made at first use
    # A folder the learner cannot write: the shared data folder is the fix.
    closed = open_folder / "closed"
    closed.mkdir(mode=0o555)
    chosen = get_settings({"LESSON_DATA": "cifar10", "LESSON_DATA_DIR": str(closed)})
    if os.access(closed, os.W_OK):  # root may write anywhere
        pytest.skip("this user may write into a read-only folder (root)")
    [item] = login.check_data(chosen, shared=False, learner=True)
    assert item.status == FAIL and "LESSON_DATA_DIR" in item.fix


@pytest.mark.bad_input("missing file")
def test_the_learners_check_is_not_ready_without_the_data_file(open_folder, monkeypatch):
    from gpulesson.classroom.check import learner_items

    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    for name, value in {"LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
                        "LESSON_DATA_DIR": str(open_folder / "none")}.items():
        monkeypatch.setenv(name, value)
    items = learner_items()
    data = next(item for item in items if item.name.startswith("Data file"))
    assert data.status == FAIL
    assert not report.text(items).endswith("ready.") and report.exit_status(items) == 1


@pytest.mark.parametrize("mode, status", [(0o2775, OK), (0o2770, OK), (0o1777, OK),
                                          (0o755, FAIL), (0o777, FAIL), (0o775, FAIL)])
def test_the_class_folder_must_be_writable_by_the_class(open_folder, monkeypatch, mode, status):
    monkeypatch.delenv("LESSON_CLASS_RESULTS", raising=False)
    folder = open_folder / "class"
    folder.mkdir()
    folder.chmod(mode)
    [item] = login.check_class_folder({"class_results": str(folder)}, open_folder / "data")
    assert item.status == status, item
    if status == FAIL:
        assert "chmod 2775" in item.fix and "chmod 1777" in item.fix


@pytest.mark.bad_input("unwritable folder")
def test_a_missing_class_folder_or_the_data_folder_fails_and_none_is_skipped(open_folder, monkeypatch):
    monkeypatch.delenv("LESSON_CLASS_RESULTS", raising=False)
    [missing] = login.check_class_folder({"class_results": str(open_folder / "nope")}, open_folder)
    assert missing.status == FAIL and missing.fix.startswith(f"mkdir -p {open_folder / 'nope'}")
    data = open_folder / "data"
    data.mkdir(mode=0o1777)
    data.chmod(0o1777)
    [inside] = login.check_class_folder({"class_results": str(data)}, data)
    assert inside.status == FAIL and "data folder" in inside.detail
    assert login.check_class_folder({"class_results": ""}, data)[0].status == SKIP


# In a process of another user where the tests run as root (root writes in any folder, whatever
# its mode): imported first, then nobody, as a learner's job would be.
CLASS_WRITE_PROBE = """
import dataclasses, json, os, sys
import gpulesson.classroom.share
from gpulesson.classroom.check import job
if os.geteuid() == 0:
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
print(json.dumps(dataclasses.asdict(job.class_folder_item(sys.argv[1]))))
"""


def class_write_as_a_learner(folder: Path, mode: int) -> report.Item:
    """The job's class-folder item for ``folder`` with ``mode``, as a user who does not own it
    (nobody under root; this user on a folder without write permission otherwise)."""
    folder.chmod(mode if os.geteuid() == 0 or mode & 0o002 else 0o555)  # as its owner: no w
    env = {k: v for k, v in os.environ.items() if k != "LESSON_CLASS_RESULTS"}
    result = subprocess.run([sys.executable, "-c", CLASS_WRITE_PROBE, str(folder)], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120)
    folder.chmod(0o755)
    assert result.returncode == 0, result.stderr
    return report.Item(**json.loads(result.stdout))


@pytest.mark.bad_input("unwritable folder")
def test_the_job_writes_in_the_class_folder_and_names_the_fix_when_it_cannot(open_folder):
    folder = open_folder / "class"
    folder.mkdir()
    closed = class_write_as_a_learner(folder, 0o755)
    assert closed.status == FAIL, closed
    assert f"cannot create a file in {folder} here" in closed.detail
    assert f"chmod 2775 {folder}" in closed.fix and "read-only" in closed.fix
    shared = class_write_as_a_learner(folder, 0o1777)
    assert shared.status == OK and "a file created and removed" in shared.detail, shared
    assert list(folder.iterdir()) == [], "the check's file must be removed"


@pytest.mark.bad_input("unwritable folder")
def test_a_class_folder_not_on_the_node_fails_and_none_is_not_checked(open_folder, monkeypatch):
    from gpulesson.classroom.check import job

    monkeypatch.delenv("LESSON_CLASS_RESULTS", raising=False)
    missing = job.class_folder_item(str(open_folder / "not-mounted"))
    assert missing.status == FAIL and missing.detail.endswith("is not there on this node")
    assert "compute nodes mount it" in missing.fix
    assert job.class_folder_item("").status == SKIP
    # The folder the login node checked (given to the job) wins over the lesson's _config.yml.
    monkeypatch.setenv("LESSON_CLASS_RESULTS", str(open_folder))
    assert job.class_folder_item(str(open_folder / "not-mounted")).status == OK


def test_the_job_checks_the_class_folder_and_is_given_the_one_checked_on_the_login_node(
        open_folder, monkeypatch, tmp_path):
    from gpulesson.classroom.check import job, submit

    monkeypatch.delenv("LESSON_CLASS_RESULTS", raising=False)
    monkeypatch.setattr(job, "nvidia_smi", lambda: (report.skip("GPUs", "stub"), None, []))
    monkeypatch.setattr(job, "data_item", lambda settings: (report.skip("Data", "stub"), None))
    monkeypatch.setattr(job, "train_items", lambda *args: [])
    names = [item.name for item in job.inside_job(None)]
    assert names[:2] == ["Kernel's settings", "Class folder written from this node"]
    assert "Class folder written from this node" not in [
        item.name for item in job.inside_job(None, gpu_expected=False, where="laptop")]
    # The job script exports the class folder the login node checked.
    scripts = []
    monkeypatch.setattr(submit, "job_script", lambda root, python, env, out: scripts.append(env) or "")
    monkeypatch.setattr(submit, "run", lambda *a, **k: subprocess.CompletedProcess(
        a, 1, "", "stopped here"))
    submit.run_job(ROOT, {"gpu_partition": "gpu", "class_results": str(open_folder)}, "python",
                   {"A": "1"}, tmp_path, queue_wait=0, minutes=1)
    assert scripts == [{"A": "1", "LESSON_CLASS_RESULTS": str(open_folder)}]


# --- the checklist, the command and the learners' check ----------------------------------

def test_the_checklist_marks_each_item_and_its_json_round_trips(tmp_path):
    items = [report.ok("A", "fine"), report.fail("B", "broken", "mend it"), report.skip("C", "why")]
    printed = report.text(items)
    assert "✓ A: fine" in printed and "✗ B: broken\n    → mend it" in printed
    assert "– C (not checked: why)" in printed and printed.endswith("1 ✓, 1 ✗, 1 not checked")
    assert report.exit_status(items) == 1 and report.exit_status([items[0], items[2]]) == 0
    data = json.loads(report.write_json(tmp_path / "new" / "c.json", items, mode="test").read_text())
    assert data["format"] == report.FORMAT and data["passed"] is False
    assert report.items_from_json(data) == items
    with pytest.raises(ValueError, match="needs a fix"):
        report.fail("D", "broken", "")


def run_check(*args, env, cwd):
    return subprocess.run([sys.executable, "-m", "gpulesson.classroom.check", *args], cwd=cwd,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


def test_the_laptop_path_trains_on_the_cpu_and_says_what_it_did_not_check(tmp_path, settings):
    write_kernel(tmp_path, sys.executable, {**KERNEL_ENV, **data_env(settings)})
    result = run_check("--laptop", "--json", str(tmp_path / "out.json"),
                       env={"JUPYTER_PATH": str(tmp_path)}, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    items = by_name(report.items_from_json(json.loads((tmp_path / "out.json").read_text())))
    assert items["Training steps on the CPU"].status == OK
    assert items["Training steps on the GPU"].status == SKIP
    assert items["Class folder"].status == SKIP and "laptop" in items["Class folder"].detail
    assert "– Training steps on the GPU (not checked: no GPU here" in result.stdout


@pytest.mark.bad_input("missing package")
def test_the_command_exits_1_on_a_failure_and_writes_the_json_here(tmp_path):
    # No sbatch on the PATH: the laptop path, said so.
    result = run_check("--no-job", "--kernel", "no-such-kernel",
                       env={"JUPYTER_PATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
                       cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith("No sbatch here: checking the laptop path (make lab)")
    assert '✗ Kernel "Python (no-such-kernel)": not registered' in result.stdout
    written = json.loads((tmp_path / report.DEFAULT_JSON).read_text())
    assert written["passed"] is False and written["mode"] == "laptop"


def test_learner_checks_print_the_same_lines_in_the_kernel(tmp_path, settings):
    code = ("import sys\nfrom gpulesson.classroom.check import learner_checks, learner_items, report\n"
            "learner_checks()\nsys.exit(report.exit_status(learner_items()))")
    env = {**os.environ, **KERNEL_ENV, **data_env(settings)}
    env.pop("SLURM_JOB_ID", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("✓ Kernel's packages") and lines[1].startswith("– Kernel's settings")
    assert lines[2].startswith("✓ Data file") and lines[3].startswith("– GPU for Keras")


@pytest.mark.bad_input("no GPU")
def test_in_a_job_given_a_gpu_that_keras_does_not_see_the_learner_is_told_what_to_do(monkeypatch):
    import gpulesson.machine.devices
    from gpulesson.classroom.check import GPU_JOB_VARIABLES, gpu_item, learner_items

    monkeypatch.setattr(gpulesson.machine.devices, "keras_device", lambda: {
        "backend": "tensorflow", "backend_version": "x", "device": "CPU", "gpu_count": 0})
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    for name in GPU_JOB_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # The CPU session of episodes 1 to 4 has no GPU, by design: not a failure.
    item = gpu_item()
    assert item.status == SKIP and "CPU session" in item.detail
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    item = gpu_item()
    assert item.status == FAIL and "launch the GPU session" in item.fix
    # In a job the GPU's memory settings count: the app's job exports them, a kernel has them.
    for name in login.GPU_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    items = by_name(learner_items())
    assert items["Kernel's settings"].status == FAIL
    for name in login.GPU_SETTINGS:
        monkeypatch.setenv(name, KERNEL_ENV[name])
    assert by_name(learner_items())["Kernel's settings"].status == OK
    monkeypatch.delenv("SLURM_JOB_ID")
    assert gpu_item().status == SKIP


@pytest.mark.bad_input("no GPU")
def test_inside_job_exits_1_on_a_failure_as_its_help_says(tmp_path, settings):
    # No GPU on this machine: the job's GPU items fail, so the exit status is 1.
    write_kernel(tmp_path, sys.executable, {**KERNEL_ENV, **data_env(settings)})
    out = tmp_path / "job.json"
    result = run_check("--inside-job", "--json", str(out), env={"JUPYTER_PATH": str(tmp_path)},
                       cwd=tmp_path)
    written = json.loads(out.read_text())
    assert written["passed"] is False and result.returncode == 1, result.stdout + result.stderr
    # The help says so.
    import gpulesson.classroom.check.__main__ as command

    assert "1 otherwise,\nalso with --inside-job" in command.__doc__


def test_by_hand_inside_a_job_the_kernels_settings_come_from_its_spec(tmp_path, monkeypatch):
    """srun --pty: the shell has not the kernel's settings; the kernel's spec has them."""
    from gpulesson.classroom.check import submit
    from gpulesson.classroom.check.__main__ import _by_hand

    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(submit.JOB_MARK, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    env, item = _by_hand(login.KERNEL)
    assert item.status == FAIL and "no kernel" in item.detail and "make kernel" in item.fix
    # No kernel here, but the settings exported by hand (the lesson's GPU recording): they count.
    for name, value in KERNEL_ENV.items():
        monkeypatch.setenv(name, value)
    assert _by_hand(login.KERNEL)[1].status == OK
    for name in KERNEL_ENV:
        monkeypatch.delenv(name)
    spec = write_kernel(tmp_path, sys.executable, {**KERNEL_ENV, "LESSON_DATA_DIR": "/shared/data"})
    env, item = _by_hand(login.KERNEL)
    assert item.status == OK and str(spec) in item.detail, item
    # The checks then run with them, as the kernel would: the data folder included.
    assert env["LESSON_DATA_DIR"] == "/shared/data" and os.environ["LESSON_DATA_DIR"] == "/shared/data"
    for name, value in KERNEL_ENV.items():
        assert os.environ[name] == value
    # A spec without them: make kernel is the right fix.
    spec.write_text(json.dumps({"argv": [sys.executable], "env": {}}))
    for name in KERNEL_ENV:
        monkeypatch.delenv(name, raising=False)
    env, item = _by_hand(login.KERNEL)
    assert item.status == FAIL and "make kernel" in item.fix and "conda activate" in item.fix
    # In the check's own job the job exports the settings: they are checked where they are.
    monkeypatch.setenv(submit.JOB_MARK, "1")
    assert _by_hand(login.KERNEL) == (None, None)
    script = submit.job_script(ROOT, sys.executable, KERNEL_ENV, tmp_path)
    assert f"export {submit.JOB_MARK}=1" in script and "exec " not in script
    assert 'if [ "$status" -le 1 ]; then exit 0; fi' in script


def test_the_guide_names_every_option_and_shows_what_the_code_prints():
    from gpulesson.classroom.check.__main__ import parse
    from gpulesson.classroom.check.job import NO_GPU_FIX

    guide = (ROOT / "guide.md").read_text(encoding="utf-8")
    options = [o for action in parse([])._get_kwargs() for o in [action[0]]]
    for option in options:
        assert f"`--{option.replace('_', '-')}" in guide, option
    assert NO_GPU_FIX in guide and "learner_checks()" in guide


@pytest.fixture
def fake_nvidia_smi(tmp_path, monkeypatch):
    """An nvidia-smi that lists one GPU (no framework can use it): the GPU items' logic, not a GPU."""
    tool = tmp_path / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'NVIDIA Stand-in, 550.54.15'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.bad_input("no GPU")
def test_a_gpu_nvidia_smi_lists_but_a_backend_does_not_see_is_a_failure(fake_nvidia_smi, monkeypatch):
    import gpulesson.machine.devices
    from gpulesson.classroom.check import job

    item, driver, names = job.nvidia_smi()
    assert item.status == OK and driver == "550.54.15" and names == ["NVIDIA Stand-in"]
    monkeypatch.setattr(gpulesson.machine.devices, "installed_backends", lambda: ["jax"])
    [jax] = job.backend_gpus()
    assert jax.name == "GPU in Keras (JAX)" and jax.status == FAIL
    assert "sees no GPU though nvidia-smi does" in jax.detail and "requirements/gpu.txt" in jax.fix


def test_the_driver_is_judged_against_each_frameworks_cuda_build(monkeypatch):
    from gpulesson.classroom.check import job
    from gpulesson.machine import driver

    monkeypatch.setattr(driver, "build_cuda", lambda: {"PyTorch": "13.0", "TensorFlow": "12.5.1"})
    [old] = job.driver_items("535.104.05")
    assert old.status == FAIL and old.detail.startswith("DRIVER TOO OLD for PyTorch")
    assert "Ask your site for a newer driver" in old.fix
    [new] = job.driver_items("580.65.06")
    assert new.status == OK and "new enough for PyTorch" in new.detail
    monkeypatch.setattr(driver, "build_cuda", lambda: {"TensorFlow": None})
    assert job.driver_items("580.65.06")[0].status == SKIP


def test_the_guide_says_how_long_the_check_takes_and_asks_for_the_gpu_reference_a_week_ahead():
    guide = " ".join((ROOT / "guide.md").read_text(encoding="utf-8").split())
    timing = guide[guide.index("**How long it takes.**"):guide.index("**By hand on a compute node.**")]
    # The reference node's time is the recorded one (results/reference-run.json).
    run = json.loads((ROOT / "results" / "reference-run.json").read_text())
    recorded = run["done"]["readiness check on the GPU"]
    assert (f"{recorded['seconds']:.0f} seconds on the lesson's reference node, "
            f"one {recorded['gpu']}") in timing
    assert "--queue-wait" in timing and "Plan ten minutes" in timing
    week = guide[guide.index("**A week before.**"):guide.index("**The day before.**")]
    day = guide[guide.index("**The day before.**"):guide.index("**The setup check.**")]
    assert "record the GPU reference" in week and "GPU reference" not in day
    # By hand in srun --pty, the kernel's settings come from its spec: the guide says so.
    assert "reads the kernel's settings from its spec" in guide
