"""Shared test set-up.

The notebooks the tests run (nbclient, nbval) run on the synthetic stand-in in quick mode,
with their data files in a temporary folder. The variables are set here, at import, so that
every Jupyter kernel a test starts inherits them.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def blocked_imports(folder: Path, *modules: str, paths=()) -> dict:
    """This process's environment for a Python in which ``modules`` cannot be imported, as if not
    installed (imports fail, ``find_spec`` returns None): a ``sitecustomize.py`` in ``folder``,
    first on PYTHONPATH, then ``paths``, then the PYTHONPATH already set."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(
        "import sys\n# 'not installed': imports fail, find_spec returns None\n"
        f"for name in {modules!r}:\n    sys.modules[name] = None\n")
    path = os.pathsep.join(filter(None, [str(folder), *map(str, paths),
                                         os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

_DATA_DIR = tempfile.mkdtemp(prefix="gpulesson-test-data-")
os.environ.update(
    LESSON_DATA="synthetic",
    LESSON_QUICK="1",
    LESSON_DATA_DIR=_DATA_DIR,
    # The learners' own folder (records, saved models, their HDF5 files): never the real ~.
    LESSON_WORK_DIR=os.path.join(_DATA_DIR, "work"),
    KERAS_HOME=os.path.join(_DATA_DIR, "keras"),
    MPLBACKEND="Agg",
    TF_CPP_MIN_LOG_LEVEL="2",
)


# TensorFlow and Triton (the compiler PyTorch imports when it trains) each bring their own LLVM,
# and the two cannot live in one process ("LLVM ERROR: inconsistency in registered CommandLine
# options"). This test process imports both frameworks; a learner's kernel never does (the
# PyTorch notebook imports no Keras). PyTorch on the CPU needs no Triton, so it is hidden here.
sys.modules.setdefault("triton", None)

# The session fixture "slurm": a real one-node Slurm for the job and OOD tests.
from slurm_cluster import slurm  # noqa: E402, F401


def pytest_configure(config):
    # The bad_input marker and its count, kept in one place: tests/bad_input.py.
    import bad_input

    bad_input.configure(config)


# 'make test' runs the tests in two processes (pytest-xdist). Each process takes whole groups:
# a test file, so that a module's fixtures are made once and a notebook's cells run in order on
# one kernel, or the files below, which share an expensive session fixture, so that it is made
# once (one Slurm cluster, one site build).
SHARED = {"slurm": ("test_check_slurm.py", "test_ood_app.py", "test_slurm_jobs.py",
                    "test_slurm_torch_ddp.py"),
          "site": ("test_browser.py", "test_recorded.py", "test_reference.py", "test_site.py")}
SHARED_FIXTURES = {"slurm": "slurm", "built_site": "site", "recorded_site": "site",
                   "recorded_lesson": "site"}


def process_group(nodeid: str) -> str:
    """The group of tests that the test ``nodeid`` runs with, in one process."""
    path = nodeid.split("::")[0]
    name = path.rsplit("/", 1)[-1]
    return next((group for group, files in SHARED.items() if name in files), path)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: only called where it is installed
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") in ("no", "each"):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        """Load scheduling of whole groups (``process_group``): the shared ones first, as they
        take longest (and Slurm's jobs leave cores idle while they wait), then the others, the
        largest first."""

        def _split_scope(self, nodeid):
            return process_group(nodeid)

        def _assign_work_unit(self, node):
            for group in reversed(SHARED):
                if group in self.workqueue:
                    self.workqueue.move_to_end(group, last=False)
            super()._assign_work_unit(node)

    return ByGroup(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        for fixture, group in SHARED_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()) and \
                    process_group(item.nodeid) != group:
                raise pytest.UsageError(
                    f"{item.nodeid} uses the session fixture {fixture!r}: add its file to "
                    f"SHARED[{group!r}] in tests/conftest.py, so that the test processes of "
                    "'make test' make that fixture once")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # One line: how many bad inputs and faults were tried, and whether each got a clear message.
    import bad_input

    bad_input.terminal_summary(terminalreporter)


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_DATA_DIR, ignore_errors=True)


def random_hdf5(folder: Path, n_train: int, n_test: int = 20, seed: int = 0) -> Path:
    """A small lesson HDF5 file of random images (labels 0-9 in turn) in ``folder``."""
    import numpy as np

    from gpulesson.datasets.hdf5 import write_hdf5

    x = np.random.default_rng(seed).integers(0, 256, (n_train, 32, 32, 3), dtype=np.uint8)
    y = (np.arange(n_train) % 10).astype(np.uint8)
    return write_hdf5(folder / "train.h5", (x, y), (x[:n_test], y[:n_test]), source="synthetic",
                      class_names=[f"c{i}" for i in range(10)], progress=False)


def run_on_jax_cpu(code: str, timeout: int = 300):
    """Run ``code`` in a new Python with Keras on JAX and JAX on the CPU (the lesson's package
    importable), as a GPU node's Python would start without its GPU; it must succeed and print
    JSON as its last line, which is returned."""

    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_script(path: Path):
    """The module of a script that is not in a package (a figure script in fig/), loaded from
    its file, as its own command would run it, without running its main."""
    import importlib.util

    name = f"script_{path.parent.name}_{path.stem}".replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson_files(dest: Path) -> Path:
    """Copy the lesson's tracked and new (not ignored) files to dest, as a fresh clone has them."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def build_book(source: Path, keep_going: bool = True) -> subprocess.CompletedProcess:
    """Build the Jupyter Book in ``source`` the way 'make site' does (warnings are errors);
    ``keep_going=False`` stops at the first error (a test of a build that must fail)."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("jupyter-book")), "build", str(source),
         "--builder", "html", "--warningiserror", *(["--keep-going"] if keep_going else [])],
        capture_output=True, text=True, timeout=600,
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """The site built from a copy of the lesson: (html folder, build log). Built once for the
    whole run: the test processes (pytest-xdist) share one build, the first to ask makes it
    while the others wait on a lock, so the tests read the same pages and the run pays for one
    build of a minute or more, not one a process."""
    import fcntl

    # Under pytest-xdist each process's base folder sits in the run's own folder, which they share;
    # a run in one process has the run's folder as its base (its parent outlives the run).
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(shared / "built-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        source, log = shared / "built-site", shared / "built-site.json"
        if not log.exists():
            shutil.rmtree(source, ignore_errors=True)  # a build that died half-way
            source.mkdir()
            done = build_book(lesson_files(source))
            log.write_text(json.dumps({"returncode": done.returncode, "stdout": done.stdout,
                                       "stderr": done.stderr}), encoding="utf-8")
        result = subprocess.CompletedProcess(["jupyter-book", "build"],
                                             **json.loads(log.read_text(encoding="utf-8")))
    return source / "_build" / "html", result


def record_run(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """tools/record_run.py in the lesson copy ``root`` (quick mode is passed by the caller)."""
    return subprocess.run([sys.executable, str(root / "tools" / "record_run.py"), *args],
                          cwd=root, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="session")
def recorded_lesson(tmp_path_factory):
    """A copy of the lesson with a quick-mode recorded run of episodes 1 and 3 (the small ones),
    and no other record, on the synthetic stand-in, with data files of its own (so that they are
    written, with their progress bars, during the run): (lesson folder, the command's result)."""
    root = lesson_files(tmp_path_factory.mktemp("recorded"))
    # Without the lesson's own record: the copy's pages show only what this run recorded.
    shutil.rmtree(root / "executed", ignore_errors=True)
    data_dir = tmp_path_factory.mktemp("recorded-data")
    result = record_run(root, "--quick", "--data", "synthetic", "--only", "01", "03",
                        env={"LESSON_DATA_DIR": str(data_dir)})
    return root, result


FURTHER = "Further episodes"  # the part of _toc.yml that a build of the core leaves out


def core_only(root: Path) -> None:
    """Make the lesson copy ``root`` a site of the core: the toc without its further episodes
    and the schedule without their breaks, a build of about a quarter of the full one's time.
    A link into the episodes left out is not a warning there: the full build (``built_site``)
    checks every link."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    gone = [chapter["file"].rsplit("/", 1)[-1] for part in toc["parts"]
            if part["caption"] == FURTHER for chapter in part["chapters"]]
    assert gone, f"_toc.yml has no part {FURTHER!r}: update tests/conftest.py"
    toc["parts"] = [part for part in toc["parts"] if part["caption"] != FURTHER]
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    config = (root / "_config.yml").read_text(encoding="utf-8")
    config = re.sub(rf"^ +(?:{'|'.join(map(re.escape, gone))}): \d+.*\n", "", config, flags=re.M)
    assert not any(slug in config for slug in gone), "_config.yml names a further episode"
    assert config.count("\n  config:\n") == 1 and "suppress_warnings" not in config
    config = config.replace("\n  config:\n",
                            "\n  config:\n    suppress_warnings: [myst.xref_missing]\n")
    (root / "_config.yml").write_text(config, encoding="utf-8")


@pytest.fixture(scope="session")
def recorded_site(recorded_lesson, tmp_path_factory):
    """The site of the core episodes (``core_only``) built from a copy of the lesson copy with
    the recorded run: (html folder, build log)."""
    root, recorded = recorded_lesson
    assert recorded.returncode == 0, recorded.stdout[-3000:] + recorded.stderr[-3000:]
    site = tmp_path_factory.mktemp("recorded-site") / "lesson"
    shutil.copytree(root, site, ignore=shutil.ignore_patterns("_build"))
    core_only(site)
    return site / "_build" / "html", build_book(site)


@pytest.fixture(scope="module")
def feeding_measured(tmp_path_factory):
    """One tiny run of episode 9's feeding benchmark, once per test module that asks:
    (records, progress lines, the precision policy before)."""
    from feeding_helpers import tiny_benchmark

    return tiny_benchmark(tmp_path_factory.mktemp("feeding-data"))


@pytest.fixture
def contention_records(tmp_path):
    """A file of made-up records of episode 5's contention benchmark, both parts."""
    from contention_helpers import write_made_up

    return write_made_up(tmp_path / "contention.jsonl")


@pytest.fixture
def no_network(monkeypatch):
    """No socket connection succeeds: a test that would reach the internet fails instead."""
    def refuse(*args, **kwargs):
        raise OSError("network access is switched off in the tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close the figures a test drew (pyplot keeps every open one), so that the tests of one
    process never pile them up."""
    yield
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
