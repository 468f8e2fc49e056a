"""Carpentries episode metadata for a Jupyter Book built with sphinx-lesson.

Each episode's front matter gives its title, overview box and keypoints box, injected when Sphinx
reads it, and the schedule on the landing page (directive ``lesson-schedule``). Placeholders are
filled by :func:`fill_placeholders` in the site and the notebooks alike (code blocks too):
``{{ site_... }}`` from ``lesson_site`` in ``_config.yml`` (the cluster: the one file another
institution edits), ``{{ ref_... }}`` from the results files, so that no measurement is typed.
A measurement not recorded yet reads "not recorded yet"; text that needs it is a block::

    {{ if ref_gpu_epoch ref_speedup }}
    One epoch took {{ ref_gpu_epoch }} on the GPU, {{ ref_speedup }} faster.
    {{ else }}
    The GPU run has not been recorded yet; on a GPU node, run ``python -m gpulesson.experiments.cnn``.
    {{ endif }}

The first part is kept when every value named after ``if`` is recorded, the ``else`` part (which
may be left out) otherwise. Blocks may sit inside a sentence; they do not nest.
"""

import functools
import re
from pathlib import Path

import yaml
from lesson_schedule import (  # noqa: F401 (re-exported: the lesson's tools import them from here)
    EPISODE_DIR,
    Break,
    Episode,
    FrontMatterError,
    Session,
    SetupCheck,
    Slot,
    check_schema,
    episodes,
    read_episode,
    schedule_breaks,
    schedule_inner_breaks,
    schedule_markdown,
    schedule_parts,
    schedule_sessions,
    schedule_setup_check,
    split_front_matter,
    toc_episode_paths,
)

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


PLACEHOLDER = re.compile(r"\{\{\s*((?:site|ref)_\w+)\s*\}\}")
CONDITIONAL = re.compile(
    r"\{\{\s*if\s+(?P<names>(?:(?:site|ref)_\w+\s*)+)\}\}(?P<then>.*?)"
    r"(?:\{\{\s*else\s*\}\}(?P<otherwise>.*?))?\{\{\s*endif\s*\}\}",
    re.DOTALL,
)
_KEYWORD = re.compile(r"\{\{\s*(?:if\b|else\s*\}\}|endif\s*\}\})")
# The value of a measurement not recorded yet (gpulesson.records.results.NOT_RECORDED; a test keeps the
# two equal): a value that contains it, e.g. "not recorded yet (not recorded yet)", is missing.
MISSING = "not recorded yet"
RESULTS_DIR = "results"
SITE_SECTION = "lesson_site"


class PlaceholderError(ValueError):
    """A page names a placeholder that neither _config.yml nor a results file provides."""


def site_values(root: Path) -> dict[str, str]:
    """``site_<key>`` for every key of ``lesson_site`` in ``_config.yml``, and ``site_cost_*``."""
    from gpulesson.classroom import charges

    path = Path(root) / "_config.yml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    section = config.get(SITE_SECTION) or {}
    values = {f"site_{key}": str(value) for key, value in section.items()}
    try:
        values.update(charges.substitutions(path))
    except charges.ChargeRatesError:
        pass  # no rates or sessions to compute with: a page that names site_cost_* says so
    return values


# Where the ``ref_*`` values come from: the experiment packages' pages (registry.page_sources),
# then other readers of results files; each has ``substitutions(path) -> {"ref_...": text}``.
EXPERIMENT_PACKAGES = ("gpulesson.experiments",)
OTHER_SOURCES = ("gpulesson.classroom.contributed", "gpulesson.experiments.decision",
                 "gpulesson.classroom.check.example")


@functools.cache
def _result_sources(packages: tuple[str, ...]) -> tuple[str, ...]:
    from gpulesson.experiments.registry import page_sources

    return (*(name for package in packages for name in page_sources(package)), *OTHER_SOURCES)


def result_sources() -> tuple[str, ...]:
    """The modules whose ``substitutions()`` give the ``ref_*`` values, in a fixed order."""
    return _result_sources(tuple(EXPERIMENT_PACKAGES))


def result_values(root: Path, sources: tuple[str, ...] | None = None) -> dict[str, str]:
    """The ``ref_*`` values of the results files under ``root`` (default: :func:`result_sources`)."""
    import importlib

    from gpulesson.experiments.registry import results_name

    values: dict[str, str] = {}
    for name in result_sources() if sources is None else sources:
        module = importlib.import_module(name)
        found = module.substitutions(Path(root) / RESULTS_DIR / results_name(module))
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
    """``text`` with its placeholders and ``{{ if ... }}`` blocks filled (the module's docstring)."""
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

    text, log = source[0], logging.getLogger(__name__)
    try:
        meta, body = split_front_matter(text)
        problems = check_schema(meta)
    except FrontMatterError as exc:
        problems = [str(exc)]
    if problems:
        log.warning("episode front matter: %s", "; ".join(problems), location=docname)
        return
    if has_title_heading(body):
        log.warning("episode has its own '# ' title: the title comes from the front matter",
                    location=docname)
    front = text[: len(text) - len(body)]
    source[0] = front + overview_markdown(meta) + body.rstrip("\n") + keypoints_markdown(meta)


def _unique_scripts(app, pagename, templatename, context, doctree):
    """Drop inline scripts Sphinx adds twice (thebe's, togglebutton's): 'already declared' errors."""
    seen, unique = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", js) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"][:] = unique


# An empty first header cell is no header for a screen reader (axe-core: empty-table-header).
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


# A code cell tagged "solution" (an exercise's answer) is folded on the page behind this button:
SOLUTION_PROMPT = "Answer"
SOLUTION_PROMPT_HIDE = "Hide the answer"


def _fold_solution_cells(app, doctree):
    """Code cells tagged ``solution`` start folded behind ``SOLUTION_PROMPT`` (MyST-NB's hide-cell)."""
    from docutils import nodes

    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") == "cell_code" and "tag_solution" in cell["classes"]:
            cell["hide_mode"] = "all"
            cell["prompt_show"], cell["prompt_hide"] = SOLUTION_PROMPT, SOLUTION_PROMPT_HIDE


def _visit_folded_cell(self, node):
    """MyST-NB's folded cell, its button named by the text it shows (label-content-name-mismatch)."""
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

    from sphinx.transforms.post_transforms import SphinxPostTransform

    class CopiedReferences(SphinxPostTransform):
        """Links to a term or label in a copied exercise are made from the page they are on."""

        default_priority = 9  # after sphinx-lesson's exercise list (8), before links resolve (10)

        def run(self, **kwargs):
            from sphinx.addnodes import pending_xref

            for ref in self.document.findall(pending_xref):
                if ref.get("refdomain") == "std" and ref.get("reftype") in ("term", "ref", "numref"):
                    ref["refdoc"] = self.env.docname

    app.add_post_transform(CopiedReferences)
    app.connect("source-read", _fill_placeholders)  # first: front matter may hold placeholders too
    app.connect("source-read", _inject_episode_boxes)
    app.add_directive("lesson-schedule", LessonSchedule)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
