"""The episode files and the schedule of the lesson.

An episode's YAML front matter follows the Carpentries schema; the table of contents orders the
episodes. The schedule is one timed table per part of the table of contents: the first part is
the core (sessions, opening, setup check, episodes with their breaks and the wrap-up, from
``lesson_schedule`` in ``_config.yml``), later parts are further episodes. Read by the Sphinx
extension ``carpentry`` (the landing page's directive ``lesson-schedule``) and the lesson's tools.
"""

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



@dataclass(frozen=True)
class Break:
    """A break after an episode (``lesson_schedule.breaks``)."""

    minutes: int


@dataclass(frozen=True)
class SetupCheck:
    """The check at the start of the core that everyone's JupyterLab, kernel and data work."""

    minutes: int
    label = "Setup check"


@dataclass(frozen=True)
class Slot:
    """A timed part of the core that is no episode: the opening, a later session's start, the wrap-up."""

    minutes: int
    label: str
    what: str


@dataclass(frozen=True)
class Session:
    """The Open OnDemand session learners launch for the episodes from ``first`` on (no minutes)."""

    label: str
    first: str  # the slug of its first episode
    hours: int
    partition: str  # "gpu" or "cpu": the site's gpu_partition or cpu_partition
    cores: int
    memory_gb: int
    gpus: int
    minutes = 0


@dataclass(frozen=True)
class SchedulePart:
    """A part of the table of contents that holds episodes."""

    caption: str
    rows: list  # (start 'H:MM', Episode, Break, SetupCheck, Slot or Session, minutes at its end)
    inner_breaks: dict  # minutes of a break halfway through an episode, by its slug

    @property
    def minutes(self) -> int:
        return self.rows[-1][2] if self.rows else 0

    @property
    def episodes(self) -> list[Episode]:
        return [item for _, item, _ in self.rows if isinstance(item, Episode)]

    @property
    def sessions(self) -> list[tuple[Session, int, int]]:
        """Each session with the minutes of its launch and its end (the next one's launch)."""
        starts = [(item, end) for _, item, end in self.rows if isinstance(item, Session)]
        if not starts:
            return []
        ends = [end for _, end in starts[1:]] + [self.minutes]
        return [(item, start, end) for (item, start), end in zip(starts, ends, strict=True)]


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def _schedule_config(root: Path) -> dict:
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8")) or {}
    return config.get("lesson_schedule") or {}


def _minutes_by_episode(root: Path, key: str) -> dict[str, int]:
    found = _schedule_config(root).get(key) or {}
    slugs = {Path(p).stem for p in toc_episode_paths(root)}
    for slug, minutes in found.items():
        if slug not in slugs:
            raise FrontMatterError(f"_config.yml lesson_schedule.{key}: no episode named {slug!r}")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            raise FrontMatterError(
                f"_config.yml lesson_schedule.{key}.{slug}: minutes must be a positive integer")
    return dict(found)


def schedule_breaks(root: Path) -> dict[str, int]:
    """Minutes of break after an episode, by its file name without '.md', from ``_config.yml``."""
    return _minutes_by_episode(root, "breaks")


def schedule_inner_breaks(root: Path) -> dict[str, int]:
    """Minutes of a break halfway through a long episode (``lesson_schedule.breaks_inside``)."""
    return _minutes_by_episode(root, "breaks_inside")


def _whole_minutes(root: Path, key: str) -> int:
    minutes = _schedule_config(root).get(key, 0)
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 0:
        raise FrontMatterError(f"_config.yml lesson_schedule.{key}: minutes must be a whole "
                               "number, 0 or more")
    return minutes


def schedule_setup_check(root: Path) -> int:
    """Minutes of the setup check at the start of the core (``_config.yml``; 0: none)."""
    return _whole_minutes(root, "setup_check")


SESSION_KEYS = {"label": str, "first": str, "hours": int, "partition": str, "cores": int,
                "memory_gb": int, "gpus": int}


def schedule_sessions(root: Path) -> list[Session]:
    """The core's Open OnDemand sessions, in order (``lesson_schedule.sessions``; may be none)."""
    found = _schedule_config(root).get("sessions") or []
    slugs = {Path(p).stem for p in toc_episode_paths(root)}
    sessions = []
    for n, entry in enumerate(found, 1):
        where = f"_config.yml lesson_schedule.sessions, entry {n}"
        if not isinstance(entry, dict) or set(entry) != set(SESSION_KEYS):
            raise FrontMatterError(f"{where}: give exactly the keys {', '.join(SESSION_KEYS)}")
        for key, kind in SESSION_KEYS.items():
            value = entry[key]
            if not isinstance(value, kind) or isinstance(value, bool) or (kind is int and value < 0):
                raise FrontMatterError(f"{where}: '{key}' must be "
                                       + ("a whole number, 0 or more" if kind is int else "text"))
        if entry["first"] not in slugs:
            raise FrontMatterError(f"{where}: no episode named {entry['first']!r}")
        if entry["partition"] not in ("gpu", "cpu"):
            raise FrontMatterError(f"{where}: 'partition' must be gpu or cpu (the site's "
                                   "gpu_partition or cpu_partition)")
        sessions.append(Session(**entry))
    return sessions


def schedule_parts(root: Path) -> list[SchedulePart]:
    """The episodes by part of the table of contents, each part timed from 0:00 with its breaks.

    The core opens with the opening and setup check and ends with the wrap-up; a session that
    starts after a break is launched at its start, and a later session has a slot of
    ``session_start`` minutes before its first episode.
    """
    rests, inner_rests = schedule_breaks(root), schedule_inner_breaks(root)
    # The core's breaks as a room takes them: the rest and the minutes to come back from it.
    back = _whole_minutes(root, "break_return")
    breaks = {slug: m + back for slug, m in rests.items()}
    inner = {slug: m + back for slug, m in inner_rests.items()}
    setup = schedule_setup_check(root)
    opening, wrap_up = _whole_minutes(root, "opening"), _whole_minutes(root, "wrap_up")
    switch = _whole_minutes(root, "session_start")
    sessions = {s.first: s for s in schedule_sessions(root)}
    parts = []
    for caption, paths in toc_parts(root):
        if not paths:
            continue
        core = not parts
        if not core:  # further episodes: another day, their breaks as planned
            breaks, inner = rests, inner_rests
        rows: list = []

        def add(item, minutes, rows=rows):
            elapsed = rows[-1][2] if rows else 0
            rows.append((_clock(elapsed), item, elapsed + minutes))

        first = Path(paths[0]).stem
        if core and first in sessions:  # launched before the workshop opens
            add(sessions[first], 0)
        if core and opening:
            add(Slot(opening, "Opening", "welcome, the day's plan and the code of conduct"), opening)
        if core and setup:
            add(SetupCheck(setup), setup)
        for path in paths:
            ep = read_episode(root, path)
            if core and ep.slug in sessions and ep.slug != first:
                if rows and isinstance(rows[-1][1], Break):  # launched at the start of that break
                    start, item, end = rows.pop()
                    rows += [(start, sessions[ep.slug], end - item.minutes), (start, item, end)]
                else:
                    add(sessions[ep.slug], 0)
                if switch:  # the queue, reconnecting, closing the session before: not a break
                    add(Slot(switch, f"Start of the {sessions[ep.slug].label}",
                             "reconnect, open the notebook, delete the session before"), switch)
            add(ep, ep.minutes + inner.get(ep.slug, 0))
            if ep.slug in breaks and path != paths[-1]:
                add(Break(breaks[ep.slug]), breaks[ep.slug])
        if core and wrap_up:
            add(Slot(wrap_up, "Wrap-up", "key points, feedback and what to do next"), wrap_up)
        parts.append(SchedulePart(caption, rows,
                                  {slug: m for slug, m in inner.items() if slug in
                                   {Path(p).stem for p in paths}}))
    return parts


def session_text(session: Session) -> str:
    """A session's request in words, as the schedule and the app's form show it."""
    gpus = "no GPU" if not session.gpus else f"{session.gpus} GPU" + ("s" if session.gpus > 1 else "")
    return (f"{session.hours} hours, {session.cores} cores, {session.memory_gb} GB, {gpus}, "
            f"on the {session.partition.upper()} partition")


def schedule_markdown(parts: list[SchedulePart], link_prefix: str = "") -> str:
    """Markdown tables, one per part: start, episode (linked) or break, teaching and exercise minutes."""
    out = []
    for part in parts:
        lines = [
            f"**{part.caption}**",
            "",
            "| Start | Episode | Teaching | Exercises |",
            "|---|---|---:|---:|",
        ]
        for start, item, _end in part.rows:
            # Each row: what happens, then its teaching and exercise minutes (empty if none).
            if isinstance(item, Break):
                cells = f"*Break* ({item.minutes} min) | |"
            elif isinstance(item, SetupCheck):
                cells = (f"*{item.label}*: JupyterLab, kernel and data work for everyone "
                         f"([setup]({link_prefix}setup.md)) | | {item.minutes} min")
            elif isinstance(item, Slot):
                cells = f"*{item.label}*: {item.what} | {item.minutes} min |"
            elif isinstance(item, Session):
                cells = f"*Launch the {item.label}* in Open OnDemand ({session_text(item)}) | |"
            else:
                link = f"[{item.number}. {item.meta['title']}]({link_prefix}{item.path.as_posix()})"
                if item.slug in part.inner_breaks:
                    link += f", with a break of {part.inner_breaks[item.slug]} min halfway"
                cells = f"{link} | {item.meta['teaching']} min | {item.meta['exercises']} min"
            lines.append(f"| {start} | {cells} |")
        lines.append(f"| {_clock(part.minutes)} | **Finish** | | |")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"
