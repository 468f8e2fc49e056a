"""What a learner's notebook has that the complete one has not: a header note on catching up,
typed cells' prompts with the names later cells use, and catch-up cells (tools/make_notebooks.py)."""

import json
import re
from pathlib import Path

import nbformat
from episode_cells import PROMPT, SOLUTION, TYPED

from gpulesson.classroom.catchup import BLANK, RECOVER, defined_names

CATCH_UP = "catch-up"  # the tag, and the end of the id, of a catch-up cell
# An exercise's directive and its class option: ':class: objective-1 prediction'.
EXERCISE_CLASS = re.compile(r"^:{3,}\{exercise\}[^\n]*\n(?::class:([^\n]*))?", re.M)
MAINTAINER_NOTE = "*This notebook is generated from the episode: edit the episode, not the notebook.*"
COMPLETE_NOTE = ("*This is the complete notebook: every cell is filled in. Learners type along "
                 "in their own copies of the learner's notebook.*")
TYPE_ALONG_NOTE = (
    "*Type along: a code cell that holds only a comment (`# ...`) is yours to write, with the "
    "instructor. Keep the names its comment lists: later cells use them. An exercise's code has "
    f"blanks (`{BLANK}`) to fill in.*"
)


def learner_note(episode: Path, typed: bool) -> str:
    """The learner's header note: how to catch up, and the command for the complete notebook."""
    behind = ("Behind? Run the **catch-up** cell under a cell you skipped or could not finish. It "
              "runs the complete cell only when a name that cell defines is missing. For the "
              "whole complete notebook, " if typed else
              "Every cell here is complete. To get the original cells back after a change, ")
    return (f"*You work in your own copy of this notebook. {behind}run `{RECOVER}` in a terminal "
            f"(**File → New → Terminal**). It puts `{episode.stem}-complete.ipynb` beside your "
            "notebook in `my-notebooks/`, and leaves your notebook as it is.*")


def header_notes(episode: Path, typed: bool) -> tuple[list[str], list[str]]:
    """The notes under the title: (the complete notebook's, the learner's)."""
    return (([COMPLETE_NOTE] if typed else []) + [MAINTAINER_NOTE],
            ([TYPE_ALONG_NOTE] if typed else []) + [learner_note(episode, typed)])


def typed_prompt(prompt: str, needed: list[str]) -> str:
    """A typed cell in the learner's notebook: its prompt, and the names later cells use."""
    these = "this name" if len(needed) == 1 else "these names"
    names = f"\n# Later cells use {these}: {', '.join(needed)}." if needed else ""
    return f"# {prompt.strip()}{names}"


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def catch_up_source(cell_id: str, names: list[str], exercise: bool) -> str:
    """A catch-up cell: runs the complete cell ``cell_id`` if one of ``names`` is missing (or blank)."""
    when = ("the exercise above failed or has blanks left" if exercise else
            "you skipped the cell above or it failed")
    lacks = "is missing or holds a blank" if exercise else "is missing"
    call = ", ".join(json.dumps(item) for item in [cell_id, *names])
    what = f"if {_either(names)} {lacks}" if names else "(later cells need nothing from it)"
    return (f"# Catch-up: run this cell only if {when}, or after a restart.\n"
            f"# It runs the complete cell {what}, and first what it needs from above.\n"
            "from gpulesson.classroom.catchup import catch_up\n\n"
            f"catch_up({call})")


def predictions(pairs: list[tuple[str, object, object]]) -> list[bool]:
    """For each code pair, whether it is a one-line prediction's (an exercise of class ``prediction``)."""
    found, prediction = [], False
    for role, full, _ in pairs:
        if role in ("markdown", "raw"):
            classes = EXERCISE_CLASS.findall(full.source)
            if classes:
                prediction = "prediction" in classes[-1].split()
        else:
            found.append(role == SOLUTION and prediction)
            prediction = False
    return found


def learner_cells(role: str, full, mine, needed: list[str], cell_id: str,
                   prediction: bool = False) -> list:
    """The learner's cells for one code cell: its own, then a catch-up cell after a typed cell or an
    exercise (not after a prediction whose names no later cell takes: it would print the answer)."""
    if role == TYPED:
        cell = nbformat.v4.new_code_cell(typed_prompt(mine.metadata[PROMPT], needed))
    else:
        cell = nbformat.v4.new_code_cell(mine.source)
    cell.id = cell_id
    if role == SOLUTION:  # an exercise: the names later cells use, or all it always defines
        names = needed or defined_names(full.source, conditional=False, imports=False)
    else:
        names = needed if role == TYPED else []
    if not (names or role == TYPED) or (prediction and not needed):
        return [cell]
    catch_up = nbformat.v4.new_code_cell(catch_up_source(cell_id, names, role == SOLUTION),
                                         metadata={"tags": [CATCH_UP]})
    catch_up.id = f"{cell_id}-{CATCH_UP}"
    return [cell, catch_up]
