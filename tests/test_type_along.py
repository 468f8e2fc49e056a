"""The learners' notebooks (notebooks/learner/): cells to type, exercises with blanks, no answers.

Each is the complete notebook (notebooks/, what CI runs) with every typed cell emptied to its
one-line prompt and every solution cell replaced by its exercise cell: filling them back in must
give the complete notebook exactly. Made-up episodes show that each rule of
tools/make_notebooks.py fails where it should, naming the episode and the cell.
"""

import json
import re
import textwrap

import carpentry
import episode_cells as ec
import learner_cells as lc
import make_notebooks as mk
import nbformat
import pytest
from conftest import ROOT

EPISODES = mk.notebook_episodes(ROOT)
IDS = [ep.stem for ep in EPISODES]
CORE = {ep.path.name for ep in carpentry.schedule_parts(ROOT)[0].episodes}


def is_catch_up(cell) -> bool:
    return lc.CATCH_UP in cell.get("metadata", {}).get("tags", [])


@pytest.mark.parametrize("episode", EPISODES, ids=IDS)
def test_filling_the_learners_notebook_gives_the_complete_one(episode):
    """Less its catch-up cells and with the complete notebook's header, the learner's notebook
    filled in is the complete notebook, cell ids included."""
    learner = nbformat.read(mk.learner_target(episode, ROOT), as_version=4)
    complete_text = mk.target(episode, ROOT).read_text(encoding="utf-8")
    complete = nbformat.reads(complete_text, as_version=4)
    learner.cells = [cell for cell in learner.cells if not is_catch_up(cell)]
    assert learner.cells[1].source != complete.cells[1].source  # a header for learners
    learner.cells[1] = complete.cells[1]
    codes = [cell for cell in learner.cells if cell.cell_type == "code"]
    pairs = [(role, full, mine) for role, full, mine in ec.code_pairs(episode, ROOT)
             if role not in ("markdown", "raw")]
    assert len(codes) == len(pairs)
    for cell, (role, full, mine) in zip(codes, pairs, strict=True):
        if role == ec.TYPED:
            assert cell.source.splitlines()[0] == f"# {full.metadata[ec.PROMPT].strip()}"
            assert all(line.startswith("# ") for line in cell.source.splitlines())
        else:
            assert cell.source == mine.source  # given: the code; an exercise: its blanks
        cell.source = full.source
    assert nbformat.writes(learner) + "\n" == complete_text


@pytest.mark.parametrize("episode", EPISODES, ids=IDS)
def test_a_learners_notebook_holds_no_answer(episode):
    """No line that a solution adds to its exercise is anywhere in the learner's notebook
    (code or Markdown): not in a neighbouring cell, not in the text."""
    learner = json.loads(mk.learner_target(episode, ROOT).read_text(encoding="utf-8"))
    lines = {line.strip() for cell in learner["cells"] for line in "".join(cell["source"]).splitlines()}
    for role, solution, exercise in ec.code_pairs(episode, ROOT):
        if role != ec.SOLUTION:
            continue
        given = {line.strip() for line in exercise.source.splitlines()}
        answer = [line.strip() for line in solution.source.splitlines()
                  if line.strip() not in given and re.search(r"\w", line)
                  and not line.strip().startswith("#")]
        assert answer, f"{episode.name}: the solution adds nothing to its exercise"
        leaked = [line for line in answer if line in lines]
        assert not leaked, f"{episode.name}: the learner's notebook shows the answer: {leaked}"


@pytest.mark.parametrize("episode", EPISODES, ids=IDS)
def test_a_learners_notebook_is_clean_and_its_typed_cells_hold_only_their_prompt(episode):
    nb = json.loads(mk.learner_target(episode, ROOT).read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "gpulesson"
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:80]
    typed = [full for role, full, _ in ec.code_pairs(episode, ROOT) if role == ec.TYPED]
    prompts = [cell for cell in nb["cells"] if cell["cell_type"] == "code"
               and all(line.startswith("# ") for line in cell["source"])]
    assert len(prompts) >= len(typed)
    if episode.name in CORE:  # learners type along
        assert typed, f"{episode.name}: a core episode with nothing to type"
    else:
        assert not typed, f"{episode.name}: a further episode is given complete"


def test_every_episode_has_a_learners_notebook_and_no_other_is_there():
    assert sorted((ROOT / mk.LEARNER_DIR).glob("*.ipynb")) == [mk.learner_target(ep, ROOT)
                                                               for ep in EPISODES]


# --- made-up episodes -------------------------------------------------------------------------

TOC = """\
format: jb-book
root: index
parts:
  - caption: Core episodes (half a day)
    chapters:
      - file: _episodes/01-one
  - caption: Further episodes
    chapters:
      - file: _episodes/02-two
"""
HEADER = """\
---
title: "T"
teaching: 10
exercises: 10
questions: ["Q?"]
objectives: ["O."]
keypoints: ["K."]
{extra}jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python (gpulesson)
  language: python
  name: gpulesson
---

Some text.

"""
CELLS = """\
```{code-cell} ipython3
:tags: [given]

import math
```

```{code-cell} ipython3
:prompt: Compute the square root of two and print it.

print(math.sqrt(2))
```

::::{exercise} Fill it in (8 min)
Fill the blank.
::::

```{code-cell} ipython3
:tags: [exercise]

print(math.____(16))
```

```{code-cell} ipython3
:tags: [solution]

print(math.sqrt(16))
```
"""


def made_up(tmp_path, one: str = CELLS, two: str = CELLS, extra: str = ""):
    (tmp_path / "_episodes").mkdir(exist_ok=True)
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "_config.yml").write_text("lesson_schedule:\n  breaks: {}\n")
    for name, cells in (("01-one", one), ("02-two", two)):
        (tmp_path / "_episodes" / f"{name}.md").write_text(HEADER.format(extra=extra) + cells)
    return tmp_path


def codes(nb) -> list[str]:
    return [cell.source for cell in nb.cells if cell.cell_type == "code"]


def test_a_core_episode_has_cells_to_type_and_a_further_one_is_complete(tmp_path):
    root = made_up(tmp_path)
    complete, learner = mk.build_notebooks(root / "_episodes" / "01-one.md", root)
    assert codes(complete) == ["import math", "print(math.sqrt(2))", "print(math.sqrt(16))"]
    typed_and_after = ["import math", "# Compute the square root of two and print it.",
                       lc.catch_up_source("01-004", [], False), "print(math.____(16))"]
    assert codes(learner) == typed_and_after  # a catch-up under each typed cell
    assert "Type along" in learner.cells[1].source
    complete, learner = mk.build_notebooks(root / "_episodes" / "02-two.md", root)
    assert codes(learner) == ["import math", "print(math.sqrt(2))", "print(math.____(16))"]
    assert codes(complete)[-1] == "print(math.sqrt(16))"
    assert "Type along" not in learner.cells[1].source


def test_front_matter_chooses_type_along_against_the_toc(tmp_path):
    root = made_up(tmp_path, extra="type-along: false\n")
    _, learner = mk.build_notebooks(root / "_episodes" / "01-one.md", root)
    assert "print(math.sqrt(2))" in codes(learner)
    root = made_up(tmp_path, extra="type-along: true\n")
    _, learner = mk.build_notebooks(root / "_episodes" / "02-two.md", root)
    assert "# Compute the square root of two and print it." in codes(learner)


@pytest.mark.parametrize("change, message", [
    ((":prompt: Compute the square root of two and print it.\n", ""),
     "01-one.md: the code cell that begins 'print(math.sqrt(2))' is typed by learners but has "
     "no prompt: add a line ':prompt:"),
    (("print(math.____(16))", "print(math.sqrt(9))"), "is tagged 'exercise' but has no ____ blank"),
    (("```{code-cell} ipython3\n:tags: [solution]\n\nprint(math.sqrt(16))\n```\n", ""),
     "'print(math.____(16))' is tagged 'exercise': the next cell must be its answer"),
    (("```{code-cell} ipython3\n:tags: [exercise]\n\nprint(math.____(16))\n```\n", ""),
     "'print(math.sqrt(16))' is tagged 'solution' but does not follow a cell tagged 'exercise'"),
    (("of two and print it.", "of two # and print it."), "reads as 'Compute the square root"),
    (("of two and print it.", "of two: print it."), "needs double quotes"),
    ((":tags: [given]", ":tags: [given, exercise]"), "a cell has one of these tags at most"),
])
def test_a_broken_cell_is_an_error_naming_the_episode_and_the_cell(tmp_path, change, message):
    root = made_up(tmp_path, one=CELLS.replace(*change))
    with pytest.raises(mk.EpisodeCellError, match=re.escape(message)):
        mk.build_notebooks(root / "_episodes" / "01-one.md", root)
    # --check names it too, and the other episode is not held up by it.
    assert any(message in problem for problem in mk.out_of_sync(root))


def test_a_quoted_prompt_may_hold_a_colon(tmp_path):
    quoted = CELLS.replace(":prompt: Compute the square root of two and print it.",
                           ':prompt: "Compute the square root of two: print it."')
    root = made_up(tmp_path, one=quoted)
    _, learner = mk.build_notebooks(root / "_episodes" / "01-one.md", root)
    assert "# Compute the square root of two: print it." in codes(learner)


def test_both_notebooks_are_written_and_checked(tmp_path):
    root = made_up(tmp_path)
    for ep in mk.notebook_episodes(root):
        for path, text in mk.notebook_texts(ep, root).items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    assert [p for p in mk.out_of_sync(root) if "notebooks/" in p] == []
    learner = root / mk.LEARNER_DIR / "01-one.ipynb"
    learner.write_text(learner.read_text().replace("Compute", "Calculate"))
    (root / mk.LEARNER_DIR / "03-gone.ipynb").write_text("{}")
    problems = mk.out_of_sync(root)
    assert "notebooks/learner/01-one.ipynb differs from episode _episodes/01-one.md" in problems
    assert "notebooks/learner/03-gone.ipynb has no episode in _episodes/" in problems


def test_the_page_folds_solution_cells_and_shows_exercise_cells_without_output():
    css = (ROOT / "_static" / "lesson.css").read_text(encoding="utf-8")
    assert "div.cell.tag_exercise::before" in css
    import carpentry

    assert carpentry.SOLUTION_PROMPT == "Answer"
    text = textwrap.dedent("""\
        ```{code-cell} ipython3
        :tags: [exercise]

        x = ____
        ```
    """)
    import recorded

    assert recorded.episode_code_sources("---\njupytext: {}\n---\n" + text) == []
