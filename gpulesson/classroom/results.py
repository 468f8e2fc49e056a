"""The class's runs read back from the class folder (a bad file skipped with one line saying why),
and drawn against the lesson's reference.

    python -m gpulesson.classroom.results FOLDER [--out class.png]
"""

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from gpulesson.classroom import share
from gpulesson.records import results

REFERENCE_FILE = results.RESULTS_DIR / f"{share.EXPERIMENT}.jsonl"


class ClassFileError(ValueError):
    """A file of the class folder that is not a whole class file of this lesson's version."""


@dataclass(frozen=True)
class SharedRun:
    """One learner's run: its file, the nickname (None if not given) and its records."""

    path: Path
    nickname: str | None
    records: list


def read_run(path: str | os.PathLike) -> SharedRun:
    """The run in the class file ``path``; a :class:`ClassFileError` says why it is not one."""
    path = Path(path)
    if path.suffix != share.SUFFIX:
        raise ClassFileError(f"not a class run file (its name does not end in {share.SUFFIX})")
    if path.stat().st_size > share.MAX_BYTES:
        raise ClassFileError(f"too large to be a class run file (over {share.MAX_BYTES:,} bytes)")
    try:
        document = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ClassFileError("damaged: not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise ClassFileError(f"damaged or cut short: not valid JSON ({exc.msg}, line "
                             f"{exc.lineno}); delete it and share the run again") from exc
    if not isinstance(document, dict) or document.get("format") != share.FORMAT:
        raise ClassFileError(f"not a class run file of this lesson (no \"format\": \"{share.FORMAT}\")")
    version = document.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ClassFileError(f"damaged: format_version is {version!r}")
    if version > share.FORMAT_VERSION:
        raise ClassFileError(f"written by a newer version of the lesson (format version "
                             f"{version}; this one reads {share.FORMAT_VERSION}): update the lesson")
    records = document.get("records")
    if not isinstance(records, list) or not records:
        raise ClassFileError("damaged: it holds no records")
    for number, record in enumerate(records, start=1):
        problem = share.record_problem(record)
        if problem:
            raise ClassFileError(f"record {number}: {problem}")
    try:
        nickname = share.check_nickname(document.get("nickname"))
    except ValueError as exc:
        raise ClassFileError(str(exc)) from exc
    return SharedRun(path, nickname, records)


def gather(folder: str | os.PathLike, *, say=print) -> list[SharedRun]:
    """The valid runs in the class ``folder``, in name order; others skipped with a line from ``say``
    (names starting with ``.`` are still being written)."""
    folder = share.existing_class_folder(folder, "(the instructor creates it before the workshop)")
    try:
        names = sorted(entry.name for entry in folder.iterdir())
    except OSError as exc:
        raise share.ClassFolderError(f"cannot read the class folder {folder} "
                                     f"({exc.strerror or exc})") from exc
    found = []
    for name in names:
        if name.startswith("."):
            continue
        path = folder / name
        try:
            if not path.is_file():
                raise ClassFileError("not a file")
            found.append(read_run(path))
        except ClassFileError as exc:
            say(f"Skipped {path}: {exc}")
        except OSError as exc:
            say(f"Skipped {path}: cannot read it ({exc.strerror or exc})")
    return found


def draw_class(runs, *, reference: list[dict] | None = None, note: str = "", say=print):
    """Print what the ``runs`` measured and draw them with the reference."""
    from gpulesson.classroom import figure as class_figure

    if reference is None:
        reference = results.reference_run(REFERENCE_FILE, share.EXPERIMENT)
    view = class_figure.class_view(runs, reference)
    say(class_figure.describe(view))
    return class_figure.class_figure(view, note=note) if view.runs else None


def show_class(site_value=None, *, folder=None, say=print, **options):
    """:func:`draw_class` of the class folder's runs; None, said why, when unset or unreadable."""
    folder = share.class_folder(site_value) if folder is None else Path(folder)
    if folder is None:
        say(f"No class folder is set: set {share.CLASS_ENV}, or class_results in _config.yml.")
        return None
    try:
        runs = gather(folder, say=say)
    except share.ClassFolderError as exc:
        say(f"Cannot show the class's runs: {exc}.")
        return None
    return draw_class(runs, say=say, **options)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpulesson.classroom.results",
        description="Gather the class's CNN runs from the class folder, check them, and draw "
                    "their epoch times and speed-ups by device, the lesson's reference marked.")
    parser.add_argument("folder", type=Path, help="the class folder")
    parser.add_argument("--out", type=Path, default=Path("class-results.png"),
                        help="the figure's file (.png or .svg; default: %(default)s)")
    parser.add_argument("--no-reference", action="store_true",
                        help="leave the lesson's reference run out")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    say = lambda line: print(line, flush=True)  # noqa: E731
    try:
        runs = gather(args.folder, say=say)
    except share.ClassFolderError as exc:
        print(f"Cannot show the class's runs: {exc}.", file=sys.stderr)
        return 2
    fig = draw_class(runs, reference=[] if args.no_reference else None, say=say)
    if fig is not None:
        fig.savefig(args.out, bbox_inches="tight")
        print(f"Figure: {args.out}\nAlt text: {fig.alt_text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
