"""Episode 5's page and notebook: the missing GPU record said once, honest runs, the learner's
own folder, and no answer in the learner's notebook."""

import json
import re
import shutil

import pytest
from carpentry import (
    CONDITIONAL,
    fill_placeholders,
    placeholder_values,
    result_values,
    site_values,
    split_front_matter,
)
from conftest import ROOT

from gpulesson.classroom.charges import read_rates
from gpulesson.records.results import NOT_RECORDED, is_gpu

EPISODE = ROOT / "_episodes" / "05-cpu-vs-gpu.md"
NO_GPU_NOTE = "The lesson's GPU reference run has not been recorded yet."
LONGEST_SENTENCE = 50  # words


def _text():
    return EPISODE.read_text(encoding="utf-8")


def _filled(**values):
    return fill_placeholders(_text(), ROOT, {**placeholder_values(ROOT), **values})


def _cpu_only_values(tmp_path):
    """The page's values from a copy of the lesson's results without any GPU run: the page as
    it reads before a GPU node records (or for a site that never has one)."""
    folder = tmp_path / "results"
    shutil.copytree(ROOT / "results", folder)
    for path in folder.glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
        gpu_runs = {r.get("run_id") for r in records if is_gpu(r)}
        path.write_text("".join(json.dumps(r) + "\n" for r in records
                                if r.get("run_id") not in gpu_runs), encoding="utf-8")
    return {**site_values(ROOT), **result_values(tmp_path)}


def test_without_a_gpu_record_the_page_says_so_once(tmp_path):
    values = _cpu_only_values(tmp_path)
    assert NOT_RECORDED in values["ref_gpu_epoch"]
    filled = fill_placeholders(_text(), ROOT, values)
    assert filled.count(NO_GPU_NOTE) == 1
    gaps = [line for line in filled.splitlines()
            if NOT_RECORDED in line and not line.startswith(":alt:")]
    assert not gaps, "\n".join(gaps)
    assert "| GPU" not in filled  # no table column for what was not measured


def test_with_gpu_records_the_values_show_and_the_note_goes():
    values = placeholder_values(ROOT)
    assert NOT_RECORDED not in values["ref_gpu_epoch"], "the lesson's results hold a GPU run"
    filled = fill_placeholders(_text(), ROOT, values)
    assert NO_GPU_NOTE not in filled and NOT_RECORDED not in filled
    assert f"| each later epoch | {values['ref_cpu_epoch']} | {values['ref_gpu_epoch']} |" in filled
    assert values["ref_speedup"] in filled and values["ref_dec_cnn_cost_verdict"] in filled


def test_no_sentence_is_longer_than_the_limit():
    import core_check

    _, body = split_front_matter(_text())
    # Both parts of every block, the way either page reads.
    for part in ("then", "otherwise"):
        shown = CONDITIONAL.sub(lambda m, part=part: m[part] or "", body)
        page = core_check.parse_body(shown)
        long = [s for s in core_check.sentences([core_check.as_shown(p) for p in page.paragraphs])
                if core_check.words(s) > LONGEST_SENTENCE]
        assert not long, long


def test_the_learners_files_go_to_their_own_folder():
    code = "\n".join(re.findall(r"```\{code-cell\}.*?```", _text(), flags=re.DOTALL))
    assert 'settings.work_dir / "my-results.jsonl"' in code
    assert 'settings.work_dir / "cifar-cnn.keras"' in code
    assert "data_dir" not in code


def test_the_cost_exercise_uses_the_sites_rates():
    rates = read_rates(ROOT / "_config.yml")
    filled = _filled()
    line = re.search(r"^CORE_HOUR, GPU_HOUR = (.+?), (.+?)  #", filled, flags=re.MULTILINE)
    assert line and (float(line[1]), float(line[2])) == (rates.core_hour, rates.gpu_hour)


def _code(notebook):
    cells = json.loads((ROOT / notebook).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_the_learners_notebook_holds_no_answer():
    learner = _code("notebooks/learner/05-cpu-vs-gpu.ipynb")
    complete = _code("notebooks/05-cpu-vs-gpu.ipynb")
    answers = ("with keras.device(device):", "model.set_weights(initial_weights)",
               "statistics.median(cpu_seconds[1:])", "break_even = GPU_HOUR / (cores * CORE_HOUR)")
    for answer in answers:
        assert answer in complete and answer not in learner, answer
    assert learner.count("____") >= 7 and "____" not in complete
    # The CPU's training call is given (the learner wrote train_on's body in the exercise
    # before it); the body's answers above stay out of the learner's notebook.
    assert 'cpu_run = train_on(' in complete and 'cpu_run = train_on(' in learner


# --- honest runs ------------------------------------------------------------------------------

@pytest.fixture
def lesson(monkeypatch):
    from gpulesson.lesson import core

    monkeypatch.setattr(core, "keras_device", lambda: {"gpu_count": 0, "device": "CPU",
                                                       "backend": "tensorflow"})
    return core


@pytest.mark.parametrize("epochs", [0, -1, 2.0, 256 / 4, True, "3"])
def test_a_run_without_whole_epochs_is_refused_with_what_to_write(lesson, epochs):
    from gpulesson.errors import LessonError

    with pytest.raises(LessonError, match=r"whole number of at least 1.*CPU_EPOCHS = 1"):
        lesson.check_run("cpu", epochs)


@pytest.mark.parametrize("device", ["gpu:0", "GPU:1", "gpu"])
def test_a_gpu_run_without_that_gpu_is_refused_before_training(lesson, device):
    from gpulesson.errors import LessonError

    with pytest.raises(LessonError, match=r"No GPU .* Keras sees 0 GPU\(s\).*\"cpu\""):
        # Refused before any of the other arguments is touched: nothing trains.
        lesson.train_on(device, None, None, None, None, 3)


def test_a_run_that_is_what_it_says_passes(lesson, monkeypatch):
    lesson.check_run("cpu", 3)
    monkeypatch.setattr(lesson, "keras_device", lambda: {"gpu_count": 2})
    lesson.check_run("gpu:1", 1)
    with pytest.raises(lesson.LessonError):
        lesson.check_run("gpu:2", 1)


def test_the_reference_run_says_which_environment_it_ran_in():
    """A GPU node's run in its own Python is named as such, with the lesson's pins beside it."""
    from gpulesson.experiments import cnn
    from gpulesson.experiments.cnn import page
    from gpulesson.machine import pinned

    records = cnn.reference_run()
    gpu = next((r for r in records if r.get("device_kind") == "gpu"), records[0])
    note = page.substitutions()["ref_environment"]
    assert note == pinned.environment_note(gpu, "The reference run")
    jax = gpu["versions"].get("jax")
    if jax and not pinned.same_version(jax, pinned.pinned_environment()["jax"]):
        assert f"JAX {jax}" in note and "not the lesson's pinned one" in note
