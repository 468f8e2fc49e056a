"""The commands a newcomer runs first: make site (a small environment), make lab (a learner's
environment without test tools, CUDA libraries or PyTorch; options, root, the learner's own
copies of the notebooks)."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulesson.classroom import workcopy

ROOT = Path(__file__).resolve().parents[1]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
# What the site build must not need: the frameworks and the data libraries.
HEAVY = ("tensorflow", "keras", "torch", "torchvision", "jax", "h5py", "sklearn", "matplotlib",
         "tqdm")


# Run from inside make (``make test TEST_PROCESSES=3``), a child make would inherit the outer
# one's variables through MAKEFLAGS and the environment: the defaults are what is tested here.
MAKE_VARIABLES = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES",
                  *re.findall(r"^(\w+)\s*\?=", (ROOT / "Makefile").read_text(), re.MULTILINE)}


def dry_run(*args: str) -> str:
    """The commands ``make -n ARGS`` would run (nothing is run, nothing installed)."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    result = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, check=True, env=env)
    return result.stdout


def command_of(output: str, program: str) -> str:
    return next(line for line in output.splitlines() if program in line and not
                line.lstrip().startswith("#"))


# --- make site: a small environment ------------------------------------------------------------

@needs_make
def test_make_site_builds_in_the_small_environment():
    build = command_of(dry_run("site"), "jupyter-book build")
    assert build.startswith(".venv-site/bin/jupyter-book build . "), build
    assert "--warningiserror" in build
    # Changing the site's requirements does not reinstall the full environment.
    full = subprocess.run(["make", "-p", "-n", "venv"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60).stdout
    # The rule's line (make also prints target-specific variables, e.g. '.SHELLSTATUS := 0').
    rule = next(line for line in full.splitlines()
                if line.startswith(".venv/bin/.installed:") and ":=" not in line)
    assert "requirements/dev.txt" in rule and "requirements/site.txt" not in rule, rule


@needs_make
def test_the_test_and_site_environments_install_with_the_pinned_uv_or_with_pip():
    """uv installs the same pinned files as pip would, into the environment's own Python;
    INSTALLER=pip installs them with pip alone."""
    for target, bin_ in (("venv", ".venv/bin"), (".venv-site/bin/.installed", ".venv-site/bin")):
        line = command_of(dry_run("-B", target), "uv pip install")
        assert line.startswith(f"{bin_}/python -m pip install --quiet -r requirements/installer.txt"
                               f" && "), line
        # Compiled at install: with PYTHONDONTWRITEBYTECODE set, no import would compile it.
        assert f"UV_SYSTEM_CERTS=1 {bin_}/uv pip install --quiet --compile-bytecode --python "\
               f"{bin_}/python -r " in line, line
        assert line.endswith(" -c requirements/constraints.txt"), line
    plain = dry_run("-B", "venv", "INSTALLER=pip")
    assert "uv pip" not in plain and "installer.txt" not in plain, plain
    assert ".venv/bin/python -m pip install --quiet -r requirements/dev.txt -c " \
        "requirements/constraints.txt" in plain, plain


def test_the_site_extension_fills_every_page_without_the_frameworks(tmp_path):
    """What _ext/carpentry.py imports to fill the pages must not need TensorFlow, Keras, h5py,
    PyTorch or matplotlib, which the site's environment does not have."""
    script = textwrap.dedent(f"""
        import importlib.abc, sys
        from pathlib import Path
        HEAVY = {HEAVY!r}

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in HEAVY:
                    raise ImportError(f"{{name}} is not in the site's environment")

        sys.meta_path.insert(0, Block())
        root = Path({str(ROOT)!r})
        sys.path[:0] = [str(root / "_ext"), str(root)]
        import carpentry
        values = carpentry.placeholder_values(root)
        # the site's pages (_config.yml leaves these four out of it)
        outside = {{"README.md", "CONTRIBUTING.md", "CODE_OF_CONDUCT.md", "recording.md"}}
        pages = [*root.glob("_episodes/*.md"),
                 *(p for p in root.glob("*.md") if p.name not in outside)]
        for page in pages:
            carpentry.fill_placeholders(page.read_text(encoding="utf-8"), root, values)
        print(len(values), "values,", len(pages), "pages")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""})
    assert result.returncode == 0, result.stderr
    assert " values, " in result.stdout


# --- make lab: options, root, and the learner's own copies ---------------------------------------

@needs_make
@pytest.mark.bad_input("run as root")
def test_make_lab_takes_options_and_starts_as_root():
    options = "--no-browser --ip=node042 --port=8890"
    lab = command_of(dry_run("lab", f"LAB_ARGS={options}"), "jupyter lab")
    assert lab.endswith(options), lab
    # JupyterLab refuses root without --allow-root: added for root, and only for root.
    assert ("--allow-root" in lab) == (os.geteuid() == 0), lab
    # It opens the learner's copies, which the step before makes.
    assert "default_url=/lab/tree/my-notebooks" in lab, lab
    assert "-m gpulesson.classroom.workcopy --to my-notebooks" in dry_run("lab")
    assert "--complete" not in dry_run("lab")
    # COMPLETE=1 adds the complete notebooks, beside the learner's own.
    assert "-m gpulesson.classroom.workcopy --to my-notebooks --complete" in dry_run("lab", "COMPLETE=1")


@needs_make
def test_make_lab_installs_only_the_learners_environment():
    """make lab installs requirements/lab.txt, not the full environment of the tests (dev.txt:
    test tools, JAX, PyTorch with its CUDA libraries); PyTorch only with TORCH=1."""
    lab = dry_run("-B", "lab")  # -B: every step, as on a fresh clone
    installs = [line for line in lab.splitlines() if "pip install" in line]
    assert any("-r requirements/lab.txt -c requirements/constraints.txt" in line
               for line in installs), installs
    assert not any(f"requirements/{name}" in line for line in installs
                   for name in ("dev.txt", "torch.txt", "backends.txt", "gpu.txt")), installs
    assert command_of(lab, "ipykernel install").lstrip().startswith(".venv/bin/python ")
    with_torch = [line for line in dry_run("-B", "lab", "TORCH=1").splitlines()
                  if "pip install" in line]
    assert any("-r requirements/torch.txt" in line for line in with_torch), with_torch
    assert not any("requirements/dev.txt" in line for line in with_torch), with_torch
    # On Linux, PyTorch's CPU-only build (as setup.md and lab.txt say), not PyPI's CUDA build.
    torch_index = "--extra-index-url https://download.pytorch.org/whl/cpu"
    lab_torch = dry_run("-B", "lab", "TORCH=1")
    assert (torch_index in lab_torch) == sys.platform.startswith("linux"), lab_torch
    # make kernel registers the same environment, and installs no more.
    assert not any("requirements/dev.txt" in line for line in dry_run("-B", "kernel").splitlines())


@needs_make
def test_make_lab_installs_nothing_into_make_tests_full_environment(tmp_path):
    """After make test, .venv has all that make lab needs (PyTorch included): make lab installs
    nothing again. A full environment older than the lab's requirements is installed into."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    full = venv / "bin" / ".installed"
    full.touch()

    def lab_venv():
        # PYTHON=false: any attempt to create or fill the environment fails.
        return subprocess.run(["make", "lab-venv", "TORCH=1", f"VENV={venv}", "PYTHON=false"],
                              cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)

    def notes(output):  # the lines echoed, not the commands make prints
        return [line for line in output.splitlines() if line.endswith("has what make lab needs")]

    done = lab_venv()  # succeeds only if it installs nothing (no python in the environment)
    assert done.returncode == 0, done.stdout + done.stderr
    assert notes(done.stdout) == [f"{venv} is make test's full environment: it has what make "
                                  "lab needs"] * 2, done.stdout
    # A full environment from before requirements/lab.txt last changed is installed into.
    for stamp in (venv / "bin").glob(".installed-*"):
        stamp.unlink()
    os.utime(full, (0, 0))
    done = lab_venv()
    assert done.returncode != 0 and not notes(done.stdout), done.stdout


def test_the_lab_environment_brings_no_cuda_libraries_or_test_tools():
    """What requirements/lab.txt installs, its indirect requirements included (as installed
    here): TensorFlow's CPU build brings no CUDA library (those come only with its extra
    and-cuda, which gpu.txt asks for), and nothing of the tests, PyTorch or JAX comes along."""
    closure = _closure("requirements/lab.txt")
    assert {"tensorflow-cpu", "keras", "h5py", "jupyterlab", "ipykernel"} <= closure
    cuda = sorted(name for name in closure if name.startswith("nvidia-") and name != "nvidia-ml-py")
    assert not cuda, cuda
    heavy = {"torch", "torchvision", "triton", "jax", "jaxlib", "pytest", "nbval", "playwright",
             "ruff", "jupyter-book"}
    assert not heavy & closure, heavy & closure


def test_work_copies_are_made_once_and_never_overwritten(tmp_path):
    source = tmp_path / "notebooks"
    source.mkdir()
    for name in ("01-a.ipynb", "02-b.ipynb"):
        (source / name).write_text(f'{{"lesson": "{name}"}}')
    target = tmp_path / "my-notebooks"
    copied, kept = workcopy.copy_notebooks(source, target)
    assert [p.name for p in copied] == ["01-a.ipynb", "02-b.ipynb"] and kept == []

    # The learner works (JupyterLab saves outputs); the lesson gets a new notebook.
    (target / "01-a.ipynb").write_text('{"lesson": "01-a.ipynb", "outputs": "mine"}')
    (source / "03-c.ipynb").write_text('{"lesson": "03-c.ipynb"}')
    copied, kept = workcopy.copy_notebooks(source, target)
    assert [p.name for p in copied] == ["03-c.ipynb"] and len(kept) == 2
    assert "mine" in (target / "01-a.ipynb").read_text()
    assert sorted(p.name for p in target.iterdir()) == ["01-a.ipynb", "02-b.ipynb", "03-c.ipynb"]


@pytest.mark.bad_input("bad argument")
def test_work_copies_from_a_folder_without_notebooks_say_where_to_run(tmp_path, capsys):
    code = workcopy.main(["--lesson", str(tmp_path), "--to", str(tmp_path / "mine")])
    assert code == 1
    err = capsys.readouterr().err
    assert "holds no notebooks" in err and "lesson folder" in err, err
    assert not (tmp_path / "mine").exists()


def test_work_copies_of_the_lesson_are_ignored_by_git_and_open_its_figures(tmp_path):
    copied, _ = workcopy.copy_notebooks(ROOT / workcopy.SOURCE, tmp_path / "my-notebooks")
    assert len(copied) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    for name in ("01-introduction.ipynb", "01-introduction-complete.ipynb"):
        ignored = subprocess.run(["git", "check-ignore", "-q", f"my-notebooks/{name}"], cwd=ROOT,
                                 timeout=30)
        assert ignored.returncode == 0, "my-notebooks/ must be in .gitignore"
    # A copy sits next to notebooks/, so its relative links (../fig, ../setup.md) still work.
    assert (ROOT / workcopy.DEFAULT_TARGET).parent == (ROOT / workcopy.COMPLETE_SOURCE).parent


def test_work_copies_are_the_learners_notebooks_and_the_complete_ones_come_beside_them(tmp_path):
    """By default the notebooks to type into (notebooks/learner/); --complete adds the complete
    ones (notebooks/) as NN-slug-complete.ipynb, never over the learner's own."""
    lesson = tmp_path / "lesson"
    (lesson / "notebooks" / "learner").mkdir(parents=True)
    (lesson / "notebooks" / "01-a.ipynb").write_text('{"cells": "complete"}')
    (lesson / "notebooks" / "learner" / "01-a.ipynb").write_text('{"cells": "to type"}')
    mine = tmp_path / "mine"
    assert workcopy.main(["--lesson", str(lesson), "--to", str(mine)]) == 0
    assert [p.name for p in mine.iterdir()] == ["01-a.ipynb"]
    assert "to type" in (mine / "01-a.ipynb").read_text()
    assert workcopy.main(["--lesson", str(lesson), "--to", str(mine), "--complete"]) == 0
    assert sorted(p.name for p in mine.iterdir()) == ["01-a-complete.ipynb", "01-a.ipynb"]
    assert "to type" in (mine / "01-a.ipynb").read_text()
    assert "complete" in (mine / "01-a-complete.ipynb").read_text()
    # The real lesson: the default copies have prompts to type; the complete ones have code.
    workcopy.main(["--to", str(tmp_path / "real")])
    workcopy.main(["--to", str(tmp_path / "real"), "--complete"])
    learner = (tmp_path / "real" / "01-introduction.ipynb").read_text()
    complete = (tmp_path / "real" / "01-introduction-complete.ipynb").read_text()
    assert learner == (ROOT / "notebooks" / "learner" / "01-introduction.ipynb").read_text()
    assert complete == (ROOT / "notebooks" / "01-introduction.ipynb").read_text()
    assert learner != complete


def _requirement_names(path: Path) -> list[str]:
    """The distributions a requirements file names for this platform, following '-r'."""
    from packaging.requirements import Requirement

    names = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-r "):
            names += _requirement_names(path.parent / line[3:].strip())
            continue
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate():
            names.append(req.name)
    return names


def _closure(requirements: str) -> set[str]:
    """The distributions a requirements file installs: its pins and what they require, as
    installed in this environment (no extras)."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    todo = _requirement_names(ROOT / requirements)
    seen: set[str] = set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _site_closure() -> set[str]:
    """The distributions requirements/site.txt installs: its pins and what they require."""
    return _closure("requirements/site.txt")


def test_the_site_environment_has_what_the_extensions_import():
    """Every package that _ext/*.py imports (at any depth of a function) is installed by
    requirements/site.txt: a missing one breaks 'make site' on a fresh machine only."""
    import ast
    from importlib import metadata

    from packaging.utils import canonicalize_name

    local = {p.stem for p in (ROOT / "_ext").glob("*.py")} | {"gpulesson"}
    providers = metadata.packages_distributions()
    closure = _site_closure()
    missing = []
    for source in sorted((ROOT / "_ext").glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top == "__future__":
                    continue
                dists = {canonicalize_name(d) for d in providers.get(top, [top])}
                if not dists & closure:
                    missing.append(f"{source.name}: import {name} ({', '.join(sorted(dists))})")
    assert not missing, "not installed by requirements/site.txt:\n" + "\n".join(missing)


# --- make test: two processes, whole groups each -----------------------------------------------

@needs_make
def test_make_test_runs_the_tests_in_processes_that_take_whole_groups():
    import conftest

    pytest_line = command_of(dry_run("test", "SYSTEM=no"), "-m pytest")
    assert "-n 2 --dist loadscope" in pytest_line, pytest_line
    assert "-n 0 " in command_of(dry_run("test", "SYSTEM=no", "TEST_PROCESSES=0"), "-m pytest")
    group = conftest.process_group
    # A notebook's cells share one kernel, a module its fixtures: one process each.
    assert group("notebooks/04-data-pipeline.ipynb::Cell 3") == \
        group("notebooks/04-data-pipeline.ipynb::Cell 7") == "notebooks/04-data-pipeline.ipynb"
    assert group("tests/test_09_feeding_page.py::test_a[x]") == "tests/test_09_feeding_page.py"
    assert group("tests/test_slurm_jobs.py::test_a") == group("tests/test_ood_app.py::b") == "slurm"
    assert group("tests/test_site.py::test_a") == group("tests/test_browser.py::b") == "site"
    for files in conftest.SHARED.values():
        assert all((ROOT / "tests" / name).is_file() for name in files), files


def test_a_test_that_shares_a_fixture_from_an_unlisted_file_is_refused():
    import conftest

    class Item:
        nodeid, fixturenames = "tests/test_new.py::test_a", ["tmp_path", "slurm"]

    with pytest.raises(pytest.UsageError, match=r"SHARED\['slurm'\] in tests/conftest.py"):
        conftest.pytest_collection_modifyitems(None, [Item()])
    Item.nodeid = "tests/test_slurm_jobs.py::test_a"
    conftest.pytest_collection_modifyitems(None, [Item()])  # listed: accepted


# --- the README: its readers in order, the recording logistics in recording.md -------------------

def test_the_readme_serves_its_readers_in_order_and_links_the_recording_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", readme, re.M)
    order = ["Two commands", "Learners and self-study", "Instructors", "Maintainers"]
    assert [s for s in sections if s in order] == order, sections
    assert sections.index("Two commands") == 0
    assert "](recording.md)" in readme and "### Recording on your cluster" not in readme
    recording = (ROOT / "recording.md").read_text(encoding="utf-8")
    for heading in ("## Recording on your cluster", "## Stages"):
        assert heading in recording
    # The learners' section: a headless run in quick mode, with the commands spelled out.
    learners = readme.split("## Learners and self-study", 1)[1].split("\n## ", 1)[0]
    assert "export LESSON_DATA=synthetic LESSON_QUICK=1" in learners
    assert "jupyter nbconvert --to notebook --execute" in learners
    assert "`make lab` needs neither `make site` nor `make test`" in learners


def test_every_time_the_readme_states_names_its_machine():
    """A time in seconds or minutes sits in a paragraph that names the machine it was measured
    on (its cores, and its CPU or that the model was not recorded) and the date."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for paragraph in readme.split("\n\n"):
        if paragraph.startswith(("|", "```")):
            continue
        if re.search(r"\b\d+(\.\d+)? ?(s|minutes?)\b", paragraph):
            assert re.search(r"\d+ (CPU )?cores", paragraph), paragraph
            assert re.search(r"Intel|AMD|CPU model was not recorded", paragraph), paragraph
            assert re.search(r"20\d\d-\d\d-\d\d", paragraph), paragraph


def test_the_readme_and_the_guide_agree_on_make_lab_and_the_readme_says_what_its_times_leave_out():
    """make lab builds a pip .venv with TensorFlow's CPU build: the guide keeps it off the
    cluster, and the README shows it only on a machine of one's own; its times are best cases,
    and it says what a first run on a bare machine adds that was not measured."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    guide = " ".join((ROOT / "guide.md").read_text(encoding="utf-8").split())
    assert "`make kernel` and `make lab` are for a laptop" in guide
    assert "On a cluster, learners use the setup page's route A instead" in readme
    for paragraph in (ROOT / "README.md").read_text(encoding="utf-8").split("\n\n"):
        if "make lab" in paragraph and "on a cluster" not in paragraph.lower():
            assert "compute node" not in paragraph and "$(hostname)" not in paragraph, paragraph
    assert "`make lab TORCH=1` adds PyTorch for episode 8, on Linux its CPU-only build" in readme
    assert "`make lab` after `make test` installs nothing again" in readme
    first_run = next(p for p in readme.split("What a first run on a bare machine adds")[1:])
    assert first_run.startswith(" was not measured") and "apt-get" in first_run[:700]
