"""Your own copies of the lesson's notebooks, to work in, beside ``notebooks/`` and ignored by git
(JupyterLab saves outputs, which would change tracked files); a copy already there is never overwritten.

    python -m gpulesson.classroom.workcopy [--to my-notebooks]             # the notebooks to type into
    python -m gpulesson.classroom.workcopy [--to my-notebooks] --complete  # the complete ones, as well
"""

import argparse
import os
import shutil
import sys
from pathlib import Path

LESSON_ROOT = Path(__file__).resolve().parents[2]
SOURCE = "notebooks/learner"  # what learners type into (tools/make_notebooks.py)
COMPLETE_SOURCE = "notebooks"  # every cell filled in
COMPLETE_SUFFIX = "-complete"
DEFAULT_TARGET = "my-notebooks"


def copy_notebooks(source: Path, target: Path, suffix: str = "") -> tuple[list[Path], list[Path]]:
    """Copy every ``*.ipynb`` of ``source`` that ``target`` lacks, its name's stem followed by
    ``suffix``; returns (copied, kept)."""
    notebooks = sorted(Path(source).glob("*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"{source} holds no notebooks: run this in the lesson folder "
                                f"(the one with {COMPLETE_SOURCE}/ and setup.md)")
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for notebook in notebooks:
        mine = target / f"{notebook.stem}{suffix}{notebook.suffix}"
        if mine.exists():
            kept.append(mine)
            continue
        # Through a temporary name, so that an interrupted copy is never taken for a kept one.
        partial = mine.with_name(f".{mine.name}.partial")
        shutil.copyfile(notebook, partial)
        partial.replace(mine)
        copied.append(mine)
    return copied, kept


def lesson_folder(start: Path, default: Path = LESSON_ROOT) -> Path:
    """The lesson folder holding ``start``, else ``default`` (a shared package lives elsewhere)."""
    for folder in (start, *start.parents):
        if (folder / SOURCE).is_dir() and (folder / "setup.md").is_file():
            return folder
    return default


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpulesson.classroom.workcopy",
        description="Copy the lesson's notebooks to type into (notebooks/learner/) into a folder "
                    "of your own (existing copies are kept), so that JupyterLab saves your work "
                    "there, not in notebooks/.")
    parser.add_argument("--to", type=Path,
                        help=f"your folder (default: {DEFAULT_TARGET}/ in the lesson folder)")
    parser.add_argument("--lesson", type=Path,
                        help="the lesson folder (default: the one you are in, else the one this "
                             "package belongs to)")
    parser.add_argument("--complete", action="store_true",
                        help=f"copy the complete notebooks ({COMPLETE_SOURCE}/, every cell filled "
                             f"in) instead, as NN-slug{COMPLETE_SUFFIX}.ipynb beside your own")
    args = parser.parse_args(argv)
    lesson = args.lesson or lesson_folder(Path.cwd())
    target = (args.to or lesson / DEFAULT_TARGET).expanduser()
    target = target if target.is_absolute() else Path.cwd() / target
    source = COMPLETE_SOURCE if args.complete else SOURCE
    try:
        if args.to is None and lesson.is_dir() and not os.access(lesson, os.W_OK):
            raise FileNotFoundError(
                f"{lesson} is not your lesson folder (you cannot write in it; it may be your "
                f"instructor's): cd into your own copy of the lesson and run this again, or pass "
                f"--to a folder of your own, e.g. --to ~/my-notebooks")
        copied, kept = copy_notebooks(lesson / source, target,
                                      COMPLETE_SUFFIX if args.complete else "")
    except OSError as exc:
        ours = isinstance(exc, FileNotFoundError) and exc.errno is None  # said by us, not the system
        said = exc.args[0] if ours else (
            f"cannot copy the notebooks into {target} ({exc.filename or target}: "
            f"{exc.strerror or type(exc).__name__}): run this in your own copy of the lesson (cd "
            "into it first), or pass --to a folder of your own, e.g. --to ~/my-notebooks")
        print(f"error: {said}", file=sys.stderr)
        return 1
    what = "complete notebooks" if args.complete else "notebooks"
    print(f"Your {what} are in {target}: {len(copied)} copied from {source}/, "
          f"{len(kept)} of yours kept as they are. Open them from there.")
    if not args.complete:
        print("Behind in a notebook? Run the catch-up cell under the cell you skipped, or run "
              f"'{parser.prog} --complete' for the complete notebooks, beside yours.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
