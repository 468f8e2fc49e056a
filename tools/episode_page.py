"""An episode's MyST body as its page shows it, read without Sphinx for ``tools/core_check.py``
(optional parts flagged, not dropped)."""

import re
from dataclasses import dataclass, field

from carpentry import CONDITIONAL, PLACEHOLDER

GIVEN_TAG, EXERCISE_TAG, SOLUTION_TAG = "given", "exercise", "solution"
NOT_TYPED = {GIVEN_TAG, EXERCISE_TAG, SOLUTION_TAG}
PREDICTION = "prediction"
MINUTES = re.compile(r"\((\d+)\s*min\)\s*$")
OPTIONAL = re.compile(r"^optional\b|\(optional\)$", re.IGNORECASE)
OBJECTIVE_CLASS = re.compile(r"\bobjective-(\d+)\b")

# A code fence, also one that opens a list item ("1. ```bash").
_CODE_FENCE = re.compile(r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DIRECTIVE = re.compile(r"^\s*(?P<fence>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<title>.*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_TARGET = re.compile(r"^\([\w-]+\)=$")  # a MyST label, "(label)="
# A sentence ends at . ! or ? before a capital, a digit or inline code (which may start lower case).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]*]*\s+(?=[\"'(*\[]*[A-Z0-9]|`)")


@dataclass
class Exercise:
    title: str
    classes: str = ""
    optional: bool = False
    question: list[str] = field(default_factory=list)
    solution: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)  # its code blocks and its cell with blanks
    has_solution: bool = False

    @property
    def objectives(self) -> set[int]:
        return {int(n) for n in OBJECTIVE_CLASS.findall(self.classes)}

    @property
    def minutes(self) -> int | None:  # its title's '(10 min)'
        found = MINUTES.search(self.title)
        return int(found[1]) if found else None

    @property
    def prediction(self) -> bool:
        return PREDICTION in self.classes.split()

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

    @property
    def typed(self) -> bool:  # learners type it (rule a)
        return not self.optional and not self.tags & NOT_TYPED

    @property
    def given(self) -> bool:  # learners read and run it in the core
        return not self.optional and GIVEN_TAG in self.tags


@dataclass
class Page:
    """What the checks need from one episode's body."""

    cells: list[CodeCell] = field(default_factory=list)
    exercises: list[Exercise] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)  # the page's text, for counting words (rule f)
    # What the instructor presents (rule a): the prose outside exercises and optional parts,
    # instructor notes included, and the lines of code blocks there that are not cells (shell
    # commands, batch scripts), which learners read and run.
    talk: list[str] = field(default_factory=list)
    shown_code_lines: int = 0


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

    def shown(text: str):  # prose (not an instructor note), and talk wherever it lives
        if not any(d["name"] == "instructor-note" for d in directives):
            page.prose.append(text)
        if presented():
            page.talk.append(text)

    def presented() -> bool:  # in the core's talk (rule a): notes and dropdowns count too
        return not in_optional() and not any(
            d["name"] in ("exercise", "solution") for d in directives)

    def current_exercise() -> tuple[Exercise | None, bool]:  # and whether in its solution
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
            elif not info.startswith("{code-cell}") and presented():
                page.shown_code_lines += sum(1 for b in block if b.strip()
                                             and not b.strip().startswith("#"))
            if info.startswith("{code-cell}"):
                tags: set[str] = set()
                while block and _OPTION.match(block[0]):
                    option = _OPTION.match(block.pop(0))
                    if option["key"] == "tags":
                        tags |= _tags(option["value"])
                page.cells.append(CodeCell(block, tags, in_optional()))
                # An exercise's cells follow its directive: the last exercise is theirs.
                if page.exercises and EXERCISE_TAG in tags:
                    page.exercises[-1].code.append("\n".join(block))
                if page.exercises and SOLUTION_TAG in tags:
                    page.exercises[-1].has_solution = True
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
                if opening["name"] in ("exercise", "solution"):  # part of the exercise, not talk
                    page.prose.append(title)
                elif opening["name"] not in ("figure", "image", "instructor-note"):  # not a path
                    shown(title)
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
            shown(heading["title"])
            i += 1
            continue
        note(line)
        stripped = line.strip()
        if stripped.startswith("|"):  # a table row: its text, not its code
            shown(re.sub(r"`[^`]*`", " ", stripped).replace("|", " "))
        elif stripped and not stripped.startswith(("![", "<!--")) and not _TARGET.match(stripped):
            shown(_ITEM.sub("", stripped.removeprefix(": "), count=1))
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


_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_ROLE = re.compile(r"\{[\w:-]+\}`([^`<]*?)\s*(?:<[^`>]*>)?`")


def prose_words(prose: list[str]) -> int:
    """Words of prose as the page shows them: links and roles as their text, images as nothing."""
    text = _IMAGE.sub(" ", as_shown("\n".join(prose)))
    return words(_ROLE.sub(r"\1", _LINK.sub(r"\1", text)))


