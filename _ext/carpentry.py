"""Carpentries episode metadata for a Jupyter Book built with sphinx-lesson.

Each episode's YAML front matter (the Carpentries schema) is the single source of
- the title heading and the overview box (teaching/exercise minutes, questions, objectives)
  at the top of the episode and the keypoints box at its end, injected when Sphinx reads it;
- the schedule on the landing page (directive ``lesson-schedule``): one table per part of the
  table of contents (the half-day core, then further episodes), with the breaks of ``_config.yml``
  and, at the start of the core, its setup check.

Two kinds of values reach the pages through placeholders, replaced by :func:`fill_placeholders`
in the site and in the generated notebooks alike (also inside code blocks):

- ``{{ site_... }}``: the cluster the lesson is taught on (name, login host, partitions, modules,
  GPU types), from the section ``lesson_site`` of ``_config.yml``: the one file another
  institution edits to adapt the lesson;
- ``{{ ref_... }}``: measured numbers, computed from the lesson's results files (``results/``),
  so that no measurement is typed into an episode.

A measurement that has not been recorded yet (the GPU run, before anyone ran it on a GPU node)
has the value "not recorded yet". A sentence, a table or a paragraph that needs it is written
as a conditional block, so that the page says once, in a sentence of its own, what is missing
and how to record it, instead of a number-shaped gap in every cell::

    {{ if ref_gpu_epoch ref_speedup }}
    One epoch took {{ ref_gpu_epoch }} on the GPU, {{ ref_speedup }} faster.
    {{ else }}
    The GPU run has not been recorded yet; on a GPU node, run ``python -m gpulesson.experiments.cnn``.
    {{ endif }}

The first part is kept when every value named after ``if`` is recorded, the ``else`` part (which
may be left out) otherwise. Blocks may sit inside a sentence; they do not nest.
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


def toc_episode_paths(root: Path) -> list[str]:
    """Episode files in the order the table of contents lists them."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    files = []
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            name = chapter.get("file", "")
            if name.startswith(EPISODE_DIR + "/"):
                files.append(name if name.endswith(".md") else name + ".md")
    return files


def episodes(root: Path) -> list[Episode]:
    """All episodes, validated, in teaching order."""
    return [read_episode(root, p) for p in toc_episode_paths(root)]


@dataclass(frozen=True)
class Break:
    """A break in the schedule, after an episode (``lesson_schedule.breaks`` in ``_config.yml``)."""

    minutes: int


@dataclass(frozen=True)
class SetupCheck:
    """The check at the start of the core that every learner's JupyterLab, kernel and data work
    (``lesson_schedule.setup_check`` minutes in ``_config.yml``)."""

    minutes: int
    label = "Setup check"


@dataclass(frozen=True)
class SchedulePart:
    """A part of the table of contents that holds episodes: its caption and its timed rows."""

    caption: str
    rows: list  # (start 'H:MM', Episode, Break or SetupCheck, minutes at its end)

    @property
    def minutes(self) -> int:
        return self.rows[-1][2] if self.rows else 0

    @property
    def episodes(self) -> list[Episode]:
        return [item for _, item, _ in self.rows if isinstance(item, Episode)]


def _clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def schedule_breaks(root: Path) -> dict[str, int]:
    """Minutes of break after an episode, by its file name without '.md', from ``_config.yml``."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8")) or {}
    breaks = (config.get("lesson_schedule") or {}).get("breaks") or {}
    slugs = {Path(p).stem for p in toc_episode_paths(root)}
    for slug, minutes in breaks.items():
        if slug not in slugs:
            raise FrontMatterError(f"_config.yml lesson_schedule.breaks: no episode named {slug!r}")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            raise FrontMatterError(
                f"_config.yml lesson_schedule.breaks.{slug}: minutes must be a positive integer")
    return dict(breaks)


def schedule_setup_check(root: Path) -> int:
    """Minutes of the setup check at the start of the core (``_config.yml``; 0: none)."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8")) or {}
    minutes = (config.get("lesson_schedule") or {}).get("setup_check", 0)
    if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes < 0:
        raise FrontMatterError("_config.yml lesson_schedule.setup_check: minutes must be a whole "
                               "number, 0 or more")
    return minutes


def schedule_parts(root: Path) -> list[SchedulePart]:
    """The episodes by part of the table of contents, each part timed from 0:00 with its breaks.

    The first part is the core of the lesson (a half-day workshop), which starts with the setup
    check; later parts are further episodes, taught on another half-day or chosen one by one.
    """
    breaks = schedule_breaks(root)
    setup = schedule_setup_check(root)
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    parts = []
    for part in toc.get("parts", []):
        paths = [c["file"] if c["file"].endswith(".md") else c["file"] + ".md"
                 for c in part.get("chapters", []) if c.get("file", "").startswith(EPISODE_DIR + "/")]
        if not paths:
            continue
        rows, elapsed = [], 0
        if setup and not parts:
            rows.append((_clock(0), SetupCheck(setup), setup))
            elapsed = setup
        for path in paths:
            ep = read_episode(root, path)
            rows.append((_clock(elapsed), ep, elapsed + ep.minutes))
            elapsed += ep.minutes
            if ep.slug in breaks and path != paths[-1]:
                rows.append((_clock(elapsed), Break(breaks[ep.slug]), elapsed + breaks[ep.slug]))
                elapsed += breaks[ep.slug]
        parts.append(SchedulePart(part.get("caption", ""), rows))
    return parts


_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)


def has_title_heading(body: str) -> bool:
    """Whether the body has a level-1 heading of its own (code blocks aside)."""
    return bool(re.search(r"^# ", _FENCE.sub("", body), flags=re.MULTILINE))


def bullets(items: list[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def overview_markdown(meta: dict) -> str:
    """The title and overview box put at the top of an episode."""
    return (
        f"# {meta['title']}\n\n"
        f"**Teaching:** {meta['teaching']} min · **Exercises:** {meta['exercises']} min\n\n"
        f":::{{questions}}\n{bullets(meta['questions'])}\n:::\n\n"
        f":::{{objectives}}\n{bullets(meta['objectives'])}\n:::\n\n"
    )


def keypoints_markdown(meta: dict) -> str:
    """The keypoints box put at the end of an episode."""
    return f"\n\n:::{{keypoints}}\n{bullets(meta['keypoints'])}\n:::\n"


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
            if isinstance(item, Break):
                lines.append(f"| {start} | *Break* ({item.minutes} min) | | |")
                continue
            if isinstance(item, SetupCheck):
                lines.append(f"| {start} | *{item.label}*: JupyterLab, kernel and data work for "
                             f"everyone ([setup]({link_prefix}setup.md)) | | {item.minutes} min |")
                continue
            link = f"[{item.number}. {item.meta['title']}]({link_prefix}{item.path.as_posix()})"
            lines.append(f"| {start} | {link} | {item.meta['teaching']} min | {item.meta['exercises']} min |")
        lines.append(f"| {_clock(part.minutes)} | **Finish** | | |")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


PLACEHOLDER = re.compile(r"\{\{\s*((?:site|ref)_\w+)\s*\}\}")
CONDITIONAL = re.compile(
    r"\{\{\s*if\s+(?P<names>(?:(?:site|ref)_\w+\s*)+)\}\}(?P<then>.*?)"
    r"(?:\{\{\s*else\s*\}\}(?P<otherwise>.*?))?\{\{\s*endif\s*\}\}",
    re.DOTALL,
)
_KEYWORD = re.compile(r"\{\{\s*(?:if\b|else\s*\}\}|endif\s*\}\})")
# The value of a measurement not recorded yet (gpulesson.results.NOT_RECORDED; a test keeps the
# two equal): a value that contains it, e.g. "not recorded yet (not recorded yet)", is missing.
MISSING = "not recorded yet"
RESULTS_DIR = "results"
SITE_SECTION = "lesson_site"


class PlaceholderError(ValueError):
    """A page names a placeholder that neither _config.yml nor a results file provides."""


def site_values(root: Path) -> dict[str, str]:
    """``site_<key>`` for every key of the ``lesson_site`` section of ``root/_config.yml``."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8")) or {}
    section = config.get(SITE_SECTION) or {}
    return {f"site_{key}": str(value) for key, value in section.items()}


# Modules that turn a results file into ``ref_*`` values: each has ``EXPERIMENT`` (its results
# file is results/<EXPERIMENT>.jsonl) and ``substitutions(path) -> {"ref_...": text}``.
RESULT_SOURCES = ("gpulesson.experiments.cnn", "gpulesson.experiments.ceiling", "gpulesson.experiments.torch_reference", "gpulesson.experiments.small_models", "gpulesson.experiments.matmul", "gpulesson.experiments.feeding", "gpulesson.experiments.calibration", "gpulesson.experiments.contention", "gpulesson.contributed", "gpulesson.experiments.decision", "gpulesson.check.example", "gpulesson.experiments.workers", "gpulesson.experiments.profile", "gpulesson.experiments.gpu_settings")  # noqa: E501 (one line: registered by one-line edits)


def result_values(root: Path, sources: tuple[str, ...] = RESULT_SOURCES) -> dict[str, str]:
    """The ``ref_*`` values of the lesson's results files under ``root``."""
    import importlib

    values: dict[str, str] = {}
    for name in sources:
        module = importlib.import_module(name)
        found = module.substitutions(Path(root) / RESULTS_DIR / f"{module.EXPERIMENT}.jsonl")
        clash = sorted(found.keys() & values.keys())
        if clash:
            raise PlaceholderError(f"{name} defines placeholders another results module has: "
                                   f"{', '.join(clash)}")
        values.update(found)
    return values


def placeholder_values(root: Path) -> dict[str, str]:
    return {**site_values(root), **result_values(root)}


def has_placeholders(text: str) -> bool:
    return bool(PLACEHOLDER.search(text) or _KEYWORD.search(text))


def is_recorded(value: str) -> bool:
    """Whether a placeholder's value is a measurement (not the text for a missing one)."""
    return MISSING not in value


def resolve_conditionals(text: str, values: dict[str, str]) -> str:
    """``text`` with each ``{{ if ... }}`` block replaced by the part that applies."""

    def choose(match):
        names = match["names"].split()
        unknown = sorted(set(names) - values.keys())
        if unknown:
            raise PlaceholderError(f"unknown placeholder(s) {', '.join(unknown)} in "
                                   f"'{{{{ if {match['names'].strip()} }}}}'")
        recorded = all(is_recorded(values[name]) for name in names)
        return match["then"] if recorded else (match["otherwise"] or "")

    resolved = CONDITIONAL.sub(choose, text)
    stray = _KEYWORD.search(resolved)
    if stray:
        line = resolved.count("\n", 0, stray.start()) + 1
        raise PlaceholderError(f"'{stray[0]}...' without its block (line {line} of the filled "
                               "text): write {{ if ref_... }} ... {{ else }} ... {{ endif }}, "
                               "not nested")
    return resolved


def fill_placeholders(text: str, root: Path, values: dict[str, str] | None = None) -> str:
    """``text`` with every ``{{ site_... }}`` and ``{{ ref_... }}`` replaced by its value, and
    every ``{{ if ... }}`` block by the part that applies (see the module's docstring)."""
    if not has_placeholders(text):
        return text
    values = placeholder_values(root) if values is None else values
    text = resolve_conditionals(text, values)
    unknown = sorted({m[1] for m in PLACEHOLDER.finditer(text)} - values.keys())
    if unknown:
        raise PlaceholderError(f"unknown placeholder(s) {', '.join(unknown)}: "
                               f"add site values to '{SITE_SECTION}' in _config.yml; "
                               f"known: {', '.join(sorted(values))}")
    return PLACEHOLDER.sub(lambda m: values[m[1]], text)


# --- Sphinx glue ----------------------------------------------------------------------------


def _fill_placeholders(app, docname, source):
    from sphinx.util import logging

    root = Path(app.srcdir)
    if not has_placeholders(source[0]):
        return
    try:
        source[0] = fill_placeholders(source[0], root)
    except PlaceholderError as exc:
        logging.getLogger(__name__).warning("%s", exc, location=docname)
    for source_file in [root / "_config.yml", *sorted((root / RESULTS_DIR).glob("*.jsonl"))]:
        app.env.note_dependency(str(source_file))  # new values rebuild the page


def _inject_episode_boxes(app, docname, source):
    if not docname.startswith(EPISODE_DIR + "/"):
        return
    from sphinx.util import logging

    text = source[0]
    try:
        meta, body = split_front_matter(text)
        problems = check_schema(meta)
    except FrontMatterError as exc:
        problems = [str(exc)]
    if problems:
        logging.getLogger(__name__).warning(
            "episode front matter: %s", "; ".join(problems), location=docname
        )
        return
    if has_title_heading(body):
        logging.getLogger(__name__).warning(
            "episode has its own '# ' title: the title comes from the front matter", location=docname
        )
    front = text[: len(text) - len(body)]
    source[0] = front + overview_markdown(meta) + body.rstrip("\n") + keypoints_markdown(meta)


def _unique_scripts(app, pagename, templatename, context, doctree):
    """Drop inline scripts that Sphinx adds twice (sphinx-thebe's and togglebutton's, once with
    the file name None and once with ''), which browsers report as 'already declared' errors."""
    seen, unique = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", js) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"][:] = unique


# The header of a table's first column when the page leaves it empty: that column names what
# each row measures. A page should write its own; an empty header cell is no header at all
# for a screen reader (axe-core: empty-table-header).
ROW_LABELS_HEADER = "Measure"


def _name_empty_row_headers(app, doctree):
    """A table whose first header cell is empty gets ``ROW_LABELS_HEADER`` written in it."""
    from docutils import nodes

    for table in doctree.findall(nodes.table):
        for thead in table.findall(nodes.thead):
            for row in thead.findall(nodes.row):
                entries = [child for child in row.children if isinstance(child, nodes.entry)]
                if entries and not entries[0].astext().strip():
                    entries[0].children = []
                    entries[0] += nodes.paragraph(text=ROW_LABELS_HEADER)


# A code cell tagged "solution" (an exercise's answer, right after the exercise's cell with blanks,
# tools/make_notebooks.py) is folded on the page as the exercises' solutions are; its button:
SOLUTION_PROMPT = "Answer"
SOLUTION_PROMPT_HIDE = "Hide the answer"


def _fold_solution_cells(app, doctree):
    """Code cells tagged ``solution`` start folded, code and output, behind ``SOLUTION_PROMPT``
    (MyST-NB's hide-cell mode, which its post-transform turns into a <details> block)."""
    from docutils import nodes

    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") == "cell_code" and "tag_solution" in cell["classes"]:
            cell["hide_mode"] = "all"
            cell["prompt_show"], cell["prompt_hide"] = SOLUTION_PROMPT, SOLUTION_PROMPT_HIDE


def _visit_folded_cell(self, node):
    """MyST-NB's folded cell, its button named by its visible text: MyST-NB labels every such
    button "Toggle hidden content", which is not the "Answer" it shows (axe-core:
    label-content-name-mismatch)."""
    from html import escape

    self.body.append(f'<details class="admonition hide {" ".join(node["classes"])}">\n<summary>\n'
                     f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n'
                     f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n'
                     "</summary>\n")


def _name_folded_cells(app):
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(_visit_folded_cell, depart_HideCellInput))


def setup(app):
    app.connect("builder-inited", _name_folded_cells)
    app.connect("html-page-context", _unique_scripts)
    app.connect("doctree-read", _name_empty_row_headers)
    app.connect("doctree-read", _fold_solution_cells)
    from sphinx.util.docutils import SphinxDirective

    class LessonSchedule(SphinxDirective):
        """The schedule: the core and the further episodes, timed from their front matter, with breaks."""

        has_content = False

        def run(self):
            root = Path(self.env.srcdir)
            parts = schedule_parts(root)
            for ep in (ep for part in parts for ep in part.episodes):
                self.env.note_dependency(str(root / ep.path))
            self.env.note_dependency(str(root / "_config.yml"))
            here = Path(self.env.docname).parent
            prefix = "" if str(here) == "." else "../" * len(here.parts)
            return self.parse_text_to_nodes(schedule_markdown(parts, prefix))

    app.connect("source-read", _fill_placeholders)  # first: front matter may hold placeholders too
    app.connect("source-read", _inject_episode_boxes)
    app.add_directive("lesson-schedule", LessonSchedule)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
