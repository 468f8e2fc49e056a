"""tools/core_check.py: the lesson's core fits a half-day, and the check fails where it should.

The script runs on the real episodes (they must pass) and on small made-up lessons, one limit
broken at a time, to show that each check can fail and names the episode and the limit. The
last test maps every objective of every episode to an exercise with a solution.
"""

import subprocess
import sys
import textwrap

import core_check
import pytest
from carpentry import episodes, toc_episode_paths
from conftest import ROOT

CORE = toc_episode_paths(ROOT)[:5]


def test_the_core_passes_and_prints_a_table_per_episode():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "core_check.py")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for path in CORE:
        slug = path.split("/")[-1].removesuffix(".md")
        assert f"{slug} (" in result.stdout
    assert "a. typed lines" in result.stdout and "the core passes" in result.stdout


def test_the_core_is_the_first_part_of_the_toc_and_the_guide_and_landing_page_agree():
    parts = core_check.core_part(ROOT)
    assert [ep.path.as_posix() for ep in parts[0].episodes] == CORE
    assert core_check.schedule_failures(ROOT) == []
    for page in ("guide.md", "index.md"):
        named = core_check.CORE_NAMED.findall((ROOT / page).read_text(encoding="utf-8"))
        assert named == [("1", "5")], (page, named)


# A made-up lesson: a core of two episodes and a further part, with breaks.
TOC = """\
format: jb-book
root: index
parts:
  - caption: Core episodes (half a day)
    chapters:
      - file: _episodes/01-one
      - file: _episodes/02-two
  - caption: Further episodes
    chapters:
      - file: _episodes/03-three
"""
CONFIG = """\
lesson_schedule:
  breaks:
    01-one: 10
"""
GOOD_EXERCISE = """\
::::{exercise} Say it
:class: objective-1
What does it do?

:::{solution}
It does it.
:::
::::
"""


def episode(body: str, teaching: int = 10, exercises: int = 10, objectives: int = 1) -> str:
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
    (tmp_path / "guide.md").write_text(guide or "The core (episodes 1 to 2) is a half-day.\n")
    ok = episode("Some text.\n\n" + GOOD_EXERCISE)
    for name, text in (("01-one", one), ("02-two", two or ok), ("03-three", three or ok)):
        (tmp_path / "_episodes" / f"{name}.md").write_text(text)
    return tmp_path


def failures(root) -> list[str]:
    return core_check.run(root, out=open("/dev/null", "w"))


def test_a_made_up_lesson_within_the_limits_passes(tmp_path):
    root = lesson(tmp_path, episode("Two sentences. Short ones.\n\n" + code_cell(60) + GOOD_EXERCISE))
    assert failures(root) == []
    assert core_check.main(["--root", str(root)]) == 0


def test_too_many_typed_lines_fail_and_given_cells_do_not_count(tmp_path, capsys):
    # 20 scheduled minutes: 70 typed lines at most.
    root = lesson(tmp_path, episode("Text.\n\n" + code_cell(71) + GOOD_EXERCISE))
    assert core_check.main(["--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "01-one: 71 typed lines in 20 scheduled minutes" in err and "3.5 a minute" in err
    for text in (code_cell(71, "lesson-module, given"),
                 "## More (optional)\n\n" + code_cell(71),
                 code_cell(30) + "# only a comment\n" * 50):
        (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + text + GOOD_EXERCISE))
        assert failures(root) == [], text[:40]


def test_comment_lines_and_blank_lines_are_not_typed():
    page = core_check.parse_body("```{code-cell} ipython3\n# a comment\n\nx = 1\n  # indented\n```\n")
    assert [cell.typed_lines for cell in page.cells] == [1]


def test_too_many_exercises_fail_unless_optional(tmp_path):
    many = "\n".join(GOOD_EXERCISE.replace("Say it", f"Say it {n}") for n in range(4))
    root = lesson(tmp_path, episode("Text.\n\n" + many))
    assert any("01-one: 4 exercises in 20 scheduled minutes" in f and "one per 6 minutes" in f
               for f in failures(root))
    optional = many.replace("Say it 3", "Say it 3 (optional)")
    (root / "_episodes" / "01-one.md").write_text(episode("Text.\n\n" + optional))
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
    assert any("01-one: objective(s) 2 of the front matter" in f for f in failures(root))
    # An exercise without a solution does not assess anything.
    unsolved = "::::{exercise} Think\n:class: objective-2\nWhy?\n::::\n"
    (root / "_episodes" / "01-one.md").write_text(
        episode("Text.\n\n" + GOOD_EXERCISE + unsolved, objectives=2))
    assert core_check.objective_gaps(root, "_episodes/01-one.md") == [2]


def test_a_core_over_four_hours_or_a_long_stretch_without_a_break_fails(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE, teaching=100, exercises=50),
                  two=episode("Text.\n\n" + GOOD_EXERCISE, teaching=50, exercises=50))
    problems = failures(root)
    assert any("the core takes 260 minutes" in f for f in problems), problems
    assert any("150 minutes without a break" in f for f in problems), problems


def test_a_guide_that_names_another_core_fails(tmp_path):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE),
                  guide="The core (episodes 1 to 4, with two breaks) fits a half-day.\n")
    assert any("guide.md names the core as episodes 1 to 4" in f for f in failures(root))


def test_a_toc_without_a_core_part_is_refused(tmp_path, capsys):
    root = lesson(tmp_path, episode("Text.\n\n" + GOOD_EXERCISE))
    (root / "_toc.yml").write_text(TOC.replace("Core episodes (half a day)", "Episodes"))
    assert core_check.main(["--root", str(root)]) == 2
    assert "must be the core" in capsys.readouterr().err


@pytest.mark.parametrize("path", [pytest.param(ep.path, id=ep.slug) for ep in episodes(ROOT)])
def test_every_objective_has_an_exercise_with_a_solution(path):
    gaps = core_check.objective_gaps(ROOT, path)
    assert not gaps, (f"{path}: objective(s) {gaps} have no exercise with a solution that names "
                      "them with ':class: objective-N'")
