"""An episode's cells as the notebooks take them: roles, their rules, and complete/learner pairs."""

import re
from pathlib import Path

import jupytext
import yaml
from carpentry import EPISODE_DIR, fill_placeholders, schedule_parts, split_front_matter
from jupytext.myst import MystMetadataParsingError

from gpulesson.classroom.catchup import BLANK

ROOT = Path(__file__).resolve().parents[1]
GIVEN, EXERCISE, SOLUTION, TYPED = "given", "exercise", "solution", "typed"
PROMPT = "prompt"  # the code-cell option ':prompt:'
TYPE_ALONG = "type-along"  # front matter: true or false, against the toc's core part


def notebook_episodes(root: Path = ROOT) -> list[Path]:
    """The episodes that are text notebooks (a jupytext header), i.e. that have a notebook."""
    return [p for p in sorted((root / EPISODE_DIR).glob("*.md"))
            if "jupytext" in split_front_matter(p.read_text(encoding="utf-8"))[0]]


class EpisodeCellError(ValueError):
    """An episode's code cells break the rules of the notebooks (tools/make_notebooks.py's docstring)."""


def _first_line(source: str) -> str:
    return next((line.strip() for line in source.splitlines() if line.strip()), "")


def type_along(episode: Path, meta: dict, root: Path = ROOT) -> bool:
    """Whether learners type the episode's code cells: ``type-along``, else whether it is in the core."""
    if TYPE_ALONG in meta:
        if not isinstance(meta[TYPE_ALONG], bool):
            raise EpisodeCellError(f"{episode.name}: front matter '{TYPE_ALONG}' must be true or false")
        return meta[TYPE_ALONG]
    parts = schedule_parts(root)
    return bool(parts) and episode.name in {ep.path.name for ep in parts[0].episodes}


def cell_role(cell, typed: bool) -> str:
    """GIVEN, TYPED, EXERCISE or SOLUTION for a code cell (``typed``: of a type-along episode)."""
    tags = set(cell.metadata.get("tags", []))
    roles = tags & {GIVEN, EXERCISE, SOLUTION}
    if len(roles) > 1:
        raise EpisodeCellError(f"the code cell that begins {_first_line(cell.source)!r} is tagged "
                               f"{', '.join(sorted(roles))}: a cell has one of these tags at most")
    if roles:
        return roles.pop()
    return TYPED if typed else GIVEN


def _check_prompts(name: str, text: str, cells: list) -> None:
    """A prompt is read as YAML: '# ' would end it early, a number would not be text."""
    written = iter(re.findall(r"^:prompt:[ \t]*(.*?)[ \t]*$", text, flags=re.MULTILINE))
    for cell in cells:
        if PROMPT not in cell.metadata:
            continue
        raw, read = next(written, ""), cell.metadata[PROMPT]
        meant = yaml.safe_load(raw) if raw[:1] in "'\"" else raw
        if read != meant or not isinstance(read, str) or not read.strip():
            raise EpisodeCellError(
                f"{name}: the prompt ':prompt: {raw}' (cell beginning {_first_line(cell.source)!r}) "
                f"reads as {read!r}: write one line of text, in double quotes if it holds ': ' "
                "or ' #'")


def read_myst(name: str, text: str):
    """An episode's text read by jupytext; its unreadable cell options are an EpisodeCellError."""
    try:
        return jupytext.reads(text, fmt="myst")
    except MystMetadataParsingError as exc:
        raise EpisodeCellError(f"{name}: {exc} (a ':prompt:' with ': ' in it needs double "
                               "quotes)") from None


def episode_cells(episode: Path, root: Path = ROOT) -> tuple[dict, list, bool]:
    """(front matter, jupytext cells, type-along?) of an episode, its placeholders filled."""
    text = fill_placeholders(episode.read_text(encoding="utf-8"), root)
    meta, _ = split_front_matter(text)
    source = read_myst(episode.name, text)
    _check_prompts(episode.name, text, source.cells)
    return meta, source, type_along(episode, meta, root)


def code_pairs(episode: Path, root: Path = ROOT) -> list[tuple[str, object, object]]:
    """The episode's cells as (role, complete cell, learner's cell); an exercise and its solution pair."""
    _, source, typed = episode_cells(episode, root)
    return cell_pairs(episode.name, source.cells, typed)


def cell_pairs(name: str, cells: list, typed: bool) -> list[tuple[str, object, object]]:
    pairs, i = [], 0
    while i < len(cells):
        cell = cells[i]
        i += 1
        if cell.cell_type != "code":
            pairs.append((cell.cell_type, cell, cell))
            continue
        role = cell_role(cell, typed)
        where = f"{name}: the code cell that begins {_first_line(cell.source)!r}"
        if role == SOLUTION:
            raise EpisodeCellError(f"{where} is tagged '{SOLUTION}' but does not follow a cell "
                                   f"tagged '{EXERCISE}': put the exercise's code, with {BLANK} "
                                   "blanks, in a cell right before it")
        if role == EXERCISE:
            after = cells[i] if i < len(cells) else None
            if after is None or after.cell_type != "code" or cell_role(after, typed) != SOLUTION:
                raise EpisodeCellError(f"{where} is tagged '{EXERCISE}': the next cell must be its "
                                       f"answer, a code cell tagged '{SOLUTION}'")
            if BLANK not in cell.source:
                raise EpisodeCellError(f"{where} is tagged '{EXERCISE}' but has no {BLANK} blank")
            pairs.append((SOLUTION, after, cell))
            i += 1
            continue
        if role == TYPED and not str(cell.metadata.get(PROMPT, "")).strip():
            raise EpisodeCellError(
                f"{where} is typed by learners but has no prompt: add a line ':prompt: <what to "
                "write, in one line>' right under its '```{code-cell}' line, or tag it 'given'")
        pairs.append((role, cell, cell))
    return pairs
