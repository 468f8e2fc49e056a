"""Your own copies of the lesson's notebooks, to work in.

    python -m gpulesson.workcopy [--to my-notebooks]

JupyterLab saves a notebook with its outputs as you work (and every two minutes on its own), so
working in ``notebooks/`` would change the lesson's tracked files and make ``git pull`` fail.
This copies each notebook of ``notebooks/`` into a folder of your own (``my-notebooks/`` by
default, next to ``notebooks/`` so that the notebooks' links to ``../fig`` and ``../setup.md``
still work, and ignored by git). A copy that is already there is yours and is never overwritten:
to start a notebook afresh, delete your copy and run the command again.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

LESSON_ROOT = Path(__file__).resolve().parents[1]
SOURCE = "notebooks"
DEFAULT_TARGET = "my-notebooks"


def copy_notebooks(source: Path, target: Path) -> tuple[list[Path], list[Path]]:
    """Copy every ``*.ipynb`` of ``source`` that ``target`` lacks; returns (copied, kept)."""
    notebooks = sorted(Path(source).glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"{source} holds no notebooks: run this in the lesson folder "
                                f"(the one with {SOURCE}/ and setup.md)")
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for notebook in notebooks:
        mine = target / notebook.name
        if mine.exists():
            kept.append(mine)
            continue
        # Through a temporary name, so that an interrupted copy is never taken for a kept one.
        partial = mine.with_name(f".{mine.name}.partial")
        shutil.copyfile(notebook, partial)
        partial.replace(mine)
        copied.append(mine)
    return copied, kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpulesson.workcopy",
        description="Copy the lesson's notebooks into a folder of your own (existing copies "
                    "are kept), so that JupyterLab saves your work there, not in notebooks/.")
    parser.add_argument("--to", type=Path, default=LESSON_ROOT / DEFAULT_TARGET,
                        help=f"your folder (default: {DEFAULT_TARGET}/ in the lesson folder)")
    parser.add_argument("--lesson", type=Path, default=LESSON_ROOT,
                        help="the lesson folder (default: the one this package belongs to)")
    args = parser.parse_args(argv)
    target = args.to if args.to.is_absolute() else Path.cwd() / args.to
    try:
        copied, kept = copy_notebooks(args.lesson / SOURCE, target)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Your notebooks are in {target}: {len(copied)} copied from {SOURCE}/, "
          f"{len(kept)} of yours kept as they are. Open them from there.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
