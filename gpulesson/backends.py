"""Is the Keras backend that Keras will use installed? Checked before Keras is imported.

Keras takes its backend from ``KERAS_BACKEND``, else from ``keras.json`` in ``$KERAS_HOME`` or
``~/.keras``, else TensorFlow. When that backend's framework is not installed (``KERAS_BACKEND=jax``
in an environment made by ``make lab``, which has TensorFlow only), ``import keras`` fails with a
traceback of dozens of lines, again in every cell that imports it. :func:`guard_keras_import`
(called when :mod:`gpulesson` is imported, which every notebook does first) makes that import
fail with one short message instead: which backend, where it was chosen, and how to install it
or choose another. It does nothing when the backend is installed or Keras is imported already.

The versions are those of requirements/ (tests/test_learner_errors.py checks that they agree).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
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


def _choose_another(where: str) -> str:
    if where == "KERAS_BACKEND":
        return ("or use the lesson's default backend: %env KERAS_BACKEND=tensorflow in the "
                "notebook's first cell (export KERAS_BACKEND=tensorflow in a terminal)")
    return f"or set KERAS_BACKEND=tensorflow, or change the backend in {where.split(' (')[0]}"


def missing_backend_message(environ: Mapping[str, str] | None = None) -> str | None:
    """What to do when the chosen Keras backend cannot be used here; None when it can."""
    backend, where = chosen_backend(environ)
    restart = "then restart the kernel (Kernel > Restart Kernel)"
    if backend not in LESSON_BACKENDS:
        if backend in OTHER_KERAS_BACKENDS:
            return None
        return (f"{where} asks Keras for the backend {backend!r}, which Keras does not have: use "
                f"{', '.join(LESSON_BACKENDS)} (the lesson's default is tensorflow), "
                f"{restart}.")
    module, title, packages, requirements = LESSON_BACKENDS[backend]
    if importlib.util.find_spec(module) is not None:
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
        message = missing_backend_message()
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
    """Have ``import keras`` fail with the short message when the chosen backend is missing;
    returns whether the guard was installed (not when Keras is imported already)."""
    if "keras" in sys.modules or any(isinstance(f, _KerasGuard) for f in sys.meta_path):
        return False
    if missing_backend_message() is None:
        return False
    sys.meta_path.insert(0, _KerasGuard())
    return True
