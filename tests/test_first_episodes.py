"""Episodes 1 to 5: the learners' setup check opens the workshop, episode 2 teaches the sessions
the workshop runs, and the exercises assess what their objectives name, with answers true to what
the recorded cells print.

The schedule gives the setup check its own slot before episode 1 (``lesson_schedule.setup_check``
in ``_config.yml``), so the check is a checklist, not an exercise counted in episode 1's minutes,
and its given check cell (gpulesson.classroom.check's learner part) comes first, before learners type a
line: a wrong kernel shows at once.
"""

import re

import core_check
from carpentry import schedule_sessions, schedule_setup_check, split_front_matter
from conftest import ROOT

EPISODES = ROOT / "_episodes"


def _page(name: str):
    meta, body = split_front_matter((EPISODES / name).read_text(encoding="utf-8"))
    return meta, body, core_check.parse_body(body)


def test_episode_1_opens_with_the_setup_check_on_the_cells_it_reads():
    assert schedule_setup_check(ROOT) >= 10
    _, body, page = _page("01-introduction.md")
    first_section = body[body.index("## Setup check"):body.index("\n## ", body.index("## Setup check") + 1)]
    assert first_section.index("{checklist}") < first_section.index("{exercise}")
    before = first_section[:first_section.index("{checklist}")]
    # The same checks as the instructor's readiness check, for what applies to a learner.
    for call in ("devices.report()", "get_settings()", "prepare(settings)", "learner_checks()"):
        assert call in before, call
    assert body.index("## Setup check") < min(body.index(f"```{{code-cell}}"), body.index("{exercise}"))
    # The given check cell is the first cell, before the cells learners type.
    first_cell = page.cells[0]
    assert first_cell.given and "learner_checks()" in "\n".join(first_cell.lines), first_cell
    assert not any("session work" in e.title for e in page.exercises)
    # Each point of the check has its fix in the solution.
    fixes = first_section[first_section.index("{solution} If a point fails"):]
    assert "Change Kernel" in fixes and "gpulesson.datasets.prepare" in fixes and "No GPU visible" in fixes


def test_every_code_cell_of_episodes_1_and_3_is_given_or_prompted():
    for name in ("01-introduction.md", "03-environments.md"):
        _, body, _ = _page(name)
        for cell in re.findall(r"^```\{code-cell\}[^\n]*\n((?::[\w-]+:.*\n)*)", body, re.M):
            assert ":prompt:" in cell or re.search(r":tags:.*\bgiven\b", cell), (name, cell)


def test_episode_3_says_sbatch_passes_the_environment_and_why_scripts_load_modules():
    _, body, _ = _page("03-environments.md")
    text = " ".join(body.split())
    assert "--export=ALL" in text and "loaded modules included" in text
    assert "a batch job starts without" not in text and "batch script must load it itself" not in text


def test_episode_2_teaches_the_sessions_the_workshop_runs_and_their_cost():
    sessions = {s.label: s for s in schedule_sessions(ROOT)}
    cpu, gpu = sessions["CPU session"], sessions["GPU session"]
    _, body, page = _page("02-connecting.md")
    text = " ".join(body.split())
    # The form's table: one column per session, the values of lesson_schedule.sessions.
    assert (f"| Number of hours | {cpu.hours} | {gpu.hours} |" in text
            and f"| Cores | {cpu.cores} | {gpu.cores} |" in text
            and f"| Memory (GB) | {cpu.memory_gb} | {gpu.memory_gb} |" in text
            and f"| Number of GPUs | {cpu.gpus} | {gpu.gpus} |" in text)
    assert f"`--time={gpu.hours:02d}:00:00`" in text
    # The exercise checks the CPU session that learners have, and its solution the time limit.
    check = next(e for e in page.exercises if e.title.startswith("Find your session"))
    question, solution = " ".join(check.question), " ".join(check.solution)
    assert f"CPU session's request ({cpu.hours} hours, {cpu.cores} cores, {cpu.memory_gb} GB, no GPU)" \
        in question
    assert f"a time limit of `{cpu.hours}:00:00`" in solution and "3:00:00" not in solution
    # The cost example: learners x hours x rate, for each session.
    for hours in (cpu.hours, gpu.hours):
        assert f"20 learners × {hours} hours ×" in text
    # Its answer: the products with their totals, computed from the site's rates.
    for name in ("cpu_session", "gpu_session", "gpu_day"):
        assert f"{{{{ site_cost_{name} }}}}" in solution
    assert "{{ site_cost_gpu_day_ratio }} times the GPU session" in solution
    # The batch script and srun ask for the lesson's memory.
    assert "--mem=16G" not in body and f"#SBATCH --mem={gpu.memory_gb}G" in body
    # The setup page names the same two requests.
    setup = " ".join((ROOT / "setup.md").read_text(encoding="utf-8").split())
    assert f"{cpu.memory_gb} GB and {cpu.hours} hours" in setup
    assert f"{gpu.memory_gb} GB and {gpu.hours} hours" in setup


def _executed_output(name: str, marker: str) -> str:
    import json

    cells = json.loads((ROOT / "executed" / name).read_text(encoding="utf-8"))["cells"]
    cell = next(c for c in cells if c["cell_type"] == "code" and marker in "".join(c["source"]))
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


def test_episode_3s_kernel_exercise_assesses_the_backend_and_gpus_and_its_answer_is_what_prints():
    meta, _, page = _page("03-environments.md")
    assert "Keras backend and GPUs" in meta["objectives"][1]
    kernel = next(e for e in page.exercises if e.title.startswith("Which environment is my kernel"))
    question, solution = (" ".join(" ".join(part).split()) for part in (kernel.question, kernel.solution))
    assert "Keras backend" in question and "GPUs does TensorFlow list" in question
    assert "columns agree" not in solution and "*not installed*" in solution
    # The recorded versions cell: one TensorFlow build not installed, every installed one as pinned.
    rows = [line.split() for line in _executed_output("03-environments.ipynb", "pins = {}").splitlines()
            if line.startswith(("keras", "tensorflow", "numpy", "h5py", "jax"))]
    builds = {row[0]: row[1:] for row in rows if row[0].startswith("tensorflow")}
    assert sum(values[:2] == ["not", "installed"] for values in builds.values()) == 1, builds
    for row in rows:
        if row[1] != "not":
            assert row[1] == row[2], row
    # The GPU answer covers both sessions: no GPU in the CPU session, one in the GPU session.
    assert "In the CPU session, `[]`" in solution and "In the GPU session, one entry" in solution


def test_episode_4s_file_exercise_names_the_faster_file_and_compares_like_with_like():
    _, body, page = _page("04-data-pipeline.md")
    chunks = next(e for e in page.exercises if e.title.startswith("Guessed chunks and gzip"))
    question, solution = (" ".join(" ".join(part).split()) for part in (chunks.question, chunks.solution))
    assert "predict: which file reads faster" in question and "prediction" in chunks.classes
    assert "Your file, with chunks of one batch, reads faster." in solution
    assert "`x_train` alone, not the files" in solution
    assert "st_size" not in body and body.count("images.id.get_storage_size()") == 2
    # The recorded run agrees: the file with one batch per chunk read more images a second.
    printed = _executed_output("04-data-pipeline.ipynb", "guessed-chunks.h5")
    rates = [float(line.split()[0].replace(",", "")) for line in printed.splitlines()
             if line.endswith("images/s")]
    assert len(rates) == 2 and rates[0] > rates[1], printed
    # HDF5 reads part of an uncompressed chunk larger than its cache.
    assert "always reads" not in body and "reads only the\n  part you ask for" in body


def test_episode_5s_evaluate_and_predict_objective_has_an_exercise_without_new_code():
    meta, _, page = _page("05-cpu-vs-gpu.md")
    assert "Evaluate the model, predict classes with `argmax`" in meta["objectives"][2]
    found = [e for e in page.exercises if 3 in e.objectives and not e.optional]
    words = " ".join(" ".join(e.question + e.solution) for e in found)
    assert "probabilities.shape" in words and "model.evaluate" in words and "argmax" in words
    exercise = next(e for e in found if e.title.startswith("From probabilities to classes"))
    assert exercise.has_solution and not exercise.code and "AttributeError" in " ".join(exercise.solution)


def test_the_parts_of_the_objectives_the_workshop_review_found_unassessed_have_questions():
    """Episode 2: the GPU session's check; 3: where CUDA comes from; 4: shapes, data types and
    classes, and chunks of one batch; 5: the fixed settings and overlapping ranges."""
    def exercise(name, title):
        meta, _, page = _page(name)
        found = next(e for e in page.exercises if e.title.startswith(title) and not e.optional)
        words = (" ".join(" ".join(part).split()) for part in (found.question, found.solution))
        return meta, found, *words

    _, session, question, solution = exercise("02-connecting.md", "Find your session")
    assert "in the GPU session?" in question and "`nvidia-smi -L` lists one GPU" in solution
    assert "nvidia-smi -L" in _page("05-cpu-vs-gpu.md")[1].split("## The model")[0]
    meta, kernel, question, solution = exercise("03-environments.md", "Which environment is my kernel")
    assert "driver" in meta["objectives"][2] and 3 in kernel.objectives
    assert "driver 535" in question and "CUDA module" in question and "525 or later" in solution
    meta, prediction, question, solution = exercise("04-data-pipeline.md", "Bytes or floats?")
    assert "shape and data type" in question and "class counts" in question
    assert "one time in ten" in solution and prediction.prediction
    _, chunks, question, solution = exercise("04-data-pipeline.md", "Guessed chunks and gzip")
    assert "chunk hold `BATCH_SIZE` whole images" in question and "one training batch" in solution
    _, ranges, question, solution = exercise("05-cpu-vs-gpu.md", "Faster, or not shown?")
    assert 1 in ranges.objectives and "ranges overlap" in question and "`JIT_COMPILE = True`" in question
    assert solution.startswith("The answer is (c).") and "changes only the device" in solution
    for found in (session, kernel, prediction, chunks, ranges):
        assert found.has_solution and found.minutes
