"""Generate the learner notebooks (notebooks/NN-slug.ipynb) from the episodes (_episodes/NN-slug.md).

The episodes are the single source. Each hands-on episode is a MyST text notebook (jupytext's
``myst`` format). Its notebook gets the episode's title, questions and objectives as a first cell
and its keypoints as a last cell, and the MyST-only markup (exercise, solution, callout and figure
directives, roles) becomes plain Markdown that JupyterLab shows as is: solutions become collapsed
``<details>`` blocks, instructor notes are left out. Notebooks are written without outputs.

    python tools/make_notebooks.py          # write notebooks/*.ipynb
    python tools/make_notebooks.py --check  # exit 1 if any notebook is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from carpentry import EPISODE_DIR, bullets, split_front_matter  # noqa: E402

NOTEBOOK_DIR = "notebooks"
OPEN = re.compile(r"^(?P<fence>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<title>.*)$")
ROLE = re.compile(r"\{[\w:-]+\}`(?P<text>[^`<]*?)\s*(?:<[^`>]*>)?`")
DROPPED = {"instructor-note"}  # for instructors, not in a learner's notebook


def is_notebook_episode(text: str) -> bool:
    """Whether an episode is a text notebook (has a jupytext header), i.e. has a notebook."""
    meta, _ = split_front_matter(text)
    return "jupytext" in meta


def _directive_options(lines: list[str]) -> tuple[dict, list[str]]:
    options = {}
    while lines and re.match(r"^:[\w-]+:", lines[0]):
        key, _, value = lines.pop(0)[1:].partition(":")
        options[key] = value.strip()
    return options, lines


def _quote(text: str) -> str:
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _render(name: str, title: str, body: str, options: dict) -> str:
    if name in DROPPED:
        return ""
    if name == "figure":
        caption = body.strip()
        image = f"![{options.get('alt', '')}]({title})"
        return f"{image}\n\n*{caption}*" if caption else image
    if name == "solution":
        return f"<details>\n<summary><b>{title or 'Solution'}</b></summary>\n\n{body.strip()}\n\n</details>"
    heading = name.replace("-", " ").capitalize() + (f": {title}" if title else "")
    return _quote(f"**{heading}**\n\n{body.strip()}")


def plain_markdown(text: str) -> str:
    """MyST colon-fence directives and roles -> Markdown that JupyterLab renders."""
    lines, out = text.splitlines(), []
    while lines:
        line = lines.pop(0)
        match = OPEN.match(line)
        if not match:
            out.append(line)
            continue
        fence, inner = match["fence"], []
        while lines and lines[0].strip() != fence:
            inner.append(lines.pop(0))
        if not lines:
            raise ValueError(f"directive '{line}' is never closed with '{fence}'")
        lines.pop(0)
        options, inner = _directive_options(inner)
        out.append(_render(match["name"], match["title"].strip(), plain_markdown("\n".join(inner)), options))
    result = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
    return ROLE.sub(lambda m: m["text"], result)


def build_notebook(episode: Path) -> nbformat.NotebookNode:
    """The learner notebook for one episode, as it should be on disk."""
    text = episode.read_text(encoding="utf-8")
    meta, _ = split_front_matter(text)
    source = jupytext.reads(text, fmt="myst")
    cells = [
        nbformat.v4.new_markdown_cell(
            f"# {meta['title']}\n\n"
            f"*Episode {episode.name.split('-')[0]} of the lesson \"Deep learning on GPUs: CPU vs GPU\". "
            f"Teaching: {meta['teaching']} min, exercises: {meta['exercises']} min. "
            "This notebook is generated from the episode: edit the episode, not the notebook.*\n\n"
            f"**Questions**\n\n{bullets(meta['questions'])}\n\n"
            f"**Objectives**\n\n{bullets(meta['objectives'])}"
        )
    ]
    for cell in source.cells:
        if cell.cell_type == "markdown":
            body = plain_markdown(cell.source)
            if body:
                cells.append(nbformat.v4.new_markdown_cell(body))
        elif cell.cell_type == "code":
            cells.append(nbformat.v4.new_code_cell(cell.source))  # no outputs, no execution count
        else:
            cells.append(nbformat.v4.new_raw_cell(cell.source))
    cells.append(nbformat.v4.new_markdown_cell(f"## Key points\n\n{bullets(meta['keypoints'])}"))
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": dict(source.metadata["kernelspec"]),
        "language_info": {"name": "python"},
    }
    # Stable cell ids, so that regenerating an unchanged episode changes nothing.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{episode.stem[:2]}-{i:03d}"
    return nb


def notebook_text(episode: Path) -> str:
    nb = build_notebook(episode)
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def notebook_episodes(root: Path = ROOT) -> list[Path]:
    return [p for p in sorted((root / EPISODE_DIR).glob("*.md"))
            if is_notebook_episode(p.read_text(encoding="utf-8"))]


def target(episode: Path, root: Path = ROOT) -> Path:
    return root / NOTEBOOK_DIR / f"{episode.stem}.ipynb"


def out_of_sync(root: Path = ROOT) -> list[str]:
    """Notebooks that differ from what their episodes generate, and notebooks without an episode."""
    problems = []
    expected = {target(ep, root): ep for ep in notebook_episodes(root)}
    for nb_path, ep in expected.items():
        if not nb_path.exists():
            problems.append(f"{nb_path.relative_to(root)} is missing (episode {ep.relative_to(root)})")
        elif nb_path.read_text(encoding="utf-8") != notebook_text(ep):
            problems.append(f"{nb_path.relative_to(root)} differs from episode {ep.relative_to(root)}")
    for nb_path in sorted((root / NOTEBOOK_DIR).glob("*.ipynb")):
        if nb_path not in expected:
            problems.append(f"{nb_path.relative_to(root)} has no episode in {EPISODE_DIR}/")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when out of date")
    args = parser.parse_args(argv)
    if args.check:
        problems = out_of_sync()
        for problem in problems:
            print(problem)
        if problems:
            print("Run 'make notebooks' to regenerate the notebooks from the episodes.")
        return 1 if problems else 0
    for ep in notebook_episodes():
        path = target(ep)
        path.parent.mkdir(exist_ok=True)
        path.write_text(notebook_text(ep), encoding="utf-8")
        print(f"{ep.relative_to(ROOT)} -> {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
