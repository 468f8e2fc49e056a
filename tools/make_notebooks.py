"""Generate the notebooks (complete and learner's) and the lesson module from the episodes.

The episodes (MyST text notebooks) are the single source, written without outputs as plain
Markdown (solutions as ``<details>``, no instructor notes). ``notebooks/NN-slug.ipynb`` is complete;
in ``notebooks/learner/`` a typed cell holds only its ``:prompt:`` and the names later cells take,
then a catch-up cell. A cell tagged ``exercise`` (``____`` blanks) is followed by its ``solution``,
which no learner's notebook has. Cells tagged ``lesson-module`` (``lesson-module-NAME``) make
``gpulesson/lesson/core.py`` (``NAME.py``), so that tests run the code the episodes teach.

    python tools/make_notebooks.py          # write notebooks/, notebooks/learner/, gpulesson/lesson/
    python tools/make_notebooks.py --check  # exit 1 if any of them is out of date
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the lesson's package, installed or not
sys.path.insert(0, str(ROOT / "_ext"))
from gpulesson.classroom.catchup import needed_later  # noqa: E402
from gpulesson.datasets.settings import DATA_CHOICES, DEFAULT_DATA, QUICK_EPOCHS, QUICK_N_TRAIN  # noqa: E402
from gpulesson.machine.preflight import require_or_exit  # noqa: E402

require_or_exit(("jupytext", "nbformat", "yaml"), what="tools/make_notebooks.py")
import nbformat  # noqa: E402
from carpentry import EPISODE_DIR, bullets  # noqa: E402
from episode_cells import EpisodeCellError, cell_pairs, episode_cells, notebook_episodes  # noqa: E402
from learner_cells import header_notes, learner_cells, predictions  # noqa: E402
from lesson_modules import MODULE_DIR, PACKAGE_INIT, modules  # noqa: E402

NOTEBOOK_DIR = "notebooks"
LEARNER_DIR = f"{NOTEBOOK_DIR}/learner"

OPEN = re.compile(r"^(?P<fence>:{3,})\{(?P<name>[\w-]+)\}[ \t]*(?P<title>.*)$")
ROLE = re.compile(r"\{[\w:-]+\}`(?P<text>[^`<]*?)\s*(?:<[^`>]*>)?`")
DROPPED = {"instructor-note"}  # for instructors, not in a learner's notebook


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


# The first cell of every notebook (Markdown: a code cell would make every record stale).
DATA_NEEDS_MARKDOWN = {
    "cifar10": "the real CIFAR-10. It needs the internet once, to download it, or an HDF5 file "
               "prepared beforehand where there is internet (on a cluster, on a login node: "
               "`python -m gpulesson.datasets.prepare --data cifar10`).",
    "synthetic": "a CIFAR-shaped stand-in made from a seed. It needs no download and works "
                 "offline; everything computed on it is labelled synthetic.",
}
assert set(DATA_NEEDS_MARKDOWN) == set(DATA_CHOICES), "one line for every data choice"


def data_choice_markdown() -> str:
    """The Markdown of the notebooks' first cell: how to choose the data, offline too."""
    choices = "\n".join(
        f"- `LESSON_DATA={choice}`{' (the default)' if choice == DEFAULT_DATA else ''}: "
        f"{DATA_NEEDS_MARKDOWN[choice]}" for choice in DATA_CHOICES)
    return (
        "**Before you run: choose the data.** The notebooks read the data the environment "
        "variable `LESSON_DATA` names:\n\n"
        f"{choices}\n\n"
        "Without internet and without a prepared file (a compute node, a train), choose "
        "`synthetic`. To choose, add a cell at the top of this notebook, for example\n\n"
        "```python\n%env LESSON_DATA=synthetic\n```\n\n"
        "and run the notebook from the top (**Kernel → Restart Kernel and Run All Cells**). "
        "`%env LESSON_DATA_DIR=FOLDER` reads the prepared files from a folder of your own or your "
        f"instructor's (default `~/gpulesson-data`); `%env LESSON_QUICK=1` uses "
        f"{QUICK_N_TRAIN:,} training images and at most {QUICK_EPOCHS} epochs, for a first try. The "
        "PyTorch "
        "episode reads MNIST (`python -m gpulesson.datasets.mnist` downloads it), or with `synthetic` an "
        "MNIST-shaped stand-in. The [setup page](../setup.md) has the details."
    )


def build_notebooks(episode: Path, root: Path = ROOT) -> tuple[nbformat.NotebookNode, nbformat.NotebookNode]:
    """An episode's complete and learner's notebooks; stable cell ids, so regenerating changes nothing."""
    meta, source, typed = episode_cells(episode, root)
    notes = [
        f"# {meta['title']}\n\n"
        f"*Episode {episode.name.split('-')[0]} of the lesson \"Deep learning on GPUs: CPU vs GPU\". "
        f"Teaching: {meta['teaching']} min, exercises: {meta['exercises']} min.*\n\n"
        + "".join(f"{note}\n\n" for note in kept)
        + f"**Questions**\n\n{bullets(meta['questions'])}\n\n"
        f"**Objectives**\n\n{bullets(meta['objectives'])}"
        for kept in header_notes(episode, typed)]
    complete, learner = [], []

    def add(cell, mine=None) -> str:
        """Add a cell to both notebooks (``mine``: the learner's, if it differs); its id."""
        mine = cell if mine is None else mine
        cell.id = mine.id = f"{episode.stem[:2]}-{len(complete):03d}"
        complete.append(cell)
        learner.append(mine)
        return cell.id

    add(nbformat.v4.new_markdown_cell(data_choice_markdown()))
    add(nbformat.v4.new_markdown_cell(notes[0]), nbformat.v4.new_markdown_cell(notes[1]))
    pairs = cell_pairs(episode.name, source.cells, typed)
    needed = iter(needed_later([full.source for role, full, _ in pairs
                                if role not in ("markdown", "raw")]))
    predicted = iter(predictions(pairs))
    for role, full, mine in pairs:
        if role == "raw":
            add(nbformat.v4.new_raw_cell(full.source))
        elif role == "markdown":
            if body := plain_markdown(full.source):
                add(nbformat.v4.new_markdown_cell(body))
        else:
            here = add(nbformat.v4.new_code_cell(full.source))  # no outputs, no execution count
            learner[-1:] = learner_cells(role, full, mine, next(needed), here, next(predicted))
    add(nbformat.v4.new_markdown_cell(f"## Key points\n\n{bullets(meta['keypoints'])}"))
    metadata = {"kernelspec": dict(source.metadata["kernelspec"]), "language_info": {"name": "python"}}
    complete, learner = (nbformat.v4.new_notebook(cells=[nbformat.from_dict(cell) for cell in cells],
                                                  metadata=metadata) for cells in (complete, learner))
    return complete, learner


def notebook_texts(episode: Path, root: Path = ROOT) -> dict[Path, str]:
    """{path: text} of the episode's complete notebook and learner's notebook."""
    texts = {}
    for path, nb in zip((target(episode, root), learner_target(episode, root)),
                        build_notebooks(episode, root), strict=True):
        nbformat.validate(nb)
        texts[path] = nbformat.writes(nb) + "\n"
    return texts


def target(episode: Path, root: Path = ROOT) -> Path:
    return root / NOTEBOOK_DIR / f"{episode.stem}.ipynb"


def learner_target(episode: Path, root: Path = ROOT) -> Path:
    return root / LEARNER_DIR / f"{episode.stem}.ipynb"


def out_of_sync(root: Path = ROOT) -> list[str]:
    """Notebooks and modules unlike what the episodes make, and episodes that break the rules."""
    problems, expected = [], {}
    for ep in notebook_episodes(root):
        try:
            texts = notebook_texts(ep, root)
        except EpisodeCellError as exc:
            problems.append(str(exc))
            expected.update({target(ep, root): None, learner_target(ep, root): None})
            continue
        expected.update(texts)
        for nb_path, text in texts.items():
            if not nb_path.exists():
                problems.append(f"{nb_path.relative_to(root)} is missing (episode {ep.relative_to(root)})")
            elif nb_path.read_text(encoding="utf-8") != text:
                problems.append(f"{nb_path.relative_to(root)} differs from episode {ep.relative_to(root)}")
    for folder in (NOTEBOOK_DIR, LEARNER_DIR):
        for nb_path in sorted((root / folder).glob("*.ipynb")):
            if nb_path not in expected:
                problems.append(f"{nb_path.relative_to(root)} has no episode in {EPISODE_DIR}/")
    try:
        expected_modules = modules(root)
    except EpisodeCellError as exc:  # an episode that cannot be read: named above
        return problems if str(exc) in problems else [*problems, str(exc)]
    for relpath, text in expected_modules.items():
        module = root / relpath
        if not module.exists() or module.read_text(encoding="utf-8") != text:
            problems.append(f"{relpath} differs from the episodes' cells tagged for it")
    for module in sorted((root / MODULE_DIR).glob("*.py")):
        if module.relative_to(root).as_posix() not in expected_modules:
            problems.append(f"{module.relative_to(root)} has no cells tagged for it in {EPISODE_DIR}/")
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
            print("Run 'make notebooks' to regenerate the notebooks and the lesson module from the episodes.")
        return 1 if problems else 0
    errors = []
    for ep in notebook_episodes():
        try:
            texts = notebook_texts(ep)
        except EpisodeCellError as exc:  # the other episodes' notebooks are still written
            errors.append(str(exc))
            continue
        for path, text in texts.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        print(f"{ep.relative_to(ROOT)} -> {', '.join(p.relative_to(ROOT).as_posix() for p in texts)}")
    try:
        texts = modules()
    except EpisodeCellError as exc:
        texts = {}
        errors += [] if str(exc) in errors else [str(exc)]
    for relpath, text in texts.items():
        (ROOT / relpath).write_text(text, encoding="utf-8")
        print(f"{'the package' if relpath == PACKAGE_INIT else 'cells tagged for it'} -> {relpath}")
    for error in errors:
        print(f"error: {error}; that episode's notebooks were not written", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
