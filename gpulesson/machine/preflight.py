"""Is every package a command needs installed in this Python? Asked before anything runs, without
importing them, so that a missing one is one line, not a traceback after minutes of work."""

import importlib.util
import re
from pathlib import Path

CONSTRAINTS = Path(__file__).resolve().parents[2] / "requirements" / "constraints.txt"
# Import names whose distribution on PyPI is called otherwise.
DISTRIBUTIONS = {"sklearn": "scikit-learn", "yaml": "pyyaml", "pynvml": "nvidia-ml-py"}


class MissingPackage(RuntimeError):
    """A package a command needs is not installed; the message says how to add it."""


def pinned(distribution: str, constraints: Path = CONSTRAINTS) -> str:
    """``name==version`` as the lesson's lock pins it, or the bare name if it is not pinned."""
    name = "[-_.]".join(re.escape(part) for part in re.split(r"[-_.]", distribution))
    pattern = re.compile(rf"^{name}==(\S+)", re.I | re.M)
    try:
        found = pattern.search(constraints.read_text(encoding="utf-8"))
    except OSError:
        found = None
    return f"{distribution}=={found.group(1)}" if found else distribution


def missing(modules) -> list[str]:
    """The import names among ``modules`` that this Python cannot find."""
    return [name for name in dict.fromkeys(modules) if importlib.util.find_spec(name) is None]


def require(modules, *, what: str) -> None:
    """Raise :class:`MissingPackage` naming every module of ``modules`` that is not installed."""
    absent = missing(modules)
    if not absent:
        return
    pins = " ".join(pinned(DISTRIBUTIONS.get(name, name)) for name in absent)
    raise MissingPackage(
        f"{what} needs {', '.join(absent)}, not installed in this Python: add "
        f"{'it' if len(absent) == 1 else 'them'} with `python -m pip install {pins}`, or, without "
        f"internet, install the wheels into a folder (`pip install --no-index --no-deps --target "
        f"DIR WHEELS`) and put DIR on PYTHONPATH")


def require_or_exit(modules, *, what: str) -> None:
    """:func:`require` for a script's start: the message alone on stderr, exit status 2."""
    try:
        require(modules, what=what)
    except MissingPackage as exc:
        raise SystemExit(f"{exc}") from None
