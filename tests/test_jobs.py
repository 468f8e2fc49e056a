"""Batch-job scripts: valid shell, a GPU request, and a clear refusal of a missing notebook."""

import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

SCRIPTS = sorted((ROOT / "jobs").glob("*.sbatch"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_is_valid_bash_with_slurm_directives(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    for directive in ("--gres=gpu:", "--time=", "--cpus-per-task=", "--output="):
        assert f"#SBATCH {directive}" in text


def test_run_notebook_refuses_a_missing_notebook(tmp_path):
    result = subprocess.run(["bash", str(ROOT / "jobs" / "run-notebook.sbatch"), "notebooks/none.ipynb"],
                            cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2
    assert "No notebook at notebooks/none.ipynb" in result.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
