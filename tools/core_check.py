"""Check that the core of the lesson can be taught in a half-day.

    python tools/core_check.py            # a table per core episode; exit 1 naming what fails
    python tools/core_check.py --root DIR # another copy of the lesson

The core is the first part of ``_toc.yml`` that lists episodes (its caption names it the core);
the landing page's schedule, the instructor guide and this script all take it from there. Each
core episode is timed by its front matter: ``teaching`` + ``exercises`` minutes, its *scheduled
minutes*. Parts of an episode that the core does not teach are marked optional, visibly: a
section whose heading ends with "(optional)" (everything below it, up to the next heading of
the same or a higher level) and an exercise whose title ends with "(optional)" (a heading or
title that starts with "Optional:" counts too). The checks
leave optional parts out, except the check of long sentences, which reads the whole page.

For each core episode:

a. **Typing.** At most ``MAX_TYPED_PER_MINUTE`` typed lines per scheduled minute. Typed lines
   are the lines of the episode's code cells (``{code-cell}``) that are not blank and not only a
   comment, in cells not tagged ``given`` and not in an optional section. A cell tagged
   ``given`` (``:tags: [given]``, beside ``lesson-module`` if it has that tag too) is read and
   run, not typed: the page marks it as given. Code inside exercises and solutions, and shell
   commands in fenced blocks, are not counted: typing them is part of the exercise minutes.
b. **Exercises.** At most one exercise (not optional) per ``MINUTES_PER_EXERCISE`` scheduled
   minutes.
c. **No CPU training in an exercise.** An exercise (not optional), its solution included, may
   not ask learners to train on the CPU again: a workshop cannot wait for it. An exercise trains
   when its text calls ``.fit(`` or ``train_on(``, or says to train (or retrain) again, or to
   run the cells again from some point. It is allowed when it names a GPU device (``"gpu``) and
   no CPU device (``"cpu"``), when every training call limits the steps (``steps_per_epoch=``),
   and for code with blanks to fill in (``____``), which cannot run.
d. **Sentences.** At most ``MAX_LONG_SHARE`` of the prose sentences (outside code, tables and
   figure options; instructor notes included) are longer than ``LONG_SENTENCE`` words. The page
   is read as it is shown when every measurement is recorded: a ``{{ if ... }}`` block reads as
   its first part, and a placeholder as one word.
e. **Objectives.** Every objective of the front matter is assessed by an exercise with a
   solution: the exercise names it with a class option, ``:class: objective-2`` (several:
   ``:class: objective-1 objective-3``). The option shows nowhere on the page or in the notebook.

For the core as a whole: it takes at most ``HALF_DAY`` minutes with its breaks (from
``_config.yml``), and no part of the schedule runs longer than ``MAX_STRETCH`` minutes without a
break. The guide and the landing page, where they name the core's episodes ("episodes 1 to 5"),
name the ones ``_toc.yml`` lists.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from carpentry import (  # noqa: E402
    CONDITIONAL,
    PLACEHOLDER,
    Break,
    FrontMatterError,
    schedule_parts,
    split_front_matter,
)

MAX_TYPED_PER_MINUTE = 3.5
MINUTES_PER_EXERCISE = 6
LONG_SENTENCE = 35  # words
MAX_LONG_SHARE = 0.12
HALF_DAY = 240  # minutes, breaks included
MAX_STRETCH = 90  # minutes of episodes in a row without a break
GIVEN_TAG = "given"
OPTIONAL = re.compile(r"^optional\b|\(optional\)$", re.IGNORECASE)
OBJECTIVE_CLASS = re.compile(r"\bobjective-(\d+)\b")
BLANK = "____"
TRAINING_CALL = re.compile(r"\.fit\(|\btrain_on\(")
TRAIN_AGAIN = re.compile(
    r"\b(?:re)?train(?:s|ing)?\b[^.?!:;]{0,60}\bagain\b|\bretrain"
    r"|\brun the cells\b[^.?!]{0,40}\b(?:again|from)\b",
    re.IGNORECASE,
)
CORE_NAMED = re.compile(r"\bcore\b[^.]{0,80}?\bepisodes (\d+) to (\d+)", re.IGNORECASE | re.DOTALL)

# A code fence, also one that opens a list item ("1. ```bash").
_CODE_FENCE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*(?P<fence>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<title>.*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A sentence ends at . ! or ? before a capital, a digit or inline code (which may start lower case).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*]*\s+(?=[\"'(*\[]*[A-Z0-9]|`)")


class CoreCheckError(Exception):
    """The lesson's files do not let the core be checked (no core part, bad front matter)."""


@dataclass
class Exercise:
    title: str
    classes: str = ""
    optional: bool = False
    question: list[str] = field(default_factory=list)
    solution: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)  # its fenced code blocks, solution included
    has_solution: bool = False

    @property
    def objectives(self) -> set[int]:
        return {int(n) for n in OBJECTIVE_CLASS.findall(self.classes)}

    @property
    def text(self) -> str:
        return "\n".join(self.question + self.solution + self.code)


@dataclass
class CodeCell:
    lines: list[str]
    tags: set[str]
    optional: bool

    @property
    def typed_lines(self) -> int:
        return sum(1 for line in self.lines if line.strip() and not line.strip().startswith("#"))


@dataclass
class Page:
    """What the checks need from one episode's body."""

    cells: list[CodeCell] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)


def _tags(value: str) -> set[str]:
    return {t.strip().strip("'\"") for t in value.strip().strip("[]").split(",") if t.strip()}


def parse_body(body: str) -> Page:
    """Code cells, exercises and prose paragraphs of an episode's MyST body."""
    page = Page()
    lines = body.splitlines()
    directives: list[dict] = []  # open colon fences, outermost first
    sections: list[tuple[int, bool]] = []  # (heading level, optional)
    paragraph: list[str] = []

    def flush():
        if paragraph:
            page.paragraphs.append(" ".join(paragraph))
            paragraph.clear()

    def in_optional() -> bool:
        return any(optional for _, optional in sections)

    def current_exercise() -> tuple[Exercise | None, bool]:
        """The exercise that encloses this line, and whether the line is in its solution."""
        exercise, in_solution = None, False
        for d in directives:
            if d["name"] == "exercise":
                exercise, in_solution = d["exercise"], False
            elif d["name"] == "solution" and exercise is not None:
                in_solution = True
        return exercise, in_solution

    def note(line: str):
        exercise, in_solution = current_exercise()
        if exercise is not None:
            (exercise.solution if in_solution else exercise.question).append(line)

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _CODE_FENCE.match(line)
        if fence:
            flush()
            marker, info = fence["fence"], fence["info"].strip()
            block, i = [], i + 1
            closing = re.compile(rf"^\s*{re.escape(marker[0])}{{{len(marker)},}}\s*$")
            while i < len(lines) and not closing.match(lines[i]):
                block.append(lines[i])
                i += 1
            i += 1  # the closing fence
            exercise, _ = current_exercise()
            if exercise is not None:
                exercise.code.append("\n".join(block))
            if info.startswith("{code-cell}"):
                tags: set[str] = set()
                while block and _OPTION.match(block[0]):
                    option = _OPTION.match(block.pop(0))
                    if option["key"] == "tags":
                        tags |= _tags(option["value"])
                page.cells.append(CodeCell(block, tags, in_optional()))
            continue
        opening = _DIRECTIVE.match(line)
        if opening:
            flush()
            entry = {"fence": opening["fence"], "name": opening["name"], "exercise": None}
            title = opening["title"].strip()
            if opening["name"] == "exercise":
                entry["exercise"] = Exercise(title, optional=in_optional() or bool(OPTIONAL.search(title)))
                page.exercises.append(entry["exercise"])
            elif opening["name"] == "solution":
                exercise, _ = current_exercise()
                if exercise is not None:
                    exercise.has_solution = True
            if title:
                page.paragraphs.append(title)
            directives.append(entry)
            i += 1
            # Options right after the opening line: :class:, :alt:, :width:, ...
            while i < len(lines) and _OPTION.match(lines[i]):
                option = _OPTION.match(lines[i])
                if option["key"] == "class" and entry["exercise"] is not None:
                    entry["exercise"].classes += " " + option["value"]
                i += 1
            continue
        if directives and line.strip() == directives[-1]["fence"]:
            flush()
            directives.pop()
            i += 1
            continue
        heading = _HEADING.match(line) if not directives else None
        if heading:
            flush()
            level = len(heading["level"])
            while sections and sections[-1][0] >= level:
                sections.pop()
            sections.append((level, bool(OPTIONAL.search(heading["title"]))))
            i += 1
            continue
        note(line)
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", "![", "<!--")):
            flush()
        elif stripped.startswith(": "):  # a definition after its term
            flush()
            paragraph.append(stripped[2:])
        elif _ITEM.match(line):
            flush()
            paragraph.append(_ITEM.sub("", line, count=1).strip())
        else:
            paragraph.append(stripped)
        i += 1
    flush()
    return page


def as_shown(text: str) -> str:
    """The text as the page shows it when every measurement is recorded (for counting words)."""
    text = CONDITIONAL.sub(lambda m: m["then"], text)
    return PLACEHOLDER.sub("VALUE", text)


def sentences(paragraphs: list[str]) -> list[str]:
    out = []
    for paragraph in paragraphs:
        out += [s for s in _SENTENCE_END.split(paragraph) if re.search(r"[A-Za-z]", s)]
    return out


def words(sentence: str) -> int:
    return sum(1 for token in sentence.split() if re.search(r"\w", token))


def trains_on_cpu(exercise: Exercise) -> bool:
    """Whether an exercise asks learners to train on the CPU again (rule c of the module)."""
    prose = "\n".join(exercise.question + exercise.solution)
    blocks = exercise.code + re.findall(r"`([^`]+)`", prose)
    # Code with blanks to fill in is written, not run.
    calls = [b for b in blocks if TRAINING_CALL.search(b) and BLANK not in b]
    asks = bool(TRAIN_AGAIN.search(re.sub(r"`[^`]*`", "", prose)))
    if not calls and not asks:
        return False
    text = exercise.text
    if '"gpu' in text and '"cpu"' not in text:
        return False
    return asks or not all("steps_per_epoch=" in call for call in calls)


@dataclass
class EpisodeReport:
    slug: str
    minutes: int
    typed: int
    exercises: int
    cpu_training: list[str]
    sentences: int
    long_sentences: list[str]
    objectives: int
    unassessed: list[int]

    @property
    def typed_limit(self) -> float:
        return MAX_TYPED_PER_MINUTE * self.minutes

    @property
    def exercise_limit(self) -> int:
        return self.minutes // MINUTES_PER_EXERCISE

    @property
    def long_share(self) -> float:
        return len(self.long_sentences) / self.sentences if self.sentences else 0.0

    def failures(self) -> list[str]:
        problems = []
        if self.typed > self.typed_limit:
            problems.append(
                f"{self.slug}: {self.typed} typed lines in {self.minutes} scheduled minutes, over the "
                f"limit of {MAX_TYPED_PER_MINUTE} a minute ({self.typed_limit:g}); tag cells that "
                f"learners only run '{GIVEN_TAG}', move code to an optional section, or shorten it")
        if self.exercises > self.exercise_limit:
            problems.append(
                f"{self.slug}: {self.exercises} exercises in {self.minutes} scheduled minutes, over the "
                f"limit of one per {MINUTES_PER_EXERCISE} minutes ({self.exercise_limit}); make some "
                "optional or move them out of the core")
        for title in self.cpu_training:
            problems.append(
                f"{self.slug}: the exercise '{title}' trains on the CPU again; a core exercise may "
                "train only on the GPU or for a few steps (steps_per_epoch=): make it optional")
        if self.long_share > MAX_LONG_SHARE:
            problems.append(
                f"{self.slug}: {len(self.long_sentences)} of {self.sentences} sentences "
                f"({self.long_share:.0%}) are longer than {LONG_SENTENCE} words, over the limit of "
                f"{MAX_LONG_SHARE:.0%}; the longest begins: "
                f"'{' '.join(self.long_sentences[0].split()[:8])} ...'")
        if self.unassessed:
            problems.append(
                f"{self.slug}: objective(s) {', '.join(map(str, self.unassessed))} of the front matter "
                "have no exercise with a solution that names them (':class: objective-N')")
        return problems


def check_episode(root: Path, relpath: str | Path) -> EpisodeReport:
    path = Path(root) / relpath
    meta, body = split_front_matter(path.read_text(encoding="utf-8"))
    page = parse_body(body)
    core_exercises = [e for e in page.exercises if not e.optional]
    found = sentences([as_shown(p) for p in page.paragraphs])
    longest = sorted((s for s in found if words(s) > LONG_SENTENCE), key=words, reverse=True)
    assessed = {n for e in page.exercises if e.has_solution for n in e.objectives}
    n_objectives = len(meta.get("objectives") or [])
    return EpisodeReport(
        slug=path.stem,
        minutes=int(meta["teaching"]) + int(meta["exercises"]),
        typed=sum(c.typed_lines for c in page.cells if not c.optional and GIVEN_TAG not in c.tags),
        exercises=len(core_exercises),
        cpu_training=[e.title for e in core_exercises if trains_on_cpu(e)],
        sentences=len(found),
        long_sentences=longest,
        objectives=n_objectives,
        unassessed=[n for n in range(1, n_objectives + 1) if n not in assessed],
    )


def objective_gaps(root: Path, relpath: str | Path) -> list[int]:
    """The objectives (numbered from 1) of an episode that no exercise with a solution names."""
    return check_episode(root, relpath).unassessed


def core_part(root: Path):
    parts = schedule_parts(root)
    if not parts or "core" not in parts[0].caption.lower():
        raise CoreCheckError("_toc.yml: the first part that lists episodes must be the core "
                             "(its caption names it, e.g. 'Core episodes (half a day)')")
    return parts


def schedule_failures(root: Path) -> list[str]:
    """The core's length and the breaks of every part; the core as the guide and index name it."""
    parts = core_part(root)
    core, problems = parts[0], []
    if core.minutes > HALF_DAY:
        problems.append(f"the core takes {core.minutes} minutes with its breaks, over the half-day "
                        f"of {HALF_DAY}")
    for part in parts:
        stretch = 0
        for _, item, _ in part.rows:
            stretch = 0 if isinstance(item, Break) else stretch + item.minutes
            if stretch > MAX_STRETCH:
                problems.append(f"'{part.caption}': {stretch} minutes without a break up to "
                                f"{item.slug}, over {MAX_STRETCH}; add a break in _config.yml "
                                "(lesson_schedule.breaks)")
                break
    first, last = int(core.episodes[0].number), int(core.episodes[-1].number)
    for name in ("guide.md", "index.md"):
        page = Path(root) / name
        if not page.exists():
            continue
        for match in CORE_NAMED.finditer(page.read_text(encoding="utf-8")):
            if (int(match[1]), int(match[2])) != (first, last):
                problems.append(f"{name} names the core as episodes {match[1]} to {match[2]}; "
                                f"_toc.yml's core is episodes {first} to {last}")
    return problems


def table(report: EpisodeReport) -> str:
    def row(what, value, limit, ok):
        return f"  {what:<34} {value:>10} {limit:>12}  {'ok' if ok else 'FAILS'}"

    lines = [
        f"{report.slug} ({report.minutes} scheduled minutes)",
        f"  {'check':<34} {'value':>10} {'limit':>12}",
        row("a. typed lines", report.typed, f"{report.typed_limit:g}", report.typed <= report.typed_limit),
        row("b. exercises", report.exercises, report.exercise_limit,
            report.exercises <= report.exercise_limit),
        row("c. exercises training on the CPU", len(report.cpu_training), 0, not report.cpu_training),
        row("d. sentences over 35 words", f"{len(report.long_sentences)}/{report.sentences}",
            f"{MAX_LONG_SHARE:.0%}", report.long_share <= MAX_LONG_SHARE),
        row("e. objectives without an exercise", len(report.unassessed), 0, not report.unassessed),
    ]
    return "\n".join(lines)


def run(root: Path = ROOT, out=sys.stdout) -> list[str]:
    """Print the tables; return the failures (empty when the core passes)."""
    parts = core_part(root)
    core = parts[0]
    failures = []
    for episode in core.episodes:
        report = check_episode(root, episode.path)
        print(table(report), file=out)
        failures += report.failures()
    print(f"core: {len(core.episodes)} episodes, {core.minutes} minutes with breaks "
          f"(limit {HALF_DAY})", file=out)
    failures += schedule_failures(root)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the lesson folder (default: this one)")
    args = parser.parse_args(argv)
    try:
        failures = run(args.root)
    except (CoreCheckError, FrontMatterError, OSError) as exc:
        print(f"core check: {exc}", file=sys.stderr)
        return 2
    for failure in failures:
        print(f"FAILS: {failure}", file=sys.stderr)
    if failures:
        print(f"core check: {len(failures)} problem(s); see the rules in tools/core_check.py",
              file=sys.stderr)
        return 1
    print("core check: the core passes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
