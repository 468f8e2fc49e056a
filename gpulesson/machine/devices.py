"""Which hardware and frameworks does this Python see?  ``python -m gpulesson.machine.devices``

Prints the Python and Keras versions, the active Keras backend, the CPU and the number of cores
this process may use (on a cluster: the cores of the job, not of the node), and the GPUs each
installed framework (TensorFlow, JAX, PyTorch) can use. A framework that is not installed is
reported as such; CUDA start-up complaints on a machine without a GPU are not failures and are
summarised in one calm line instead of being printed raw.
"""

import contextlib
import functools
import importlib.metadata
import importlib.util
import io
import os
import platform
import sys
import warnings

from gpulesson.machine.backends import fds_into, missing_backend_message, module_installed

NO_GPU = "No GPU visible: training will run on the CPU."
NO_KERAS = "Keras cannot start, so no training will run here until that is fixed (see above)."


# Keras' names of the lesson's two devices ("cpu", not "cpu:0": Keras 3.15's PyTorch backend
# cannot build a Dropout layer under "cpu:0").
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


@contextlib.contextmanager
def _captured_output():
    """Collect what C++ libraries and Python print while a framework starts (fd and sys level)."""
    sink = io.StringIO()
    with fds_into(sink), warnings.catch_warnings(), contextlib.redirect_stdout(sink), \
            contextlib.redirect_stderr(sink):
        warnings.simplefilter("ignore")
        yield sink


# Each probe: (framework version, [each GPU it can use: its "id" and the GPU_FIELDS it knows]).
def _tensorflow_gpus() -> tuple[str, list[dict]]:
    import tensorflow as tf

    runtime = tf.sysconfig.get_build_info().get("cuda_version")
    gpus = []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        gpus.append({"id": gpu.name, "name": details.get("device_name"), "cuda_runtime_version": runtime,
                     "compute_capability": _capability(details.get("compute_capability"))})
    return tf.__version__, gpus


def _jax_gpus() -> tuple[str, list[dict]]:
    import jax

    gpus, runtime = [d for d in jax.devices() if d.platform == "gpu"], None
    if gpus:
        with contextlib.suppress(Exception):  # jaxlib's CUDA plugin, a private module
            from jax._src.lib import cuda_versions

            runtime = _cuda_version(cuda_versions.cuda_runtime_get_version())
    return jax.__version__, [
        {"id": str(d), "name": getattr(d, "device_kind", None), "cuda_runtime_version": runtime,
         "compute_capability": _capability(getattr(d, "compute_capability", None))} for d in gpus]


def _torch_gpus() -> tuple[str, list[dict]]:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    gpus = []
    for i in range(count):
        properties = torch.cuda.get_device_properties(i)
        gpus.append({"id": f"cuda:{i}", "name": properties.name, "cuda_runtime_version": torch.version.cuda,
                     "compute_capability": _capability(torch.cuda.get_device_capability(i)),
                     "memory_total_mib": properties.total_memory // 2**20})
    return torch.__version__, gpus


FRAMEWORKS = (
    ("TensorFlow", "tensorflow", _tensorflow_gpus),
    ("JAX", "jax", _jax_gpus),
    ("PyTorch", "torch", _torch_gpus),
)
# Keras names each backend after the framework's module.
KERAS_BACKENDS = tuple(module for _, module, _ in FRAMEWORKS)
BACKEND_TITLES = {module: title for title, module, _ in FRAMEWORKS}


backend_installed = module_installed  # a Keras backend is named after its framework's module


def installed_backends() -> list[str]:
    """The Keras backends whose framework is installed, in the order of :data:`FRAMEWORKS`."""
    return [b for b in KERAS_BACKENDS if backend_installed(b)]


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
        names = ", ".join(f"{gpu['id']} ({gpu['name'] or 'GPU'})" for gpu in gpus)
        return f"{title} {version}: {len(gpus)} GPU(s): {names}", len(gpus)
    note = ""
    if any(word in output.getvalue().lower() for word in ("cuda", "cuinit", "driver")):
        note = " (it looked for CUDA and found no usable NVIDIA GPU or driver; fine on a CPU machine)"
    return f"{title} {version}: no GPU{note}", 0


def _keras_line() -> str:
    if importlib.util.find_spec("keras") is None:
        return "Keras: not installed"
    # A backend chosen but not installed: said before importing Keras (a long traceback).
    problem = "keras" not in sys.modules and missing_backend_message()
    if problem:
        return f"Keras {importlib.metadata.version('keras')}: cannot start. {problem}"
    with _captured_output():
        import keras
    return f"Keras {keras.__version__}, backend: {keras.backend.backend()}"


def report() -> str:
    """The device report as text (one fact per line)."""
    keras_line, cpu = _keras_line(), cpu_info()
    cores = (f"{cpu['cores_usable']} usable (of {cpu['cores_total']})"
             if hasattr(os, "sched_getaffinity") else cpu["cores_total"])
    lines = [f"Python {platform.python_version()} ({sys.executable})",
             f"Platform: {platform.platform()}", f"CPU: {cpu['cpu_model']}, cores: {cores}", keras_line]
    n_gpus = 0
    for title, module, probe in FRAMEWORKS:
        line, count = _framework_line(title, module, probe)
        lines.append(line)
        n_gpus += count
    driver = _nvml_gpu().get("driver_version")
    if driver:  # an NVIDIA driver is here: is it new enough for what is installed?
        from gpulesson.machine import driver as driver_check

        with _captured_output():
            builds = driver_check.build_cuda()
        lines.extend(driver_check.check(driver, builds))
    if ": cannot start." in keras_line:
        lines.append(NO_KERAS)
    elif n_gpus == 0:
        lines.append(NO_GPU)
    else:
        line = precision_line()
        if line:
            lines.append(line)
    return "\n".join(lines)


def cpu_info() -> dict:
    """The CPU as data (for result records): model name, usable and total core counts."""
    total = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else total
    return {"cpu_model": _cpu_model(), "cores_usable": usable, "cores_total": total}


def _probe(backend: str) -> tuple[str, list[dict]]:
    """``(framework version, GPUs)`` as the framework behind a Keras backend reports them."""
    probes = {module: probe for _, module, probe in FRAMEWORKS}
    if backend not in probes:
        raise ValueError(f"no GPU probe for the Keras backend {backend!r}")
    return probes[backend]()


def keras_device() -> dict:
    """The active Keras backend, its version and its device (first GPU, else ``"CPU"``), as data."""
    backend = _active_backend()
    with _captured_output():  # CUDA start-up noise on CPU machines is not a failure
        version, gpus = _probe(backend)
    return {"backend": backend, "backend_version": version,
            "device": (gpus[0]["name"] or "GPU") if gpus else "CPU",
            "gpu_count": len(gpus)}


# --- For records: the GPU's facts and the float32 precision each framework's setting asks for --

CPU_PRECISION = {"matmul": "float32", "convolution": "float32"}  # the CPU computes in float32
TF32_CAPABILITY = (8, 0)  # the first GPUs with TF32 tensor cores (Ampere)
GPU_FIELDS = ("name", "driver_version", "cuda_driver_version", "cuda_runtime_version",
              "compute_capability", "memory_total_mib")


def _capability(value) -> str | None:
    """A compute capability as ``"8.0"``, from ``(8, 0)``, ``"8.0"`` or ``"8"``."""
    if value is None or value == "":
        return None
    if isinstance(value, (tuple, list)):
        return ".".join(str(int(v)) for v in value)
    text = str(value)
    return text if "." in text else f"{text}.0"


def _cuda_version(number) -> str | None:
    """CUDA's version number (12040) as text ("12.4")."""
    if not number:
        return None
    return f"{int(number) // 1000}.{int(number) % 1000 // 10}"


def _nvml_gpu() -> dict:
    """CUDA's first GPU as NVML (``nvidia-ml-py``) sees it; ``{}`` when NVML cannot answer."""
    from gpulesson.machine.energy import EnergyUnavailable, _nvml_handle

    try:
        nvml, handle = _nvml_handle()
    except EnergyUnavailable:
        return {}
    try:
        facts = {}
        for key, read in (
                ("name", lambda: nvml.nvmlDeviceGetName(handle)),
                ("driver_version", nvml.nvmlSystemGetDriverVersion),
                ("cuda_driver_version",
                 lambda: _cuda_version(nvml.nvmlSystemGetCudaDriverVersion())),
                ("compute_capability",
                 lambda: _capability(nvml.nvmlDeviceGetCudaComputeCapability(handle))),
                ("memory_total_mib",
                 lambda: nvml.nvmlDeviceGetMemoryInfo(handle).total // 2**20)):
            try:
                value = read()
                facts[key] = value.decode() if isinstance(value, bytes) else value
            except Exception:  # this field not readable here (an old driver, a MIG slice)
                facts[key] = None
        return facts
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def gpu_facts(backend: str | None = None) -> dict | None:
    """The Keras backend's GPU as :data:`GPU_FIELDS` (no host name or serial); None without one."""
    facts = _gpu_facts(backend or _active_backend())
    return None if facts is None else dict(facts)


@functools.cache  # asked once a process: a sweep writes hundreds of records
def _gpu_facts(backend: str) -> dict | None:
    with _captured_output():
        gpus = _probe(backend)[1]
    if not gpus:
        return None
    framework = {k: v for k, v in gpus[0].items() if k != "id"}
    nvml = _nvml_gpu()
    if nvml.get("name") and framework.get("name") and nvml["name"] != framework["name"]:
        # NVML counted another GPU than CUDA's first: only the system's facts hold for it.
        nvml = {k: nvml.get(k) for k in ("driver_version", "cuda_driver_version")}
    facts = {key: None for key in GPU_FIELDS}
    facts.update({k: v for k, v in framework.items() if v is not None})
    facts.update({k: v for k, v in nvml.items() if v is not None})
    return facts


def _tf32(mode: str, capability: str | None) -> str:
    """``mode`` as the GPU applies it: TF32 and bfloat16 need compute capability 8.0."""
    if mode in ("tf32", "bf16", "bf16x3") and capability is not None:
        major, minor = (int(part) for part in capability.split(".")[:2])
        if (major, minor) < TF32_CAPABILITY:
            return "float32"
    return mode


def _backend_precision(backend: str) -> tuple[str, str, str]:
    """``(matmul, convolution, setting)`` as the backend's own setting asks for them."""
    if backend == "tensorflow":
        import tensorflow as tf

        enabled = tf.config.experimental.tensor_float_32_execution_enabled()
        mode = "tf32" if enabled else "float32"
        return mode, mode, f"tensor_float_32_execution_enabled={enabled}"
    if backend == "jax":
        import jax

        value = jax.config.jax_default_matmul_precision
        try:
            # DEFAULT and HIGH use TF32 on a GPU that has it, HIGHEST float32 (jax.lax.Precision).
            level = jax.lax.Precision(value)
            mode = "float32" if level == jax.lax.Precision.HIGHEST else "tf32"
        except (ValueError, TypeError):  # an algorithm preset: recorded as JAX names it
            mode = str(value).lower()
        return mode, mode, f"jax_default_matmul_precision={value}"
    if backend == "torch":
        import torch

        matmul_precision = torch.get_float32_matmul_precision()
        allow_matmul = torch.backends.cuda.matmul.allow_tf32
        allow_conv = torch.backends.cudnn.allow_tf32
        matmul = ("bf16" if matmul_precision == "medium" else
                  "tf32" if allow_matmul or matmul_precision == "high" else "float32")
        return (matmul, "tf32" if allow_conv else "float32",
                f"float32_matmul_precision={matmul_precision}, matmul.allow_tf32={allow_matmul}, "
                f"cudnn.allow_tf32={allow_conv}")
    raise ValueError(f"no precision probe for the Keras backend {backend!r}")


def float32_precision(backend: str | None = None, gpu: dict | None = None) -> dict:
    """How float32 matmuls and convolutions run on ``gpu``: the backend's setting and the GPU's capability."""
    if gpu is None:
        return {**CPU_PRECISION, "setting": "CPU"}
    if os.environ.get("NVIDIA_TF32_OVERRIDE") == "0":
        # cuBLAS and cuDNN then compute float32 in float32 whatever a framework asks; kernels
        # that XLA or Triton generate (JAX's fused matrix products) do not read it.
        return {**CPU_PRECISION,
                "setting": "NVIDIA_TF32_OVERRIDE=0 (cuBLAS and cuDNN only, not kernels XLA or "
                           "Triton generate)"}
    with _captured_output():
        matmul, convolution, setting = _backend_precision(backend or _active_backend())
    capability = gpu.get("compute_capability")
    return {"matmul": _tf32(matmul, capability), "convolution": _tf32(convolution, capability),
            "setting": setting}


def precision_line(backend: str | None = None) -> str | None:
    """One report line: the GPU's float32 precision; None without a GPU or without Keras."""
    if importlib.util.find_spec("keras") is None:
        return None
    try:
        backend = backend or _active_backend()
        gpu = gpu_facts(backend)
        if gpu is None:
            return None
        precision = float32_precision(backend, gpu)
    except Exception as exc:  # the report goes on without it
        return f"float32 precision: could not be read ({type(exc).__name__}: {exc})"
    return (f"float32 on the GPU ({backend}): matmul {precision['matmul']}, convolution "
            f"{precision['convolution']} ({precision['setting']}; compute capability "
            f"{gpu['compute_capability'] or 'unknown'}, driver {gpu['driver_version'] or '?'}, "
            f"CUDA {gpu['cuda_runtime_version'] or '?'})")


def _active_backend() -> str:
    with _captured_output():
        import keras

        return keras.backend.backend()


def main(argv=None) -> int:
    """Print the report; exit status 1 when Keras cannot start (nothing would train), else 0."""
    import argparse

    argparse.ArgumentParser(
        prog="python -m gpulesson.machine.devices", description=__doc__.split("\n\n")[1],
        epilog="Exit status 0 when Keras can start (with or without a GPU), 1 when it cannot."
    ).parse_args(argv)
    text = report()
    print(text)
    return 1 if NO_KERAS in text else 0


if __name__ == "__main__":
    raise SystemExit(main())
