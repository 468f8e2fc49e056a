"""Carpentries episode files: their YAML front matter (the Carpentries schema) and their order in
the table of contents. Read by the Sphinx extension ``carpentry``, the schedule
(``lesson_schedule``) and the lesson's tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

EPISODE_DIR = "_episodes"
# Carpentries episode schema: key -> required type (lists hold strings).
SCHEMA = {
    "title": str,
    "teaching": int,
    "exercises": int,
    "questions": list,
    "objectives": list,
    "keypoints": list,
}
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)---[ \t]*\n", re.DOTALL)


class FrontMatterError(ValueError):
    """An episode's front matter is missing or does not follow the schema."""


@dataclass(frozen=True)
class Episode:
    path: Path  # relative to the lesson root, e.g. _episodes/01-introduction.md
    meta: dict

    @property
    def number(self) -> str:
        return self.path.name.split("-", 1)[0]

    @property
    def slug(self) -> str:
        return self.path.stem

    @property
    def docname(self) -> str:
        return f"{EPISODE_DIR}/{self.slug}"

    @property
    def minutes(self) -> int:
        return self.meta["teaching"] + self.meta["exercises"]


def split_front_matter(text: str) -> tuple[dict, str]:
    """Return (front matter as a dict, the body after it)."""
    match = _FRONT_MATTER.match(text)
    if not match:
        raise FrontMatterError("no YAML front matter (a block between '---' lines at the top)")
    meta = yaml.safe_load(match.group(1)) or {}
    if not isinstance(meta, dict):
        raise FrontMatterError("front matter is not a YAML mapping")
    return meta, text[match.end():]


def check_schema(meta: dict) -> list[str]:
    """Problems with the Carpentries keys of ``meta`` (an empty list when it is valid)."""
    problems = []
    for key, kind in SCHEMA.items():
        if key not in meta:
            problems.append(f"missing key '{key}'")
            continue
        value = meta[key]
        # bool is an int subclass: 'teaching: yes' must not pass as a number of minutes.
        if not isinstance(value, kind) or isinstance(value, bool):
            problems.append(f"'{key}' must be {kind.__name__}, not {type(value).__name__}")
        elif kind is int and value < 0:
            problems.append(f"'{key}' must not be negative")
        elif kind is list and (not value or not all(isinstance(v, str) and v.strip() for v in value)):
            problems.append(f"'{key}' must be a non-empty list of strings")
        elif kind is str and not value.strip():
            problems.append(f"'{key}' must not be empty")
    return problems


def read_episode(root: Path, relpath: str | Path) -> Episode:
    """Read and validate one episode; raises FrontMatterError naming the file."""
    path = Path(relpath)
    try:
        meta, _ = split_front_matter((Path(root) / path).read_text(encoding="utf-8"))
    except FrontMatterError as exc:
        raise FrontMatterError(f"{path}: {exc}") from None
    problems = check_schema(meta)
    if problems:
        raise FrontMatterError(f"{path}: " + "; ".join(problems))
    return Episode(path, meta)


def toc_parts(root: Path) -> list[tuple[str, list[str]]]:
    """Each part of the table of contents: its caption and its episode files, in order."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    return [(part.get("caption", ""), [
        name if name.endswith(".md") else name + ".md"
        for name in (chapter.get("file", "") for chapter in part.get("chapters", []))
        if name.startswith(EPISODE_DIR + "/")]) for part in toc.get("parts", [])]


def toc_episode_paths(root: Path) -> list[str]:
    """Episode files in the order the table of contents lists them."""
    return [path for _, paths in toc_parts(root) for path in paths]


def episodes(root: Path) -> list[Episode]:
    """All episodes, validated, in teaching order."""
    return [read_episode(root, p) for p in toc_episode_paths(root)]
