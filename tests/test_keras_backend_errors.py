"""A Keras backend chosen but not installed (KERAS_BACKEND=jax after 'make lab', which installs
TensorFlow only): one short message naming the backend and how to install it, in every place
that would otherwise show Keras' long traceback; the device report says it instead of crashing."""

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest import ROOT, blocked_imports
from fresh_kernel import fresh_kernel
from test_learner_errors import _run_cells

from gpulesson.machine import backends


@pytest.fixture
def without_jax(tmp_path):
    """The environment of a Python in which JAX cannot be imported (as after 'make lab')."""
    return {**blocked_imports(tmp_path / "blocker", "jax", "jaxlib", paths=[ROOT]),
            "KERAS_BACKEND": "jax", "KERAS_HOME": str(tmp_path / "keras")}


def _says_how_to_install_jax(text: str, notebook: bool = False) -> None:
    """The advice of a notebook (a cell, the kernel's restart) or of a terminal (export, the
    command again), never the other's."""
    assert "Keras is set to the backend 'jax' (KERAS_BACKEND), but JAX is not installed" in text
    assert f"{sys.executable} -m pip install jax==0.10.2 jaxlib==0.10.2" in text, text
    assert "requirements/backends.txt" in text and "export KERAS_BACKEND=tensorflow" in text
    assert ("%env KERAS_BACKEND=tensorflow" in text) is notebook
    assert ("Restart Kernel" in text) is notebook
    assert ("run the command again" in text) is not notebook


@pytest.mark.bad_input("missing package")
def test_import_keras_fails_with_one_short_message_until_another_backend_is_chosen(without_jax):
    code = (
        "import os\nimport gpulesson\n"
        "for attempt in range(2):\n"
        "    try:\n        from keras import layers\n"
        "    except ImportError as exc:\n"
        "        print(type(exc).__name__, exc.__cause__, exc.__context__, sep='|')\n"
        "        print(exc)\n"
        "os.environ['KERAS_BACKEND'] = 'tensorflow'\n"
        "import keras\nprint('now', keras.backend.backend())\n")
    done = subprocess.run([sys.executable, "-c", code], env=without_jax, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # Every attempt: the lesson's error, with nothing chained to it, the same few lines.
    assert out.count("KerasBackendError|None|None") == 2, out
    message = out.split("KerasBackendError|None|None\n")[1]
    _says_how_to_install_jax(message)
    assert len(message.strip().splitlines()) <= 4, message
    # Chosen again, Keras imports normally (the check is made again at each import).
    assert out.strip().endswith("now tensorflow"), out


@pytest.mark.bad_input("missing package")
def test_a_notebook_shows_the_missing_backend_as_its_message_alone(without_jax, tmp_path):
    env = {**without_jax, "JUPYTER_PATH": str(tmp_path / "jupyter"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "IPYTHONDIR": str(tmp_path / "ipython"),
           "JPY_SESSION_NAME": uuid.uuid4().hex}
    results = _run_cells(["from gpulesson.datasets.settings import get_settings\nsettings = get_settings()",
                          "import keras", "from keras import layers"], env, tmp_path)
    assert results[0] == ("ok", [])
    for status, errors in results[1:]:
        assert status == "error" and len(errors) == 1, errors
        text = "\n".join(errors[0]["traceback"])
        assert errors[0]["ename"] == "KerasBackendError" and "Traceback" not in text, text
        assert text.startswith("KerasBackendError: Keras is set to the backend 'jax'"), text
        _says_how_to_install_jax(text, notebook=True)
        assert len(text.splitlines()) <= 4, text


@pytest.mark.bad_input("missing package")
def test_the_device_report_says_the_backend_is_missing(without_jax):
    done = subprocess.run([sys.executable, "-m", "gpulesson.machine.devices"], env=without_jax,
                          capture_output=True, text=True, timeout=300)
    # A failure: nothing would train (the report says so, not "will run on the CPU").
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert re.search(r"^Keras 3\.\S+: cannot start\. Keras is set to the backend 'jax'",
                     done.stdout, re.M), done.stdout
    _says_how_to_install_jax(done.stdout)
    assert "training will run on the CPU" not in done.stdout
    assert "JAX: not installed" in done.stdout and "TensorFlow 2." in done.stdout


@pytest.mark.bad_input("missing package")
def test_a_backend_chosen_in_keras_json_is_named_with_its_file(tmp_path, monkeypatch):
    (tmp_path / "keras.json").write_text(json.dumps({"backend": "torch"}))
    monkeypatch.setattr(backends.importlib.util, "find_spec",
                        lambda name: None if name == "torch" else object())
    message = backends.missing_backend_message({"KERAS_HOME": str(tmp_path)})
    assert f"'torch' ({tmp_path / 'keras.json'} (\"backend\"))" in message
    assert "PyTorch is not installed" in message and "pip install torch==2.15.0" in message
    assert f"change the backend in {tmp_path / 'keras.json'}" in message
    # KERAS_BACKEND wins over the file, as in Keras.
    assert backends.missing_backend_message({"KERAS_HOME": str(tmp_path),
                                             "KERAS_BACKEND": "tensorflow"}) is None


@pytest.mark.bad_input("bad argument")
def test_a_backend_keras_does_not_have_is_named_with_the_choices(tmp_path):
    message = backends.missing_backend_message({"KERAS_BACKEND": "jaxx",
                                                "KERAS_HOME": str(tmp_path)})
    assert "backend 'jaxx', which Keras does not have" in message
    assert "tensorflow, jax, torch" in message
    assert backends.missing_backend_message({"KERAS_BACKEND": "numpy"}) is None


def test_the_versions_to_install_are_the_lesson_pins():
    def pins(name):
        text = (ROOT / "requirements" / name).read_text()
        return set(re.findall(r"^([A-Za-z0-9_.\-\[\]]+==[^\s;]+)", text, re.M))

    assert set(backends.LESSON_BACKENDS["jax"][2]) <= pins("backends.txt")
    assert set(backends.LESSON_BACKENDS["torch"][2]) <= pins("torch.txt")
    assert set(backends.LESSON_BACKENDS["tensorflow"][2]) <= pins("cpu.txt")


# --- TensorFlow's start-up notes -----------------------------------------------------------------

def _stream_outputs(cells, env, folder: Path) -> list[str]:
    """What each cell printed on stderr, run in a fresh kernel (the kernel forwards what C++
    libraries write to file descriptor 2, as JupyterLab shows it)."""
    with fresh_kernel(env, folder) as client:
        printed = []
        for code in cells:
            err = []

            def keep(msg, err=err):
                if msg["msg_type"] == "stream" and msg["content"]["name"] == "stderr":
                    err.append(msg["content"]["text"])

            reply = client.execute_interactive(code, timeout=300, output_hook=keep)
            assert reply["content"]["status"] == "ok", reply["content"]
            printed.append("".join(err))
        return printed


# What TensorFlow 2.21 prints at its import despite TF_CPP_MIN_LOG_LEVEL=1 (twice).
NOTES = ("absl::InitializeLog", "oneDNN custom operations")


@pytest.mark.parametrize("first", ["import gpulesson.datasets.settings\n", ""], ids=["lesson", "without"])
def test_tensorflow_start_up_notes_stay_out_of_the_notebook(tmp_path, first):
    """In the learner's kernel (TF_CPP_MIN_LOG_LEVEL=1, as 'make kernel' sets it), importing
    Keras after gpulesson shows none of TensorFlow's start-up notes; without gpulesson they are
    there (which shows this test can see them), and a warning printed during the import stays."""
    # Without PYTEST_CURRENT_TEST: ipykernel forwards file descriptor 2 only outside pytest.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
           "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "1",
           "KERAS_BACKEND": "tensorflow", "JUPYTER_PATH": str(tmp_path / "jupyter"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data"), "IPYTHONDIR": str(tmp_path / "ipython"),
           "JPY_SESSION_NAME": uuid.uuid4().hex}
    cells = [first + "import keras\nimport tensorflow as tf\nprint(float(tf.constant(2.0) + 1))"]
    [printed] = _stream_outputs(cells, env, tmp_path)
    if first:
        assert not any(note in printed for note in NOTES), printed
    else:
        assert all(note in printed for note in NOTES), printed


def test_only_the_info_notes_are_left_out():
    text = (f"{backends._ABSL_PREAMBLE}\n"
            "I0000 00:00:1795665936.790551   18937 port.cc:153] oneDNN custom operations are on.\n"
            "I0000 00:00:1795665936.892138   18937 cpu_feature_guard.cc:227] This TensorFlow "
            "binary is optimized\nTo enable the following instructions: AVX2, rebuild TensorFlow\n"
            "W0000 00:00:1795665936.9   18937 gpu_device.cc:2342] Cannot dlopen some GPU libraries.\n"
            "Skipping registering GPU devices...\n"
            "E0000 00:00:1795665937.1   18937 cuda_executor.cc:1] failed call to cuInit\n"
            "Something else entirely\n")
    assert backends.drop_info_notes(text) == (
        "W0000 00:00:1795665936.9   18937 gpu_device.cc:2342] Cannot dlopen some GPU libraries.\n"
        "Skipping registering GPU devices...\n"
        "E0000 00:00:1795665937.1   18937 cuda_executor.cc:1] failed call to cuInit\n"
        "Something else entirely\n")


KERAS_IMPORT = re.compile(r"^\s*(?:import keras\b|from keras\b)", re.MULTILINE)
LESSON_IMPORT = re.compile(r"^\s*(?:import gpulesson\b|from gpulesson\b)", re.MULTILINE)


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")),
                         ids=lambda path: path.stem)
def test_each_notebook_imports_the_lessons_package_before_keras(notebook):
    """The package checks the backend and quiets TensorFlow's start when it is imported: a
    notebook that imports Keras first shows the long traceback and the start-up notes."""
    code = "\n".join("".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
                     if cell["cell_type"] == "code")
    keras = KERAS_IMPORT.search(code)
    if keras is None:
        pytest.skip("imports no Keras")
    lesson = LESSON_IMPORT.search(code)
    assert lesson and lesson.start() < keras.start(), \
        f"{notebook.name}: Keras is imported before the lesson's package"
