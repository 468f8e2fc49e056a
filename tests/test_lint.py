"""Lint and hygiene: the pre-commit hooks pass, and `make test` runs the same checks.

The hooks are local (.pre-commit-config.yaml) and pass no paths: what ruff and codespell check
is set in pyproject.toml ([tool.ruff] include, [tool.codespell] skip). These tests run the
hooks' own commands, so a commit the hooks would refuse also fails the suite.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import ROOT

BIN = Path(sys.executable).parent
CONFIG = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
HOOKS = {hook["id"]: hook for repo in CONFIG["repos"] for hook in repo["hooks"]}
RUN_HERE = ("ruff", "codespell")
# Hooks whose check already is a test: hook id -> (test file, what it calls).
COVERED_ELSEWHERE = {"notebooks": ("test_notebooks.py", "mk.out_of_sync(ROOT)")}


def run_hook(hook_id: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a hook's command in `cwd` with this environment's tools, as pre-commit would."""
    name, *args = shlex.split(HOOKS[hook_id]["entry"])
    tool = BIN / name
    if not tool.exists():
        tool = shutil.which(name)
    assert tool, f"{name} is not installed: pip install -r requirements/dev.txt"
    env = {**os.environ, "RUFF_NO_CACHE": "true", "NO_COLOR": "1"}
    return subprocess.run([str(tool), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("hook_id", RUN_HERE)
def test_the_lesson_passes(hook_id):
    done = run_hook(hook_id, ROOT)
    assert done.returncode == 0, (
        f"{HOOKS[hook_id]['entry']} found problems (see CONTRIBUTING.md, 'Checks before you "
        f"commit'):\n{done.stdout}{done.stderr}")


def test_every_hook_is_checked_by_the_suite():
    assert set(HOOKS) == set(RUN_HERE) | set(COVERED_ELSEWHERE)
    for hook_id, (test_file, call) in COVERED_ELSEWHERE.items():
        assert call in (ROOT / "tests" / test_file).read_text(), (hook_id, test_file)
    assert "make_notebooks.py --check" in HOOKS["notebooks"]["entry"]


def test_hooks_need_no_network_and_take_their_paths_from_pyproject():
    assert [repo["repo"] for repo in CONFIG["repos"]] == ["local"]
    for hook in HOOKS.values():
        assert hook["language"] == "system" and hook["pass_filenames"] is False, hook["id"]
    assert HOOKS["ruff"]["entry"] == "ruff check" and HOOKS["codespell"]["entry"] == "codespell"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    include = pyproject["ruff"]["include"]
    for wanted in ("gpulesson/**/*.py", "tools/*.py", "_ext/*.py", "fig/*/*.py", "notebooks/*.ipynb"):
        assert wanted in include
    assert "./_build" in pyproject["codespell"]["skip"]


def test_the_hooks_catch_planted_mistakes(tmp_path):
    """The configuration really selects the package, the notebooks and the pages."""
    typo, typo2 = "Te" + "h", "recie" + "ves"  # in pieces, or codespell would flag this file
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    (tmp_path / "gpulesson").mkdir()
    (tmp_path / "gpulesson" / "bad.py").write_text("import os\n")
    (tmp_path / "notebooks").mkdir()
    cell = {"cell_type": "code", "execution_count": None, "id": "a1", "metadata": {}, "outputs": [],
            "source": ["import json\n", "x == 1\n"]}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "notebooks" / "bad.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "_build").mkdir()
    (tmp_path / "_build" / "page.md").write_text(f"Built copies are not checked: {typo}.\n")
    (tmp_path / "page.md").write_text(f"{typo} GPU {typo2} the batch.\n")

    ruff = run_hook("ruff", tmp_path)
    assert ruff.returncode == 1, ruff.stdout + ruff.stderr
    for finding in ("gpulesson/bad.py", "F401", "notebooks/bad.ipynb", "F821"):
        assert finding in ruff.stdout, ruff.stdout

    codespell = run_hook("codespell", tmp_path)
    assert codespell.returncode != 0
    assert f"page.md:1: {typo} ==> The" in codespell.stdout and typo2 in codespell.stdout
    assert "_build" not in codespell.stdout, codespell.stdout
