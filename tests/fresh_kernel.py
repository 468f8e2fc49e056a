"""A fresh IPython kernel of the tests' own Python, for tests that run cells as a notebook
does: the kernel spec is written into a folder of the test, so that whoever runs the tests
keeps theirs."""

import contextlib
import json
import sys
from pathlib import Path

import pytest


@contextlib.contextmanager
def fresh_kernel(env: dict, folder: Path, timeout: float = 120):
    """A started kernel's client, ready; the kernel is shut down on leaving."""
    jupyter_client = pytest.importorskip("jupyter_client")
    from jupyter_client.kernelspec import KernelSpecManager

    spec = folder / "kernels" / "lesson-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "lesson test", "language": "python"}))
    manager = jupyter_client.KernelManager(
        kernel_name="lesson-test",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(folder / "kernels")]))
    manager.start_kernel(env=env)
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=timeout)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
