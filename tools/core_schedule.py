"""The core's day as a whole (``tools/core_check.py``'s rules for the core and its sessions),
and the timing model's table for the instructor guide."""

from __future__ import annotations

import math
import re
from pathlib import Path

from carpentry import Break, Session, SetupCheck, Slot, schedule_breaks, schedule_inner_breaks, site_values
from lesson_schedule import _clock

# The slots as a room of 25 takes them (the timings of tools/core_report.py: 12 to 15 minutes).
OPENING = 12  # minutes at least: welcome, the day's plan, the code of conduct
SETUP_CHECK = 15  # minutes at least, at the start of the core
WRAP_UP = 10  # minutes at least: key points, feedback, what next
WORKSHOP_DAY = 480  # minutes from the opening to the end of the wrap-up, breaks included
MAX_STRETCH = 90  # minutes of episodes in a row without a break
SESSION_MARGIN = 20  # minutes a session outlasts the part it serves: a late start, a slow room
SESSION_START = 12  # a later session's queue, reconnecting, deleting the one before
BREAK_RETURN = 2  # minutes a room takes to come back from each break of the core
CORE_NAMED = re.compile(r"\bcore\b[^.]{0,80}?\bepisodes (\d+) to (\d+)", re.IGNORECASE | re.DOTALL)
# The guide's copy of the model's table sits between these two lines.
TABLE_START = "<!-- timing model: python tools/core_check.py --write-guide -->"
TABLE_END = "<!-- end of the timing model -->"


def _slot_failures(core) -> list[str]:
    problems = []
    items = [item for _, item, _ in core.rows if not isinstance(item, Session)]
    opening = items[0] if items and isinstance(items[0], Slot) else None
    setup = items[1] if len(items) > 1 and isinstance(items[1], SetupCheck) else None
    wrap_up = items[-1] if items and isinstance(items[-1], Slot) else None
    for item, least, key, text in ((opening, OPENING, "opening", "opens with no opening"),
                                   (setup, SETUP_CHECK, "setup_check", "starts with no setup check"),
                                   (wrap_up, WRAP_UP, "wrap_up", "ends with no wrap-up")):
        if item is None or item.minutes < least:
            problems.append(f"the core {text} of {least} minutes: set lesson_schedule.{key}: "
                            f"{least} in _config.yml")
    for n, (_, item, _end) in enumerate(core.rows):
        if isinstance(item, Session) and n:
            after = [i for _, i, _ in core.rows[n + 1:] if isinstance(i, Slot) or hasattr(i, "slug")]
            start = after[0] if after and isinstance(after[0], Slot) else None
            if start is None or start.minutes < SESSION_START:
                problems.append(f"the {item.label} has no start of its own of {SESSION_START} "
                                "minutes (queue, reconnect, delete the session before): set "
                                f"lesson_schedule.session_start: {SESSION_START} in _config.yml")
    if core.minutes > WORKSHOP_DAY:
        problems.append(f"the core takes {core.minutes} minutes with its breaks, opening, setup "
                        f"check and wrap-up, over the workshop day of {WORKSHOP_DAY}")
    return problems


def core_rests(root: Path, core) -> list[int]:
    """The rests of the core's breaks (after an episode but the last, and inside one)."""
    slugs = [ep.slug for ep in core.episodes]
    after, inside = schedule_breaks(root), schedule_inner_breaks(root)
    return [after[s] for s in slugs[:-1] if s in after] + [inside[s] for s in slugs if s in inside]


def break_failures(core, rests: list[int]) -> list[str]:
    """Each of the core's breaks holds the minutes a room takes to come back from it."""
    scheduled = sum(item.minutes for _, item, _ in core.rows if isinstance(item, Break))
    scheduled += sum(core.inner_breaks.values())
    if scheduled < sum(rests) + BREAK_RETURN * len(rests):
        return [f"the core's breaks do not hold the {BREAK_RETURN} minutes a room takes to come "
                f"back from each: set lesson_schedule.break_return: {BREAK_RETURN} in _config.yml"]
    return []


def stretch_failures(part) -> list[str]:
    """Minutes in a row without a break; a break inside an episode splits it in halves."""
    stretch = 0
    for _, item, _end in part.rows:
        if isinstance(item, Break):
            stretch = 0
            continue
        if isinstance(item, Session):
            continue
        inner = part.inner_breaks.get(getattr(item, "slug", ""), 0)
        if inner:
            half = item.minutes // 2
            if stretch + half > MAX_STRETCH:
                stretch += half
            else:
                stretch = item.minutes - half
        else:
            stretch += item.minutes
        if stretch > MAX_STRETCH:
            name = getattr(item, "slug", getattr(item, "label", ""))
            return [f"'{part.caption}': {stretch} minutes without a break up to {name}, over "
                    f"{MAX_STRETCH}; add a break in _config.yml (lesson_schedule.breaks, or "
                    "breaks_inside for a long episode)"]
    return []


def session_failures(root: Path, core, reports) -> list[str]:
    """Each session outlasts the part it serves and holds GPUs exactly where they are used."""
    sessions = core.sessions
    if not sessions or core.rows[0][1] is not sessions[0][0]:
        return ["the core names no Open OnDemand session launched at its start: add "
                "lesson_schedule.sessions to _config.yml, the first from the first episode"]
    problems = []
    most = int(site_values(root).get("site_session_max_hours", "0") or 0)
    uses_gpu = {r.slug: r.uses_gpu for r in reports}
    for session, start, end in sessions:
        served = [item.slug for _, item, at in core.rows
                  if hasattr(item, "slug") and start < at <= end and item.slug in uses_gpu]
        need = end - start + SESSION_MARGIN
        if session.hours * 60 < need:
            problems.append(
                f"the {session.label} lasts {session.hours} hours but serves {end - start} "
                f"minutes (from its launch at {start // 60}:{start % 60:02d}); with "
                f"{SESSION_MARGIN} minutes to spare it needs {math.ceil(need / 60)} hours: set "
                "its hours in lesson_schedule.sessions")
        if most and session.hours > most:
            problems.append(f"the {session.label} asks for {session.hours} hours, over the "
                            f"site's session_max_hours of {most}")
        for r in reports:
            if r.slug in served and r.wait_seconds and r.wait_problem(session.cores):
                problems.append(f"{r.slug}: {r.wait_problem(session.cores)}")
        gpu_used = [slug for slug in served if uses_gpu[slug]]
        if gpu_used and not session.gpus:
            problems.append(f"the {session.label} has no GPU, but {', '.join(gpu_used)} uses "
                            "one: start a GPU session at the break before it")
        if session.gpus and not gpu_used:
            problems.append(f"the {session.label} holds {session.gpus} GPU(s) for "
                            f"{', '.join(served)}, which use none: ask for 0 GPUs")
        if (session.partition == "gpu") != bool(session.gpus):
            problems.append(f"the {session.label} asks for the {session.partition.upper()} "
                            f"partition with {session.gpus} GPU(s): a session with GPUs asks "
                            "for gpu, one without for cpu")
    return problems


def named_core_failures(root: Path, core) -> list[str]:
    first, last = int(core.episodes[0].number), int(core.episodes[-1].number)
    problems = []
    for name in ("guide.md", "index.md"):
        page = Path(root) / name
        if not page.exists():
            continue
        for match in CORE_NAMED.finditer(page.read_text(encoding="utf-8")):
            if (int(match[1]), int(match[2])) != (first, last):
                problems.append(f"{name} names the core as episodes {match[1]} to {match[2]}; "
                                f"_toc.yml's core is episodes {first} to {last}")
    return problems


def model_table(reports, rates: str, core, setup=None, day: dict | None = None) -> str:
    """The timing model per core episode, the sessions and the day, in Markdown for the guide."""
    lines = [
        rates,
        "",
        "| Episode | Typed lines | Given lines (cells) | Words presented | Waits | Teaching (model) "
        "| Exercises (model) | Model + 10 % | Scheduled |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in reports:
        waits = (f"{r.model['waits']:.1f} min ({r.wait_source})" if r.wait_seconds
                 else "none recorded")
        lines.append(f"| {r.slug} | {r.typed} | {r.given} ({len(r.given_cells)}) | {r.talk:,} | "
                     f"{waits} | {r.model_teaching} of {r.teaching_minutes} min | "
                     f"{r.model_exercises} of {r.exercise_minutes} min | {r.least_minutes} min | "
                     f"{r.minutes} min |")
    slots = {item.label: item.minutes for _, item, _ in core.rows if isinstance(item, Slot)}
    setup_minutes = sum(item.minutes for _, item, _ in core.rows if isinstance(item, SetupCheck))
    breaks = core.minutes - sum(slots.values()) - setup_minutes - sum(r.minutes for r in reports)
    work = core.minutes - breaks
    model = f"; the model's {setup} min with 10 % to spare" if setup is not None else ""
    parts = [f"the setup check ({setup_minutes} min{model})"] + [
        f"the {label[0].lower()}{label[1:]} ({minutes} min)" for label, minutes in slots.items()]
    lines += ["", f"With {', '.join(parts[:-1])} and {parts[-1]}, the room works for {work} "
              f"minutes. With the breaks ({breaks} min, {BREAK_RETURN} of each to come back), "
              f"the day takes {core.minutes} minutes."]
    if day:
        lines += ["", f"The model's day, each part at its least: {sum(day.values())} minutes ("
                  + ", ".join(f"{part} {minutes}" for part, minutes in day.items()) + ")."]
    by_slug = {r.slug: r for r in reports}
    for session, start, end in core.sessions:
        served = [by_slug[item.slug] for _, item, at in core.rows
                  if getattr(item, "slug", None) in by_slug and start < at <= end]
        lines.append("")
        lines.append(f"The {session.label} ({session.hours} h from {_clock(start)}) serves "
                     f"{end - start} minutes: its episodes are scheduled for "
                     f"{sum(r.minutes for r in served)}, and the model with 10 % to spare "
                     f"asks {sum(r.least_minutes for r in served)}.")
    return "\n".join(lines) + "\n"


def guide_block(text: str) -> str | None:
    """The table between the guide's markers, or None without them."""
    if TABLE_START not in text or TABLE_END not in text:
        return None
    return text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)].strip("\n") + "\n"


def write_guide(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    if guide_block(text) is None:
        raise ValueError(f"{path} has no lines {TABLE_START!r} and {TABLE_END!r} to write between")
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    path.write_text(f"{head}{TABLE_START}\n{table}{TABLE_END}{tail}", encoding="utf-8")
