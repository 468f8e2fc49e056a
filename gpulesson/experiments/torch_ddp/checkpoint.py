"""Checkpoints that are whole or absent: written to a temporary file, then renamed.

A job killed while it writes leaves at most a stray ``.tmp`` file; the checkpoint before it
is untouched. ``os.replace`` is atomic on one file system, and the data are on disk
(``fsync``) before the new name points to them.
"""

from __future__ import annotations

import os
from pathlib import Path

CHECKPOINT = "checkpoint.pt"


def save_atomically(obj, path) -> Path:
    """``torch.save(obj)`` to ``path`` so that ``path`` is never half-written."""
    import torch

    path = Path(path)
    partial = path.with_name(f".{path.name}.tmp")
    with open(partial, "wb") as f:
        torch.save(obj, f)
        f.flush()
        os.fsync(f.fileno())
    partial.replace(path)
    return path


def load_checkpoint(path):
    """The checkpoint at ``path``, or None if there is none; ValueError if it is unreadable."""
    import torch

    path = Path(path)
    if not path.exists():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a file that is not a checkpoint, whatever torch says about it
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"{path} is not a readable checkpoint ({type(exc).__name__}: "
                         f"{first_line}); move it away to start the run again from epoch 1, "
                         "or restore the file") from None
