"""Exceptions with messages a learner can act on (the file, folder, setting or URL, and the fix).
In a notebook and in the lesson's commands an error of the lesson is shown as its message alone,
and an interrupted cell or Ctrl-C in a few words (:mod:`gpulesson.interrupt`).
"""

import contextlib
import os
import sys
from pathlib import Path


class LessonError(Exception):
    """Base class: an error meant for the learner (the message says what to do)."""


class LessonDataError(LessonError):
    """Something is wrong with the lesson's data (the message says what to do)."""


class DataUnavailableError(LessonDataError):
    """The data cannot be obtained here, e.g. the download fails on a node without internet."""


class DataFileError(LessonDataError):
    """A data file is missing, truncated, corrupt or not what the lesson expects."""


class DataFolderError(LessonDataError):
    """The folder the data files go to cannot be created or written to (``reason``: the system's)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class KerasBackendError(LessonError, ImportError):
    """The Keras backend chosen is not installed (:mod:`gpulesson.machine.backends`)."""


class SettingsError(LessonError, ValueError):
    """An environment variable of the lesson has a value it does not understand."""


def how_to_set(name: str, value: str) -> str:
    """How to give the environment variable ``name`` the value ``value``, in JupyterLab and in a shell."""
    return (
        f"In JupyterLab, add a cell at the top of the notebook with\n"
        f"    %env {name}={value}\n"
        f"and run the notebook again from the top (Kernel > Restart Kernel and Run All Cells: "
        f"the cell sets it again after the restart). In a terminal or a batch job:\n"
        f"    export {name}={value}"
    )


def home_note() -> str:
    """`` (HOME is not set, ...)`` when the environment has no HOME (``~`` may not be theirs)."""
    if os.environ.get("HOME"):
        return ""
    return (f" (HOME is not set here, so ~ is {os.path.expanduser('~')}: set HOME to your home "
            f"folder, or write the folder out in full)")


@contextlib.contextmanager
def tidy_on_failure(*folders):
    """If the block fails, remove those of ``folders`` (and their parents) it made and left empty."""
    made = []
    for folder in folders:
        for path in (Path(folder).expanduser().absolute(), *Path(folder).expanduser().absolute().parents):
            if path.exists():
                break
            made.append(path)
    try:
        yield
    except BaseException:
        for path in sorted(set(made), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):  # not empty, or not made after all
                path.rmdir()
        raise


def check_writable(folder, setting: str | None = "LESSON_DATA_DIR",
                   option: str = "--data-dir") -> Path:
    """``folder``, created, once a file could be written in it, else :class:`DataFolderError`
    (``setting=None``: not the data folder)."""
    folder = Path(folder).expanduser()
    probe = folder / f".gpulesson-write-test.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.touch()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            fix = (f"name a folder in {setting} or {option}" if setting else
                   "choose a folder you can write to, such as your own work folder "
                   "(settings.work_dir)")
            raise DataFolderError(f"{blocker} is a file, not a folder, so {folder} cannot be a "
                                  f"folder: {fix}.", "a file, not a folder") from None
        if setting is None:
            raise DataFolderError(f"Cannot write into {folder} ({reason}): choose a folder you can "
                                  f"write to, such as your own work folder (settings.work_dir).",
                                  reason) from None
        raise DataFolderError(
            f"Cannot write the lesson's data files into {folder} ({reason}). It may be a shared "
            f"folder that only your instructor can write to, or a path that does not exist here.\n"
            f"Choose a folder of your own with {setting}, for example your home directory's "
            f"gpulesson-data{home_note()}. {how_to_set(setting, '~/gpulesson-data')}\n"
            f"or pass {option} DIR to python -m gpulesson.datasets.prepare.", reason) from None
    probe.unlink(missing_ok=True)
    return folder


# The lesson's reference records (gpulesson.records.results.RESULTS_DIR), the experiments' default --out.
REFERENCE_RESULTS = Path(__file__).resolve().parents[1] / "results"


def cannot_write_file(path) -> str | None:
    """Why the file ``path`` cannot be written (None: it can), found before any work; creates nothing."""
    path = Path(path).expanduser()
    if path.is_dir():
        return f"{path} is a folder: name a file, e.g. {path / 'results.jsonl'}"
    if path.exists():
        if os.access(path, os.W_OK):
            return None
        if path.resolve().parent == REFERENCE_RESULTS:
            return (f"{path} is one of the lesson's reference results files, which you cannot "
                    f"write to: name a file of your own, e.g. --out ~/gpulesson-work/{path.name}")
        return f"{path} cannot be written to (read-only)"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, so {path} cannot be made"
    probe = folder / f".gpulesson-write-test.{os.getpid()}"
    try:
        probe.touch()
    except OSError as exc:
        return (f"cannot write {path}: {folder} takes no new file "
                f"({exc.strerror or type(exc).__name__}); choose a folder you can write to")
    probe.unlink(missing_ok=True)
    return None


# --- notebooks: the message alone ------------------------------------------------------------

# IPython keeps one handler for all its custom exceptions, so an interrupted cell is handled here too.
SHORT_MESSAGE_KINDS = ("LessonError", "KeyboardInterrupt")


def _message_only(shell, etype, value, tb, tb_offset=None):
    """IPython's handler: a LessonError's name and message; a KeyboardInterrupt's two lines."""
    if issubclass(etype, KeyboardInterrupt):
        from gpulesson.interrupt import interrupt_lines

        lines = interrupt_lines(tb, getattr(shell, "user_ns", None))
    else:
        lines = [f"{etype.__name__}: {value}"]
    # _showtraceback is how IPython hands a traceback to the front end (in a Jupyter kernel: an
    # "error" output, so that Run All stops here); the short one takes the long one's place.
    show = getattr(shell, "_showtraceback", None)
    if show is not None:
        show(etype, value, lines)
    else:
        print("\n".join(lines), file=sys.stderr)
    return lines


def show_message_only_in_notebooks() -> bool:
    """Have a notebook's kernel show LessonError and KeyboardInterrupt short (not over another
    handler); returns whether it does."""
    ipython = sys.modules.get("IPython")  # only where IPython is running already
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    handled = getattr(shell, "custom_exceptions", ())
    # By name: a reloaded module has a new class of the same name.
    if any(getattr(kind, "__name__", None) not in SHORT_MESSAGE_KINDS for kind in handled):
        return False
    shell.set_custom_exc((LessonError, KeyboardInterrupt), _message_only)
    return True


show_message_only_in_notebooks()


# --- commands: the message alone -------------------------------------------------------------

def _command_hook(etype, value, tb, _previous=sys.__excepthook__):
    """``sys.excepthook`` of the lesson's commands: a LessonError or Ctrl-C in one line."""
    if issubclass(etype, LessonError):
        print(f"error: {value}", file=sys.stderr)
    elif issubclass(etype, KeyboardInterrupt):
        print("Stopped (Ctrl-C). A file being written is left out, never half-written: run the "
              "same command again to go on.", file=sys.stderr)
    else:
        _previous(etype, value, tb)


def show_message_only_in_commands(main_module: str | None = None) -> bool:
    """Have a ``python -m gpulesson...`` command show the lesson's errors and Ctrl-C in one line;
    returns whether it does (not in other programs, nor over another excepthook)."""
    if main_module is None:  # python -m NAME: runpy imports the package before __main__ is set
        argv = getattr(sys, "orig_argv", [])
        main_module = next((argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-m"), "")
    if not main_module.startswith("gpulesson") or sys.excepthook is not sys.__excepthook__:
        return False
    sys.excepthook = _command_hook
    return True


show_message_only_in_commands()
