"""Which data the lesson uses, how much, and where the files live: all from environment variables,
so the same notebooks run on a laptop, in CI and in a batch job. Imports nothing heavy.

``LESSON_DATA``: ``cifar10`` (default) or ``synthetic``, never chosen automatically. ``LESSON_QUICK=1``:
small data, epochs and batches. ``LESSON_DATA_DIR`` (default ``~/gpulesson-data``): the prepared
files, maybe an instructor's read-only folder. ``LESSON_WORK_DIR`` (default ``~/gpulesson-work``):
the learner's own files. ``~`` and ``$NAME`` are expanded here (``%env`` keeps them as typed).
"""

import operator
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gpulesson.errors import DataFolderError, SettingsError, home_note, how_to_set

DATA_CHOICES = ("cifar10", "synthetic")
DEFAULT_DATA = "cifar10"
# What each choice needs: error messages list them all, so that a learner offline is pointed to
# the stand-in and not only to the default, whose download fails there.
DATA_NEEDS = {
    "cifar10": "the real CIFAR-10 (the default): needs the internet once, to download it, or a "
               "file prepared beforehand where there is internet (on a cluster's login node: "
               "python -m gpulesson.datasets.prepare --data cifar10)",
    "synthetic": "a CIFAR-shaped stand-in made from a seed: needs no download and works "
                 "offline; its results are labelled synthetic",
}
DEFAULT_DATA_DIR = Path("~/gpulesson-data")
DEFAULT_WORK_DIR = Path("~/gpulesson-work")

# Human labels for plots and tables. The synthetic one says what it is NOT, on purpose.
LABELS = {
    "cifar10": "CIFAR-10",
    "synthetic": "synthetic stand-in (not CIFAR-10)",
    # Data of the other episodes' measurements (results records name one of these).
    "breast_cancer": "Wisconsin breast cancer (scikit-learn)",
    "mnist": "MNIST",
    "synthetic_mnist": "synthetic stand-in (not MNIST)",
    "random": "random numbers (timing only)",
}
NO_LABEL = "data source not given"  # for a result whose data source nobody recorded

FULL_N_TRAIN = 50_000
FULL_N_TEST = 10_000
QUICK_N_TRAIN = 2_000
QUICK_N_TEST = 500
QUICK_EPOCHS = 2  # enough to see learning (and a warm-up epoch apart from the rest), not more
QUICK_BATCH_SIZE = 64  # small data need small batches: enough steps to learn, a validation batch

_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no", ""}


@dataclass(frozen=True)
class Settings:
    """The lesson's data settings; make one with :func:`get_settings`."""

    data: str
    quick: bool
    data_dir: Path
    # The learner's folder as chosen (None: the default); use work_dir, which creates it.
    work_folder: Path | None = None

    def __post_init__(self):
        if self.data not in DATA_CHOICES:
            raise SettingsError(f"data must be one of {', '.join(DATA_CHOICES)}, not {self.data!r}")

    @property
    def work_dir(self) -> Path:
        """The learner's own folder (never the data folder), created if needed."""
        return ensure_work_dir(self.work_folder or DEFAULT_WORK_DIR.expanduser(), self.data_dir)

    @property
    def hdf5_path(self) -> Path:
        return Path(self.data_dir) / hdf5_filename(self.data, self.quick)

    @property
    def n_train(self) -> int:
        return QUICK_N_TRAIN if self.quick else FULL_N_TRAIN

    @property
    def n_test(self) -> int:
        return QUICK_N_TEST if self.quick else FULL_N_TEST

    def epochs(self, full: int) -> int:
        """The number of epochs to train: ``full``, or at most QUICK_EPOCHS in quick mode."""
        full = whole_number(full, "the number of epochs", "EPOCHS = 3")
        return min(full, QUICK_EPOCHS) if self.quick else full

    def batch_size(self, full: int) -> int:
        """``full``, or at most QUICK_BATCH_SIZE in quick mode: a batch fits its 200 validation images."""
        full = whole_number(full, "the batch size", "BATCH_SIZE = 256 // 4")
        return min(full, QUICK_BATCH_SIZE) if self.quick else full

    @property
    def is_synthetic(self) -> bool:
        return self.data == "synthetic"

    @property
    def label(self) -> str:
        return LABELS[self.data]

    def prepare_command(self) -> str:
        """The shell command that creates this settings' HDF5 file."""
        return prepare_command(self.data, self.quick, self.hdf5_path)

    def describe(self) -> str:
        """One line for the top of a notebook: what data, how much, which file."""
        mode = "quick mode" if self.quick else "full size"
        return (f"Data: {self.label} | {mode}: {self.n_train:,} training and {self.n_test:,} test "
                f"images | file: {self.hdf5_path}")


def whole_number(value, what: str, example: str) -> int:
    """``value`` as an int of at least 1, or a :class:`SettingsError` saying what to write."""
    if isinstance(value, float):
        hint = (f"write {int(value)} or use // (whole-number division): {example}"
                if value.is_integer() else f"write a whole number, e.g. {example}")
        raise SettingsError(f"{what} must be a whole number, not {value!r} (a float: in Python, "
                            f"/ always gives a float, 256 / 4 is 64.0); {hint}")
    if isinstance(value, bool) or not hasattr(value, "__index__"):  # numpy's integers pass
        raise SettingsError(f"{what} must be a whole number, not {value!r}: write e.g. {example}")
    value = operator.index(value)
    if value < 1:
        raise SettingsError(f"{what} must be at least 1, not {value}: write e.g. {example}")
    return value


def hdf5_filename(data: str, quick: bool) -> str:
    return f"{data}{'-quick' if quick else ''}.h5"


def prepare_command(data: str, quick: bool = False, path: str | os.PathLike | None = None) -> str:
    """The ``python -m gpulesson.datasets.prepare ...`` command that (re)creates a data file."""
    parts = ["python -m gpulesson.datasets.prepare", f"--data {data}"]
    if quick:
        parts.append("--quick")
    if path is not None:
        path = Path(path).expanduser()
        if path.name != hdf5_filename(data, quick):
            parts.append(f"--out {shlex.quote(str(path))}")
        elif path.parent != DEFAULT_DATA_DIR.expanduser():
            parts.append(f"--data-dir {shlex.quote(str(path.parent))}")
    return " ".join(parts)


def parse_bool(name: str, value: str) -> bool:
    """Read a yes/no environment variable strictly: a typo is an error, not a silent 'no'."""
    text = value.strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise SettingsError(f"{name}={value!r} is not understood: use 1 or 0 (or true/false, yes/no).\n"
                        + how_to_set(name, "1"))


def data_choices_text() -> str:
    """Every data choice, one a line, with what it needs (for error messages)."""
    width = max(map(len, DATA_CHOICES))
    return "\n".join(f"    {choice:<{width}}  {DATA_NEEDS[choice]}" for choice in DATA_CHOICES)


def parse_data(value: str, name: str = "LESSON_DATA") -> str:
    text = value.strip().lower() or DEFAULT_DATA
    if text not in DATA_CHOICES:
        raise SettingsError(
            f"{name}={value!r} is not a known data set. Choose one of:\n{data_choices_text()}\n"
            "Offline, without a prepared CIFAR-10 file, choose synthetic: the stand-in is only "
            "used when chosen explicitly.\n"
            + how_to_set(name, "synthetic") + f"\n(or {name}=cifar10 in either place)")
    return text


def explicit_data(value: str) -> str:
    """The data a record is made with, chosen on purpose: empty is refused, not defaulted."""
    data = value.strip().lower()
    if not data:
        raise SettingsError(
            "choose the data explicitly: LESSON_DATA=cifar10 (the real CIFAR-10, prepared "
            "beforehand with python -m gpulesson.datasets.prepare --data cifar10 where there is no "
            "internet) or LESSON_DATA=synthetic (the full-size stand-in, labelled so)")
    if data not in DATA_CHOICES:
        raise SettingsError(f"unknown data {data!r}: use one of\n{data_choices_text()}")
    return data


def parse_folder(name: str, value: str, default: Path, environ: Mapping[str, str]) -> Path:
    """The folder an environment variable names: ``~`` and ``$NAME`` expanded, quotes dropped;
    empty means ``default``."""
    text = value.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()  # %env keeps quotes as part of the value
    if not text:
        return default.expanduser()
    unset = []

    def expand(match):
        var = match.group(1) or match.group(2)
        if var in environ:
            return environ[var]
        unset.append(var)
        return match.group(0)

    expanded = _VARIABLE.sub(expand, text)
    if unset:
        raise SettingsError(
            f"{name}={value} names ${unset[0]}, which is not set here, so the folder would be "
            f"called {unset[0]!r} literally. Write the folder out, or start it with ~ for your "
            f"home directory.\n" + how_to_set(name, "~/" + default.name))
    folder = Path(os.path.expanduser(expanded))  # os.path: "~nobody" stays as it is
    if str(folder).startswith("~"):
        raise SettingsError(f"{name}={value}: {str(folder).split('/')[0]} is not a user's home "
                            f"directory here.\n" + how_to_set(name, "~/" + default.name))
    if folder.exists() and not folder.is_dir():
        raise SettingsError(f"{name}={value} names the file {folder}, not a folder: name a "
                            f"folder, e.g. ~/{default.name}.\n" + how_to_set(name, "~/" + default.name))
    return folder


_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _same_folder(a: Path, b: Path) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def ensure_work_dir(folder, data_dir) -> Path:
    """``folder``, created if needed; refused when it is the data folder or cannot be written."""
    folder = Path(folder).expanduser()
    if _same_folder(folder, data_dir):
        raise SettingsError(
            f"LESSON_WORK_DIR is the data folder {folder} (LESSON_DATA_DIR). Your own files "
            "(records, saved models, HDF5 files you write) go to a folder of their own, because "
            "the data folder may be shared and read-only.\n"
            + how_to_set("LESSON_WORK_DIR", "~/" + DEFAULT_WORK_DIR.name))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        writable = os.access(folder, os.W_OK | os.X_OK)
    except OSError as exc:
        writable, reason = False, exc.strerror or type(exc).__name__
    else:
        reason = "permission denied"
    if not writable:
        raise DataFolderError(
            f"Cannot create or write to your work folder {folder} ({reason}): it holds your "
            f"records and saved models. Choose a folder of your own, for example in your home "
            f"directory{home_note()}.\n" + how_to_set("LESSON_WORK_DIR", "~/" + DEFAULT_WORK_DIR.name))
    return folder


def keep_earlier(path) -> Path:
    """``path``, after an earlier file there is moved aside to a dated name, said in one line."""
    path = Path(path).expanduser()
    if not path.exists() and not path.is_symlink():
        return path
    stamp = datetime.fromtimestamp(path.lstat().st_mtime).strftime("%Y-%m-%d-%H%M")
    stem, dot, rest = path.name.partition(".")
    suffix = dot + rest
    backup, number = path.with_name(f"{stem}.{stamp}{suffix}"), 1
    while backup.exists() or backup.is_symlink():
        number += 1
        backup = path.with_name(f"{stem}.{stamp}-{number}{suffix}")
    path.rename(backup)
    print(f"Your earlier {path.name} is kept as {backup.name} in {path.parent}.")
    return path


def get_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read the settings from ``environ`` (default: ``os.environ``)."""
    env = os.environ if environ is None else environ
    data = parse_data(env.get("LESSON_DATA", ""))
    quick = parse_bool("LESSON_QUICK", env.get("LESSON_QUICK", ""))
    data_dir = parse_folder("LESSON_DATA_DIR", env.get("LESSON_DATA_DIR", ""), DEFAULT_DATA_DIR, env)
    work = parse_folder("LESSON_WORK_DIR", env.get("LESSON_WORK_DIR", ""), DEFAULT_WORK_DIR, env)
    if _same_folder(work, data_dir):
        ensure_work_dir(work, data_dir)  # refused now, with the message, rather than later
    return Settings(data=data, quick=quick, data_dir=data_dir, work_folder=work)
