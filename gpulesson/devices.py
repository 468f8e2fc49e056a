"""Which hardware and frameworks does this Python see?  ``python -m gpulesson.devices``

Prints the Python and Keras versions, the active Keras backend, the CPU and the number of cores
this process may use (on a cluster: the cores of the job, not of the node), and the GPUs each
installed framework (TensorFlow, JAX, PyTorch) can use. A framework that is not installed is
reported as such; CUDA start-up complaints on a machine without a GPU are not failures and are
summarised in one calm line instead of being printed raw.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import platform
import sys
import tempfile
import warnings

NO_GPU = "No GPU visible: training will run on the CPU."


# The Keras names of the lesson's two devices, by the short names its commands take. The CPU is
# "cpu", not "cpu:0": under "cpu:0", Keras 3.15's PyTorch backend cannot build a Dropout layer.
KERAS_DEVICES = {"cpu": "cpu", "gpu": "gpu:0"}


def keras_device_name(device: str) -> str:
    """``"cpu"`` or ``"gpu"`` -> the Keras device name (``"cpu"``, ``"gpu:0"``)."""
    if device not in KERAS_DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(KERAS_DEVICES)}")
    return KERAS_DEVICES[device]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _usable_cores() -> str:
    info = cpu_info()
    if hasattr(os, "sched_getaffinity"):
        return f"{info['cores_usable']} usable (of {info['cores_total']})"
    return f"{info['cores_total']}"


@contextlib.contextmanager
def _captured_output():
    """Collect what C++ libraries and Python print while a framework starts (fd and sys level)."""
    sink = io.StringIO()
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = []
        try:
            for fd in (1, 2):
                try:
                    saved.append((fd, os.dup(fd)))
                    os.dup2(tmp.fileno(), fd)
                except OSError:  # no such descriptor (some embedded interpreters)
                    pass
            with warnings.catch_warnings(), contextlib.redirect_stdout(sink), \
                    contextlib.redirect_stderr(sink):
                warnings.simplefilter("ignore")
                yield sink
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)
            tmp.seek(0)
            sink.write(tmp.read().decode(errors="replace"))


# Each probe returns (framework version, [(device id, GPU name as the framework reports it)]).
def _tensorflow_gpus() -> tuple[str, list[tuple[str, str]]]:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return tf.__version__, [
        (gpu.name, tf.config.experimental.get_device_details(gpu).get("device_name", "GPU")) for gpu in gpus
    ]


def _jax_gpus() -> tuple[str, list[tuple[str, str]]]:
    import jax

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    return jax.__version__, [(str(d), getattr(d, "device_kind", "GPU")) for d in gpus]


def _torch_gpus() -> tuple[str, list[tuple[str, str]]]:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return torch.__version__, [(f"cuda:{i}", torch.cuda.get_device_name(i)) for i in range(count)]


FRAMEWORKS = (
    ("TensorFlow", "tensorflow", _tensorflow_gpus),
    ("JAX", "jax", _jax_gpus),
    ("PyTorch", "torch", _torch_gpus),
)


def _framework_line(title: str, module: str, probe) -> tuple[str, int]:
    """One report line for a framework, and how many GPUs it sees."""
    if importlib.util.find_spec(module) is None:
        return f"{title}: not installed", 0
    with _captured_output() as output:
        try:
            version, gpus = probe()
        except Exception as exc:  # a broken install must not stop the report
            return f"{title}: installed but failed to start ({type(exc).__name__}: {exc})", 0
    if gpus:
        names = ", ".join(f"{ident} ({name})" for ident, name in gpus)
        return f"{title} {version}: {len(gpus)} GPU(s): {names}", len(gpus)
    note = ""
    if any(word in output.getvalue().lower() for word in ("cuda", "cuinit", "driver")):
        note = " (it looked for CUDA and found no usable NVIDIA GPU or driver; fine on a CPU machine)"
    return f"{title} {version}: no GPU{note}", 0


def _keras_line() -> str:
    if importlib.util.find_spec("keras") is None:
        return "Keras: not installed"
    with _captured_output():
        import keras
    return f"Keras {keras.__version__}, backend: {keras.backend.backend()}"


def report() -> str:
    """The device report as text (one fact per line)."""
    lines = [
        f"Python {platform.python_version()} ({sys.executable})",
        f"Platform: {platform.platform()}",
        f"CPU: {_cpu_model()}, cores: {_usable_cores()}",
        _keras_line(),
    ]
    n_gpus = 0
    for title, module, probe in FRAMEWORKS:
        line, count = _framework_line(title, module, probe)
        lines.append(line)
        n_gpus += count
    if n_gpus == 0:
        lines.append(NO_GPU)
    return "\n".join(lines)


def cpu_info() -> dict:
    """The CPU as data (for result records): model name, usable and total core counts."""
    total = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else total
    return {"cpu_model": _cpu_model(), "cores_usable": usable, "cores_total": total}


def _gpu_names(backend: str) -> tuple[str, list[str]]:
    """``(framework version, GPU names)`` as the framework behind a Keras backend reports them."""
    probes = {module: probe for _, module, probe in FRAMEWORKS}
    if backend not in probes:
        raise ValueError(f"no GPU probe for the Keras backend {backend!r}")
    version, gpus = probes[backend]()
    return version, [name for _, name in gpus]


def keras_device() -> dict:
    """The active Keras backend, its framework version and the device it computes on, as data.

    ``device`` is the name of the first GPU as the framework reports it (Keras uses that one),
    or ``"CPU"`` when the framework sees no GPU; ``gpu_count`` says how many it sees.
    """
    with _captured_output():  # CUDA start-up noise on CPU machines is not a failure
        import keras

        backend = keras.backend.backend()
        version, gpus = _gpu_names(backend)
    return {"backend": backend, "backend_version": version, "device": gpus[0] if gpus else "CPU",
            "gpu_count": len(gpus)}


def main() -> int:
    print(report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
