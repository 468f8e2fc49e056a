"""A free TCP port on 127.0.0.1 and the Chromium to drive, for the tests that start servers and a browser."""

import os
import shutil
import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path() -> str | None:
    """The Chromium to drive: $LESSON_CHROMIUM, else Debian's, else one on the PATH."""
    candidates = [os.environ.get("LESSON_CHROMIUM"), "/usr/bin/chromium",
                  "/usr/bin/chromium-browser", shutil.which("chromium"),
                  shutil.which("chromium-browser")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)
