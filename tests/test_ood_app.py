"""The Open OnDemand app ood/gpulesson-jupyterlab, without OnDemand itself.

Its ERB files are rendered with Ruby by a small stand-in of the dashboard (tests/ood_render.rb):
the form's defaults must be the workshop's first session (lesson_schedule.sessions, the CPU
session that episode 2 teaches), its session menu must set each session's request, the form values
must become the right Slurm options (the workshop's reservation only when one is typed), and bad
values must be refused with a message that says what to change; the job activates the site's
conda environment before a .venv in the lesson folder. Then the rendered job, wrapped like
OnDemand's "basic" template wraps it, is submitted to the local Slurm (tests/slurm_cluster.py):
the test waits for JupyterLab, logs in with the password from connection.yml, runs a cell on the
lesson kernel, and cancels the job.
"""

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, lesson_files
from fake_conda import calls, fake_cluster, fake_environment
from slurm_cluster import site_config
from test_jupyterlab import _execute

requests = pytest.importorskip("requests")
websocket = pytest.importorskip("websocket")

APP = ROOT / "ood" / "gpulesson-jupyterlab"
RENDER = ROOT / "tests" / "ood_render.rb"
START_TIMEOUT = 180
SESSIONS = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_schedule"]["sessions"]
FIELDS = ("hours", "cores", "memory_gb", "gpus")


def session_values(session: dict) -> dict:
    """A session's request as form values (the partition by its name in the site config)."""
    site = site_config()
    return {**{field: str(session[field]) for field in FIELDS}, "gpu_type": "any",
            "partition": site[f"{session['partition']}_partition"]}


@pytest.fixture(scope="module")
def ruby():
    found = shutil.which("ruby")
    if found is None:
        pytest.skip("no ruby here: install it (sudo apt-get install ruby; tools/ensure_slurm.sh "
                    "does so when run as root) to test the Open OnDemand app")
    return found


def render(ruby, mode, *args, check=True):
    result = subprocess.run([ruby, str(RENDER), mode, str(APP), *map(str, args)],
                            capture_output=True, text=True, timeout=60, check=False)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def submit(ruby, tmp_path, values, check=True):
    """Render submit.yml.erb and the templates for these form values: (result, staged folder)."""
    values_file = tmp_path / "values.json"
    values_file.write_text(json.dumps(values))
    staged = tmp_path / "staged"
    return render(ruby, "submit", values_file, staged, check=check), staged


def test_the_form_has_episode_2s_fields_with_the_first_sessions_defaults(ruby):
    site = site_config()
    form = json.loads(render(ruby, "form").stdout)
    attributes = form["attributes"]
    assert form["cluster"] == site["ood_cluster"]
    for field in ("session", "account", "reservation", "partition", "hours", "cores", "memory_gb",
                  "gpus", "gpu_type"):
        assert field in form["form"] and attributes[field].get("widget") != "hidden_field"
    # Episode 2: the instructor gives the reservation's name, if the workshop has one.
    assert attributes["reservation"]["value"] == "" and attributes["reservation"]["label"] == "Reservation"
    assert attributes["account"]["value"] == site["account"]
    assert [value for _, value in attributes["partition"]["options"]] == [
        site["gpu_partition"], site["cpu_partition"]]
    first = session_values(SESSIONS[0])
    assert SESSIONS[0]["gpus"] == 0 and first["partition"] == site["cpu_partition"]
    for field, value in first.items():
        if field != "gpu_type":
            assert str(attributes[field]["value"]) == value, field
    assert attributes["hours"]["max"] == site["session_max_hours"]
    assert attributes["gpus"]["max"] == site["session_max_gpus"]
    assert [v for _, v in attributes["gpu_type"]["options"]] == ["any", *site["gpu_gres_types"].split()]
    assert attributes["conda_module"]["value"] == site["conda_module"]
    assert attributes["conda_env"]["value"] == site["conda_env"]
    assert attributes["class_results"] == {"widget": "hidden_field",
                                           "value": site["class_results"]}
    assert attributes["data_dir"] == {"widget": "hidden_field", "value": site["data_dir"]}


def test_the_session_menu_sets_each_sessions_request(ruby):
    options = json.loads(render(ruby, "form").stdout)["attributes"]["session"]["options"]
    assert [value for _, value, _ in options] == [s["label"] for s in SESSIONS]
    for (label, _, sets), session in zip(options, SESSIONS, strict=True):
        expected = session_values(session)
        assert sets == {"data-set-hours": session["hours"], "data-set-cores": session["cores"],
                        "data-set-memory-gb": session["memory_gb"], "data-set-gpus": session["gpus"],
                        "data-set-partition": expected["partition"]}
        assert f"{session['hours']} hours" in label
    # The GPU session's request is one the form accepts and Slurm gets as it is.
    assert [s["gpus"] for s in SESSIONS] == [0, 1]


@pytest.mark.parametrize(("values", "expected"), [
    ({}, ["--partition={cpu}", "--time=06:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
          "--mem=24G", "--account={account}"]),
    ({"partition": "{gpu}", "hours": "3", "gpus": "1"},
     ["--partition={gpu}", "--time=03:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
      "--mem=24G", "--account={account}", "--gres=gpu:1"]),
    ({"partition": "{gpu}", "gpu_type": "{type}", "gpus": "2", "hours": "8", "cores": "16", "memory_gb": "64",
      "account": ""},
     ["--partition={gpu}", "--time=08:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=16",
      "--mem=64G", "--gres=gpu:{type}:2"]),
    ({"partition": "{cpu}", "gpus": "0", "hours": "2"},
     ["--partition={cpu}", "--time=02:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
      "--mem=24G", "--account={account}"]),
    ({"partition": "{gpu}", "hours": "3", "gpus": "1", "reservation": " gpu-workshop_2.1 "},
     ["--partition={gpu}", "--time=03:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
      "--mem=24G", "--account={account}", "--reservation=gpu-workshop_2.1", "--gres=gpu:1"]),
    ({"reservation": "  "},
     ["--partition={cpu}", "--time=06:00:00", "--nodes=1", "--ntasks=1", "--cpus-per-task=4",
      "--mem=24G", "--account={account}"]),
], ids=["cpu-session", "gpu-session", "typed-gpus", "cpu-only", "reservation", "blank-reservation"])
def test_form_values_become_slurm_options(ruby, tmp_path, values, expected):
    site = site_config()
    names = {"gpu": site["gpu_partition"], "cpu": site["cpu_partition"],
             "account": site["account"], "type": site["gpu_gres_types"].split()[-1]}
    values = {k: v.format(**names) for k, v in values.items()}
    result, staged = submit(ruby, tmp_path, values)
    native = json.loads(result.stdout)["submit"]["script"]["native"]
    assert native == [option.format(**names) for option in expected]
    script = (staged / "script.sh").read_text()
    assert f'module load "{site["conda_module"]}"' in script
    assert f'conda_env="{site["conda_env"]}"' in script
    assert 'conda activate "${conda_env:-gpulesson}"' in script
    assert f'export LESSON_CLASS_RESULTS="${{LESSON_CLASS_RESULTS:-{site["class_results"]}}}"' in script
    assert f'data_dir="{site["data_dir"]}"' in script
    assert "python -m ipykernel install --user --name gpulesson" in script
    assert "/lab/tree/my-notebooks" in (staged / "before.sh").read_text()
    assert "python -m gpulesson.classroom.workcopy --lesson . --to my-notebooks" in script


@pytest.mark.bad_input("bad form input")
@pytest.mark.parametrize(("values", "message"), [
    ({"hours": "0"}, "Number of hours: 0 is not possible here; enter a number from 1 to {hours}."),
    ({"cores": "-2"}, "Cores: -2 is not possible here; enter a number from 1 to {cores}."),
    ({"gpu_type": "v100"}, "GPU type: 'v100' is not a GPU type of this cluster; choose any, {types}."),
    ({"gpus": "64"}, "Number of GPUs: 64 is not possible here; enter a number from 0 to {gpus}."),
    ({"hours": "three"}, "Number of hours: 'three' is not a whole number; enter one from 1 to {hours}."),
    ({"gpus": "1"}, "Number of GPUs: the partition {cpu} has no GPUs; choose {gpu}, or 0 GPUs."),
    ({"partition": "bigmem"}, "Partition: 'bigmem' is not one of {gpu}, {cpu}."),
    ({"lesson_dir": 'gpu-lesson"; rm -r x'},
     "Lesson folder: 'gpu-lesson\"; rm -r x' may hold only letters, digits, '.', '_', '-' and "
     "'/'; give it relative to your home directory (such as gpu-lesson) or as an absolute path."),
    ({"reservation": "workshop; rm -r x"},
     "Reservation: 'workshop; rm -r x' may hold only letters, digits, '.', '_' and '-'; type the "
     "name your instructor gives, or leave it empty."),
], ids=["zero-hours", "negative-cores", "unknown-gpu-type", "too-many-gpus", "hours-in-words",
        "gpus-on-a-cpu-partition", "unknown-partition", "quote-in-the-folder",
        "command-in-the-reservation"])
def test_bad_form_values_are_refused_with_a_clear_message(ruby, tmp_path, values, message):
    site = site_config()
    names = {"gpu": site["gpu_partition"], "cpu": site["cpu_partition"],
             "hours": site["session_max_hours"], "cores": site["session_max_cores"],
             "gpus": site["session_max_gpus"], "types": ", ".join(site["gpu_gres_types"].split())}
    result, staged = submit(ruby, tmp_path, {k: v.format(**names) for k, v in values.items()},
                            check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.strip() == message.format(**names)
    # Nothing is rendered, so nothing can be submitted.
    assert not staged.exists()


@pytest.mark.parametrize(("conda_env", "expected"), [
    ("shared", "shared"), ("gpulesson", "gpulesson"), ("", ".venv"),
], ids=["shared-prefix", "named-env", "no-site-env"])
def test_the_job_activates_the_sites_conda_environment_before_a_venv(ruby, tmp_path, conda_env,
                                                                       expected):
    """The site's conda_env (a name, or a shared environment's folder) wins over a .venv in the
    learner's lesson folder (make lab's CPU-only TensorFlow); a site that names none uses it."""
    env = fake_cluster(tmp_path / "cluster")
    lesson = tmp_path / "lesson"
    fake_environment(lesson / ".venv", venv=True)
    if conda_env == "shared":
        conda_env = expected = str(fake_environment(tmp_path / "shared" / "env"))
    _, staged = submit(ruby, tmp_path, {"conda_env": conda_env})
    result = subprocess.run(["bash", str(staged / "script.sh")], cwd=staged, check=False,
                            env={**env, "LESSON_DIR": str(lesson)}, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    logged = calls(env)
    if expected == ".venv":
        prefix = lesson / ".venv"
        assert logged[0] == "module purge", logged
        assert not any(line.startswith(("module load", "conda")) for line in logged), logged
    else:
        prefix = Path(expected) if expected.startswith("/") else tmp_path / "cluster" / "envs" / expected
        assert logged[:3] == ["module purge", f"module load {site_config()['conda_module']}",
                              f"conda activate {expected}"], logged
    assert f"{prefix / 'bin' / 'python'} -m gpulesson.machine.devices" in logged, logged
    assert logged[-1] == f"{prefix / 'bin' / 'jupyter'} lab", logged


@pytest.mark.parametrize(("data_dir", "preset", "expected"), [
    ("/shared/gpulesson-data", None, "/shared/gpulesson-data"),
    ("/shared/gpulesson-data", "/mine", "/mine"),
    ("", None, "unset"),
], ids=["site-folder", "session-folder-wins", "no-site-folder"])
def test_the_job_exports_the_classs_data_folder_from_the_site_value(ruby, tmp_path, data_dir,
                                                                    preset, expected):
    """lesson_site's data_dir reaches the notebooks as LESSON_DATA_DIR: pre-staged data need no
    %env in every learner's notebook; a folder the session already names stays."""
    env = fake_cluster(tmp_path / "cluster")
    lesson = tmp_path / "lesson"
    fake_environment(lesson / ".venv", venv=True)
    jupyter = lesson / ".venv" / "bin" / "jupyter"
    jupyter.write_text('#!/bin/bash\necho "$0 $* LESSON_DATA_DIR=${LESSON_DATA_DIR-unset}" >> '
                       '"$FAKE_LOG"\necho \'"gpulesson"\'\n')
    _, staged = submit(ruby, tmp_path, {"conda_env": "", "data_dir": data_dir})
    run_env = {**env, "LESSON_DIR": str(lesson), **({"LESSON_DATA_DIR": preset} if preset else {})}
    result = subprocess.run(["bash", str(staged / "script.sh")], cwd=staged, check=False,
                            env=run_env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert calls(env)[-1] == f"{jupyter} lab LESSON_DATA_DIR={expected}", calls(env)


# Open OnDemand's "basic" template wraps the app's before.sh and script.sh like this (ood_core's
# BatchConnect::Template): helper functions, the host, before.sh, script.sh in the background,
# and connection.yml with host, port and password for view.html.erb.
BASIC_TEMPLATE = """#!/bin/bash
cd "{staged}"
find_port() {{
    python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}}
create_passwd() {{
    tr -dc 'a-zA-Z0-9' < /dev/urandom 2>/dev/null | head -c "${{1:-8}}"
}}
host=$(hostname)
export host
source ./before.sh
./script.sh &
SCRIPT_PID=$!
(umask 077; printf 'host: %s\\nport: %s\\npassword: %s\\n' "$host" "$port" "$password" \\
    > connection.yml)
wait "$SCRIPT_PID"
"""


@pytest.fixture
def session(ruby, slurm, tmp_path):
    """The app's job for the GPU session, submitted to the local Slurm: (job id, folders)."""
    home = tmp_path / "home"
    lesson = lesson_files(home / "gpu-lesson")
    (lesson / ".venv").symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    # JupyterLab refuses root unless told; the tests' Slurm runs jobs as root.
    (home / ".jupyter").mkdir()
    (home / ".jupyter" / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"allow_root": True}}))
    # This cluster has no conda: as at a site that names no conda environment, the job uses the
    # lesson folder's .venv (this Python's environment).
    result, staged = submit(ruby, tmp_path, {**session_values(SESSIONS[-1]), "conda_env": ""})
    native = json.loads(result.stdout)["submit"]["script"]["native"]
    job_script = staged / "job_script_content.sh"
    job_script.write_text(BASIC_TEMPLATE.format(staged=staged))
    env = {k: v for k, v in slurm.env.items() if not k.startswith(("JUPYTER", "PYTHONPATH"))}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1")
    output = staged / "output.log"
    job_id = slurm.sbatch(*native, "--job-name=ondemand/sys/gpulesson-jupyterlab",
                          f"--output={output}", str(job_script), cwd=staged, env=env)
    try:
        yield job_id, staged, output
    finally:
        slurm.run("scancel", job_id, check=False)


def _wait_for_lab(slurm, job_id, staged, output):
    """Wait until connection.yml exists and JupyterLab answers; returns (base URL, connection)."""
    deadline = time.monotonic() + START_TIMEOUT
    connection = staged / "connection.yml"
    while True:
        if connection.exists():
            values = dict(line.split(": ", 1) for line in connection.read_text().splitlines())
            base = f"http://127.0.0.1:{values['port']}/node/{values['host']}/{values['port']}"
            try:
                if requests.get(f"{base}/api/status", timeout=2).status_code in (200, 403):
                    return base, values
            except requests.ConnectionError:
                pass
        states = [j.get("JobState") for j in slurm.job(job_id)]
        if time.monotonic() > deadline or (states and states[0] not in ("PENDING", "RUNNING")):
            raise AssertionError(f"JupyterLab did not start (job {states}):\n"
                                 f"{slurm.explain(job_id, [output])}")
        time.sleep(1)


def test_the_app_starts_jupyterlab_with_the_lesson_kernel_under_slurm(ruby, slurm, session):
    job_id, staged, output = session
    site = site_config()
    # Like a learner checking the session in a terminal (episode 2): the job is in squeue.
    listed = slurm.run("squeue", "--noheader", "--format=%i %P %b %C %m %l", "--jobs", job_id)
    gpu = SESSIONS[-1]
    assert listed.stdout.split() == [job_id, site["gpu_partition"], f"gres:gpu:{gpu['gpus']}",
                                     str(gpu["cores"]), f"{gpu['memory_gb']}G",
                                     f"{gpu['hours']}:00:00"]
    base, connection = _wait_for_lab(slurm, job_id, staged, output)
    password = connection["password"]
    assert re.fullmatch(r"[a-zA-Z0-9]{24}", password)
    # Nobody gets in without the password.
    assert requests.get(f"{base}/api/kernelspecs", timeout=10).status_code == 403

    # The Connect button of view.html.erb leads to the learner's copies with the password.
    view = render(ruby, "view", staged / "connection.yml").stdout
    path = f"/node/{connection['host']}/{connection['port']}/lab/tree/my-notebooks"
    assert f'action="{path}"' in view and f'value="{password}"' in view
    # What the button does: open that page with the password, which logs the browser in.
    button = requests.Session()
    page = button.get(f"http://127.0.0.1:{connection['port']}{path}",
                      params={"token": password}, timeout=10)
    assert page.status_code == 200 and "JupyterLab" in page.text
    assert button.get(f"{base}/api/kernelspecs", timeout=10).status_code == 200

    # Log in with the password through the login form, then use the REST API as the browser.
    browser = requests.Session()
    browser.get(f"{base}/login", timeout=10)
    xsrf = browser.cookies.get("_xsrf")
    login = browser.post(f"{base}/login", data={"password": password, "_xsrf": xsrf},
                         allow_redirects=False, timeout=10)
    assert login.status_code == 302, login.text
    specs = browser.get(f"{base}/api/kernelspecs", timeout=10).json()["kernelspecs"]
    assert specs["gpulesson"]["spec"]["display_name"] == "Python (gpulesson)"
    page = browser.get(f"{base}/lab/tree/my-notebooks", timeout=10)
    assert page.status_code == 200 and "JupyterLab" in page.text
    # The job copied the notebooks into the learner's folder.
    notebooks = browser.get(f"{base}/api/contents/my-notebooks", timeout=10).json()
    assert "01-introduction.ipynb" in [item["name"] for item in notebooks["content"]]

    headers = {"X-XSRFToken": browser.cookies.get("_xsrf")}
    reply = browser.post(f"{base}/api/sessions", headers=headers, timeout=60, json={
        "path": "my-notebooks/01-introduction.ipynb", "type": "notebook", "name": "",
        "kernel": {"name": "gpulesson"}})
    assert reply.status_code == 201, reply.text
    kernel_id = reply.json()["kernel"]["id"]
    ws = websocket.create_connection(
        base.replace("http", "ws", 1) + f"/api/kernels/{kernel_id}/channels?session_id="
        + uuid.uuid4().hex,
        cookie="; ".join(f"{k}={v}" for k, v in browser.cookies.items()), timeout=60)
    try:
        out, errors = _execute(ws, "import os, gpulesson\nprint(os.environ['SLURM_JOB_ID'], "
                               "os.environ.get('CUDA_VISIBLE_DEVICES'))", 60)
    finally:
        ws.close()
    assert not errors, errors
    # The kernel runs inside the job, with the GPU Slurm gave it.
    assert out.split()[0] == job_id and out.split()[1] in {"0", "1", "2", "3"}, out

    slurm.run("scancel", job_id)
    slurm.wait(job_id, until=("CANCELLED",), timeout=60, explain=[output])
