"""What a newcomer meets first: an unwritable data folder, a data file damaged while the kernel
holds it open, and the lesson's errors as a notebook shows them (the message, alone)."""

import os
import sys
import uuid
from pathlib import Path

import pytest
from data_fixtures import closed_port_url
from fresh_kernel import fresh_kernel

from gpulesson import lesson
from gpulesson.datasets import load as data
from gpulesson.datasets import prepare
from gpulesson.datasets.hdf5 import open_handles, validate_hdf5
from gpulesson.datasets.settings import Settings
from gpulesson.errors import DataFolderError, check_writable

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def read_only_folder(tmp_path):
    """A data folder this process cannot write to: read-only by its mode, or, for root (who
    writes anywhere), a folder in the kernel's sysfs, which nobody may create files in."""
    folder = tmp_path / "shared" / "gpulesson-data"
    folder.mkdir(parents=True)
    folder.chmod(0o555)
    if os.access(folder, os.W_OK):
        folder = Path("/sys/gpulesson-test-data")
        if sys.platform != "linux" or not Path("/sys").is_dir():
            pytest.skip("no read-only folder for root on this system")
    yield folder
    if folder.is_relative_to(tmp_path):
        folder.chmod(0o755)


def _says_how_to_choose_another(message: str, folder: Path) -> None:
    for part in (str(folder), "LESSON_DATA_DIR", "%env LESSON_DATA_DIR=", "--data-dir",
                 "export LESSON_DATA_DIR="):
        assert part in message, message


# --- 2. an unwritable data folder --------------------------------------------------------------

@pytest.mark.bad_input("unwritable folder")
def test_prepare_command_stops_at_once_on_an_unwritable_folder(read_only_folder, monkeypatch,
                                                               capsys):
    def no_long_work(*args, **kwargs):
        raise AssertionError("the data were made before the folder was checked")

    monkeypatch.setattr(data, "load_arrays", no_long_work)
    code = prepare.main(["--data", "synthetic", "--quick", "--data-dir", str(read_only_folder)])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: There is no prepared file"), err
    assert "cannot be written to" in err and "ask your instructor" in err
    _says_how_to_choose_another(err, read_only_folder)
    assert "Traceback" not in err and "Unable to synchronously" not in err
    assert not list(read_only_folder.glob("*.h5")) and not list(read_only_folder.glob(".*tmp"))


@pytest.mark.bad_input("unwritable folder")
def test_the_data_writing_cell_names_the_folder(read_only_folder):
    settings = Settings(data="synthetic", quick=True, data_dir=read_only_folder)
    with pytest.raises(DataFolderError) as failed:
        data.prepare(settings, progress=False)
    _says_how_to_choose_another(str(failed.value), read_only_folder)
    # A chained PermissionError would only repeat the message, further down.
    assert failed.value.__cause__ is None and failed.value.__suppress_context__


@pytest.mark.bad_input("unwritable folder")
def test_a_valid_file_in_a_folder_shared_read_only_is_used(tmp_path, monkeypatch):
    settings = Settings(data="synthetic", quick=True, data_dir=tmp_path)
    path = data.prepare(settings, progress=False)
    before = path.read_bytes()

    def unwritable(folder, *args, **kwargs):
        raise DataFolderError(f"{folder} is read-only")

    # An instructor's shared, read-only folder with the file prepared: nothing needs writing.
    monkeypatch.setattr(data, "check_writable", unwritable)
    assert data.prepare(settings, progress=False) == path
    assert path.read_bytes() == before


@pytest.mark.bad_input("unwritable folder")
def test_a_file_in_place_of_the_folder_is_named(tmp_path):
    not_a_folder = tmp_path / "gpulesson-data"
    not_a_folder.write_text("a file, not a folder")
    with pytest.raises(DataFolderError) as failed:
        check_writable(not_a_folder / "inside")
    assert str(not_a_folder / "inside") in str(failed.value)
    assert "LESSON_DATA_DIR" in str(failed.value)  # the data folder's setting, and how to set it
    assert not_a_folder.read_text() == "a file, not a folder"


@pytest.mark.bad_input("unwritable folder")
def test_a_file_written_elsewhere_names_no_data_setting(tmp_path):
    """A learner's own HDF5 file (episode 4) goes where they chose: the message about a folder
    that cannot be written must not send them to the data folder's setting."""
    import numpy as np

    from gpulesson.datasets.hdf5 import write_hdf5

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file")
    x, y = np.zeros((10, 32, 32, 3), np.uint8), np.zeros(10, np.uint8)
    with pytest.raises(DataFolderError) as failed:
        write_hdf5(blocked / "mine.h5", (x, y), (x, y), source="synthetic",
                   class_names=[str(i) for i in range(10)], progress=False)
    assert "work folder" in str(failed.value) and "LESSON_DATA_DIR" not in str(failed.value)


# --- 3. a file damaged while this kernel holds it open ------------------------------------------

@pytest.mark.bad_input("truncated file")
def test_the_repair_works_in_the_kernel_that_holds_the_damaged_file(tmp_path, capsys):
    settings = Settings(data="synthetic", quick=True, data_dir=tmp_path)
    path = data.prepare(settings, progress=False)
    training, _, _ = lesson.split_batches(path, 64)
    training[0]
    assert open_handles(path), "the generator should hold the file open"
    # Cut short in place (an interrupted copy over it), while the generator holds it.
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 3)

    # The loading cell: a clear message with the command that repairs it, no KeyError.
    with pytest.raises(data.DataFileError) as failed:
        lesson.split_batches(path, 64)
    assert "truncated or damaged" in str(failed.value)
    assert "python -m gpulesson.datasets.prepare --data synthetic --quick" in str(failed.value)
    assert not open_handles(path), "the stale handles should be closed"

    # The data-writing cell repairs it, in the same process, without a restart...
    assert data.prepare(settings, progress=False) == path
    assert "re-creating it" in capsys.readouterr().out
    # ... and the loading cell works again.
    training, _, _ = lesson.split_batches(path, 64)
    x, _ = training[0]
    assert x.shape[0] == 64 and validate_hdf5(path, verify_checksum=True).n_train == 2000


# --- 4. the lesson's errors in a notebook: the message, alone ------------------------------------

def _run_cells(cells, env, folder: Path, timeout=120):
    """Run ``cells`` in a fresh IPython kernel of this environment; each cell's status and error
    outputs."""
    with fresh_kernel(env, folder, timeout) as client:
        results = []
        for code in cells:
            errors = []

            def keep_errors(msg, errors=errors):
                if msg["msg_type"] == "error":
                    errors.append(msg["content"])

            reply = client.execute_interactive(code, timeout=timeout, output_hook=keep_errors)
            results.append((reply["content"]["status"], errors))
        return results


@pytest.mark.bad_input("bad argument")
@pytest.mark.bad_input("no internet")
def test_a_notebook_shows_the_lesson_errors_as_their_message_alone(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LESSON_DATA": "cifar100",
           "JUPYTER_PATH": str(tmp_path / "jupyter"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "KERAS_HOME": str(tmp_path / "keras"), "LESSON_CIFAR10_URL": closed_port_url(),
           "IPYTHONDIR": str(tmp_path / "ipython"), "JPY_SESSION_NAME": uuid.uuid4().hex,
           # urllib reaches 127.0.0.1 directly even where a proxy is configured
           "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
    (status_settings, settings_errors), (status_download, download_errors), (status_other,
                                                                            other_errors), \
        (status_blanks, blanks_errors) = _run_cells([
            "from gpulesson.datasets.settings import get_settings\nsettings = get_settings()",
            "from gpulesson.datasets.cifar10 import cifar10_source, load_cifar10\n"
            "load_cifar10(*cifar10_source(), progress=False)",
            "1 / 0",
            # An exercise's function with a blank left: stopped in its own cell (episode 5).
            "from gpulesson.classroom.catchup import check_filled\n\n\ndef train_on(device):\n"
            "    return ____\n\n\ncheck_filled(train_on)",
        ], env, tmp_path)

    # The cells failed (Run All stops there), each with one error output ...
    assert status_settings == status_download == "error"
    for errors, name, first in (
            (settings_errors, "SettingsError", "LESSON_DATA='cifar100' is not a known data set"),
            (download_errors, "DataUnavailableError", "Could not get CIFAR-10 from")):
        assert len(errors) == 1, errors
        error = errors[0]
        text = "\n".join(error["traceback"])
        # ... that is the message, first and alone: no traceback, no chained exceptions.
        assert error["ename"] == name and text.startswith(f"{name}: {first}"), text
        assert "Traceback" not in text and "During handling" not in text, text
        assert "gaierror" not in text and "File " not in text, text
        # And how to set the variable from inside JupyterLab.
        assert "%env LESSON_DATA=" in text and "Restart Kernel and Run All Cells" in text, text
    assert status_blanks == "error" and len(blanks_errors) == 1, blanks_errors
    text = "\n".join(blanks_errors[0]["traceback"])
    assert text.startswith("BlanksLeftError: train_on still holds blanks (____) in these lines:\n"
                           "    return ____\nFill in each blank"), text
    assert "Traceback" not in text and "catch-up cell" in text, text
    # Errors that are not the lesson's keep their full traceback.
    assert status_other == "error" and len(other_errors) == 1
    assert "Traceback" in "".join(other_errors[0]["traceback"]), other_errors
