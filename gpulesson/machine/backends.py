"""Is the Keras backend that Keras will use installed? Checked before Keras is imported, so that
``import keras`` fails with one message (which backend, where chosen, how to install it), not dozens
of lines. Also leaves TensorFlow's start-up INFO notes out of stderr (unless TF_CPP_MIN_LOG_LEVEL=0).
"""

import contextlib
import importlib.abc
import importlib.util
import io
import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from gpulesson.errors import KerasBackendError

DEFAULT_BACKEND = "tensorflow"  # Keras' own default, and the lesson's
# The lesson's backends: (framework's module, its name, what to install, requirements file).
LESSON_BACKENDS = {
    "tensorflow": ("tensorflow", "TensorFlow",
                   ("tensorflow-cpu==2.21.0",) if sys.platform == "linux" else ("tensorflow==2.21.0",),
                   "requirements/cpu.txt; on a GPU node, requirements/gpu.txt"),
    "jax": ("jax", "JAX", ("jax==0.10.2", "jaxlib==0.10.2"),
            "requirements/backends.txt; on a GPU node, requirements/gpu.txt"),
    "torch": ("torch", "PyTorch", ("torch==2.15.0",), "requirements/torch.txt"),
}
# Backends Keras 3.15 knows besides those; the lesson trains with none of them.
OTHER_KERAS_BACKENDS = ("numpy", "openvino")


def keras_config_path(environ: Mapping[str, str] | None = None) -> Path:
    """The ``keras.json`` Keras reads (keras/src/backend/config.py, Keras 3.15)."""
    env = os.environ if environ is None else environ
    if "KERAS_HOME" in env:
        return Path(env["KERAS_HOME"]).expanduser() / "keras.json"
    home = os.path.expanduser("~")
    return Path(home if os.access(home, os.W_OK) else "/tmp") / ".keras" / "keras.json"


def chosen_backend(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(backend, where it was chosen)`` as Keras will decide when it is imported."""
    env = os.environ if environ is None else environ
    if env.get("KERAS_BACKEND"):
        return env["KERAS_BACKEND"], "KERAS_BACKEND"
    config = keras_config_path(env)
    try:
        backend = json.loads(config.read_text()).get("backend")
    except (OSError, ValueError, AttributeError):
        backend = None
    if backend:
        return str(backend), f"{config} (\"backend\")"
    return DEFAULT_BACKEND, "Keras' default"


def in_notebook() -> bool:
    """Whether this Python is a notebook's kernel (advice then names cells and the restart)."""
    ipython = sys.modules.get("IPython")  # only where IPython runs already
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None


def _choose_another(where: str) -> str:
    if where == "KERAS_BACKEND":
        if not in_notebook():
            return "or use the lesson's default backend: export KERAS_BACKEND=tensorflow"
        return ("or use the lesson's default backend: %env KERAS_BACKEND=tensorflow in the "
                "notebook's first cell (export KERAS_BACKEND=tensorflow in a terminal)")
    return f"or set KERAS_BACKEND=tensorflow, or change the backend in {where.split(' (')[0]}"


def module_installed(module: str) -> bool:
    """Whether ``module`` can be imported here, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import blocker, or a module half-removed
        return False


def missing_backend_message(environ: Mapping[str, str] | None = None) -> str | None:
    """What to do when the chosen Keras backend cannot be used here; None when it can (or no Keras)."""
    return None if not module_installed("keras") else _backend_problem(environ)


def _backend_problem(environ: Mapping[str, str] | None = None) -> str | None:
    backend, where = chosen_backend(environ)
    restart = ("then restart the kernel (Kernel > Restart Kernel)" if in_notebook()
               else "then run the command again")
    if backend not in LESSON_BACKENDS:
        if backend in OTHER_KERAS_BACKENDS:
            return None
        example = ("" if in_notebook() or where != "KERAS_BACKEND"
                   else " with export KERAS_BACKEND=tensorflow")
        return (f"{where} asks Keras for the backend {backend!r}, which Keras does not have: use "
                f"{', '.join(LESSON_BACKENDS)} (the lesson's default is tensorflow){example}, "
                f"{restart}.")
    module, title, packages, requirements = LESSON_BACKENDS[backend]
    if module_installed(module):
        return None
    return (f"Keras is set to the backend {backend!r} ({where}), but {title} is not installed "
            f"in this Python ({sys.executable}). Install it (the lesson's versions, "
            f"{requirements}) in a terminal:\n"
            f"    {sys.executable} -m pip install {' '.join(packages)}\n"
            f"{_choose_another(where)}; {restart}.")


class _KerasGuard(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes ``import keras`` raise :class:`KerasBackendError` while the backend is missing."""

    def find_spec(self, name, path=None, target=None):
        if name != "keras" and not name.startswith("keras."):
            return None
        message = _backend_problem()  # Keras itself is installed, or there is no guard
        if message is None:  # installed or chosen again since: let Keras import normally
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            return None
        self.message = message
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        raise KerasBackendError(self.message, name=module.__name__)


def guard_keras_import() -> bool:
    """Have ``import keras`` fail short when the chosen backend is missing; whether it will."""
    if "keras" in sys.modules or any(isinstance(f, _KerasGuard) for f in sys.meta_path):
        return False
    if missing_backend_message() is None:
        return False
    sys.meta_path.insert(0, _KerasGuard())
    return True


# --- TensorFlow's start-up notes -------------------------------------------------------------

# An absl log line: severity letter, date, time, thread, file:line] message.
_ABSL_LINE = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ [^\]\s]+:\d+\] ")
_ABSL_PREAMBLE = "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"


def drop_info_notes(text: str) -> str:
    """TensorFlow's stderr ``text`` without absl's INFO notes (and their continuation lines)."""
    kept, dropping = [], False
    for line in text.splitlines(keepends=True):
        match = _ABSL_LINE.match(line)
        if match:
            dropping = match.group(1) == "I"
        elif line.rstrip("\n") == _ABSL_PREAMBLE:
            dropping = True
        if not dropping:
            kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def fds_into(sink: io.StringIO, fds=(1, 2)):
    """What the file descriptors ``fds`` (C++ libraries' output) receive in the block, into ``sink``."""
    with tempfile.TemporaryFile() as caught:
        saved = []
        try:
            for fd in fds:
                try:
                    saved.append((fd, os.dup(fd)))
                    os.dup2(caught.fileno(), fd)
                except OSError:  # no such descriptor (some embedded interpreters)
                    pass
            yield sink
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            caught.seek(0)
            sink.write(caught.read().decode(errors="replace"))


@contextlib.contextmanager
def _stderr_without_info_notes():
    """File descriptor 2 caught, then written to the real stderr without the INFO notes."""
    sink = io.StringIO()
    try:
        with fds_into(sink, (2,)):
            yield
    finally:
        rest = drop_info_notes(sink.getvalue())
        if rest:
            os.write(2, rest.encode())


class _QuietLoader(importlib.abc.Loader):
    """TensorFlow's own loader, run with its start-up notes left out."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        try:
            with _stderr_without_info_notes():
                self.loader.exec_module(module)
        finally:  # the module keeps its real loader
            module.__loader__ = self.loader
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader


class _QuietTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow" or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _QuietLoader(spec.loader)
                return spec
        return None


def quiet_tensorflow_start() -> bool:
    """Leave TensorFlow's start-up INFO notes out of stderr; returns whether that was arranged."""
    if "tensorflow" in sys.modules or any(isinstance(f, _QuietTensorFlow) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _QuietTensorFlow())
    return True
