"""JupyterLab with the lesson kernel, as the setup page has learners use it.

The kernel is registered with the command from setup.md (and 'make kernel'), but into a temporary
Jupyter data folder, so that the kernels of whoever runs the tests are left alone. JupyterLab is
started headless on 127.0.0.1 with a random token; the test then does what a learner does in the
browser, through the server's REST API and the kernel's websocket: find the kernel "Python
(gpulesson)", open a lesson notebook, start its kernel, run its first code cells and read what
they print.
"""

import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from localhost import free_port

requests = pytest.importorskip("requests")
# jupyter_server depends on websocket-client, so JupyterLab always brings it.
websocket = pytest.importorskip("websocket")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "notebooks/01-introduction.ipynb"
KERNEL = "gpulesson"
DISPLAY_NAME = "Python (gpulesson)"
STARTUP_S = 30
CELL_S = 40


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="module")
def jupyter_env(tmp_path_factory):
    """Environment with private Jupyter folders and the lesson kernel registered there."""
    home = tmp_path_factory.mktemp("jupyter-home")
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
        JUPYTER_PLATFORM_DIRS="0",
        PYTHONUNBUFFERED="1",
    )
    # The command of setup.md; --user writes into JUPYTER_DATA_DIR, here the private one.
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--user",
         "--name", KERNEL, "--display-name", DISPLAY_NAME],
        env=env, check=True, capture_output=True, text=True, timeout=60,
    )
    spec = home / "data" / "kernels" / KERNEL / "kernel.json"
    assert spec.is_file(), "ipykernel install --user did not write into JUPYTER_DATA_DIR"
    # Only the private data folder and the environment's own share/jupyter hold kernels.
    env.pop("JUPYTER_PATH", None)
    return env


@pytest.fixture(scope="module")
def lab(jupyter_env, tmp_path_factory):
    """A running JupyterLab on the lesson folder: (base URL, headers); stopped afterwards."""
    port = free_port()
    token = secrets.token_hex(16)
    log_path = tmp_path_factory.mktemp("jupyter-log") / "lab.log"
    log = open(log_path, "w")
    command = [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser",
               "--ip=127.0.0.1", f"--port={port}", "--port-retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Containers and CI often run as root; JupyterLab refuses that unless told.
        command.append("--allow-root")
    process = subprocess.Popen(
        command, env=jupyter_env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited ({process.returncode}):\n{log_path.read_text()}")
            try:
                if requests.get(f"{base}/api/status", headers=headers, timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer in {STARTUP_S} s:\n{log_path.read_text()}")
            time.sleep(0.3)
        yield base, headers
    finally:
        _stop(process)
        log.close()


def test_lab_lists_the_lesson_kernel(lab):
    base, headers = lab
    # Without the token the server refuses: it is not open to anyone on the machine.
    assert requests.get(f"{base}/api/kernelspecs", timeout=10).status_code == 403
    specs = requests.get(f"{base}/api/kernelspecs", headers=headers, timeout=10).json()
    assert KERNEL in specs["kernelspecs"], sorted(specs["kernelspecs"])
    spec = specs["kernelspecs"][KERNEL]["spec"]
    assert spec["display_name"] == DISPLAY_NAME
    # The kernel runs this environment's Python, the one the lesson package is installed in.
    assert Path(spec["argv"][0]) == Path(sys.executable)
    # The JupyterLab page itself is served (what the browser opens).
    page = requests.get(f"{base}/lab/tree/{NOTEBOOK}", headers=headers, timeout=10)
    assert page.status_code == 200 and "JupyterLab" in page.text


def test_lab_opens_a_lesson_notebook(lab):
    base, headers = lab
    reply = requests.get(f"{base}/api/contents/{NOTEBOOK}", headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    model = reply.json()
    assert model["type"] == "notebook"
    notebook = model["content"]
    assert notebook["metadata"]["kernelspec"]["name"] == KERNEL
    # How to choose the data first, then the episode's title.
    first, title = ("".join(cell["source"]) for cell in notebook["cells"][:2])
    assert "LESSON_DATA=synthetic" in first
    assert title.startswith("# Introduction: what runs where")
    missing = requests.get(f"{base}/api/contents/notebooks/no-such.ipynb",
                           headers=headers, timeout=10)
    assert missing.status_code == 404


def _execute(ws, code: str, timeout: float) -> tuple[str, list[dict]]:
    """Send one execute_request; collect the output until the kernel is idle again."""
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": True,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))
    text, errors, replied, idle = [], [], False, False
    deadline = time.monotonic() + timeout
    while not (replied and idle):
        ws.settimeout(max(0.1, deadline - time.monotonic()))
        message = json.loads(ws.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            text.append(content["text"])
        elif kind in ("execute_result", "display_data"):
            text.append(content["data"].get("text/plain", ""))
        elif kind == "error":
            errors.append(content)
        elif kind == "status" and content["execution_state"] == "idle":
            idle = True
        elif kind == "execute_reply":
            replied = True
            if content["status"] != "ok":
                errors.append(content)
    return "".join(text), errors


def test_lab_runs_the_notebook_cells_on_the_lesson_kernel(lab):
    base, headers = lab
    notebook = requests.get(f"{base}/api/contents/{NOTEBOOK}", headers=headers,
                            timeout=10).json()["content"]
    code_cells = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    # The notebook's own first cells: the setup check, the device report and the settings.
    assert "learner_checks()" in code_cells[0]
    assert "devices.report()" in code_cells[1] and "get_settings" in code_cells[2]

    reply = requests.post(
        f"{base}/api/sessions", headers=headers, timeout=30,
        json={"path": NOTEBOOK, "type": "notebook", "name": "", "kernel": {"name": KERNEL}},
    )
    assert reply.status_code == 201, reply.text
    session = reply.json()
    kernel_id = session["kernel"]["id"]
    assert session["kernel"]["name"] == KERNEL
    try:
        ws_url = base.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels"
        ws = websocket.create_connection(ws_url, header=[
            f"Authorization: {headers['Authorization']}"], timeout=CELL_S)
        try:
            # The setup check runs on the kernel and prints its checklist.
            out, errors = _execute(ws, code_cells[0], CELL_S)
            assert not errors, errors
            assert "Kernel's packages" in out and "not checked" in out, out
            out, errors = _execute(ws, code_cells[1], CELL_S)
            assert not errors, errors
            # The kernel is this environment's Python, on a machine with or without a GPU.
            assert f"({sys.executable})" in out, out
            assert "Keras 3" in out and "backend:" in out, out
            assert "GPU" in out, out
            out, errors = _execute(ws, code_cells[2], CELL_S)
            assert not errors, errors
            # The kernel inherits the server's environment: quick mode on the stand-in.
            assert "synthetic stand-in" in out and "quick mode" in out, out
            # A failing cell gives the learner the error, and the kernel goes on.
            out, errors = _execute(ws, "import no_such_lesson_module", CELL_S)
            assert errors and errors[0]["ename"] == "ModuleNotFoundError", errors
            out, errors = _execute(ws, "print(settings.quick)", CELL_S)
            assert not errors and out.strip() == "True", (out, errors)
        finally:
            ws.close()
    finally:
        gone = requests.delete(f"{base}/api/sessions/{session['id']}", headers=headers,
                               timeout=30)
        assert gone.status_code == 204, gone.text
    kernels = requests.get(f"{base}/api/kernels", headers=headers, timeout=10).json()
    assert kernel_id not in [k["id"] for k in kernels]
