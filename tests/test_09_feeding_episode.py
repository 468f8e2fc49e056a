"""Episode 9, "Feeding the GPU": its placeholders, figures, command-line options and calls
into the benchmark exist; its numbers come from the results file; the code it teaches
(gpulesson/lesson/feeding.py) estimates memory and reads NVML correctly."""

import ast
import inspect
import re
import subprocess
import sys
import threading
import types

import pytest
from carpentry import PLACEHOLDER, resolve_conditionals, split_front_matter
from conftest import ROOT

from gpulesson.experiments import ceiling, cnn, feeding, workers
from gpulesson.experiments.cnn import gpu_use
from gpulesson.experiments.feeding import measure as rec
from gpulesson.experiments.feeding import pipelines as fp
from gpulesson.experiments.ladder import page as ladder
from gpulesson.experiments.profile import page as profile
from gpulesson.experiments.registry import results_name
from gpulesson.records.results import NOT_RECORDED

EPISODE = ROOT / "_episodes" / "09-feeding-the-gpu.md"
TEXT = EPISODE.read_text(encoding="utf-8")
META_TEXT, BODY = split_front_matter(TEXT)
FENCE = re.compile(r"^(`{3,}|:{3,}|~{3,})\{?([\w-]*)\}?[^\n]*\n(.*?)^\1[ \t]*$",
                   re.DOTALL | re.MULTILINE)
CODE_CELL = re.compile(r"^```\{code-cell\} ipython3\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
FIGURE = re.compile(r"^:{3,}\{figure\}\s*(\S+)", re.MULTILINE)


def code_cells(text=TEXT) -> list[str]:
    """The source of every code cell, without its ``:tags:`` line."""
    return [re.sub(r"\A:tags:.*\n", "", m[1]) for m in CODE_CELL.finditer(text)]


def prose(text=BODY) -> str:
    """The text outside code blocks (``` and ~~~ fences)."""
    return re.sub(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", "", text, flags=re.DOTALL | re.MULTILINE)


def help_options() -> set[str]:
    """The options ``python -m gpulesson.experiments.feeding --help`` lists."""
    out = subprocess.run([sys.executable, "-m", "gpulesson.experiments.feeding", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out))


def shown_options(text=TEXT) -> set[str]:
    """Options the episode gives the benchmark: on its command lines (with backslash
    continuations) and in backticks near a mention of it (the instructor note)."""
    found = set()
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        if "gpulesson.experiments.feeding" in line and ("python -m" in line or "--" in line):
            found |= set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", line))
    note = re.search(r":::\{instructor-note\}(.*?)^:::$", text, re.DOTALL | re.MULTILINE)
    if note:
        found |= set(re.findall(r"`(--[a-z][a-z0-9-]*)", note[1]))
    return found


# --------------------------------------------------------------------- the page and the benchmark

def test_every_placeholder_is_one_the_benchmark_provides():
    used = {m[1] for m in PLACEHOLDER.finditer(TEXT)}
    assert used, "the episode shows no recorded number"
    values = {**feeding.page.substitutions(), **ceiling.page.substitutions(), **workers.page.substitutions(),
              **profile.substitutions(), **ladder.substitutions(),
              "ref_use_feeding": gpu_use.feeding_note(cnn.RESULTS_FILE)}
    refs = {name for name in used if name.startswith("ref_")}
    assert refs == {name for name in used
                    if name.startswith(("ref_feed_", "ref_ceil_", "ref_workers_", "ref_prof_",
                                        "ref_ladder_")) or name == "ref_use_feeding"}, \
        "the episode's numbers come from the feeding benchmark, the ceiling, Grain's workers, " \
        "the profile and the ladder, and episode 5's run beside the feeding benchmark"
    assert not refs - values.keys(), sorted(refs - values.keys())
    # the reference run: its table, what it shows, and the answer to the reading exercise
    assert {"ref_feed_table", "ref_feed_findings", "ref_feed_reading"} <= refs


def test_without_a_results_file_the_page_says_so_in_sentences(tmp_path):
    values = {**feeding.page.substitutions(tmp_path / "none.jsonl"),
              **ceiling.page.substitutions(tmp_path / "none.jsonl"),
              **workers.page.substitutions(tmp_path / "none.jsonl"),
              **profile.substitutions(tmp_path / "none.jsonl"),
              **ladder.substitutions(tmp_path / "none.jsonl"),
              "ref_use_feeding": gpu_use.feeding_note(tmp_path / "none.jsonl")}
    filled = PLACEHOLDER.sub(lambda m: values[m[1]], resolve_conditionals(BODY, values))
    assert "No reference run has been recorded yet" in filled
    assert "not recorded yet (not recorded yet)" not in filled
    assert NOT_RECORDED not in filled.replace("has not been recorded yet", "")


def test_the_page_shows_no_record_of_a_pipeline_that_delivered_wrong_data():
    values = feeding.page.substitutions()
    for record in feeding.reference_run():
        if rec.delivered_wrong_data(record):
            assert "Keras workers |" not in values["ref_feed_table"]


def test_no_measured_number_is_typed_into_the_text():
    """Rates, percentages and durations in the prose come from placeholders; the only
    typed ones are the goals and the meaning of a full GPU."""
    allowed = {"90 %", "100 %"}
    text = re.sub(r"^:width:.*$", "", PLACEHOLDER.sub("", prose()), flags=re.MULTILINE)
    typed = re.findall(r"\d[\d,.]*\s?(?:images/s|%|ms\b|GB/s|TFLOP/s|GFLOP/s)", text)
    assert set(typed) <= allowed, set(typed) - allowed
    seconds = re.findall(r"\d+\.\d+\s?(?:s|min)\b", text)
    assert not seconds, seconds


def test_figures_exist_and_are_the_ones_make_figures_draws():
    shown = FIGURE.findall(TEXT)
    assert shown, "the episode shows the benchmark's figures"
    # each figure's page, which names it and its folder (registry.draw_declared)
    drawn_by = {name: page for page in (feeding.page, ceiling.page, workers.page, profile, ladder)
                for name in page.FIGURES}
    assert {p.rsplit("/", 1)[-1] for p in shown} == set(drawn_by)
    for src in shown:
        path = (EPISODE.parent / src).resolve()
        # the page shows the ladder's figure only once a run is recorded (its {{ if }})
        assert path.is_file() or (path.name == ladder.FIGURES[0] and not ladder.reference_run()), src
        assert path.parent == ROOT / drawn_by[path.name].FIGURE_FOLDER, src
    # the captions name the results file and what draws it
    for caption in re.findall(r"^:{3,}\{figure\}.*?^:{3,}$", TEXT, re.DOTALL | re.MULTILINE):
        page = drawn_by[FIGURE.search(caption)[1].rsplit("/", 1)[-1]]
        assert "`make figures`" in caption and f"results/{results_name(page)}" in caption, caption


def test_every_option_shown_for_the_benchmark_exists():
    shown = shown_options()
    assert {"--devices", "--cpu-max-steps", "--out"} <= shown, shown
    assert not shown - help_options(), sorted(shown - help_options())


def test_the_option_check_catches_a_wrong_option():
    text = TEXT + "\n```bash\npython -m gpulesson.experiments.feeding --gpus 2\n```\n"
    assert "--gpus" in shown_options(text) - help_options()


def _calls(module_names):
    """(module alias, attribute, keyword names) of every call the code cells make on the
    benchmark's modules."""
    calls = []
    for source in code_cells():
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_names):
                calls.append((node.value.id, node.attr, None))
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id in module_names):
                calls.append((node.func.value.id, node.func.attr,
                              {k.arg for k in node.keywords if k.arg}))
    return calls


def test_the_notebook_uses_only_what_the_benchmark_has():
    modules = {"feeding": feeding, "fp": fp}
    calls = _calls(modules)
    assert any(name == "run_benchmark" for _, name, _ in calls)
    for alias, name, keywords in calls:
        assert hasattr(modules[alias], name), f"{alias}.{name} does not exist"
        if keywords:
            accepted = inspect.signature(getattr(modules[alias], name)).parameters
            assert keywords <= accepted.keys(), (name, keywords - accepted.keys())


def test_the_pipelines_it_names_exist():
    for source in code_cells():
        for match in re.finditer(r"pipelines=\[([^\]]*)\]", source):
            names = re.findall(r'"([\w-]+)"', match[1])
            assert rec.check_pipelines(names) == names
        for name in re.findall(r'make_pipeline\(\s*"([\w-]+)"', source):
            rec.check_pipelines([name])


def test_gpu_cells_skip_out_loud_and_exercises_have_solutions():
    assert "SKIPPED: no GPU is visible" in TEXT
    assert "SKIPPED: no NVIDIA GPU/NVML" in TEXT
    exercises = re.findall(r"^::::\{exercise\}.*?^::::$", TEXT, re.DOTALL | re.MULTILINE)
    assert len(exercises) >= 7
    # the objectives on GPU memory and on reading the benchmark have their exercises
    titles = " ".join(e.splitlines()[0] for e in exercises)
    assert "Will a batch of 1024 fit?" in titles and "Read the benchmark" in titles
    for exercise in exercises:
        assert ":::{solution}" in exercise, exercise[:80]
    assert ":::{instructor-note}" in TEXT


def test_code_lines_are_short_and_glossary_terms_exist():
    for source in code_cells():
        for line in source.splitlines():
            assert len(line) <= 78, line
    glossary = (ROOT / "reference.md").read_text(encoding="utf-8")
    for label, target in re.findall(r"\{term\}`([^`<]+?)(?:\s*<([^>]+)>)?`", TEXT):
        term = (target or label).strip()
        assert re.search(rf"^{re.escape(term)}\n  \S", glossary, re.MULTILINE), term


# ------------------------------------------------------------------ the code the episode teaches

@pytest.fixture(scope="module")
def lesson_feeding():
    from gpulesson.lesson import feeding as lesson_feeding

    return lesson_feeding


def _tiny_model():
    import keras

    return keras.Sequential([keras.Input(shape=(4, 4, 1)),
                             keras.layers.Conv2D(2, 3, padding="same"),
                             keras.layers.Flatten(),
                             keras.layers.Dense(3)])


def test_activations_and_memory_estimate(lesson_feeding):
    model = _tiny_model()
    # input 16, conv 32, flatten 32, dense 3
    assert lesson_feeding.activations_per_image(model) == 16 + 32 + 32 + 3
    params = model.count_params()
    assert params == (9 * 2 + 2) + (32 * 3 + 3)
    one = lesson_feeding.training_memory(model, 1)
    assert one == 16 * params + 2 * 4 * 83
    ten = lesson_feeding.training_memory(model, 10)
    assert ten - one == 9 * 2 * 4 * 83
    half = lesson_feeding.training_memory(model, 10, bytes_per_activation=2)
    assert ten - half == 10 * 2 * 2 * 83
    with pytest.raises(ValueError, match="batch_size must be at least 1"):
        lesson_feeding.training_memory(model, 0)


def test_lesson_cnn_memory_grows_with_the_batch(lesson_feeding):
    from gpulesson.lesson import build_cnn

    model = build_cnn()
    sizes = [lesson_feeding.training_memory(model, b) for b in (1, 256, 1024)]
    assert sizes == sorted(sizes) and sizes[0] > 16 * model.count_params()


def _fake_nvml(busy=73, used=3 * 2**30, total=80 * 2**30, fail=False):
    module = types.ModuleType("pynvml")

    def init():
        if fail:
            raise RuntimeError("NVML Shared Library Not Found")

    module.nvmlInit = init
    module.nvmlDeviceGetHandleByIndex = lambda index: ("handle", index)

    def by_uuid(uuid):  # the node's one GPU known by its UUID; NVML refuses any other
        if uuid != "GPU-a":
            raise RuntimeError("NVML: Not Found")
        return ("handle", uuid)

    module.nvmlDeviceGetHandleByUUID = by_uuid
    module.nvmlDeviceGetUtilizationRates = lambda handle: types.SimpleNamespace(
        gpu=busy if handle[1] in (0, "GPU-a") else handle[1])
    module.nvmlDeviceGetMemoryInfo = lambda handle: types.SimpleNamespace(used=used, total=total)
    return module


def test_gpu_utilisation_reads_nvml_or_says_none(lesson_feeding, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml())
    assert lesson_feeding.gpu_utilisation() == (73, 3.0, 80.0)
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml(fail=True))
    assert lesson_feeding.gpu_utilisation() is None
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert lesson_feeding.gpu_utilisation() is None


def test_gpu_utilisation_counts_the_gpus_the_job_sees(lesson_feeding, monkeypatch):
    """NVML numbers the node's GPUs; a job given GPUs 2 and 0 reads GPU 2 as its first."""
    monkeypatch.setitem(sys.modules, "pynvml", _fake_nvml())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,0")
    assert lesson_feeding.gpu_utilisation(0)[0] == 2
    assert lesson_feeding.gpu_utilisation(1)[0] == 73
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-a")
    assert lesson_feeding.gpu_utilisation(0)[0] == 73
    assert lesson_feeding.gpu_utilisation(1) is None  # the job sees one GPU only
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert lesson_feeding.gpu_utilisation(0) is None  # no GPU visible


def test_gpu_watch_samples_from_its_own_thread_while_training(lesson_feeding, monkeypatch):
    nvml, sampled = _fake_nvml(busy=55), threading.Event()
    read = nvml.nvmlDeviceGetUtilizationRates

    def counted(handle):
        if len(watch.samples) >= 2:
            sampled.set()
        return read(handle)

    nvml.nvmlDeviceGetUtilizationRates = counted
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    watch = lesson_feeding.GpuWatch(interval=0.001)
    watch.on_train_begin()
    assert sampled.wait(timeout=120), "the watch took no samples"
    watch.on_train_end()
    assert not watch._thread.is_alive()
    taken = list(watch.samples)
    assert len(taken) >= 3 and set(taken) == {55}
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no NVML: sampling goes on, adds nothing
    watch.on_train_begin()
    watch.on_train_end()
    assert watch.samples == taken


def test_gpu_watch_keeps_keras_callbacks_asynchronous(lesson_feeding, monkeypatch):
    """A per-batch method makes Keras wait for every step (its CallbackList then turns
    asynchronous dispatch off); the watch must not have one."""
    import keras
    from keras.src import backend

    class PerBatch(keras.callbacks.Callback):  # the old way: sampling after some batches
        def on_train_batch_end(self, batch, logs=None):
            pass

    # As on the JAX and PyTorch backends, whichever backend runs the tests.
    monkeypatch.setattr(backend, "IS_THREAD_SAFE", True)
    assert keras.callbacks.CallbackList([lesson_feeding.GpuWatch()])._async_train
    assert not keras.callbacks.CallbackList([PerBatch()])._async_train


def test_the_episode_states_the_loader_margin_that_the_page_applies():
    from gpulesson.experiments.feeding.page import LOADER_MARGIN

    stated = set(re.findall(r"([\d.]+) times the (?:images per second|rate)", " ".join(TEXT.split())))
    assert stated == {f"{LOADER_MARGIN:g}"}, f"the episode states {stated}, the page {LOADER_MARGIN:g}"


# 4,000 while the page showed one run; 4,300 once each device's reference came from its own run,
# named with its machine; 4,750 once every verdict said which epochs it compared, and the page
# set episode 5's run beside the generator's, the settings' goal beside the ceiling's step and
# the records beside the mixed-precision answer.
MAX_WORDS = 4750


def test_the_page_is_short_and_its_sentences_too():
    """At most :data:`MAX_WORDS` words of prose on the page as shown (the reference runs' values
    filled in), no sentence over 50 words: generated sentences included."""
    sys.path.insert(0, str(ROOT / "tools"))
    import core_check
    from carpentry import fill_placeholders

    page = core_check.parse_body(fill_placeholders(BODY, ROOT))
    found = core_check.sentences(page.paragraphs)
    assert sum(core_check.words(p) for p in page.paragraphs) <= MAX_WORDS
    longest = max(found, key=core_check.words)
    assert core_check.words(longest) <= 50, longest


def test_pipeline_names_are_defined_before_they_are_used():
    """The legend's table comes before any pipeline name in backticks."""
    legend = BODY.index("## The pipelines this episode measures")
    names = set(rec.PIPELINES) | set(ceiling.page.PIPELINES)
    first = min(m.start() for name in names if (m := re.search(rf"`{re.escape(name)}`", BODY)))
    assert first > legend
    table = BODY[legend:BODY.index("## Is the GPU waiting?")]
    for name in names:
        assert f"`{name}`" in table, name


def test_the_page_stays_short_once_the_card_is_profiled_and_its_settings_recorded(tmp_path):
    """The next GPU lease adds the profile (both devices) and the settings on the card: the page
    built from such records (made up, shaped like the first H200 run's) keeps the limits of
    :func:`test_the_page_is_short_and_its_sentences_too`, so that unpacking them breaks nothing."""
    sys.path.insert(0, str(ROOT / "tools"))
    import core_check
    from carpentry import fill_placeholders
    from conftest import lesson_files
    from test_09_ladder import h200_shaped
    from test_09_profile import made_record

    from gpulesson.records.results import append_record

    root = lesson_files(tmp_path / "lesson")
    results = root / "results"
    h200_shaped(results / "ladder.jsonl")
    for record in (
            made_record("cpu", step=0.3, run_id="p1",
                        host={"input": 0.001, "dispatch": 0.001, "other": 0.298},
                        dev={"kernels": 0.29, "copies": 0.0, "idle": 0.01}),
            made_record("gpu", step=0.002, gpu="NVIDIA H200", run_id="p1",
                        host={"input": 0.0004, "dispatch": 0.0003, "other": 0.0013},
                        dev={"kernels": 0.0005, "copies": 0.0, "idle": 0.0015})):
        append_record(results / "profile.jsonl", record)
    # and the stream on the GPU: `lesson-ahead` beside the newest GPU runs' `lesson`, with the
    # CNN and with the do-nothing model, and the chunks read on the node
    for name, experiment in (("feeding.jsonl", feeding), ("ceiling.jsonl", ceiling.page)):
        for r in experiment.reference_run(results / name):
            if r["device_kind"] == "gpu" and r["pipeline"] == "lesson":
                append_record(results / name, {**r, "pipeline": "lesson-ahead"})
    chunked = [r for r in feeding.reference_run(results / "feeding.jsonl")
               if r["device_kind"] == "gpu" and r["pipeline"] == "lesson" and r["mode"] == "loader"]
    for layout in ("chunks of 1 block, uncompressed", "chunks of 4 blocks, lzf, 64 MiB cache"):
        append_record(results / "feeding.jsonl", {**chunked[0], "group": "chunks", "window": 4,
                                                  "device_kind": "cpu", "layout": layout})
    page = core_check.parse_body(fill_placeholders(BODY, root))
    shown = " ".join(page.paragraphs)
    assert "NVIDIA H200" in shown, "the made-up GPU records are on the page"
    assert "`lesson-ahead` " in shown and "of `ram` on" in shown and "in float32:" in shown
    assert sum(core_check.words(p) for p in page.paragraphs) <= MAX_WORDS
    longest = max(core_check.sentences(page.paragraphs), key=core_check.words)
    assert core_check.words(longest) <= 50, longest
