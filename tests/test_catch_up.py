"""A learner who falls behind catches up (gpulesson.classroom.catchup, tools/make_notebooks.py).

In a learner's notebook each typed cell's prompt lists the names that later cells use, and a
catch-up cell follows each typed cell that later cells need and each exercise. The catch-up runs
the complete cell (from notebooks/, generated from the same episode) when a name is missing or
still holds a blank, and does nothing otherwise.

How the notebooks are run, and why that is enough. "Skip each typed cell in turn, leave every
blank" would mean one run of a notebook per typed cell: episode 5 would train on the CPU seven
times. One run does the same work. Each core learner notebook runs once, in a fresh kernel
(quick mode, synthetic data, CPU), exactly as it is on disk: every typed cell left as its prompt
(skipped) and every exercise with its blanks. Each exercise's cell must fail, in its own cell
(episode 5's train_on, whose blanks Python would find only when it trains, through
check_filled); every catch-up cell must then run the complete cell; and every other cell must
run. A catch-up that ran the complete cell
leaves the kernel with what that cell defines, as if the learner had typed it; so the state
after each catch-up is the same whether the other typed cells were skipped or typed, and the
one run covers each cell skipped in turn. The other side, a learner who is not behind, is
checked in the same run: each catch-up cell runs a second time, right after the first, and must
then do nothing. The static tests check the rest for every notebook: which names each prompt
and each catch-up cell name (derived from the cells' code with ``ast``), the names the issue
named, and that each catch-up refers to a complete cell that defines its names.
"""

import json
import os
import re
import uuid

import carpentry
import episode_cells as ec
import learner_cells as lc
import make_notebooks as mk
import nbformat
import pytest
from conftest import ROOT
from fresh_kernel import fresh_kernel

from gpulesson.classroom import catchup
from gpulesson.classroom.catchup import (
    BlanksLeftError,
    CatchUpError,
    catch_up,
    check_filled,
    defined_names,
    holds_blanks,
    needed_later,
    used_names,
)

EPISODES = mk.notebook_episodes(ROOT)
CORE = [ep for ep in EPISODES if ep.name in {e.path.name for e in carpentry.schedule_parts(ROOT)[0].episodes}]
CALL = re.compile(r"^catch_up\((.*)\)$", re.MULTILINE)


def learner(episode) -> nbformat.NotebookNode:
    return nbformat.read(mk.learner_target(episode, ROOT), as_version=4)


def is_catch_up(cell) -> bool:
    return lc.CATCH_UP in cell.metadata.get("tags", [])


def call_of(cell) -> list[str]:
    """The arguments of a catch-up cell's call: the cell id, then the names."""
    return json.loads(f"[{CALL.search(cell.source)[1]}]")


def later_names(cell) -> list[str]:
    """The names a typed cell's prompt says later cells use."""
    match = re.search(r"^# Later cells use (?:this name|these names): (.*)\.$", cell.source,
                      flags=re.MULTILINE)
    return match[1].split(", ") if match else []


# --- the names a cell defines and uses ---------------------------------------------------------

def test_the_names_a_cell_defines_are_its_top_level_bindings():
    source = """\
import numpy as np
from gpulesson.datasets import load as d
from gpulesson.records import plots
import os.path
x, (y, *z) = 1, (2, 3)
total += 1
def f(a):
    inner = a
class C:
    attribute = 1
for i in range(3):
    loop_only = i
if True:
    maybe = 1
with open("f") as handle:
    pass
try:
    pass
except ValueError as error:
    handled = 1
(walrus := 5)
a[0] = 1
a.b = 2
"""
    assert defined_names(source) == [
        "np", "d", "plots", "os", "x", "y", "z", "total", "f", "C", "i", "loop_only", "maybe",
        "handle", "error", "handled", "walrus"]
    assert defined_names(source, conditional=False) == [
        "np", "d", "plots", "os", "x", "y", "z", "total", "f", "C", "walrus"]
    assert defined_names(source, conditional=False, imports=False) == [
        "x", "y", "z", "total", "f", "C", "walrus"]


def test_the_names_a_cell_uses_are_those_it_reads_before_it_binds_them():
    source = """\
import math
n = len(values)
squares = [v * v for v in values if v > limit]
pairs = {k: w for k, w in table.items()}
count = count + 1
total += step
def f(a, b=default):
    local = a + b + math.pi + later_global
    return [local for local in range(3)], (lambda q: q + shift)(1)
class K(Base):
    size = n
    doubled = size * 2
    def method(self):
        return self.size + outer
for item in items:
    item.run()
with open(path) as handle:
    handle.read()
del old
print(undefined_after)
undefined_after = 1
"""
    assert used_names(source) == {
        "values", "limit", "table", "count", "total", "step", "default", "later_global",
        "shift", "Base", "outer", "items", "path", "old", "undefined_after"}


def test_a_name_is_needed_from_the_last_cell_before_that_defines_it():
    cells = ["a = 1\nb = 2\nunused = 3", "a = 10\nprint(b)", "print(a)", "a = 0"]
    assert needed_later(cells) == [["b"], ["a"], [], []]


# --- catch_up and check_filled -------------------------------------------------------------------

@pytest.fixture
def lesson(tmp_path):
    """A lesson folder with one complete notebook: cell 01-002 defines path and prints."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title", id="01-000"),
        nbformat.v4.new_code_cell("settings = 'S'", id="01-001"),
        nbformat.v4.new_code_cell("path = settings + '.h5'\nprint('made', path)\nlen(path)",
                                  id="01-002"),
        nbformat.v4.new_code_cell("import os\npath = settings + '.h5'\nlength = len(path)",
                                  id="01-003"),
    ])
    nbformat.write(nb, folder / "01-one.ipynb")
    return tmp_path


def test_catch_up_runs_the_complete_cell_when_a_name_is_missing(lesson, capsys):
    namespace = {"settings": "S"}
    assert catch_up("01-002", "path", namespace=namespace, root=lesson) is None  # no stray value
    assert namespace["path"] == "S.h5"
    out = capsys.readouterr().out
    assert "Catching up: running the complete cell (cell 01-002 of 01-one.ipynb) for path." in out
    assert "made S.h5" in out and "5" in out  # the cell's last expression is shown, as IPython does
    assert "Done: the kernel has the complete cell's path now." in out


def test_catch_up_says_which_of_the_learners_names_it_sets_again(lesson, capsys):
    namespace = {"settings": "S", "length": 0, "os": os}
    catch_up("01-003", "path", namespace=namespace, root=lesson)
    assert "It also sets length again, as the complete cell does." in capsys.readouterr().out
    assert namespace["length"] == 4


def test_catch_up_keeps_what_the_learner_made(lesson, capsys):
    namespace = {"settings": "S", "path": "mine.h5"}
    catch_up("01-002", "path", namespace=namespace, root=lesson)
    assert namespace["path"] == "mine.h5"
    assert capsys.readouterr().out.startswith("Nothing to do: you have path already.")


def test_catch_up_replaces_a_function_that_still_holds_a_blank(tmp_path):
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("def f(x):\n    return x + 1", id="02-001")]),
        tmp_path / "notebooks" / "02-two.ipynb")
    namespace = {}
    exec("def f(x):\n    return x + ____", namespace)  # the learner's, blanks left
    assert holds_blanks(namespace["f"])
    catch_up("02-001", "f", namespace=namespace, root=tmp_path)
    assert namespace["f"](1) == 2 and not holds_blanks(namespace["f"])


def test_after_a_restart_catch_up_first_runs_the_complete_cells_that_make_what_it_needs(
        lesson, capsys):
    """A restart empties the kernel: the complete cell defining settings runs first (never the
    learner's cells, which may hold blanks), then the cell itself; its last value is shown, the
    earlier cells' are not."""
    namespace = {}
    catch_up("01-002", "path", namespace=namespace, root=lesson)
    assert namespace["settings"] == "S" and namespace["path"] == "S.h5"
    out = capsys.readouterr().out
    assert out.startswith("The kernel lacks settings (after a restart, for example): running "
                          "the complete cells 01-001 of 01-one.ipynb first.")
    assert "Catching up: running the complete cell (cell 01-002" in out


def test_the_rebuild_takes_what_later_cells_need_and_skips_what_was_deleted():
    cells = [("a", "x = 1\ny = 2"), ("b", "z = x + 1"), ("c", "del y"), ("d", "w = 3"),
             ("e", "print(z, w)"), ("f", "print(y if False else w)")]
    assert catchup.rebuild_plan(cells, 4, {}) == [0, 1, 3]  # z needs x; y was deleted
    assert catchup.rebuild_plan(cells, 4, {"z": 2, "w": 3}) == []
    assert catchup.rebuild_plan(cells, 1, {"x": 1}) == [0]  # y for "del y"; w is made below
    exec("def f():\n    return ____", blanks := {})
    assert catchup.rebuild_plan([("a", "def f():\n    return 1"), ("b", "f()")], 1,
                                blanks) == [0]


@pytest.mark.parametrize("cell, names", [("01-009", ["path"]), ("01-002", ["other"])])
def test_a_catch_up_cell_that_does_not_match_the_lesson_says_how_to_get_the_complete_notebook(
        lesson, cell, names):
    with pytest.raises(CatchUpError, match=re.escape(catchup.RECOVER)):
        catch_up(cell, *names, namespace={"settings": "S"}, root=lesson)


def test_a_function_or_class_with_a_blank_stops_the_exercise_at_once():
    namespace = {}
    exec("class Batches:\n    def __len__(self):\n        return self.____\n\n"
         "def g():\n    return [____ for _ in range(2)]\n\ndef ok():\n    return 1", namespace)
    assert holds_blanks(namespace["Batches"]) and holds_blanks(namespace["g"])
    assert not holds_blanks(namespace["ok"]) and not holds_blanks(3)
    check_filled(namespace["ok"])
    with pytest.raises(BlanksLeftError, match=r"g still holds blanks \(____\).*catch-up cell"):
        check_filled(namespace["ok"], namespace["g"])


# --- the lesson's learner notebooks --------------------------------------------------------------

@pytest.mark.parametrize("episode", EPISODES, ids=[ep.stem for ep in EPISODES])
def test_each_prompt_names_what_later_cells_use_and_a_catch_up_follows(episode):
    """Every name a later cell takes from a typed cell is in that cell's prompt and in the
    catch-up cell after it; every exercise has a catch-up cell, but a prediction that no later
    cell needs (its complete cell would print the answer); each catch-up cell names a cell of the
    complete notebook that defines its names."""
    nb, complete = learner(episode), nbformat.read(mk.target(episode, ROOT), as_version=4)
    complete_code = {cell.id: cell.source for cell in complete.cells if cell.cell_type == "code"}
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    ours = [cell for cell in cells if not is_catch_up(cell)]
    pairs = [p for p in ec.code_pairs(episode, ROOT) if p[0] not in ("markdown", "raw")]
    needed = needed_later([full.source for _, full, _ in pairs])
    predicted = lc.predictions(ec.code_pairs(episode, ROOT))
    for cell, (role, full, _), names, prediction in zip(ours, pairs, needed, predicted, strict=True):
        assert complete_code[cell.id] == full.source
        following = cells[cells.index(cell) + 1] if cell is not cells[-1] else None
        caught = following is not None and is_catch_up(following)
        if role == ec.TYPED:
            assert later_names(cell) == names, cell.source
            for name in names:
                assert re.search(rf"\b{re.escape(name)}\b", cell.source.splitlines()[-1])
            assert caught, cell.source  # also what a restart needs rebuilt below it
        elif role == ec.SOLUTION and prediction and not names:
            # Its complete cell would print the answer to predict; nothing later needs it.
            assert not caught, f"a catch-up gives away the prediction {cell.source[:60]!r}"
        elif role == ec.SOLUTION:
            assert caught, f"no catch-up after the exercise {cell.source[:60]!r}"
        else:
            assert not caught
        if caught:
            cell_id, *called = call_of(following)
            assert cell_id == cell.id and following.id == f"{cell.id}-{lc.CATCH_UP}"
            assert called == (names if role == ec.TYPED else
                              names or defined_names(full.source, conditional=False, imports=False))
            assert set(called) <= set(defined_names(complete_code[cell_id]))
            assert following.source.startswith("# Catch-up: run this cell only if")


# The names the review found unnamed, and the prompt that must name them now.
# Names a given cell defines are left out: episode 1's settings and path, episode 4's my_file
# and BATCH_SIZE, episode 5's initial_weights, EPOCHS and cpu_run.
NAMED = {"03-environments": {"os", "keras"}, "04-data-pipeline": {"train_batches"},
         "05-cpu-vs-gpu": {"cnn", "test_images",
                           "test_labels", "predicted", "model", "matrix"}}


@pytest.mark.parametrize("slug", sorted(NAMED))
def test_the_prompts_name_the_variables_later_cells_need(slug):
    nb = nbformat.read(ROOT / mk.LEARNER_DIR / f"{slug}.ipynb", as_version=4)
    named = {name for cell in nb.cells if cell.cell_type == "code" for name in later_names(cell)}
    caught = {name for cell in nb.cells if is_catch_up(cell) for name in call_of(cell)[1:]}
    assert NAMED[slug] <= named and NAMED[slug] <= caught


@pytest.mark.parametrize("episode", EPISODES, ids=[ep.stem for ep in EPISODES])
def test_the_header_speaks_to_learners_and_names_the_recovery_command(episode):
    header = learner(episode).cells[1].source
    assert f"`{catchup.RECOVER}`" in header and f"`{episode.stem}-complete.ipynb`" in header
    assert "my-notebooks/" in header
    assert "edit the episode" not in header and "`notebooks/`" not in header
    assert ("catch-up" in header) == (episode in CORE)
    complete_header = nbformat.read(mk.target(episode, ROOT), as_version=4).cells[1].source
    assert "edit the episode, not the notebook" in complete_header


@pytest.mark.parametrize("episode", EPISODES, ids=[ep.stem for ep in EPISODES])
def test_every_below_and_next_cell_is_there_in_the_learners_notebook(episode):
    """A text that sends learners to the cell below or the next cell has a code cell after it
    (not a catch-up cell), and no text promises a complete cell that only the page has."""
    cells = learner(episode).cells
    for i, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        text = " ".join(cell.source.split())
        assert "complete cell is below" not in text, text
        if re.search(r"\b(next cell|cell below)\b", text):
            after = cells[i + 1] if i + 1 < len(cells) else None
            assert after is not None and after.cell_type == "code" and not is_catch_up(after), text


@pytest.mark.parametrize("slug, title", [("04-data-pipeline", "Bytes or floats?"),
                                         ("05-cpu-vs-gpu", "Read the confusion matrix")])
def test_an_exercise_that_asks_for_code_has_a_cell_to_work_in(slug, title):
    cells = nbformat.read(ROOT / mk.LEARNER_DIR / f"{slug}.ipynb", as_version=4).cells
    [i] = [i for i, cell in enumerate(cells) if f"**Exercise: {title}" in cell.source]
    after = next(cell for cell in cells[i + 1:] if cell.cell_type == "code")
    assert catchup.BLANK in after.source and cells.index(after) <= i + 2


def test_the_speed_up_works_with_one_cpu_epoch_and_says_so(capsys):
    """CPU_EPOCHS = 1 with a GPU run: the complete cell of the speed-up exercise runs, with
    stand-ins for the runs, and says that the warm-up is in."""
    episode = ROOT / "_episodes" / "05-cpu-vs-gpu.md"
    [solution] = [full.source for role, full, _ in ec.code_pairs(episode, ROOT)
                  if role == ec.SOLUTION and "def speedup" in full.source]
    import statistics

    def run(seconds):
        return {"timing": {"epoch_seconds": seconds}}

    namespace = {"statistics": statistics, "cpu_settings": lambda: {"cpu_cores_available": 4},
                 "cpu_run": run([9.0]), "gpu_run": run([5.0, 1.0, 1.0])}
    exec(solution, namespace)
    assert "Your speed-up: 9.0 (one CPU epoch, its warm-up included)" in capsys.readouterr().out
    namespace.update(cpu_run=run([12.0, 8.0, 8.0]))
    exec(solution, namespace)
    assert "Your speed-up: 8.0\n" in capsys.readouterr().out
    assert namespace["speedup"]([12.0, 8.0, 6.0], [5.0, 2.0, 1.0]) == 7.0 / 1.5


# --- the notebooks run, every typed cell skipped and every blank left ----------------------------

def _run(client, code: str) -> tuple[str, list[dict], str]:
    errors, printed = [], []

    def keep(msg):
        if msg["msg_type"] == "error":
            errors.append(msg["content"])
        elif msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])

    reply = client.execute_interactive(code, timeout=900, output_hook=keep)
    return reply["content"]["status"], errors, "".join(printed)


RESTART = "%reset -f"  # a kernel restart, as the kernel's namespace sees it: nothing left


@pytest.mark.parametrize("restart", [False, True], ids=["skipped", "restarted"])
@pytest.mark.parametrize("episode", CORE, ids=[ep.stem for ep in CORE])
def test_a_learner_who_skips_every_typed_cell_and_leaves_every_blank_catches_up(episode, tmp_path,
                                                                                 restart):
    """``restarted``: the kernel's namespace is also emptied before each typed cell, as a
    restart leaves it; the catch-up under the cell must rebuild all that the cells below need,
    from the complete cells, without stopping at the blanks left above, and reload episode 5's
    finished runs rather than train again."""
    nb = learner(episode)
    pairs = [p for p in ec.code_pairs(episode, ROOT) if p[0] not in ("markdown", "raw")]
    exercise_cells = {mine.source for role, _, mine in pairs if role == ec.SOLUTION}
    ours = [cell for cell in nb.cells if cell.cell_type == "code" and not is_catch_up(cell)]
    typed = {cell.id for cell, (role, _, _) in zip(ours, pairs, strict=True) if role == ec.TYPED}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LESSON_WORK_DIR": str(tmp_path / "work"),
           "JUPYTER_PATH": str(tmp_path / "jupyter"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "IPYTHONDIR": str(tmp_path / "ipython"), "JPY_SESSION_NAME": uuid.uuid4().hex,
           "MPLBACKEND": "Agg"}
    caught = restarts = rebuilt = reloaded = 0
    with fresh_kernel(env, tmp_path) as client:
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            if restart and cell.id in typed:
                assert _run(client, RESTART)[0] == "ok"
                restarts += 1
            status, errors, printed = _run(client, cell.source)
            where = f"{episode.stem}, cell {cell.id}: {cell.source[:70]!r}"
            if cell.source in exercise_cells:
                # Blanks left fail at once, in the exercise's own cell.
                assert status == "error", where
                if "check_filled(" in cell.source:
                    assert errors[0]["ename"] == "BlanksLeftError", (where, errors)
                continue
            assert status == "ok", f"{where} failed: {errors and errors[0]['evalue']}"
            if is_catch_up(cell):
                assert "Catching up: running the complete cell" in printed, (where, printed)
                rebuilt += "The kernel lacks" in printed
                reloaded += "Reloaded your finished run" in printed
                again = _run(client, cell.source)
                assert again[0] == "ok", (where, again)
                if call_of(cell)[1:]:  # it names what it makes: the second time, nothing to do
                    assert again[2].startswith("Nothing to do"), (where, again)
                caught += 1
    assert caught == sum(is_catch_up(cell) for cell in nb.cells) > 0
    assert restarts == (len(typed) if restart else 0)
    # A restart leaves names to rebuild, except where the episode's one typed cell needs none
    # from the cells above it (episode 1's device report).
    assert rebuilt == 0 if not restart else rebuilt > 0 or len(typed) == 1
    # Episode 5 trains once: after a restart its finished runs come back from the saved files.
    assert (reloaded > 0) == (restart and episode.stem.startswith("05-")), reloaded
