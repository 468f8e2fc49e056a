"""glibc malloc in one known mode for the PyTorch measurements of episode 9.

glibc's malloc moves its mmap threshold while a program runs: a large block that is freed
raises it, so later blocks of that size come from the heap instead of fresh pages. Which way a
PyTorch training goes depends on the order of its first allocations, and on a small machine the
same fit then runs in a fast or a slow mode by chance. Fixing the thresholds (``ENV``, read by
glibc when a process starts; :func:`fix` sets the same values in a process already running,
through ``mallopt``, which also stops the threshold from moving) gives every measurement one
mode. :func:`mode` says which mode this process has, for its records. Imports nothing heavy.
"""

import ctypes
import os
import platform

# The values of the lesson's measurements: a 32 MiB mmap threshold, a 256 MiB trim threshold.
ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "268435456"}
BACKENDS = ("torch",)  # the Keras backends measured in this mode
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_fixed_here = False


def environment(backend: str, env=None) -> dict:
    """``env`` (default: this process's) for a measuring process with ``backend``: with
    :data:`ENV` where that backend is measured in the fixed mode."""
    env = dict(os.environ if env is None else env)
    return {**env, **ENV} if backend in BACKENDS else env


def _from_environment() -> bool:
    return all(os.environ.get(name) == value for name, value in ENV.items())


def fix() -> bool:
    """Set :data:`ENV`'s thresholds in this process (glibc only); whether they are set."""
    global _fixed_here
    if _from_environment() or _fixed_here:
        return True
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    done = (libc.mallopt(_M_MMAP_THRESHOLD, int(ENV["MALLOC_MMAP_THRESHOLD_"])) == 1
            and libc.mallopt(_M_TRIM_THRESHOLD, int(ENV["MALLOC_TRIM_THRESHOLD_"])) == 1)
    _fixed_here = done
    return done


def fix_for(backend: str) -> bool:
    """:func:`fix` where ``backend`` is measured in the fixed mode; False elsewhere."""
    return fix() if backend in BACKENDS else False


def mode() -> dict:
    """The allocator mode of this process, as a record keeps it: ``{"malloc": {...}}`` with
    ``mode`` "fixed" (and how: "environment" or "mallopt") or "glibc default" (the moving
    threshold), and the environment's values as found."""
    found = {name: os.environ.get(name) for name in ENV}
    if _from_environment() or _fixed_here:
        how = {"mode": "fixed", "set_by": "environment" if _from_environment() else "mallopt",
               "mmap_threshold": int(ENV["MALLOC_MMAP_THRESHOLD_"]),
               "trim_threshold": int(ENV["MALLOC_TRIM_THRESHOLD_"])}
    else:
        how = {"mode": "glibc default" if platform.libc_ver()[0] == "glibc" else "not glibc"}
    return {"malloc": {**how, "environment": found}}
