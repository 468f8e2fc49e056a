"""tools/core_check.py: the lesson's core fits its day and sessions, and the check fails where it should.

The script runs on the real episodes (they must pass) and on small made-up lessons, one limit
broken at a time, to show that each check can fail and names the episode and the limit: the
timing model's teaching minutes (typed lines, given lines, talk, recorded waits), each
exercise's minutes, their sum, required exercises in the core, CPU training, long sentences,
objectives, prose per episode and in all, the day with its opening, setup check, wrap-up and
breaks, and the sessions (long enough, GPUs only where used). The guide's table is the model's.
The last test maps every objective of every episode to an exercise with a solution.
"""

import json
import subprocess
import sys
import textwrap

import core_check
import core_schedule
import pytest
from carpentry import Session, episodes, split_front_matter, toc_episode_paths
from conftest import ROOT

CORE = toc_episode_paths(ROOT)[:5]


def test_the_core_passes_and_prints_a_table_per_episode():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "core_check.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for path in CORE:
        slug = path.split("/")[-1].removesuffix(".md")
        assert f"{slug} (" in result.stdout
    assert "a. teaching minutes the room needs" in result.stdout and "the core passes" in result.stdout


def test_the_core_is_the_first_part_of_the_toc_and_the_guide_and_landing_page_agree():
    parts = core_check.core_part(ROOT)
    assert [ep.path.as_posix() for ep in parts[0].episodes] == CORE
    assert core_check.schedule_failures(ROOT) == []
    for page in ("guide.md", "index.md"):
        named = core_schedule.CORE_NAMED.findall((ROOT / page).read_text(encoding="utf-8"))
        assert named == [("1", "5")], (page, named)


# A made-up lesson: a core of two episodes and a further part, with breaks.
TOC = """\
format: jb-book
root: index
parts:
  - caption: Core episodes (a day)
    chapters:
      - file: _episodes/01-one
      - file: _episodes/02-two
  - caption: Further episodes
    chapters:
      - file: _episodes/03-three
"""
CONFIG = """\
lesson_schedule:
  opening: 12
  setup_check: 15
  wrap_up: 10
  session_start: 12
  break_return: 2
  breaks:
    01-one: 10
  sessions:
    - {label: CPU session, first: 01-one, hours: 3, partition: cpu, cores: 4, memory_gb: 24, gpus: 0}
lesson_site:
  session_max_hours: 8
"""
GOOD_EXERCISE = """\
::::{exercise} Say it (10 min)
:class: objective-1
What does it do?

:::{solution}
It does it.
:::
::::
"""


def episode(body: str, teaching: int = 10, exercises: int = 15, objectives: int = 1) -> str:
    goals = "\n".join(f'  - "Objective {n}."' for n in range(1, objectives + 1))
    return (f'---\ntitle: "T"\nteaching: {teaching}\nexercises: {exercises}\nquestions:\n  - "Q?"\n'
            f'objectives:\n{goals}\nkeypoints:\n  - "K."\n---\n\n{textwrap.dedent(body)}')


def code_cell(lines: int, tags: str = "") -> str:
    head = f":tags: [{tags}]\n\n" if tags else ""
    body = "\n".join(f"x{n} = {n}" for n in range(lines))
    return f"```{{code-cell}} ipython3\n{head}{body}\n```\n"


def lesson(tmp_path, one: str, two: str | None = None, three: str | None = None,
           config: str = CONFIG, guide: str = ""):
    (tmp_path / "_episodes").mkdir()
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "_config.yml").write_text(config)
    ok = episode("Some text.\n\n" + GOOD_EXERCISE)
    for name, text in (("01-one", one), ("02-two", two or ok), ("03-three", three or ok)):
        (tmp_path / "_episodes" / f"{name}.md").write_text(text)
    (tmp_path / "guide.md").write_text(guide or "The core (episodes 1 to 2) is a day.\n\n"
                                       f"{core_schedule.TABLE_START}\n{core_schedule.TABLE_END}\n")
    if not guide:
        core_schedule.write_guide(tmp_path / "guide.md", core_check.guide_table(tmp_path))
    return tmp_path


def executed(root, slug: str, wall_s: float):
    """A recorded notebook run of an episode, as tools/record_run.py writes its metadata."""
    (root / "executed").mkdir(exist_ok=True)
    (root / "executed" / f"{slug}.ipynb").write_text(json.dumps({"metadata": {"recorded_run": {
        "wall_s": wall_s, "backend": "tensorflow", "machine": {"cores_usable": 2, "gpu": None}}},
        "cells": []}))


def failures(root, guide: bool = True) -> list[str]:
    """The check's failures; with guide, after writing the model's table into the guide."""
    if guide:
        core_schedule.write_guide(root / "guide.md", core_check.guide_table(root))
    return core_check.run(root, out=open("/dev/null", "w"))


def test_a_made_up_lesson_within_the_limits_passes(tmp_path):
    root = lesson(tmp_path, episode("Two sentences. Short ones.\n\n" + code_cell(5) + GOOD_EXERCISE))
    assert failures(root) == []
    assert core_check.main(["--root", str(root)]) == 0


def teaching_failure(root) -> str:
    found = [f for f in failures(root) if f.startswith("01-one: the room needs")]
    return found[0] if found else ""


def test_typed_lines_count_a_minute_each_and_other_cells_do_not(tmp_path, capsys):
    # 10 teaching minutes: 10 typed lines at most (with a little talk: fewer).
    root = lesson(tmp_path, episode("Text.\n\n" + code_cell(11) + GOOD_EXERCISE))
    assert core_check.main(["--root", str(root)]) == 1
    err = capsys.readouterr().err
    # 11 typed lines and a minute to run the cell.
    assert "01-one: the room needs 13 teaching minutes (typed 12.0, given 0.0, talk 0.0, waits 0.0)" \
        ", over its 10 (front matter 'teaching')" in err, err
    for text in ("## More (optional)\n\n" + code_cell(71),
                 code_cell(5) + "# only a comment\n" * 50,
                 code_cell(40, "exercise") + code_cell(40, "solution")):
        (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + GOOD_EXERCISE + text))
        assert not teaching_failure(root), text[:40]
    # The same lines given are read at ten a minute, a minute to run each cell, and a cell over
    # 60 lines is walked through by its parts; a type-along: false episode reads them too.
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + code_cell(146, "lesson-module, given")))
    assert not teaching_failure(root)
    assert core_check.check_episode(root, "_episodes/01-one.md").model["given"] == 7.0
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + code_cell(50, "given") + code_cell(50, "given")))
    assert "the room needs 13 teaching minutes (typed 0.0, given 12.0," in teaching_failure(root)
    text = episode("Text.\n\n" + code_cell(71) + GOOD_EXERCISE).replace("---\n\n", "type-along: false\n---\n\n")
    (root / "_episodes" / "01-one.md").write_text(text)
    assert not teaching_failure(root)


def test_talk_shown_commands_and_recorded_waits_count_too(tmp_path):
    talk = "Some words here. " * 340  # 1,020 words presented: 10.2 minutes
    root = lesson(tmp_path, episode(talk + "\n\n" + GOOD_EXERCISE))
    assert "the room needs 11 teaching minutes (typed 0.0, given 0.0, talk 10.2" in teaching_failure(root)
    # The same words in an optional section are not presented; in an instructor note they are.
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + "## More (optional)\n\n" + talk))
    assert not teaching_failure(root)
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + ":::{instructor-note}\n" + talk + "\n:::\n"))
    assert "talk 10.2" in teaching_failure(root)
    # Shell commands on the page are read and run.
    commands = "```bash\n" + "squeue --me\n" * 101 + "```\n"
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + commands + GOOD_EXERCISE))
    assert "(typed 0.0, given 10.1," in teaching_failure(root)
    # A recorded run of 240 s waits 3 x 4 = 12 minutes.
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + GOOD_EXERCISE))
    executed(root, "01-one", 240)
    assert "(typed 0.0, given 0.0, talk 0.0, waits 12.0)" in teaching_failure(root)
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + GOOD_EXERCISE, teaching=13))
    assert not teaching_failure(root)


def test_comment_lines_and_blank_lines_are_not_typed():
    page = core_check.parse_body("```{code-cell} ipython3\n# a comment\n\nx = 1\n  # indented\n```\n")
    assert [cell.typed_lines for cell in page.cells] == [1]


def exercise(title: str, classes: str = "objective-1") -> str:
    return GOOD_EXERCISE.replace("Say it (10 min)", title).replace("objective-1", classes)


@pytest.mark.parametrize("title, classes, message", [
    ("Say it", "objective-1", "the exercise 'Say it' gives no minutes: end its title with"),
    ("Say it (7 min)", "objective-1", "the exercise 'Say it (7 min)' takes 7 minutes, under 8"),
    ("Guess (2 min)", "objective-1 prediction", "the exercise 'Guess (2 min)' takes 2 minutes"),
])
def test_a_required_exercise_needs_its_minutes_in_its_title_and_enough_of_them(tmp_path, title,
                                                                                classes, message):
    root = lesson(tmp_path, episode("Text.\n\n" + exercise(title, classes)))
    assert any(f.startswith(f"01-one: {message}") for f in failures(root)), failures(root)
    # Optional, or a prediction of 3 minutes and more, it passes.
    for title, classes in ((f"{title} (optional)", classes), ("Guess (3 min)", "objective-1 prediction")):
        (root / "_episodes" / "01-one.md").write_text(
            episode("Text.\n\n" + GOOD_EXERCISE + exercise(title, classes), exercises=20))
        assert failures(root) == [], title


def test_required_exercises_over_the_episodes_exercise_minutes_fail(tmp_path):
    two = exercise("Say it (10 min)") + exercise("Say more (8 min)")
    root = lesson(tmp_path, episode("Text.\n\n" + two, exercises=26))
    # Planned at 18 minutes, a room takes 1.5 times as long.
    assert any(f.startswith("01-one: its 2 required exercises, planned at 18 minutes, take 27 in a "
                            "room (1.5 times), over its 26 exercise minutes") for f in failures(root)), \
        failures(root)
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + two, exercises=27))
    assert failures(root) == []


def test_more_than_fourteen_required_exercises_in_the_core_fail(tmp_path):
    eight = "".join(exercise(f"Say it {n} (8 min)") for n in range(8))
    seven = "".join(exercise(f"Say it {n} (8 min)") for n in range(7))
    config = CONFIG.replace("hours: 3", "hours: 6").replace(
        "01-one: 10", "01-one: 10\n  breaks_inside:\n    01-one: 10\n    02-two: 10")
    root = lesson(tmp_path, episode("Text.\n\n" + eight, teaching=15, exercises=96),
                  two=episode("Text.\n\n" + seven, teaching=15, exercises=84), config=config)
    problems = failures(root)
    assert "the core has 15 required exercises, over 14: make some optional (an objective needs " \
           "one) or cut them" in problems, problems
    (root / "_episodes" / "02-two.md").write_text(
        episode("Text.\n\n" + seven.replace(" (8 min)", " (optional)", 1), teaching=15, exercises=84))
    assert failures(root) == []


CPU_TRAINING = """\
::::{{exercise}} Train it
:class: objective-1
Change the batch size.

:::{{solution}}
```python
{code}
```
:::
::::
"""


@pytest.mark.parametrize("code, trains", [
    ('run = train_on("cpu", weights, train, validation, test, 3)', True),
    ("model.fit(train_batches, epochs=3)", True),
    ('with keras.device("gpu:0"):\n    model.fit(train_batches, epochs=3)', False),
    ("model.fit(train_batches, epochs=1, steps_per_epoch=20)", False),
    ("model.fit(\n    ____,\n    epochs=3,\n)", False),
    ("print(model.summary())", False),
])
def test_an_exercise_that_trains_on_the_cpu_fails(tmp_path, code, trains):
    root = lesson(tmp_path, episode("Text.\n\n" + CPU_TRAINING.format(code=code)))
    found = [f for f in failures(root) if "trains on the CPU again" in f]
    assert bool(found) == trains, failures(root)
    if trains:
        assert found[0].startswith("01-one: the exercise 'Train it'")


def test_asking_in_words_to_train_again_counts_too():
    exercise = core_check.Exercise("Again", question=["Train the comparison again with TF32 off."])
    assert core_check.trains_on_cpu(exercise)
    exercise = core_check.Exercise("Read", question=["Old tutorials pass it to `fit` for 30 epochs."])
    assert not core_check.trains_on_cpu(exercise)


def test_too_many_long_sentences_fail(tmp_path):
    long = " ".join(["word"] * 36) + "."
    short = "A short sentence."
    root = lesson(tmp_path, episode(f"{long} {short} {short}\n\n"
                                    + GOOD_EXERCISE))
    problems = failures(root)
    assert any(f.startswith("01-one: 1 of") and "longer than 35 words" in f for f in problems), problems
    (root / "_episodes" / "01-one.md").write_text(
        episode(f"{long} " + f"{short} " * 20 + "\n\n" + GOOD_EXERCISE))
    assert failures(root) == []


def test_sentences_are_split_and_measured_as_the_page_shows_them():
    found = core_check.sentences([core_check.as_shown(
        "One {{ ref_a }} took {{ if ref_b }}long{{ else }}a while, since nothing was recorded "
        "yet{{ endif }}. `fit` runs it. And e.g. this stays one sentence.")])
    assert found == ["One VALUE took long.", "`fit` runs it.", "And e.g. this stays one sentence."]


def test_an_objective_without_an_exercise_fails(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE, objectives=2))
    assert any("01-one: objective(s) 2 of the front matter have no required exercise" in f
               for f in failures(root))
    # An optional exercise assesses nothing in the core (elsewhere it does).
    optional = exercise("Say more (optional)", "objective-2")
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + optional, objectives=2))
    assert any("01-one: objective(s) 2" in f for f in failures(root))
    assert objective_gaps(root, "_episodes/01-one.md") == []
    # A code cell tagged solution after the exercise is its solution.
    by_cell = ("::::{exercise} Write it (8 min)\n:class: objective-2\nFill the blanks.\n::::\n\n"
               + code_cell(2, "exercise") + code_cell(2, "solution"))
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + by_cell, exercises=27, objectives=2))
    assert failures(root) == []
    # An exercise without a solution does not assess anything.
    unsolved = "::::{exercise} Think\n:class: objective-2\nWhy?\n::::\n"
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + unsolved, objectives=2))
    assert objective_gaps(root, "_episodes/01-one.md") == [2]


def test_a_core_over_a_day_or_a_long_stretch_without_a_break_fails(tmp_path):
    config = CONFIG.replace("hours: 3", "hours: 8")
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE, teaching=300, exercises=50),
                  two=episode("Text.\n\n" + GOOD_EXERCISE, teaching=50, exercises=50), config=config)
    problems = failures(root)
    # 12 (opening) + 15 (setup check) + 350 + 12 (break and return) + 100 + 10 (wrap-up)
    assert any("the core takes 499 minutes with its breaks, opening, setup check and wrap-up, "
               "over the workshop day of 480" in f for f in problems), problems
    assert any("377 minutes without a break up to 01-one" in f for f in problems), problems
    # A break halfway through the long episode splits it; the day is still too long.
    (root / "_config.yml").write_text(config.replace("  sessions:", "  breaks_inside:\n    01-one: 10\n  sessions:"))
    problems = failures(root)
    assert any("202 minutes without a break up to 01-one" in f for f in problems), problems
    assert any("the core takes 511 minutes" in f for f in problems), problems


@pytest.mark.parametrize("key, least", [("opening", 12), ("setup_check", 15), ("wrap_up", 10)])
def test_a_core_without_its_opening_setup_check_or_wrap_up_fails(tmp_path, key, least):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    config = CONFIG.replace(f"  {key}: {least}\n", f"  {key}: {least - 5}\n")
    (root / "_config.yml").write_text(config)
    assert [f for f in failures(root) if "guide.md" not in f] == [
        next(f for f in failures(root) if f"lesson_schedule.{key}: {least} in _config.yml" in f)]
    (root / "_config.yml").write_text(CONFIG.replace(f"  {key}: {least}\n", ""))
    assert any(f"lesson_schedule.{key}: {least}" in f for f in failures(root))


GPU_EPISODE = episode("Text.\n\n" + GOOD_EXERCISE + code_cell(1).replace(
    "x0 = 0", 'with keras.device("gpu:0"):\n    x = 1'))


def test_a_session_shorter_than_its_part_or_with_gpus_where_none_are_used_fails(tmp_path):
    # The core: 12 + 15 + 25 + 12 + 25 + 10 = 99 minutes; with 20 to spare, 2 hours would do.
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    assert failures(root) == []
    (root / "_config.yml").write_text(CONFIG.replace("hours: 3", "hours: 1"))
    assert any(f.startswith("the CPU session lasts 1 hours but serves 99 minutes") and
               "it needs 2 hours" in f for f in failures(root)), failures(root)
    (root / "_config.yml").write_text(CONFIG.replace("hours: 3", "hours: 9"))
    assert any("over the site's session_max_hours of 8" in f for f in failures(root))
    (root / "_config.yml").write_text(CONFIG.replace("partition: cpu", "partition: gpu")
                                      .replace("gpus: 0", "gpus: 1"))
    assert any("the CPU session holds 1 GPU(s) for 01-one, 02-two, which use none" in f
               for f in failures(root)), failures(root)
    (root / "_config.yml").write_text(CONFIG.replace("  sessions:", "  no_sessions:"))
    assert any("names no Open OnDemand session" in f for f in failures(root))


def test_a_gpu_episode_needs_a_gpu_session_launched_at_the_break_before_it(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE), two=GPU_EPISODE)
    assert any("the CPU session has no GPU, but 02-two uses one" in f for f in failures(root))
    gpu = ("    - {label: GPU session, first: 02-two, hours: 2, partition: gpu, cores: 4, "
           "memory_gb: 24, gpus: 1}\n")
    (root / "_config.yml").write_text(CONFIG.replace("lesson_site:", gpu + "lesson_site:"))
    assert [f for f in failures(root) if "guide.md" not in f] == []
    part = core_check.core_part(root)[0]
    launch = [(start, item.label) for start, item, _ in part.rows
              if isinstance(item, Session)]
    # The GPU session is launched at the start of the break after episode 1 (0:52).
    assert launch == [("0:00", "CPU session"), ("0:52", "GPU session")]
    (root / "_config.yml").write_text(CONFIG.replace("lesson_site:", gpu.replace(
        "partition: gpu", "partition: cpu") + "lesson_site:"))
    assert any("asks for the CPU partition with 1 GPU(s)" in f for f in failures(root))


def test_the_guide_shows_the_models_table(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    assert failures(root) == []
    guide = (root / "guide.md").read_text()
    # Exercises of 10 planned minutes take 15; 10 % over 1 + 15 minutes is 18.
    assert "| 01-one | 0 | 0 (0) | 1 | none recorded | 1 of 10 min | 15 of 15 min | 18 min | 25 min |" in guide
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + GOOD_EXERCISE, teaching=11))
    assert failures(root, guide=False) == ["guide.md does not show the timing model's table as it is now: run "
                              "python tools/core_check.py --write-guide"]


def test_the_real_guide_shows_the_models_table_for_the_real_core():
    guide = (ROOT / "guide.md").read_text(encoding="utf-8")
    assert core_schedule.guide_block(guide) == core_check.guide_table(ROOT)
    for path in CORE:
        assert f"| {path.split('/')[-1].removesuffix('.md')} |" in core_schedule.guide_block(guide)


def test_prose_over_the_limit_of_an_episode_fails(tmp_path):
    prose = "Some words here. " * 1001  # 3,003 words
    root = lesson(tmp_path, episode(prose + "\n\n" + GOOD_EXERCISE))
    assert any(f.startswith("01-one: 3,0") and "words of prose, over 3,000" in f
               for f in failures(root)), failures(root)
    # Instructor notes, code and tables' code are not prose (a note's words are still talk).
    moved = (":::{instructor-note}\n" + prose + "\n:::\n\n" + code_cell(3) + GOOD_EXERCISE)
    (root / "_episodes" / "01-one.md").write_text(episode(moved))
    assert not [f for f in failures(root) if "words of prose" in f]


def test_prose_over_the_limit_of_the_core_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(core_check, "MAX_CORE_PROSE", 60)
    prose = "Some words here. " * 10
    root = lesson(tmp_path, episode(prose + "\n\n" + GOOD_EXERCISE),
                  two=episode(prose + "\n\n" + GOOD_EXERCISE))
    # Each episode: 30 words, and 11 in its exercise's title, question and solution.
    assert failures(root) == ["the core has 82 words of prose, over 60: cut rather than move"]


def test_prose_is_the_text_the_page_shows():
    body = textwrap.dedent("""\
        ## A heading here

        One {term}`GPU` and [the setup](../setup.md) for `fit`: {{ ref_speed }} faster.

        ```{code-cell} ipython3
        print("not prose at all")
        ```

        | Option | What it does |
        |---|---|
        | `--gres=gpu:1` | asks for one GPU |

        :::{figure} ../fig/x.svg
        :alt: Alt text is not shown

        The caption counts.
        :::

        :::{instructor-note}
        Only for instructors, not counted.
        :::

        (a-label)=
        ![an image](../fig/y.svg)
        """)
    page = core_check.parse_body(body)
    # 3 + 9 (a placeholder is one word) + 4 (header) + 4 (row, its code left out) + 3 (caption)
    assert core_check.prose_words(page.prose) == 23, page.prose


def test_a_guide_that_names_another_core_fails(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE),
                  guide="The core (episodes 1 to 4, with two breaks) fits a day.\n")
    assert any("guide.md names the core as episodes 1 to 4" in f for f in failures(root, guide=False))


def test_a_toc_without_a_core_part_is_refused(tmp_path, capsys):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    (root / "_toc.yml").write_text(TOC.replace("Core episodes (a day)", "Episodes"))
    assert core_check.main(["--root", str(root)]) == 2
    assert "must be the core" in capsys.readouterr().err


def objective_gaps(root, relpath) -> list[int]:
    """The objectives (from 1) of any episode that no exercise with a solution names."""
    meta, body = split_front_matter((root / relpath).read_text(encoding="utf-8"))
    assessed = {n for e in core_check.parse_body(body).exercises if e.has_solution for n in e.objectives}
    return [n for n in range(1, len(meta.get("objectives") or []) + 1) if n not in assessed]


@pytest.mark.parametrize("path", [pytest.param(ep.path, id=ep.slug) for ep in episodes(ROOT)])
def test_every_objective_has_an_exercise_with_a_solution(path):
    gaps = objective_gaps(ROOT, path)
    assert not gaps, (f"{path}: objective(s) {gaps} have no exercise with a solution that names "
                      "them with ':class: objective-N'")


def test_the_guide_gives_the_core_more_than_six_hours_of_work_as_the_model_counts():
    block = core_schedule.guide_block((ROOT / "guide.md").read_text(encoding="utf-8"))
    work = int(block.split("the room works for ")[1].split()[0])
    assert work > 6 * 60 and "more than six\nhours of work" in (ROOT / "guide.md").read_text()


@pytest.mark.bad_input("corrupt file")
def test_an_executed_notebook_without_its_run_time_is_refused_with_what_to_do(tmp_path, capsys):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    (root / "executed").mkdir()
    (root / "executed" / "01-one.ipynb").write_text(json.dumps({"metadata": {}, "cells": []}))
    assert core_check.main(["--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert "executed/01-one.ipynb: no recorded run time" in err and "tools/record_run.py" in err
