"""The outputs of a recorded run on the episodes' pages, with the run's provenance.

``tools/record_run.py`` keeps executed copies in ``executed/NN-slug.ipynb``, with the machine,
versions, data, mode, date, wall time and each code cell's hash in their metadata
(``recorded_run``). Each code cell of an episode gets the outputs of the recorded cell with the
same source (a changed cell gets none), the page opens with a box on where and how they were made,
and recorded figures get their alt text. It needs neither TensorFlow nor the lesson's package.
"""

import base64
import hashlib
import re
from collections import defaultdict
from pathlib import Path

from carpentry import EPISODE_DIR, split_front_matter

EXECUTED_DIR = "executed"
METADATA_KEY = "recorded_run"
REFRESH = "LESSON_DATA={data} python tools/record_run.py --only {number}"
BOX_CLASS = "recorded-run"


def cell_hash(source: str) -> str:
    """A short hash of a code cell's source; blank lines around the code do not count."""
    text = "\n".join(line.rstrip() for line in source.replace("\r\n", "\n").strip().split("\n"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def executed_path(root: Path, slug: str) -> Path:
    return Path(root) / EXECUTED_DIR / f"{slug}.ipynb"


def refresh_command(slug: str, data: str = "cifar10") -> str:
    """The command that records episode ``slug`` again (with the data of its last record)."""
    return REFRESH.format(number=slug.split("-", 1)[0], data=data)


def read_record(path: Path) -> dict:
    """An executed copy (nbformat 4); raises ValueError naming the file."""
    import nbformat

    try:
        # nbformat joins the lines of sources and texts, as MyST-NB expects them.
        nb = nbformat.reads(Path(path).read_text(encoding="utf-8"), as_version=4)
    except (OSError, ValueError, AttributeError, KeyError) as exc:
        raise ValueError(f"{path}: not a readable notebook ({exc}); record it again with "
                         f"'{refresh_command(Path(path).stem)}'") from None
    if METADATA_KEY not in nb.get("metadata", {}):
        raise ValueError(f"{path}: no '{METADATA_KEY}' metadata, so not made by "
                         f"tools/record_run.py; record it with '{refresh_command(Path(path).stem)}'")
    return nb


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def code_hashes(nb: dict) -> list[str]:
    """The hash of each code cell of a notebook, in order (a record keeps them: ``cells``)."""
    return [cell_hash(_source(cell)) for cell in nb["cells"] if cell["cell_type"] == "code"]


def recorded_outputs(nb: dict) -> dict[str, list[list]]:
    """{cell hash: [outputs of each recorded cell with that source, in order]}."""
    found: dict[str, list[list]] = defaultdict(list)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            found[cell_hash(_source(cell))].append(cell.get("outputs", []))
    return found


def match_cells(sources: list[str], nb: dict) -> list[list | None]:
    """For each code cell source: the recorded outputs of its n-th repeat, or None (changed)."""
    available = recorded_outputs(nb)
    matched = []
    for source in sources:
        queue = available.get(cell_hash(source))
        matched.append(queue.pop(0) if queue else None)
    return matched


def image_alts(nb: dict) -> dict[str, str]:
    """{sha256 of an image's bytes: its alt text}: MyST-NB names image files by that hash."""
    alts = {}
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            for mime, data in output.get("data", {}).items():
                alt = output.get("metadata", {}).get(mime, {}).get("alt")
                if mime.startswith("image/") and alt:
                    payload = "".join(data) if isinstance(data, list) else data
                    raw = base64.b64decode(payload) if mime != "image/svg+xml" else payload.encode()
                    alts[hashlib.sha256(raw).hexdigest()] = alt
    return alts


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def box_markdown(run: dict | None, slug: str, stale: int = 0) -> str:
    """The box at the top of an episode page: where and how its outputs were made."""
    command = refresh_command(slug, run["data"] if run else "cifar10")
    if run is None:
        return ("\n:::{note}\n:class: " + BOX_CLASS + " no-record\n"
                "No recorded run of this episode yet: its code cells are shown without "
                f"outputs (record one with `{command}`).\n:::\n\n")
    machine = run["machine"]
    gpu = (f"GPU: {machine['gpu']}" if machine.get("gpu")
           else "**no GPU** (the GPU cells show what a learner without one sees)")
    # Python, Keras and the backend first; the file keeps them in alphabetical order.
    first = ("python", "keras", run["backend"])
    names = [n for n in first if n in run["versions"]] + sorted(set(run["versions"]) - set(first))
    versions = ", ".join(f"{name} {run['versions'][name]}" for name in names)
    mode = ("**quick mode** (small data, few epochs: the numbers mean little)" if run["quick"]
            else "full size")
    lines = [
        "The outputs on this page come from one run of the episode's notebook, recorded with "
        "`tools/record_run.py`; they are not live.",
        "",
        f"- **Machine:** {machine['cpu_model']}, {machine['cores_usable']} CPU cores; {gpu}",
        f"- **Keras backend:** {run['backend']}; {versions}",
        f"- **Data:** {run['data_label']}; {mode}",
        f"- **Recorded:** {run['date'][:10]}; the whole notebook ran in "
        f"{_duration(run['wall_s'])}",
        "- **Reference measurements** (the tables and figures of the reference runs): drawn "
        "from the lesson's records in `results/`, each naming its own machine and date, which "
        "may differ from this run's.",
    ]
    if stale:
        lines += ["", f"{stale} code cell(s) changed since this run and show no output; "
                      f"refresh the record with `{command}`."]
    kind = "warning" if (stale or run["quick"] or not machine.get("gpu")
                         or run["data"] != "cifar10") else "note"
    title = "Recorded run" + ("" if machine.get("gpu") else ": no GPU")
    return (f"\n:::{{admonition}} {title}\n:class: {kind} {BOX_CLASS}\n"
            + "\n".join(lines) + "\n:::\n\n")


# Code cells that no run executes: an exercise's code with ____ blanks (the learners' notebook
# has it, the complete notebook that is recorded has its solution instead).
NOT_RUN_TAG = "exercise"


def is_run(cell) -> bool:
    """Whether a code cell of an episode runs in the recorded (complete) notebook."""
    return cell.cell_type == "code" and NOT_RUN_TAG not in cell.metadata.get("tags", [])


def episode_code_sources(text: str) -> list[str]:
    """The code cells of an episode (a MyST text notebook) that a run executes."""
    import jupytext

    return [cell.source for cell in jupytext.reads(text, fmt="myst").cells if is_run(cell)]


# --- Sphinx glue ----------------------------------------------------------------------------


def _episode(docname: str) -> str | None:
    parts = docname.split("/")
    return parts[1] if len(parts) == 2 and parts[0] == EPISODE_DIR else None


def _inject_box(app, docname, source):
    """The run's box right under the title carpentry adds (only episodes with code cells)."""
    from sphinx.util import logging

    slug = _episode(docname)
    text = source[0]
    if slug is None or not text.startswith("---") or "\njupytext:" not in text.split("\n---", 1)[0]:
        return
    sources = episode_code_sources(text)
    if not sources:
        return
    path = executed_path(Path(app.srcdir), slug)
    run, stale = None, 0
    if path.exists():
        app.env.note_dependency(str(path))  # a new record rebuilds the page
        try:
            nb = read_record(path)
        except ValueError as exc:
            logging.getLogger(__name__).warning("%s", exc, location=docname)
            return
        run = nb["metadata"][METADATA_KEY]
        stale = sum(outputs is None for outputs in match_cells(sources, nb))
    _, body = split_front_matter(text)
    title = re.search(r"^# .*\n", body, flags=re.MULTILINE)
    if title is None:
        return
    end = len(text) - len(body) + title.end()
    source[0] = text[:end] + box_markdown(run, slug, stale) + text[end:]


def _reader_with_outputs(create_nb_reader):
    """MyST-NB's create_nb_reader, wrapped: an episode's unchanged code cells get their outputs."""
    import dataclasses

    def create(path, md_config, nb_config, content):
        reader = create_nb_reader(path, md_config, nb_config, content)
        path = Path(path)
        record = executed_path(path.parents[1], path.stem)
        if reader is None or path.parent.name != EPISODE_DIR or not record.exists():
            return reader
        read = reader.read

        def read_with_outputs(text):
            notebook = read(text)
            cells = [cell for cell in notebook.cells if is_run(cell)]  # exercises: no output
            try:
                matched = match_cells([cell.source for cell in cells], read_record(record))
            except ValueError:
                return notebook  # the box's source-read step has warned already
            import nbformat

            for cell, outputs in zip(cells, matched, strict=True):
                cell.outputs = [nbformat.from_dict(output) for output in outputs or []]
            return notebook

        return dataclasses.replace(reader, read=read_with_outputs)

    create.recorded = True
    return create


def _image_alt_text(app, doctree):
    slug = _episode(app.env.docname)
    path = executed_path(Path(app.srcdir), slug) if slug else None
    if path is None or not path.exists():
        return
    from docutils import nodes

    try:
        alts = image_alts(read_record(path))
    except ValueError:
        return
    for image in doctree.findall(nodes.image):
        alt = alts.get(Path(image.get("uri", "")).stem)
        if alt and not image.get("alt"):
            image["alt"] = alt


OUTPUT_CHARS = 78  # characters an output box holds at a 1280-px window (_static/lesson.css)
TABLE_MAX_CHARS = 200  # the widest table the CSS has a font size for (output-cols-N)


_RULE = re.compile(r"\s*[-=─━]{3,}[-=─━ ]*")
_COLUMN = re.compile(r"(?<=\S {2})\S|(?<=\S {3})\S|(?<= {4})\S")


def table_lines(lines: list[str]) -> list[str]:
    """The lines of a printed table: rules of dashes, and lines with two or more columns (text
    after two spaces) starting where two other lines' start; fewer than three are no table."""
    starts = [{m.start() for m in _COLUMN.finditer(line)} for line in lines]
    counts: dict[int, int] = defaultdict(int)
    for found in starts:
        for pos in found:
            counts[pos] += 1
    rows = [line for line, found in zip(lines, starts, strict=True)
            if _RULE.fullmatch(line) or sum(counts[pos] >= 3 for pos in found) >= 2]
    return rows if len(rows) >= 3 else []


def output_classes(text: str) -> list[str]:
    """CSS classes for a table wider than the box: ``output-table``, ``output-cols-N`` (its width)."""
    width = max((len(line.rstrip()) for line in table_lines(text.splitlines())), default=0)
    if width <= OUTPUT_CHARS:
        return []
    return ["output-table", f"output-cols-{min(-(-width // 10) * 10, TABLE_MAX_CHARS)}"]


def _mark_wide_outputs(app, doctree):
    """Text outputs wider than the box: tables get the classes of :func:`output_classes`."""
    from docutils import nodes

    for block in doctree.findall(nodes.literal_block):
        if "output" in block["classes"]:
            block["classes"] += [c for c in output_classes(block.astext()) if c not in block["classes"]]


def setup(app):
    import myst_nb.sphinx_ as myst_nb_sphinx

    if not getattr(myst_nb_sphinx.create_nb_reader, "recorded", False):
        myst_nb_sphinx.create_nb_reader = _reader_with_outputs(myst_nb_sphinx.create_nb_reader)
    # Priority 600: after carpentry's source-read handlers (500), which add the title.
    app.connect("source-read", _inject_box, priority=600)
    app.connect("doctree-read", _image_alt_text)
    app.connect("doctree-read", _mark_wide_outputs)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
