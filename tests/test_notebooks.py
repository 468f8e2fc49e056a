"""The complete notebooks (notebooks/): generated from the episodes, in sync with them, committed
clean. The learners' notebooks (notebooks/learner/) are tested in test_type_along.py."""

import json
import subprocess
import sys

import carpentry
import episode_cells as ec
import lesson_modules as lm
import make_notebooks as mk
import pytest
from conftest import ROOT, lesson_files

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_every_notebook_matches_its_episode():
    problems = mk.out_of_sync(ROOT)
    assert not problems, "\n".join(problems) + "\nRun 'make notebooks'."


def test_every_text_notebook_episode_has_a_notebook():
    assert [mk.target(ep) for ep in mk.notebook_episodes()] == NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["source"][:80]
    assert nb["metadata"]["kernelspec"]["name"] == "gpulesson"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_first_cell_says_how_to_choose_the_data_offline(path):
    """Markdown, so that no notebook's code (and no recorded run) changes; every choice of
    gpulesson.datasets.settings named, with what it needs, and the one that works offline."""
    from gpulesson.datasets.settings import DATA_CHOICES

    first, title = json.loads(path.read_text(encoding="utf-8"))["cells"][:2]
    assert first["cell_type"] == "markdown" and title["source"][0].startswith("# ")
    text = "".join(first["source"])
    for choice in DATA_CHOICES:
        assert f"`LESSON_DATA={choice}`" in text, choice
    assert "internet" in text and "offline" in text and "choose `synthetic`" in text
    assert "%env LESSON_DATA=synthetic" in text and "python -m gpulesson.datasets.prepare --data cifar10" in text
    assert "LESSON_DATA_DIR" in text and "(../setup.md)" in text
    assert text == mk.data_choice_markdown()


def test_the_data_cell_adds_no_code():
    import jupytext

    episode = ROOT / "_episodes" / "05-cpu-vs-gpu.md"
    text = carpentry.fill_placeholders(episode.read_text(encoding="utf-8"), ROOT)
    source = jupytext.reads(text, fmt="myst")
    made = mk.build_notebooks(episode)[0]
    code = [cell.source for cell in made.cells if cell.cell_type == "code"]
    # Every code cell of the episode but the exercises' cells with blanks (the learners' only).
    assert code == [cell.source for cell in source.cells if cell.cell_type == "code"
                    and ec.EXERCISE not in cell.metadata.get("tags", [])]


def test_a_changed_episode_is_detected(tmp_path):
    root = lesson_files(tmp_path)
    episode = root / "_episodes" / "01-introduction.md"
    episode.write_text(episode.read_text()
                       + "\n```{code-cell} ipython3\n:prompt: Print new.\n\nprint('new')\n```\n")
    (root / "notebooks" / "02-orphan.ipynb").write_text("{}")
    problems = mk.out_of_sync(root)
    assert any("01-introduction.ipynb differs" in p for p in problems), problems
    assert any("02-orphan.ipynb has no episode" in p for p in problems), problems


def test_named_module_tags_make_their_own_module(tmp_path):
    root = lesson_files(tmp_path)
    episode = root / "_episodes" / "01-introduction.md"
    cell = "```{code-cell} ipython3\n:tags: [lesson-module-extra, given]\n\nimport json\nANSWER = 42\n```\n"
    episode.write_text(episode.read_text() + "\n" + cell)
    made = mk.modules(root)
    assert {"gpulesson/lesson/__init__.py", "gpulesson/lesson/core.py",
            "gpulesson/lesson/extra.py"} <= set(made)
    assert "ANSWER = 42" in made["gpulesson/lesson/extra.py"]
    assert "ANSWER = 42" not in made["gpulesson/lesson/core.py"]
    # the package's __init__ knows the new module, so importing it never loads core
    assert "'extra'" in made["gpulesson/lesson/__init__.py"]
    assert any("lesson/extra.py differs" in p for p in mk.out_of_sync(root))
    (root / "gpulesson" / "lesson" / "stale.py").write_text("")
    assert any("lesson/stale.py has no cells" in p for p in mk.out_of_sync(root))
    with pytest.raises(ValueError, match="lesson-module-NAME"):
        lm.module_path("lesson-module-Bad Name")


def test_myst_markup_becomes_plain_markdown():
    text = """Intro {term}`GPU` and {doc}`the setup <../setup>`.

::::{exercise} Try it
Do this.

:::{solution}
Answer.
:::
::::

:::{instructor-note}
Only for instructors.
:::

:::{figure} ../fig/x.svg
:alt: Alt text here
:width: 50%

The caption.
:::"""
    out = mk.plain_markdown(text)
    assert "Intro GPU and the setup." in out
    assert "> **Exercise: Try it**" in out
    assert "<details>" in out and "> Answer." in out
    assert "instructor" not in out.lower()
    assert "![Alt text here](../fig/x.svg)" in out and "*The caption.*" in out
    assert ":::" not in out and "{" not in out


def test_an_unclosed_directive_is_an_error():
    with pytest.raises(ValueError, match="never closed"):
        mk.plain_markdown(":::{callout} Oops\ntext\n")


def test_nbval_runs_a_complete_notebook_as_make_check_notebooks_does():
    """``make check-notebooks`` (nbval, every code cell run in one kernel, errors fail) works: on
    notebook 01 here, every complete notebook being run once elsewhere in the suite
    (tests/test_shared_data_folder.py)."""
    options = ["-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert " ".join(options) + " $(NOTEBOOKS)" in makefile
    notebook = ROOT / "notebooks" / "01-introduction.ipynb"
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    done = subprocess.run([sys.executable, *options, str(notebook)], cwd=ROOT, text=True,
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{len(cells)} passed" in done.stdout, done.stdout[-1000:]
