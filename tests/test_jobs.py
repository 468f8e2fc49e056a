"""Batch-job scripts: valid shell, a GPU request, a clear refusal of a missing notebook, and the
site's conda environment (a name or a folder) activated before a lesson folder's .venv."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from fake_conda import calls, fake_cluster, fake_environment

SCRIPTS = sorted((ROOT / "jobs").glob("*.sbatch"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash_with_slurm_directives(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    for directive in ("--gres=gpu:", "--time=", "--cpus-per-task=", "--output="):
        assert f"#SBATCH {directive}" in text


@pytest.mark.bad_input("missing file")
def test_run_notebook_refuses_a_missing_notebook(tmp_path):
    result = subprocess.run(["bash", str(ROOT / "jobs" / "run-notebook.sbatch"), "notebooks/none.ipynb"],
                            check=False, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert "No notebook at notebooks/none.ipynb" in result.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


TRAINING_SCRIPTS = ["train-cnn.sbatch", "sweep-array.sbatch"]


@pytest.mark.parametrize("name", TRAINING_SCRIPTS)
def test_training_jobs_requeue_themselves_before_the_time_limit(name):
    text = (ROOT / "jobs" / name).read_text()
    for line in ("#SBATCH --signal=B:USR1@120", "#SBATCH --requeue", "#SBATCH --open-mode=append",
                 "#SBATCH --output=results/%x-"):
        assert line in text, f"{name} lacks {line}"
    # The trap stops the training and requeues; the training runs in the background so that
    # the trap can run before it ends.
    assert "trap requeue USR1" in text and 'scontrol requeue "$SLURM_JOB_ID"' in text
    assert "python -u -m gpulesson.experiments.train_job" in text and 'wait "$pid"' in text
    hours, minutes, seconds = map(int, text.split("#SBATCH --time=")[1].split()[0].split(":"))
    assert 120 < hours * 3600 + minutes * 60 + seconds


def lesson_folder(tmp_path):
    """A folder to submit from whose .venv is this Python's environment (outside Slurm)."""
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "activate").write_text(f'PATH="{Path(sys.executable).parent}:$PATH"\n')
    return tmp_path


@pytest.mark.bad_input("bad argument")
def test_train_cnn_passes_its_arguments_to_train_job(tmp_path):
    result = subprocess.run(["bash", str(ROOT / "jobs" / "train-cnn.sbatch"), "--epochs", "0"],
                            cwd=lesson_folder(tmp_path), check=False, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert "argument --epochs: must be at least 1, not 0" in result.stderr


@pytest.mark.bad_input("not under Slurm")
def test_the_sweep_refuses_to_run_outside_a_job_array(tmp_path):
    result = subprocess.run(["bash", str(ROOT / "jobs" / "sweep-array.sbatch")], cwd=tmp_path,
                            check=False, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    assert "submit this script with sbatch: it is a job array" in result.stderr
    assert not (tmp_path / "results").exists()


ENVIRONMENT_BLOCK = "# The lesson's environment:"


def environment_block(script: Path) -> str:
    """The lines of a job script that activate the lesson's environment."""
    text = script.read_text()
    start = text.index(ENVIRONMENT_BLOCK)
    return text[start:text.index("\nfi\n", start) + len("\nfi\n")]


def test_every_job_activates_the_lesson_environment_the_same_way():
    blocks = {environment_block(script) for script in SCRIPTS}
    assert len(blocks) == 1, blocks
    assert 'conda activate "${LESSON_CONDA_ENV:-gpulesson}"' in blocks.pop()


@pytest.mark.parametrize(("conda_env", "venv", "expected"), [
    ("shared", True, "shared"),
    ("workshop", False, "workshop"),
    (None, False, "gpulesson"),
    (None, True, ".venv"),
], ids=["shared-prefix-before-venv", "named-env", "default-name", "venv-without-a-site-env"])
def test_a_job_activates_the_sites_conda_environment_before_a_venv(tmp_path, conda_env, venv,
                                                                     expected):
    """The site's conda_env (LESSON_CONDA_ENV, from jobs/site.sh), a folder or a name, wins over
    a lesson folder's .venv (make lab's CPU-only TensorFlow); without one, the .venv, then the
    environment gpulesson."""
    env = fake_cluster(tmp_path / "cluster")
    env["LESSON_CONDA_MODULE"] = "miniforge3"
    folder = tmp_path / "lesson"
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "x.ipynb").write_text("{}")
    if venv:
        fake_environment(folder / ".venv", venv=True)
    if conda_env == "shared":  # a shared environment, by its folder (conda env create --prefix)
        conda_env = expected = str(fake_environment(tmp_path / "shared" / "env"))
    elif conda_env:
        fake_environment(tmp_path / "cluster" / "envs" / conda_env)
    if conda_env:
        env["LESSON_CONDA_ENV"] = conda_env
    result = subprocess.run(["bash", str(ROOT / "jobs" / "run-notebook.sbatch"), "notebooks/x.ipynb"],
                            cwd=folder, env=env, check=False, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    logged = calls(env)
    if expected == ".venv":
        python = folder / ".venv" / "bin" / "python"
        assert not any(line.startswith(("module", "conda")) for line in logged), logged
    else:
        prefix = Path(expected) if expected.startswith("/") else tmp_path / "cluster" / "envs" / expected
        python = prefix / "bin" / "python"
        assert logged[:2] == ["module load miniforge3", f"conda activate {expected}"], logged
    assert f"{python} -m gpulesson.machine.devices" in logged, logged
    assert any(line.startswith(f"{python.with_name('jupyter')} nbconvert") for line in logged), logged


def _sourced(cwd, env):
    command = ("source jobs/site.sh && echo $SBATCH_PARTITION $SBATCH_ACCOUNT $LESSON_CONDA_MODULE "
               "$LESSON_CONDA_ENV")
    if cwd != ROOT:
        command = command.replace("jobs/site.sh", str(ROOT / "jobs" / "site.sh"))
    return subprocess.run(["bash", "-c", command], cwd=cwd, env={"PATH": "/usr/bin:/bin", **env},
                          check=False, capture_output=True, text=True, timeout=30)


def test_site_sh_gives_sbatch_the_site_values_of_the_config():
    site = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_site"]
    result = _sourced(ROOT, {})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [site["gpu_partition"], site["account"], site["conda_module"],
                                     site["conda_env"]]
    # A value set already wins: a learner's own account, say.
    kept = _sourced(ROOT, {"SBATCH_ACCOUNT": "mine"}).stdout.split()
    assert kept == [site["gpu_partition"], "mine", site["conda_module"], site["conda_env"]]
    # No script names a partition or an account of its own.
    for script in SCRIPTS:
        assert "--partition" not in script.read_text() and "--account" not in script.read_text()


@pytest.mark.bad_input("missing file")
def test_site_sh_outside_the_lesson_folder_says_where_to_run_it(tmp_path):
    result = _sourced(tmp_path, {})
    assert result.returncode == 2
    assert "No _config.yml here: source jobs/site.sh in the lesson folder" in result.stderr


def test_the_ddp_job_requeues_itself_and_stops_its_tasks_gently():
    text = (ROOT / "jobs" / "train-torch-ddp.sbatch").read_text()
    for line in ("#SBATCH --signal=B:USR1@120", "#SBATCH --requeue", "#SBATCH --open-mode=append",
                 "#SBATCH --output=results/%x-", "trap requeue USR1",
                 'scontrol requeue "$SLURM_JOB_ID"', 'wait "$pid"'):
        assert line in text, f"train-torch-ddp.sbatch lacks {line}"
    # srun forwards USR1 to the tasks (they stop after writing nothing half); a TERM would
    # make srun kill them.
    assert 'kill -USR1 "$pid"' in text and "kill -TERM" not in text
    assert "srun --kill-on-bad-exit=1 python -u -m gpulesson.experiments.torch_ddp" in text
    # One task per GPU: as many tasks per node as GPUs per node.
    tasks = text.split("#SBATCH --ntasks-per-node=")[1].split()[0]
    assert f"#SBATCH --gres=gpu:{tasks}\n" in text


@pytest.mark.bad_input("not under Slurm")
def test_the_ddp_job_refuses_to_run_outside_slurm(tmp_path):
    result = subprocess.run(["bash", str(ROOT / "jobs" / "train-torch-ddp.sbatch")], cwd=tmp_path,
                            check=False, capture_output=True, text=True, timeout=30,
                            env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert "submit this script with sbatch: it needs a Slurm job" in result.stderr
    assert not (tmp_path / "results").exists()
