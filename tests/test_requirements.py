"""Pinned dependencies: the pip requirements and environment.yml agree."""

import re
from pathlib import Path

import yaml
from conftest import ROOT

REQ = ROOT / "requirements"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]+\])?==(?P<version>[^\s;]+)")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines, base: Path) -> dict:
    """{package: version} of requirement lines, following '-r' includes. Every line must be pinned."""
    result = {}
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith(("--editable", "-e ")):
            continue
        if line.startswith("-r "):
            include = base / line[3:].strip()
            result.update(pins(include.read_text().splitlines(), include.parent))
            continue
        match = PIN.match(line)
        assert match, f"not pinned with '==': {raw!r}"
        result[norm(match["name"])] = match["version"]
    return result


def req(name: str) -> dict:
    return pins((REQ / name).read_text().splitlines(), REQ)


def locked() -> dict:
    """{package: version} of the full lock, requirements/constraints.txt."""
    lines = (REQ / "constraints.txt").read_text().splitlines()
    return pins([line for line in lines if not line.startswith("#")], REQ)


def test_environment_yml_matches_the_gpu_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    assert "python=3.11" in deps
    pip_lines = next(d["pip"] for d in deps if isinstance(d, dict))
    assert pins(pip_lines, ROOT) == req("gpu.txt")
    assert "--editable ." in pip_lines  # the helper package


# JAX's CUDA build for GPU nodes: the plugin packages that jax[cuda12] pulls in, pinned too.
JAX_CUDA = ("jax-cuda12-plugin", "jax-cuda12-pjrt")


def test_cpu_and_gpu_builds_have_the_same_versions():
    cpu, gpu = req("cpu.txt"), req("gpu.txt")
    assert cpu.pop("tensorflow-cpu") == cpu.pop("tensorflow") == gpu.pop("tensorflow")
    for name in ("jax", "jaxlib", *JAX_CUDA):
        gpu.pop(name)
    assert cpu == gpu


def test_gpu_nodes_get_the_cuda_build_of_the_tested_jax():
    """The multi-GPU episode runs on JAX: GPU nodes get JAX's CUDA build, in the version the
    tests run (backends.txt, the CPU build)."""
    backends, gpu = req("backends.txt"), req("gpu.txt")
    version = backends["jax"]
    assert backends == {"jax": version, "jaxlib": version}
    for name in ("jax", "jaxlib", *JAX_CUDA):
        assert gpu.get(name) == version, f"{name} in gpu.txt: {gpu.get(name)}, tested: {version}"
    lines = (REQ / "gpu.txt").read_text()
    assert f"jax[cuda12]=={version}" in lines, "the extra brings JAX's CUDA libraries from PyPI"
    # TensorFlow's CUDA wheels are CUDA 12 ones: JAX must be the build for the same CUDA.
    assert "tensorflow[and-cuda]" in lines and not re.search(r"jax[-_]cuda(?!12)\d+", lines)


def test_lock_agrees_with_the_direct_pins():
    lock = locked()
    for name, version in req("dev.txt").items():
        if name in lock:
            assert lock[name] == version, f"{name}: {version} in requirements, {lock[name]} in the lock"
    assert {"keras", "h5py", "numpy", "jupyter-book", "sphinx-lesson"} <= lock.keys()


def test_pins_parser_catches_unpinned_lines(tmp_path):
    import pytest

    with pytest.raises(AssertionError, match="not pinned"):
        pins(["numpy>=2"], tmp_path)


def test_the_site_environment_is_small_and_has_the_locked_versions():
    site = req("site.txt")
    lock = locked()
    for name, version in site.items():
        assert lock.get(name) == version, f"{name}: {version} in site.txt, {lock.get(name)} in the lock"
    assert {"jupyter-book", "sphinx-lesson", "pyyaml"} <= site.keys()
    # make site must not install the frameworks: the site executes no notebook.
    heavy = {"tensorflow", "tensorflow-cpu", "keras", "torch", "torchvision", "jax", "jaxlib", "h5py"}
    assert not heavy & site.keys()


def test_a_gpu_nodes_wheels_are_the_locked_versions_and_cover_what_recording_needs():
    """requirements/node.txt: what travels to a GPU node as wheels (README.md)."""
    node = req("node.txt")
    lock = locked()
    for name, version in node.items():
        assert lock.get(name) == version, f"{name}: {version} for the node, {lock.get(name)} in the lock"
    # Keras, the notebook-executing stack, and NVML for the records' driver version.
    assert {"keras", "nbclient", "nbformat", "ipykernel", "jupytext", "nvidia-ml-py"} <= node.keys()
    assert not {"tensorflow", "jax", "torch"} & node.keys(), "the node has its own frameworks"


# What a learner's laptop must not get from make lab: test tools, the site's tools, the other
# frameworks and CUDA libraries (nvidia-ml-py, which reads the GPU's driver version, is small).
NOT_FOR_THE_LAB = {"pytest", "nbval", "ruff", "codespell", "pre-commit", "playwright",
                   "jupyter-book", "sphinx-lesson", "torch", "torchvision", "triton", "jax",
                   "jaxlib", "tensorflow-cpu[and-cuda]"}


def test_the_lab_environment_has_what_the_notebooks_need_and_nothing_heavy():
    """requirements/lab.txt (make lab): the CPU build of TensorFlow and the notebooks' packages,
    in the versions of the other files, and no test tools, PyTorch, JAX or CUDA libraries."""
    lab = req("lab.txt")
    assert lab == req("cpu.txt"), "the lab installs exactly the laptop's pins"
    assert {"tensorflow-cpu", "keras", "h5py", "numpy", "matplotlib", "jupyterlab",
            "ipykernel", "scikit-learn"} <= lab.keys()
    assert not NOT_FOR_THE_LAB & lab.keys()
    assert not [name for name in lab if name.startswith("nvidia-") and name != "nvidia-ml-py"]
    text = "".join((REQ / name).read_text() for name in ("lab.txt", "cpu.txt", "common.txt"))
    assert "[and-cuda]" not in text and "-r dev.txt" not in text and "-r torch.txt" not in text
    # The same versions as the full environment and the GPU nodes.
    lock = locked()
    for name, version in lab.items():
        if name in lock:
            assert lock[name] == version, f"{name}: {version} in lab.txt, {lock[name]} in the lock"
    gpu = req("gpu.txt")
    for name, version in lab.items():
        if name in gpu:
            assert gpu[name] == version, f"{name}: {version} in lab.txt, {gpu[name]} in gpu.txt"


def test_the_installer_is_pinned_as_in_the_lock():
    """uv (the Makefile's installer) is pinned, to the version 'make lock' writes."""
    lock = locked()
    assert req("installer.txt") == {"uv": lock["uv"]}
