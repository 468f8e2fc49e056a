"""What a GPU record says about its hardware and float32 precision (gpulesson.machine.devices,
gpulesson.records.results.device_facts). No GPU here: NVML and the frameworks' answers are stood in for
where a GPU would give them; the frameworks' own precision settings are asked for real."""

import subprocess
import sys
import types

import pytest
from conftest import ROOT

from gpulesson.machine import devices
from gpulesson.records import results


class FakeNVML(types.ModuleType):
    """pynvml as a node with two GPUs answers it."""

    NAMES = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB")

    def __init__(self):
        super().__init__("pynvml")
        self.shut = False

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return 1 if uuid.endswith("1") else 0

    def nvmlDeviceGetName(self, handle):
        return self.NAMES[handle].encode()  # older pynvml answers bytes

    def nvmlSystemGetDriverVersion(self):
        return "580.95.05"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return (9, 0) if handle == 0 else (8, 0)

    def nvmlDeviceGetMemoryInfo(self, handle):
        raise RuntimeError("not readable on this slice")


@pytest.fixture
def nvml(monkeypatch):
    fake = FakeNVML()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    devices._gpu_facts.cache_clear()
    yield fake
    devices._gpu_facts.cache_clear()


def test_versions_and_capabilities_are_written_one_way():
    assert devices._cuda_version(12040) == "12.4" and devices._cuda_version(13000) == "13.0"
    assert devices._cuda_version(0) is None
    assert devices._capability((9, 0)) == devices._capability("9.0") == devices._capability("9") == "9.0"


def test_nvml_reads_cudas_first_gpu_and_a_field_it_cannot_read_stays_empty(nvml, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    facts = devices._nvml_gpu()
    assert facts == {"name": "NVIDIA A100-SXM4-40GB", "driver_version": "580.95.05",
                     "cuda_driver_version": "13.0", "compute_capability": "8.0",
                     "memory_total_mib": None}
    assert nvml.shut, "NVML is shut down after reading"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-0")
    assert devices._nvml_gpu()["name"] == "NVIDIA H100 80GB HBM3"


def test_without_nvml_the_facts_are_empty(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert devices._nvml_gpu() == {}


def test_gpu_facts_join_the_framework_and_nvml(nvml, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    framework = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
                 "cuda_runtime_version": "12.9"}
    monkeypatch.setattr(devices, "_probe", lambda backend: ("1.0", [{"id": "gpu:0", **framework}]))
    facts = devices.gpu_facts("jax")
    assert set(facts) == set(devices.GPU_FIELDS)
    assert facts["driver_version"] == "580.95.05" and facts["cuda_runtime_version"] == "12.9"
    assert facts["cuda_driver_version"] == "13.0" and facts["compute_capability"] == "9.0"
    # NVML's first GPU is another than the framework's: only the system's facts are kept.
    devices._gpu_facts.cache_clear()
    framework["name"] = "NVIDIA H200"
    facts = devices.gpu_facts("jax")
    assert facts["name"] == "NVIDIA H200" and facts["driver_version"] == "580.95.05"
    assert facts["memory_total_mib"] is None
    devices._gpu_facts.cache_clear()
    monkeypatch.setattr(devices, "_probe", lambda backend: ("1.0", []))
    assert devices.gpu_facts("jax") is None


H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
V100 = {"name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}


def test_tensorflow_runs_float32_in_tf32_on_a_gpu_that_has_it_unless_told_not_to(monkeypatch):
    import tensorflow as tf

    assert devices.float32_precision("tensorflow", None)["matmul"] == "float32", "the CPU"
    on_h100 = devices.float32_precision("tensorflow", H100)
    assert (on_h100["matmul"], on_h100["convolution"]) == ("tf32", "tf32")
    assert devices.float32_precision("tensorflow", V100)["matmul"] == "float32", "no TF32 before Ampere"
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        assert devices.float32_precision("tensorflow", H100)["convolution"] == "float32"
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(True)
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    assert devices.float32_precision("tensorflow", H100)["matmul"] == "float32"


def _in_a_process(code: str) -> str:
    """PyTorch and JAX asked in a process of their own (TensorFlow is loaded in this one)."""
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                          text=True, timeout=300).stdout.strip()


def test_jax_and_pytorch_say_what_their_settings_ask_for():
    pytest.importorskip("jax")
    code = ("from gpulesson.machine import devices; import jax; h = {'compute_capability': '9.0'}\n"
            "print(devices.float32_precision('jax', h)['matmul'])\n"
            "jax.config.update('jax_default_matmul_precision', 'highest')\n"
            "print(devices.float32_precision('jax', h)['matmul'])")
    assert _in_a_process(code).split() == ["tf32", "float32"]
    pytest.importorskip("torch")
    code = ("from gpulesson.machine import devices; import torch; h = {'compute_capability': '9.0'}\n"
            "p = devices.float32_precision('torch', h); print(p['matmul'], p['convolution'])\n"
            "torch.set_float32_matmul_precision('high')\n"
            "print(devices.float32_precision('torch', h)['matmul'])")
    # PyTorch's defaults: float32 matmuls in float32, cuDNN convolutions in TF32.
    assert _in_a_process(code).split() == ["float32", "tf32", "tf32"]


def test_every_record_says_its_precision_and_a_gpu_record_its_gpu(monkeypatch):
    cpu = results.make_record("cnn", data="synthetic", device_kind="cpu", device="CPU")
    assert cpu["float32_precision"] == {"matmul": "float32", "convolution": "float32", "setting": "CPU"}
    assert "gpu" not in cpu
    facts = {key: None for key in devices.GPU_FIELDS} | H100 | {"driver_version": "580.95.05"}
    monkeypatch.setattr(devices, "gpu_facts", lambda backend=None: dict(facts))
    gpu = results.make_record("cnn", data="synthetic", device_kind="gpu", device="NVIDIA H100")
    assert gpu["gpu"] == facts and gpu["float32_precision"]["matmul"] == "tf32"
    # Records made elsewhere (another framework's own environment) are left as they come.
    other = results.make_record("x", data="synthetic", environment={"backend": "pytorch"},
                                device_kind="gpu")
    assert "float32_precision" not in other
    assert results.ran_on_gpu({"gpu_count": 1, "device": "NVIDIA H100"})
    assert not results.ran_on_gpu({"gpu_count": 1, "device": "CPU"})


def test_the_pytorch_settings_the_episodes_teach_exist_with_the_defaults_they_state():
    """Episodes 6 and 8 teach PyTorch's ``fp32_precision`` settings (PyTorch >= 2.9, in
    torch/backends/cuda/__init__.py and torch/backends/cudnn/__init__.py) with their defaults,
    and that cuDNN times its convolution algorithms only with ``cudnn.benchmark = True``."""
    pytest.importorskip("torch")
    code = ("import torch; b = torch.backends\n"
            "print(b.cudnn.conv.fp32_precision, b.cuda.matmul.fp32_precision, b.cudnn.benchmark,"
            " torch.get_float32_matmul_precision(), b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32)")
    assert _in_a_process(code).split() == ["tf32", "none", "False", "highest", "True", "False"]
    episodes = ROOT / "_episodes"
    six = (episodes / "06-why-gpus-are-fast.md").read_text(encoding="utf-8")
    assert '`torch.backends.cudnn.conv.fp32_precision` is `"tf32"`' in six
    assert '`torch.backends.cuda.matmul.fp32_precision` is `"none"`' in six
    eight = (episodes / "08-pytorch.md").read_text(encoding="utf-8")
    assert "torch.backends.cudnn.benchmark = True" in eight


def test_pytorch_threads_follow_the_cores_the_process_may_use():
    """Episode 8: PyTorch 2.15's default intra-op threads are capped by the CPU affinity."""
    pytest.importorskip("torch")
    import os

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs Linux and two cores to restrict the process to one")
    one = min(os.sched_getaffinity(0))
    code = (f"import os; os.sched_setaffinity(0, {{{one}}})\n"
            "import torch; print(torch.get_num_threads())")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    found = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                           text=True, timeout=300, env=env).stdout.strip()
    assert found == "1"
    eight = (ROOT / "_episodes" / "08-pytorch.md").read_text(encoding="utf-8")
    assert "CPU affinity" in eight and "cpuinfo" in eight
