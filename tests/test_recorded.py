"""The recorded run whose outputs the site shows: tools/record_run.py, tools/clean_outputs.py and
the site extension _ext/recorded.py.

The command runs in quick mode on episodes 1 and 3 in a copy of the lesson without the lesson's
own record (that one is checked by tests/test_recorded_lesson.py).
"""

import base64
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import clean_outputs
import make_notebooks as mk
import pytest
import record_run
import recorded
from conftest import ROOT
from conftest import record_run as run_tool
from record_run import stale_records
from test_recorded_lesson import has_colours

RECORDED = ("01-introduction", "03-environments")


def code_cells(nb: dict) -> list[dict]:
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def load(root, slug) -> dict:
    return recorded.read_record(root / "executed" / f"{slug}.ipynb")


# --- the command --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lesson(recorded_lesson):
    root, result = recorded_lesson
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root


def test_the_run_records_each_notebook_with_its_provenance(lesson):
    for slug in RECORDED:
        nb = load(lesson, slug)
        run = nb["metadata"]["recorded_run"]
        assert run["data"] == "synthetic" and "not CIFAR-10" in run["data_label"]
        assert run["quick"] is True
        assert run["machine"]["cpu_model"] and run["machine"]["cores_usable"] >= 1
        assert run["machine"]["gpu"] is None or run["machine"]["gpu_count"] >= 1
        assert run["backend"] in ("tensorflow", "jax", "torch")
        assert run["versions"]["keras"] and run["versions"][run["backend"]]
        assert 0 < run["wall_s"] < 900
        age = datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(run["date"])
        assert age < datetime.timedelta(hours=2)
        learner = json.loads((lesson / "notebooks" / f"{slug}.ipynb").read_text())
        sources = ["".join(c["source"]) for c in code_cells(learner)]
        assert ["".join(c["source"]) for c in code_cells(nb)] == sources
        assert run["cells"] == [recorded.cell_hash(source) for source in sources]
    # The learner notebooks stay as the episodes make them: clean.
    assert not mk.out_of_sync(lesson)
    assert not list(lesson.glob(".record-run-*")), "a temporary run folder was left behind"


def test_the_recorded_outputs_are_clean_for_a_static_page(lesson):
    nb = load(lesson, "01-introduction")
    outputs = [output for cell in code_cells(nb) for output in cell["outputs"]]
    text = json.dumps(outputs)
    assert "\\u001b[" not in text and "\\r" not in text and "\\b" not in text
    assert "widget-view" not in text and "widget-state" not in text
    assert not re.search(r"\bI\d{4} \d\d:\d\d:", text), "C++ start-up log on the page"
    assert all(cell["execution_count"] is None for cell in code_cells(nb))
    streams = "".join(o["text"] for o in outputs if o["output_type"] == "stream")
    assert "Keras" in streams and ("No GPU visible" in streams or "GPU(s)" in streams)
    # The data file was written during the run: its progress bars end at 100 %, on one line.
    bars = [line for line in streams.splitlines() if "img/s" in line]
    assert bars and all("100%" in line for line in bars), bars
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1
    alt = images[0]["metadata"]["image/png"]["alt"]
    assert "synthetic stand-in (not CIFAR-10)" in alt and "16 images" in alt
    from PIL import Image

    png = base64.b64decode(images[0]["data"]["image/png"])
    assert Image.open(io.BytesIO(png)).format == "PNG" and len(png) < 200_000


def test_a_changed_code_cell_is_stale_until_recorded_again(lesson, tmp_path):
    root = tmp_path / "lesson"
    shutil.copytree(lesson, root, ignore=shutil.ignore_patterns("_build"))
    assert stale_records(root) == []
    episode = root / "_episodes" / "03-environments.md"
    text = episode.read_text(encoding="utf-8")
    # Prose changes need no new run.
    episode.write_text(text.replace("Which Keras backend is active",
                                    "Which Keras backend is in use"), encoding="utf-8")
    assert stale_records(root) == []
    # A code change does: the test names the notebook, the cell and the command.
    code = 'print("KERAS_BACKEND:", os.environ.get("KERAS_BACKEND", "(not set)"))'
    assert code in text
    episode.write_text(text.replace(code, code + '\nprint("changed")'), encoding="utf-8")
    for ep in mk.notebook_episodes(root):
        mk.target(ep, root).write_text(mk.notebook_texts(ep)[mk.target(ep)], encoding="utf-8")
    problems = stale_records(root)
    assert len(problems) == 1, problems
    assert "executed/03-environments.ipynb is stale" in problems[0]
    assert "import os" in problems[0]
    assert "LESSON_DATA=synthetic python tools/record_run.py --only 03" in problems[0]
    # The page shows the cell without an output, and its box says why.
    sources = recorded.episode_code_sources(episode.read_text(encoding="utf-8"))
    matched = recorded.match_cells(sources, load(root, "03-environments"))
    assert sum(outputs is None for outputs in matched) == 1
    # Recording again (quick, as the stale record was) makes it current.
    result = run_tool(root, "--quick", "--data", "synthetic", "--only", "03")
    assert result.returncode == 0, result.stderr[-3000:]
    assert stale_records(root) == []
    assert "changed" in json.dumps(load(root, "03-environments")["cells"])


def test_a_copy_whose_printed_reference_changed_is_stale(lesson, tmp_path):
    """A notebook that prints the lesson's reference beside its own run keeps the reference's
    runs in its record; once the page's reference is another run, the copy is stale."""
    root = tmp_path / "lesson"
    shutil.copytree(lesson, root, ignore=shutil.ignore_patterns("_build"))
    path = root / "executed" / "03-environments.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"][recorded.METADATA_KEY]["references"] == {}  # it prints none
    nb["metadata"][recorded.METADATA_KEY]["references"] = {"cnn": ["20260101T000000Z-old000"]}
    path.write_text(json.dumps(nb), encoding="utf-8")
    problems = stale_records(root)
    assert len(problems) == 1 and "the reference it prints changed (cnn: run " \
        "20260101T000000Z-old000 -> none)" in problems[0], problems
    # Episode 10's notebook prints episode 5's CNN reference and, for ResNet-50's step,
    # episode 6's matrix products: the runs the pages draw.
    from gpulesson.experiments import matmul
    from gpulesson.experiments.cnn import page as cnn

    assert record_run.printed_references("10-beyond-one-gpu") == {
        "cnn": sorted({r["run_id"] for r in cnn.reference_run()}),
        "matmul": sorted({r["run_id"] for r in matmul.reference_run()})}


def test_the_page_shows_the_outputs_after_their_cells_and_the_box(recorded_site, lesson):
    html, build = recorded_site
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert not re.findall(r".*WARNING.*", build.stdout + build.stderr)
    page = (html / "_episodes" / "01-introduction.html").read_text(encoding="utf-8")
    # Each code cell, up to the next one: only a cell's own output can be in it.
    cells = re.split(r'<div class="cell(?: tag_[\w-]+)* docutils container">', page)[1:]  # tags: given
    recorded_cells = code_cells(load(lesson, "01-introduction"))
    assert len(cells) == len(recorded_cells)
    for cell, record in zip(cells, recorded_cells, strict=True):
        assert ("cell_output" in cell) == bool(record["outputs"]), record["source"][:60]
    # The devices' report sits under its own cell, the one that prints it.
    report = next(i for i, c in enumerate(recorded_cells) if "devices.report()" in "".join(c["source"]))
    assert "No GPU visible" in cells[report] or "GPU(s)" in cells[report]
    assert re.search(r'<img alt="Figure drawn by the code above: synthetic stand-in', page)
    box = page[page.index("recorded-run"):][:3000]
    assert "quick mode" in box and "synthetic stand-in (not CIFAR-10" in box
    assert "no GPU" in box or "GPU:" in box
    assert page.index("recorded-run") < page.index("Teaching:")
    # An episode with code but no record says so in one line; one without code has no box.
    assert "No recorded run of this episode yet" in (
        html / "_episodes" / "05-cpu-vs-gpu.html").read_text(encoding="utf-8")
    assert "recorded-run" not in (html / "_episodes" / "02-connecting.html").read_text(encoding="utf-8")


# --- the pieces ---------------------------------------------------------------------------


def test_a_progress_bar_keeps_its_final_line():
    keras_bar = "Epoch 1/2\n\x1b[1m 1/32\x1b[0m ━ 1s" + "\b" * 12 + "\r\x1b[1m32/32\x1b[0m ━━ 2s\n"
    assert clean_outputs.clean_text(keras_bar) == "Epoch 1/2\n32/32 ━━ 2s\n"
    assert clean_outputs.final_text("a  10%\ra 100%") == "a 100%"
    assert clean_outputs.clean_text("/home/ada/data.h5 ok", home="/home/ada") == "~/data.h5 ok"


def test_streams_are_joined_trimmed_and_rid_of_the_cpp_log():
    outputs = [{"output_type": "stream", "name": "stderr",
                "text": "I0000 00:00:1795395364.873088   24514 port.cc:153] oneDNN custom\n"},
               {"output_type": "stream", "name": "stderr",
                "text": "2026-01-02 10:11:12.345678: W tensorflow/core/x.cc:1] noise\n"},
               {"output_type": "stream", "name": "stdout", "text": "a\n"},
               {"output_type": "stream", "name": "stdout", "text": "".join(f"{i}\n" for i in range(200))}]
    cleaned = clean_outputs.clean_outputs(outputs)
    assert [o["name"] for o in cleaned] == ["stdout"]
    lines = cleaned[0]["text"].splitlines()
    assert lines[0] == "a" and lines[-1] == "199"
    assert "lines of this output are not shown" in cleaned[0]["text"]
    assert len(lines) <= clean_outputs.MAX_STREAM_LINES + 1


def test_widgets_become_text_and_large_pngs_shrink():
    from PIL import Image

    rng = __import__("numpy").random.default_rng(0)
    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (300, 300, 3), dtype="uint8")).save(buffer, "PNG")
    png = base64.b64encode(buffer.getvalue()).decode()
    widget = {"output_type": "display_data", "metadata": {},
              "data": {"text/plain": "done", clean_outputs.WIDGET: {"model_id": "x"}}}
    image = {"output_type": "display_data", "metadata": {"image/png": {"alt": "noise"}},
             "data": {"image/png": png, "text/plain": "<Figure>"}}
    cleaned = clean_outputs.clean_outputs([widget, image])
    assert cleaned[0]["data"] == {"text/plain": "done"}
    smaller = base64.b64decode(cleaned[1]["data"]["image/png"])
    assert len(smaller) < len(buffer.getvalue()) and Image.open(io.BytesIO(smaller)).size == (300, 300)
    assert cleaned[1]["metadata"]["image/png"]["alt"] == "noise"


RICH = ('<pre style="white-space:pre;overflow-x:auto;line-height:normal;font-family:Menlo,'
        "'DejaVu Sans Mono',consolas,'Courier New',monospace\"><span style=\"color: #00af00\">"
        "Total params</span>: 10</pre>\n")


def test_terminal_colours_are_left_out_of_the_recorded_outputs():
    """Keras' summary() sends Rich's HTML, coloured for a terminal, beside its plain text: the
    page shows the plain text. ANSI escapes go from texts and tracebacks."""
    summary = {"output_type": "display_data", "metadata": {},
               "data": {"text/html": RICH, "text/plain": "\x1b[32mTotal params\x1b[0m: 10\n"}}
    html = {"output_type": "display_data", "metadata": {},
            "data": {"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "x"}}
    cleaned = clean_outputs.clean_outputs([summary, html])
    assert cleaned[0]["data"] == {"text/plain": "Total params: 10\n"}
    assert cleaned[1]["data"]["text/html"].startswith("<table>")  # not Rich's: kept
    assert not any(has_colours(output) for output in cleaned)
    assert has_colours(summary) and has_colours(
        {"output_type": "error", "traceback": ["\x1b[31mValueError\x1b[0m"]})


def _lesson_with_record(root: Path, slug: str) -> dict:
    """A lesson folder in ``root`` holding one episode, its config and the lesson's results (the
    references its notebook prints), with an empty executed/; returns the lesson's own record of
    that episode, for the test to change and write there."""
    for folder in ("_episodes", "executed"):
        (root / folder).mkdir()
    shutil.copytree(ROOT / "results", root / "results")
    shutil.copy2(ROOT / "_episodes" / f"{slug}.md", root / "_episodes")
    shutil.copy2(ROOT / "_config.yml", root)
    return json.loads((ROOT / "executed" / f"{slug}.ipynb").read_text(encoding="utf-8"))


def test_the_clean_only_step_takes_colours_out_of_old_records_and_keeps_them_current(tmp_path):
    """An executed copy recorded before the cleaning knew of Rich's HTML: --clean-only takes its
    colours out without running it, and the record still matches its episode."""
    slug = "07-small-models"
    nb = _lesson_with_record(tmp_path, slug)
    cell = code_cells(nb)[1]
    cell["outputs"] = [*cell["outputs"], {"output_type": "display_data", "metadata": {},
                                          "data": {"text/html": RICH.splitlines(keepends=True),
                                                   "text/plain": ["Total params: 10\n"]}},
                       {"output_type": "stream", "name": "stdout", "text": ["\x1b[1mbold\x1b[0m\n"]}]
    path = tmp_path / "executed" / f"{slug}.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    assert record_run.clean_records(tmp_path / "executed") == [path]
    cleaned = json.loads(path.read_text(encoding="utf-8"))
    outputs = [output for cell in code_cells(cleaned) for output in cell["outputs"]]
    assert not any(has_colours(output) for output in outputs)
    assert {"text/plain": ["Total params: 10\n"]} in [output.get("data") for output in outputs]
    assert stale_records(tmp_path) == []
    assert record_run.clean_records(tmp_path / "executed") == []  # nothing left to clean


# --- the recording machine's folders -------------------------------------------------------

# An absolute path into a home folder, or to a Python environment, that no placeholder stands for.
MACHINE_PATH = re.compile(r"/home/[^/\s\"']+/|/Users/[^/\s\"']+/|/root/"
                          r"|(?<![\w>~])/[^\s\"'()<>]*?/\.venv/")


def machine_paths_shown(nb: dict) -> list[str]:
    """The outputs of ``nb`` that show a folder of this machine (the checkout, the Python
    environment, the home folder) or any home folder or environment path, one line each."""
    own = [path for path, _ in clean_outputs.machine_paths()]
    found = []
    for index, cell in enumerate(code_cells(nb)):
        for output in cell.get("outputs", []):
            text = json.dumps(output, ensure_ascii=False).replace("\\/", "/")
            hits = [path for path in own if re.search(re.escape(path) + r"(?![\w.-])", text)]
            hits += MACHINE_PATH.findall(text)
            if hits:
                found.append(f"code cell {index + 1}: {', '.join(sorted(set(hits)))}")
    return found


def test_the_machines_folders_get_neutral_names():
    paths = clean_outputs.machine_paths(root="/srv/ana/gpu-lesson", prefix="/opt/envs/gl",
                                        home="/srv/ana")
    assert paths == [("/srv/ana/gpu-lesson", "<lesson>"), ("/opt/envs/gl", "<venv>"),
                     ("/srv/ana", "~")]
    text = ("Python 3.11.7 (/opt/envs/gl/bin/python)\n/srv/ana/gpu-lesson/gpulesson\n"
            "/srv/ana/data.h5 /srv/ana/gpu-lessons /srv/ana\n")
    assert clean_outputs.neutral_paths(text, paths) == (
        "Python 3.11.7 (<venv>/bin/python)\n<lesson>/gpulesson\n~/data.h5 ~/gpu-lessons ~\n")
    # An environment inside the checkout keeps its place in it: <lesson>/.venv
    inside = clean_outputs.machine_paths(root="/w/l", prefix="/w/l/.venv", home="/")
    assert inside == [("/w/l", "<lesson>")]
    assert clean_outputs.clean_text("(/w/l/.venv/bin/python)", paths=inside) == "(<lesson>/.venv/bin/python)"
    # the temporary folder a notebook runs in is its own folder on the page
    assert clean_outputs.neutral_paths("/w/l/.record-run-ab_1/my.csv", inside) == "<lesson>/notebooks/my.csv"
    # HTML and Markdown outputs would read <lesson> as a tag
    html = {"output_type": "display_data", "metadata": {},
            "data": {"text/html": "<b>/w/l/x</b>", "text/plain": "/w/l/x"}}
    assert clean_outputs.clean_data(html, inside)["data"] == {"text/html": "<b>&lt;lesson&gt;/x</b>",
                                                              "text/plain": "<lesson>/x"}
    error = {"output_type": "error", "ename": "E", "evalue": "",
             "traceback": ["File /w/l/.venv/lib/x.py:1"]}
    assert clean_outputs.clean_outputs([error], inside)[0]["traceback"] == ["File <lesson>/.venv/lib/x.py:1"]


def test_the_clean_only_step_names_the_machines_folders_neutrally(tmp_path):
    """A record made before the cleaning named the folders: --clean-only names them without
    running it again, the record still matches its episode, and the check below finds nothing."""
    slug = "07-small-models"
    nb = _lesson_with_record(tmp_path, slug)
    python = f"Python 3.11.7 ({clean_outputs.CHECKOUT}/.venv/bin/python)\n"
    code_cells(nb)[0]["outputs"].append({"output_type": "stream", "name": "stdout",
                                         "text": [python, f"{sys.prefix}/lib/x.py:1: Warning\n"]})
    assert machine_paths_shown(nb), "the check must see the checkout's path"
    path = tmp_path / "executed" / f"{slug}.ipynb"
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    assert record_run.clean_records(tmp_path / "executed") == [path]
    cleaned = json.loads(path.read_text(encoding="utf-8"))
    assert machine_paths_shown(cleaned) == []
    python, warning = code_cells(cleaned)[0]["outputs"][-1]["text"]
    assert python == "Python 3.11.7 (<lesson>/.venv/bin/python)\n"
    assert warning.startswith(("<lesson>/", "<venv>/", "~/")), warning
    assert stale_records(tmp_path) == []
    assert record_run.clean_records(tmp_path / "executed") == []  # nothing left to clean


@pytest.mark.parametrize("text", ["/home/ana/gpulesson-data/x.h5", "/Users/ben/l/x",
                                  "/opt/conda/envs/a/../b/.venv/bin/python", "/root/l/x"])
def test_the_check_sees_a_home_folder_or_an_environment_of_any_machine(text):
    nb = {"cells": [{"cell_type": "code", "source": "", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": text}]}]}
    assert machine_paths_shown(nb)


def test_the_lessons_records_show_no_path_of_the_recording_machine():
    """The pages show outputs with neutral folder names (<lesson>, <venv>, ~): made so when
    recorded (tools/clean_outputs.py), or afterwards by ``tools/record_run.py --clean-only``."""
    shown = {path.name: machine_paths_shown(json.loads(path.read_text(encoding="utf-8")))
             for path in sorted((ROOT / "executed").glob("*.ipynb"))}
    shown = {name: found for name, found in shown.items() if found}
    assert not shown, ("recorded outputs show this machine's folders; run "
                       f"'python tools/record_run.py --clean-only': {shown}")


def _run(**changes) -> dict:
    run = {"date": "2030-01-01T00:00:00+00:00", "wall_s": 754.0, "backend": "jax",
           "machine": {"cpu_model": "Some CPU", "cores_usable": 8, "gpu": "NVIDIA H100",
                       "gpu_count": 1},
           "versions": {"python": "3.11", "keras": "3.15.1", "jax": "0.10"},
           "data": "cifar10", "data_label": "CIFAR-10", "quick": False}
    for key, value in changes.items():
        if key == "gpu":
            run["machine"]["gpu"] = value
        else:
            run[key] = value
    return run


def test_the_box_says_plainly_what_the_run_was_not():
    full = recorded.box_markdown(_run(), "05-cpu-vs-gpu")
    assert "NVIDIA H100" in full and "full size" in full and "12 min 34 s" in full
    assert ":class: note" in full and "no GPU" not in full and "quick" not in full
    cpu_run = _run(gpu=None, data="synthetic", quick=True,
                   data_label="synthetic stand-in (not CIFAR-10)")
    cpu = recorded.box_markdown(cpu_run, "05-cpu-vs-gpu", stale=2)
    assert "**no GPU**" in cpu and "**quick mode**" in cpu and "not CIFAR-10" in cpu
    assert ":class: warning" in cpu
    assert "2 code cell(s) changed" in cpu and "--only 05" in cpu
    assert "No recorded run" in recorded.box_markdown(None, "05-cpu-vs-gpu")
    # The page's reference tables may come from another machine than the notebook's run.
    assert all("its own machine and date" in box for box in (full, cpu))


def test_the_machine_probe_needs_no_tensorflow(tmp_path):
    """On a GPU node with Keras on JAX and no TensorFlow, the probe asks JAX."""
    hidden = tmp_path / "hidden"
    (hidden / "tensorflow").mkdir(parents=True)
    (hidden / "tensorflow" / "__init__.py").write_text("raise ImportError('no TensorFlow here')\n")
    env = record_run.kernel_environment("synthetic", quick=True)
    env.update(KERAS_BACKEND="jax", PYTHONPATH=os.pathsep.join([str(hidden), env["PYTHONPATH"]]))
    facts = record_run.probe_machine(env)
    assert facts["backend"] == "jax" and "probe_error" not in facts
    assert facts["device"] == "CPU" or facts["gpu_count"] >= 1


def test_a_run_keeps_its_work_in_a_new_folder_shown_as_the_learners(tmp_path, monkeypatch):
    """What a recorded run saves goes to a new, empty work folder (a first run's outputs, not
    what this machine's earlier runs left in ~/gpulesson-work), which the page shows as
    ~/gpulesson-work."""
    work = tmp_path / "run" / "gpulesson-work"
    env = record_run.kernel_environment("synthetic", quick=True, work_dir=work)
    assert env["LESSON_WORK_DIR"] == str(work)
    notebook = tmp_path / "07-small-models.ipynb"
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                    "nbformat_minor": 5}))
    saved = {"cell_type": "code", "source": "save()", "metadata": {}, "execution_count": 1,
             "outputs": [{"output_type": "stream", "name": "stdout",
                          "text": f"saved {env['LESSON_WORK_DIR']}/breast-cancer-mlp.keras\n"}]}

    def execute(path, workdir, timeout, env):
        return {**json.loads(path.read_text()), "cells": [saved]}, 1.0

    monkeypatch.setattr(record_run, "execute", execute)
    monkeypatch.setattr(record_run, "printed_references", lambda stem: {})
    out = tmp_path / "executed"
    out.mkdir()
    target = record_run.record(notebook, out, data="synthetic", quick=True,
                               facts={"cpu_model": "x", "cores_usable": 1, "cores_total": 1},
                               env=env, timeout=9)
    text = "".join(json.loads(target.read_text())["cells"][0]["outputs"][0]["text"])
    assert text == "saved ~/gpulesson-work/breast-cancer-mlp.keras\n"


# --- bad input ----------------------------------------------------------------------------


@pytest.mark.bad_input("bad argument")
def test_the_data_must_be_chosen_and_quick_mode_asked_for(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("LESSON_DATA", "LESSON_QUICK")}
    command = [sys.executable, str(ROOT / "tools" / "record_run.py"), "--only", "01",
               "--out", str(out)]
    no_data = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert no_data.returncode == 2 and "LESSON_DATA=cifar10" in no_data.stderr
    quick = subprocess.run(command, env={**env, "LESSON_DATA": "synthetic", "LESSON_QUICK": "1"},
                           capture_output=True, text=True, timeout=120)
    assert quick.returncode == 2 and "unset it" in quick.stderr and "--quick" in quick.stderr
    unknown = subprocess.run([*command[:-3], "99", "--out", str(out)],
                             env={**env, "LESSON_DATA": "synthetic"},
                             capture_output=True, text=True, timeout=120)
    assert unknown.returncode == 2 and "no notebook starts with 99" in unknown.stderr
    assert not out.exists()


@pytest.mark.bad_input("corrupt file")
def test_a_damaged_record_is_named_with_its_refresh_command(tmp_path):
    root = tmp_path
    (root / "executed").mkdir()
    (root / "executed" / "01-introduction.ipynb").write_text("{not json")
    with pytest.raises(ValueError, match=r"01-introduction.ipynb.*record_run.py --only 01"):
        recorded.read_record(root / "executed" / "01-introduction.ipynb")
    (root / "executed" / "01-introduction.ipynb").write_text('{"metadata": {}, "cells": []}')
    with pytest.raises(ValueError, match=r"not made by tools/record_run\.py"):
        recorded.read_record(root / "executed" / "01-introduction.ipynb")


@pytest.mark.bad_input("interrupted write")
def test_a_failed_write_keeps_the_previous_record(tmp_path):
    target = tmp_path / "01-introduction.ipynb"
    target.write_text("previous record")
    with pytest.raises(Exception, match=r"validat|required"):
        record_run.write_atomically({"cells": "not a list"}, target)
    assert target.read_text() == "previous record"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


@pytest.mark.bad_input("killed job")
def test_a_notebook_over_its_time_limit_keeps_its_previous_record(lesson, tmp_path):
    root = tmp_path / "lesson"
    shutil.copytree(lesson, root, ignore=shutil.ignore_patterns("_build"))
    before = (root / "executed" / "03-environments.ipynb").read_bytes()
    # Episode 3 imports TensorFlow in a cell of its own: longer than the whole limit here.
    result = run_tool(root, "--quick", "--data", "synthetic", "--only", "03", "--timeout", "4")
    assert result.returncode == 1
    assert "03-environments: FAILED, its previous record is kept" in result.stderr
    assert "time limit of 4 s" in result.stderr
    assert (root / "executed" / "03-environments.ipynb").read_bytes() == before
    assert sorted(p.name for p in (root / "executed").iterdir()) == [f"{s}.ipynb" for s in RECORDED]
    assert not list(root.glob(".record-run-*"))


def test_wide_printed_tables_get_a_font_that_fits_and_prose_wraps():
    """_ext/recorded.py marks a printed table wider than an output box for the site's CSS,
    which has a font size for every width it names; a long sentence is left to wrap."""
    table = "\n".join(["name        rate     epoch s  note", "-" * 100]
                      + [f"row {i:<7}  {i * 1000:>6,}   {i:6.2f}  " + "x" * 70 for i in range(4)])
    assert recorded.output_classes(table) == ["output-table", "output-cols-100"]
    assert recorded.output_classes("a long sentence, " * 20) == []
    assert recorded.output_classes("short  table  rows\n" * 5) == []
    css = (ROOT / "_static" / "lesson.css").read_text(encoding="utf-8")
    for width in range(recorded.OUTPUT_CHARS + 1, recorded.TABLE_MAX_CHARS + 40, 7):
        wide = "\n".join(f"{'a' * width}" if i == 0 else f"x  y  {i:>{width - 6}}" for i in range(4))
        marked = recorded.output_classes(wide)[-1]
        assert f"div.{marked} {{ --output-cols:" in css, marked
