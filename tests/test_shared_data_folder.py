"""The guide's shared data folder: an instructor prepares the data file in a folder that learners
can only read. The lesson uses that file as it is, offline, without Keras' CIFAR-10 loader, and
writes the learners' own files (records, saved models, their HDF5 files) to their work folder.

Every notebook is covered in three ways:

- every notebook runs complete, in quick mode on the synthetic stand-in, offline, as an
  unprivileged process with the data folder read-only: every cell runs, and nothing is
  written into the data folder. This is the suite's one run of every complete notebook
  (``make check-notebooks`` runs them with nbval, for an instructor): in two tests, 04 and 05
  (the guide's workshop) and the rest, both in this file's process of ``make test``. On a 2-core Intel
  Xeon virtual machine shared with other work (2026-11-27), 04 and 05 took 30 to 56 s, and
  06 to 09 68 s when the machine was quiet (several times longer under load);
- every place any notebook writes a file is found by reading its code
  (``tests/notebook_writes.py``), and no code cell names the data folder: a new write is
  caught even where a run would not reach it (a GPU-only branch);
- each of those paths is computed with the notebook's own code, as that unprivileged process
  with a learner's settings, and written into: every one is in the work folder.

"Unprivileged": as root, the process runs without root's capabilities (``setpriv``), so that
file permissions apply to it as to any learner; as another user, as that user.
"""

import contextlib
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import closed_port_url
from notebook_writes import writes

from gpulesson.datasets import cifar10
from gpulesson.datasets import load as data
from gpulesson.datasets.settings import Settings
from gpulesson.errors import DataFolderError

ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder: Path) -> dict:
    """Every file and folder under ``folder``: name, size, modification time and contents."""
    found = {}
    for path in sorted(folder.rglob("*")):
        stat = path.stat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        found[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns, digest)
    return found


@contextlib.contextmanager
def read_only(folder: Path):
    """``folder`` and its files read-only, also for root (who ignores modes): then made immutable
    with chattr where the filesystem allows. Yields whether writing is really refused; the
    tests also compare snapshots, so they hold either way."""
    paths = [folder, *folder.rglob("*")]
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    locked = []
    if os.access(folder, os.W_OK) and shutil.which("chattr"):
        for path in paths:
            if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0:
                locked.append(path)
    try:
        probe = folder / ".probe"
        try:
            probe.touch()
        except OSError:
            enforced = True
        else:
            probe.unlink()
            enforced = False
        yield enforced
    finally:
        for path in locked:
            subprocess.run(["chattr", "-i", str(path)], capture_output=True)
        for path in paths:
            path.chmod(0o755 if path.is_dir() else 0o644)


def prepared_folder(folder: Path, source: str) -> Settings:
    """``folder`` with the quick-mode file of ``source``, as an instructor prepares it. A
    "cifar10" file is made of the stand-in's images (CIFAR-10 cannot be downloaded here)."""
    settings = Settings(source, quick=True, data_dir=folder)
    train, test, _, names = data.load_arrays(Settings("synthetic", quick=True, data_dir=folder),
                                             progress=False)
    if source == "cifar10":
        names = cifar10.CLASS_NAMES
    data.prepare(settings, arrays=(train, test, source, names), progress=False)
    return settings


@pytest.fixture
def offline(monkeypatch):
    """No network for this process: every connection to another host is refused."""
    def refuse(sock, address, *args):
        raise OSError(101, f"Network is unreachable (the test is offline): {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


def _no_loader(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the data were loaded (Keras' CIFAR-10 loader or the stand-in's "
                             "maker) although a prepared file was there")

    monkeypatch.setattr(data, "load_arrays", never)
    monkeypatch.setattr(cifar10, "load_cifar10", never)


@pytest.mark.bad_input("unwritable folder")
@pytest.mark.parametrize("source", ["synthetic", "cifar10"])
def test_a_prepared_file_in_a_read_only_folder_is_used_as_it_is(tmp_path, monkeypatch, offline,
                                                                capsys, source):
    settings = prepared_folder(tmp_path / "shared", source)
    before = snapshot(settings.data_dir)
    _no_loader(monkeypatch)
    with read_only(settings.data_dir):
        assert data.prepare(settings, progress=False) == settings.hdf5_path
        train, test, got_source, names = data.load_prepared(settings, progress=False)
    assert "Reusing" in capsys.readouterr().out
    assert got_source == source and len(names) == 10
    assert train[0].shape == (settings.n_train, 32, 32, 3) and len(test[1]) == settings.n_test
    assert snapshot(settings.data_dir) == before


def test_the_prepared_arrays_are_those_load_arrays_gives(tmp_path):
    """In their original order: the episode shuffles and writes them itself, the same file."""
    settings = Settings("synthetic", quick=True, data_dir=tmp_path)
    expected = data.load_arrays(settings, progress=False)
    got = data.load_prepared(settings, progress=False)  # no file yet: made, then read
    assert settings.hdf5_path.is_file()
    for want, have in zip(expected[:2], got[:2], strict=True):
        np.testing.assert_array_equal(want[0], have[0])
        np.testing.assert_array_equal(want[1], have[1])
    assert got[2:] == ("synthetic", tuple(expected[3]))
    # The file itself holds the rows shuffled once (a slice of it mixes the classes).
    with __import__("h5py").File(settings.hdf5_path, "r") as f:
        assert not np.array_equal(f["y_train"][()], expected[0][1])


def _message_lines(message: str) -> list[str]:
    return [line for line in message.splitlines() if line.strip()]


@pytest.mark.bad_input("unwritable folder")
@pytest.mark.parametrize("source", ["synthetic", "cifar10"])
def test_a_read_only_folder_without_the_file_says_what_to_do(tmp_path, monkeypatch, offline,
                                                             source):
    folder = tmp_path / "shared"
    folder.mkdir()
    settings = Settings(source, quick=True, data_dir=folder)
    _no_loader(monkeypatch)  # nothing is loaded before the folder is known to take the file
    with read_only(folder) as enforced:
        if not enforced:
            pytest.skip("no way to make a folder read-only for this user here")
        with pytest.raises(DataFolderError) as failed:
            data.load_prepared(settings, progress=False)
    message = str(failed.value)
    assert message.startswith(f"There is no prepared file {settings.hdf5_path}, and the data "
                              f"folder {folder} cannot be written to")
    for part in ("ask your instructor", f"python -m gpulesson.datasets.prepare --data {source} --quick",
                 "%env LESSON_DATA_DIR=~/gpulesson-data", "export LESSON_DATA_DIR="):
        assert part in message, message
    assert ("login node" in message) is (source == "cifar10")
    assert len(_message_lines(message)) <= 6 and failed.value.__cause__ is None
    assert not any(folder.iterdir())


@pytest.mark.bad_input("unwritable folder")
def test_a_read_only_file_of_other_settings_says_why_it_cannot_be_used(tmp_path, monkeypatch,
                                                                       offline):
    settings = prepared_folder(tmp_path / "shared", "synthetic")
    before = snapshot(settings.data_dir)
    _no_loader(monkeypatch)
    with read_only(settings.data_dir) as enforced:
        if not enforced:
            pytest.skip("no way to make a folder read-only for this user here")
        with pytest.raises(DataFolderError) as failed:
            data.prepare(settings, seed=7, progress=False)
    message = str(failed.value)
    assert "does not match the settings (it was made with seed 0, not 7)" in message
    assert "ask your instructor" in message and snapshot(settings.data_dir) == before


@pytest.mark.bad_input("no internet")
def test_a_fresh_python_reads_the_shared_file_without_keras_or_network(tmp_path):
    """What a notebook's first cell does, in a new process: no Keras, no TensorFlow imported,
    no download (Keras' cache is empty and every proxy leads nowhere)."""
    settings = prepared_folder(tmp_path / "shared", "cifar10")
    nowhere = closed_port_url("")
    env = {**os.environ, "LESSON_DATA": "cifar10", "LESSON_QUICK": "1",
           "LESSON_DATA_DIR": str(settings.data_dir), "LESSON_WORK_DIR": str(tmp_path / "work"),
           "KERAS_HOME": str(tmp_path / "keras"), "LESSON_CIFAR10_URL": nowhere + "cifar.tgz",
           "http_proxy": nowhere, "https_proxy": nowhere, "HTTP_PROXY": nowhere,
           "HTTPS_PROXY": nowhere}
    code = ("import sys\nfrom gpulesson.datasets.load import load_prepared\n"
            "train, test, source, names = load_prepared()\n"
            "print(source, len(train[0]), sorted({'keras', 'tensorflow'} & set(sys.modules)))")
    before = snapshot(settings.data_dir)
    with read_only(settings.data_dir):
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == f"cifar10 {settings.n_train} []", done.stdout
    assert snapshot(settings.data_dir) == before and not (tmp_path / "keras").exists()


# --- the guide's setup, end to end: notebooks 04 and 05 on a read-only folder, offline ----------

# Imported first by every Python of the notebooks' kernel: no connection leaves this machine
# (the kernel's own sockets are ZeroMQ's, below Python, and on this machine).
OFFLINE_SITECUSTOMIZE = '''
import socket

_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex


def _local(sock, address):
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return True
    return str(address[0]) in ("127.0.0.1", "::1", "localhost")


def connect(sock, address):
    if not _local(sock, address):
        raise OSError(101, "Network is unreachable (offline test)")
    return _connect(sock, address)


def connect_ex(sock, address):
    return _connect_ex(sock, address) if _local(sock, address) else 101


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
'''
GUIDE_NOTEBOOKS = ("04-data-pipeline.ipynb", "05-cpu-vs-gpu.ipynb")
OTHER_NOTEBOOKS = tuple(path.name for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
                        if path.name not in GUIDE_NOTEBOOKS)
# What each group leaves in the learner's work folder (at least).
THEIR_FILES = {GUIDE_NOTEBOOKS: {"synthetic-quick.h5", "my-results.jsonl", "cifar-cnn.keras"},
               OTHER_NOTEBOOKS: {"my-matmul.jsonl", "breast-cancer-mlp-best.keras",
                                 "breast-cancer-mlp.keras", "my-torch-results.jsonl", "feeding"}}

# Run in an unprivileged process: each notebook, complete, in a kernel of its own; the outputs of
# the code cells to the file named second. A cell that fails stops it with its traceback.
RUN_NOTEBOOKS = """
import json, sys
import nbformat
from nbclient import NotebookClient
folder, out, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
found = {}
for path in paths:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": folder}}).execute()
    found[path] = [output for cell in notebook.cells if cell.cell_type == "code"
                   for output in cell.get("outputs", [])]
with open(out, "w") as f:
    json.dump(found, f)
"""


def unprivileged() -> list[str]:
    """The command prefix that runs a program as an unprivileged process: nothing for a user
    who is not root; for root, ``setpriv`` without any of root's capabilities, so that file
    permissions apply as to any learner. Skips the test, saying why, where neither works."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, and setpriv (util-linux) is not installed: no way to run "
                    "the notebooks as an unprivileged process here")
    prefix = [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--"]
    probe = subprocess.run([*prefix, sys.executable, "-c",
                            "print(open('/proc/self/status').read())"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or "CapEff:\t0000000000000000" not in probe.stdout:
        pytest.skip("running as root, and setpriv cannot drop root's capabilities here: "
                    + (probe.stderr.strip().splitlines() or ["no reason given"])[-1])
    return prefix


def learner_environment(tmp_path: Path, settings: Settings) -> dict:
    """A learner's environment: quick, synthetic, the shared folder, a work folder and a home of
    their own, and no network (every Python of it imports the blocker first)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    blocker = tmp_path / "offline"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(OFFLINE_SITECUSTOMIZE)
    nowhere = closed_port_url("")
    return {**os.environ,
            "LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
            "LESSON_DATA_DIR": str(settings.data_dir), "LESSON_WORK_DIR": str(tmp_path / "work"),
            "HOME": str(home), "KERAS_HOME": str(tmp_path / "keras"),
            "LESSON_CIFAR10_URL": nowhere + "cifar.tgz", "http_proxy": nowhere,
            "https_proxy": nowhere, "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere,
            "PYTHONPATH": os.pathsep.join([str(blocker), str(ROOT)])}


@pytest.mark.bad_input("unwritable folder")
def test_the_guides_shared_folder_runs_notebooks_04_and_05_offline(tmp_path):
    """The guide's setup: the instructor prepared the (quick, synthetic) file in a folder that
    learners can only read; no network; the notebooks run by an unprivileged process. The
    complete notebooks run clean, write nothing into the data folder, and the learner's file,
    records and saved model are in the learner's work folder."""
    run_offline(tmp_path, GUIDE_NOTEBOOKS)


@pytest.mark.bad_input("unwritable folder")
def test_the_guides_shared_folder_runs_every_other_notebook_offline(tmp_path):
    """As notebooks 04 and 05: every other notebook, complete."""
    run_offline(tmp_path, OTHER_NOTEBOOKS)


def run_offline(tmp_path: Path, group: tuple[str, ...]) -> None:
    """Run the notebooks ``group`` as a learner of the guide's setup would, and check them."""
    prefix = unprivileged()
    settings = prepared_folder(tmp_path / "shared", "synthetic")
    work = tmp_path / "work"
    env = learner_environment(tmp_path, settings)
    before = snapshot(settings.data_dir)
    folder = tmp_path / "my-notebooks"  # the learner's copies run from here
    folder.mkdir()
    out = tmp_path / "outputs.json"
    with read_only(settings.data_dir):
        done = subprocess.run(
            [*prefix, sys.executable, "-c", RUN_NOTEBOOKS, str(folder), str(out),
             *(str(ROOT / "notebooks" / name) for name in group)],
            env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-4000:]
    assert snapshot(settings.data_dir) == before, "something was written to the data folder"
    ran = json.loads(out.read_text())
    assert len(ran) == len(group)
    for name, cell_outputs in ran.items():
        assert not [o for o in cell_outputs if o.get("output_type") == "error"], name
        text = "".join(o.get("text", "") for o in cell_outputs)
        for problem in ("Traceback", "PermissionError", "Read-only file system", "Could not get"):
            assert problem not in text, (name, text[-3000:])
    # The learner's own files: their HDF5 copy (episode 4), records and saved models.
    mine = sorted(path.name for path in work.iterdir())
    assert THEIR_FILES[group] <= set(mine), mine
    for records in THEIR_FILES[group]:
        if records.endswith(".jsonl"):
            assert (work / records).read_text().strip(), records
    assert not (tmp_path / "keras" / "datasets").exists(), "Keras' loader was called"


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EVERY_WRITE = [write for notebook in NOTEBOOKS for write in writes(notebook)]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_notebook_names_the_data_folder_in_its_code(notebook):
    """``settings.data_dir`` is the shared folder: the notebooks read their file through
    ``prepare(settings)`` and ``settings.hdf5_path`` and never build a path in that folder."""
    import ast

    from notebook_writes import code_cells

    for number, code in enumerate(code_cells(notebook)):
        named = [node for node in ast.walk(ast.parse(code))
                 if isinstance(node, ast.Attribute) and node.attr == "data_dir"]
        assert not named, f"{notebook.name} code cell {number} names settings.data_dir"


def test_every_write_of_every_notebook_is_traced_to_the_code_that_makes_its_path():
    assert len(EVERY_WRITE) >= 10, "the notebooks' records, models and files are found"
    assert not [str(w) + ": " + w.problem for w in EVERY_WRITE if w.problem]


# Run as the learner: each write's path made by the notebook's own code, then written into.
WRITE_PATHS = """
import json, sys
from pathlib import Path
from gpulesson.datasets.settings import get_settings, keep_earlier
settings = get_settings()
found = []
for setup, path in json.loads(sys.argv[1]):
    names = {"settings": settings, "keep_earlier": keep_earlier, "Path": Path}
    for line in setup:
        exec(line, names)
    target = Path(eval(path, names)).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    probe = target.with_name(target.name + ".probe")
    probe.write_text("written by the learner")
    probe.unlink()
    found.append(str(target))
print(json.dumps(found))
"""


@pytest.mark.bad_input("unwritable folder")
def test_every_notebook_writes_only_into_the_work_folder(tmp_path):
    """Each path found by :func:`test_every_write_of_every_notebook_is_traced_to_the_code_that_
    makes_its_path`, computed by the notebook's code as an unprivileged learner's process, with
    the shared folder read-only: it is in the work folder, and it can be written."""
    prefix = unprivileged()
    settings = prepared_folder(tmp_path / "shared", "synthetic")
    env = learner_environment(tmp_path, settings)
    before = snapshot(settings.data_dir)
    job = [[list(write.setup), write.path] for write in EVERY_WRITE]
    with read_only(settings.data_dir):
        done = subprocess.run([*prefix, sys.executable, "-c", WRITE_PATHS, json.dumps(job)],
                              env=env, capture_output=True, text=True, timeout=120,
                              cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    work = (tmp_path / "work").resolve()
    for write, target in zip(EVERY_WRITE, json.loads(done.stdout.splitlines()[-1]), strict=True):
        assert Path(target).is_relative_to(work), f"{write} writes {target}, outside {work}"
    assert snapshot(settings.data_dir) == before


@pytest.mark.bad_input("unwritable folder")
def test_a_shared_filesystem_without_file_locks_is_not_called_damage(tmp_path, monkeypatch,
                                                                     capsys):
    """NFS without its lock service refuses the lock HDF5 takes to open a file: the file is
    fine, so the message says how to read it without locks, and nothing is re-created."""
    from gpulesson.datasets import hdf5
    from gpulesson.errors import DataFileError, LessonDataError

    settings = prepared_folder(tmp_path / "shared", "synthetic")
    before = snapshot(settings.data_dir)

    def no_locks(path, verify_checksum):
        raise OSError("Unable to synchronously open file (unable to lock file, errno = 37, "
                      "error message = 'No locks available')")

    monkeypatch.setattr(hdf5, "_read_info", no_locks)
    _no_loader(monkeypatch)
    with pytest.raises(LessonDataError) as failed:
        data.prepare(settings, progress=False)
    assert not isinstance(failed.value, DataFileError)
    message = str(failed.value)
    assert f"HDF5 cannot lock {settings.hdf5_path}" in message and "No locks available" in message
    assert "%env HDF5_USE_FILE_LOCKING=FALSE" in message and "damaged" not in message
    assert "re-creating" not in capsys.readouterr().out and snapshot(settings.data_dir) == before
