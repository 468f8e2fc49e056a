"""Outputs of an executed notebook made fit for a static page (used by tools/record_run.py).

A kernel writes for a live front end: redrawn progress bars, ANSI colours, widgets, full-size PNGs,
the recording user's folders and TensorFlow's C++ log. :func:`clean_notebook` keeps what a reader
should see: each line's final text, no colours, smaller PNGs, neutral folder names, no C++ log.
"""

import base64
import html
import io
import re
import sys
from pathlib import Path

from gpulesson.datasets.settings import DEFAULT_WORK_DIR

CHECKOUT = Path(__file__).resolve().parents[1]
# The temporary folder tools/record_run.py runs a notebook's copy in: the notebook's own on the page.
RUN_FOLDER = re.compile(r"<lesson>/\.record-run-[\w.-]+")

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07")
# A line of the C++ logging of TensorFlow, XLA and absl, which TF_CPP_MIN_LOG_LEVEL does not all
# hide: start-up noise of the framework, not output of the lesson's code.
CPP_LOG = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IWEF] |[IWEF]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called)")
# Rich's HTML (Keras' summary()) beside the same text as text/plain: coloured for a terminal,
# unreadable on the page, which shows the text instead.
RICH_HTML = re.compile(r'\s*<pre style="white-space:pre;overflow-x:auto;line-height:normal;font-family:')
WIDGET = "application/vnd.jupyter.widget-view+json"
MAX_STREAM_LINES = 60  # longer logs keep their head and tail: the page is for reading
PNG_BUDGET = 120_000  # bytes; a larger PNG is reduced to 256 colours


def final_text(text: str) -> str:
    """Text as a terminal would leave it after ``\\r`` and ``\\b``: a progress bar's last state."""
    lines, line, cursor = [], [], 0
    for char in text:
        if char == "\n":
            lines.append("".join(line).rstrip())
            line, cursor = [], 0
        elif char == "\r":
            cursor = 0
        elif char == "\b":
            cursor = max(0, cursor - 1)
        else:
            if cursor < len(line):
                line[cursor] = char
            else:
                line.append(char)
            cursor += 1
    done = "".join(f"{text}\n" for text in lines)
    return done + "".join(line).rstrip()


def machine_paths(root=CHECKOUT, prefix: str | None = None, home: str | None = None,
                  work: str | None = None) -> list[tuple[str, str]]:
    """The machine's folders an output may show, with neutral names, most specific first (``work``:
    a recorded run's work folder, shown as a learner's)."""
    prefix = sys.prefix if prefix is None else prefix
    home = str(Path.home()) if home is None else home
    root = str(root) if root else ""
    found = [(prefix, "<venv>"), (root, "<lesson>"), (home, "~"), (work or "", str(DEFAULT_WORK_DIR))]
    found = [(path.rstrip("/"), name) for path, name in found if path and path.rstrip("/")]
    found = [(path, name) for path, name in found
             if not (name == "<venv>" and root and (path + "/").startswith(root.rstrip("/") + "/"))]
    return sorted(found, key=lambda pair: len(pair[0]), reverse=True)


def neutral_paths(text: str, paths, *, markup: bool = False) -> str:
    """``text`` with each folder of ``paths`` named neutrally where it stands whole (``markup``:
    HTML, SVG or Markdown, where ``<lesson>`` is ``&lt;lesson&gt;``)."""
    for path, name in paths:
        name = html.escape(name) if markup else name
        text = re.sub(re.escape(path) + r"(?![\w.-])", lambda _, name=name: name, text)
    return RUN_FOLDER.sub("<lesson>/notebooks", text) if not markup else text


def clean_text(text: str, home: str | None = None, paths=None, *, markup: bool = False) -> str:
    """An output's text as the page shows it: its final text, no colours, neutral folders."""
    text = final_text(ANSI.sub("", text))
    if paths is None:
        paths = machine_paths(home=home)
    return neutral_paths(text, paths, markup=markup)


def _shorten(text: str, limit: int = MAX_STREAM_LINES) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    head, tail = lines[: limit // 2], lines[-(limit // 2):]
    left_out = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[... {left_out} lines of this output are not shown ...]", *tail]) + "\n"


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def clean_streams(outputs: list[dict], paths=None) -> list[dict]:
    """Consecutive stream outputs of one name joined, then cleaned; C++ log lines dropped."""
    joined: list[dict] = []
    for output in outputs:
        if output["output_type"] != "stream":
            joined.append(output)
        elif joined and joined[-1]["output_type"] == "stream" and joined[-1]["name"] == output["name"]:
            joined[-1] = _stream(output["name"], joined[-1]["text"] + _text(output["text"]))
        else:
            joined.append(_stream(output["name"], _text(output["text"])))
    cleaned = []
    for output in joined:
        if output["output_type"] != "stream":
            cleaned.append(output)
            continue
        text = clean_text(output["text"], paths=paths)
        if output["name"] == "stderr":
            text = "".join(line for line in text.splitlines(keepends=True) if not CPP_LOG.match(line))
        text = _shorten(text)
        if text.strip():
            cleaned.append(_stream(output["name"], text))
    return cleaned


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def compress_png(data: str, budget: int = PNG_BUDGET) -> str:
    """A base64 PNG optimised, and reduced to 256 colours when still over ``budget`` bytes."""
    from PIL import Image

    raw = base64.b64decode(data)
    image = Image.open(io.BytesIO(raw))
    best = raw
    for attempt in ("optimize", "palette"):
        if attempt == "palette":
            if len(best) <= budget:
                break
            image = image.convert("RGB").quantize(256)
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        if len(out.getvalue()) < len(best):
            best = out.getvalue()
    return base64.b64encode(best).decode("ascii")


def clean_data(output: dict, paths=None) -> dict | None:
    """A display or result output for a static page; None when nothing is left of it."""
    data = dict(output.get("data", {}))
    metadata = dict(output.get("metadata", {}))
    if WIDGET in data:
        # A widget cannot be drawn without a live kernel: the page shows its text form.
        data.pop(WIDGET)
        metadata.pop(WIDGET, None)
    data.pop("application/vnd.jupyter.widget-state+json", None)
    if is_rich_html(data):
        data.pop("text/html")
    for mime in list(data):
        if mime == "image/png":
            data[mime] = compress_png(_text(data[mime]))
        elif mime.startswith("text/") or mime == "image/svg+xml":
            data[mime] = clean_text(_text(data[mime]), paths=paths, markup=mime != "text/plain")
    if "text/plain" in data and set(data) == {"text/plain"} and not data["text/plain"].strip():
        return None
    if not data:
        return None
    return {**output, "data": data, "metadata": metadata}


def is_rich_html(data: dict) -> bool:
    """Whether an output's data holds Rich's coloured HTML beside its plain-text form."""
    return "text/plain" in data and bool(RICH_HTML.match(_text(data.get("text/html", ""))))


def _code_outputs(nb: dict):
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            yield from cell.get("outputs", [])


def plain_outputs(nb: dict, paths=None) -> int:
    """Take the colours and the machine's folders out of a notebook's outputs in place (a text
    kept as a string or as a list of lines stays so); returns how many outputs changed."""
    paths = machine_paths() if paths is None else paths

    def plain(value, markup=False):
        if isinstance(value, list):
            return [neutral_paths(ANSI.sub("", line), paths, markup=markup) for line in value]
        return neutral_paths(ANSI.sub("", value), paths, markup=markup)

    changed = 0
    for output in _code_outputs(nb):
        before = repr(output)
        for key in ("text", "traceback"):
            if key in output:
                output[key] = plain(output[key])
        data = output.get("data", {})
        if is_rich_html(data):
            data.pop("text/html")
        for mime in list(data):
            if mime.startswith("text/") or mime == "image/svg+xml":
                data[mime] = plain(data[mime], markup=mime != "text/plain")
        changed += repr(output) != before
    return changed


def clean_outputs(outputs: list[dict], paths=None) -> list[dict]:
    paths = machine_paths() if paths is None else paths
    cleaned = []
    for output in clean_streams(outputs, paths):
        if output["output_type"] in ("display_data", "execute_result"):
            output = clean_data(output, paths)
            if output is None:
                continue
            if output["output_type"] == "execute_result":
                # No execution counts anywhere, so that a new run changes only what it did.
                output["execution_count"] = None
        elif output["output_type"] == "error":
            output = {**output, "traceback": [neutral_paths(ANSI.sub("", line), paths)
                                              for line in output["traceback"]]}
        cleaned.append(output)
    return cleaned


def clean_notebook(nb: dict, home: str | None = None, paths=None) -> dict:
    """The notebook with every code cell's outputs cleaned, no execution counts and no timing metadata."""
    paths = machine_paths(home=home) if paths is None else paths
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        cell["outputs"] = clean_outputs(cell.get("outputs", []), paths)
        cell["execution_count"] = None
        cell.get("metadata", {}).pop("execution", None)
    return nb
