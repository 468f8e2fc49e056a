"""The checklist: items that passed (✓), failed (✗, with the one thing to do) or were not
checked (–, with why), printed for the instructor and written as JSON for the site's support."""

import datetime
import json
import platform
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

OK, FAIL, SKIP = "ok", "fail", "skip"
MARKS = {OK: "✓", FAIL: "✗", SKIP: "–"}
FORMAT = "gpulesson-check"
FORMAT_VERSION = 1
DEFAULT_JSON = "gpulesson-check.json"
PLACES = {"login": "On the login node", "job": "In the job, on a compute node",
          "laptop": "In the kernel's Python", "learner": "In this kernel"}


@dataclass
class Item:
    """One line of the checklist. ``detail``: what was found (for ✓ and ✗) or why it was not
    checked (for –); ``fix``: the one thing to do about a ✗; ``where``: login, job or laptop."""

    name: str
    status: str
    detail: str = ""
    fix: str = ""
    where: str = "login"

    def __post_init__(self):
        if self.status not in MARKS:
            raise ValueError(f"status must be one of {', '.join(MARKS)}, not {self.status!r}")
        if self.status == FAIL and not self.fix:
            raise ValueError(f"the failed item {self.name!r} needs a fix")

    def lines(self) -> list[str]:
        head = f"{MARKS[self.status]} {self.name}"
        if self.detail:
            head += f": {self.detail}" if self.status != SKIP else f" (not checked: {self.detail})"
        return [head] + ([f"    → {self.fix}"] if self.status == FAIL else [])


def ok(name, detail="", **kw) -> Item:
    return Item(name, OK, detail, **kw)


def fail(name, detail, fix, **kw) -> Item:
    return Item(name, FAIL, detail, fix, **kw)


def skip(name, why, **kw) -> Item:
    return Item(name, SKIP, why, **kw)


def all_passed(items) -> bool:
    """True when no item failed (items not checked are allowed)."""
    return not any(item.status == FAIL for item in items)


def exit_status(items) -> int:
    """0: every item ✓ or –; 1: any ✗."""
    return 0 if all_passed(items) else 1


def text(items, title: str | None = None) -> str:
    """The checklist as printed: one line per item, the fix under each ✗, a summary last."""
    lines = [title] if title else []
    places = {item.where for item in items}
    for index, item in enumerate(items):
        if len(places) > 1 and (index == 0 or items[index - 1].where != item.where):
            lines.append(f"{PLACES.get(item.where, item.where)}:")
        lines += item.lines()
    counts = {status: sum(item.status == status for item in items) for status in MARKS}
    lines.append(f"{counts[OK]} ✓, {counts[FAIL]} ✗, {counts[SKIP]} not checked"
                 + ("" if counts[FAIL] else ": ready."))
    return "\n".join(lines)


def items_from_json(data: dict) -> list[Item]:
    """The items of a checklist written by :func:`write_json` (the job hands its items back so)."""
    return [Item(**item) for item in data.get("items", [])]


def write_json(path, items, **about) -> Path:
    """The checklist as data: what was checked where, and the items."""
    data = {"format": FORMAT, "format_version": FORMAT_VERSION,
            "checked": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(), **about, "passed": all_passed(items),
            "items": [asdict(item) for item in items]}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def run(*command: str, timeout: float = 60, **options) -> subprocess.CompletedProcess | None:
    """A command's result, as text; None when it is not there, cannot start or does not answer."""
    if shutil.which(command[0]) is None:
        return None
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              check=False, **options)
    except (subprocess.TimeoutExpired, OSError):
        return None
