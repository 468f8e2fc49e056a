"""Is the node's NVIDIA driver new enough for the CUDA each installed framework was built for?
(A too-old driver makes a framework say only "no GPU".)"""

import importlib.util

# Minimum Linux driver per CUDA major version, for minor-version compatibility (NVIDIA's "CUDA
# Compatibility" guide, table "CUDA Toolkit 11.x, 12.x, and 13.x Driver Version Ranges").
MINIMUM_DRIVER = {11: 450, 12: 525, 13: 580}

# What to install instead when the driver is too old, per framework (pip, on Linux).
OLDER_BUILD = {
    "PyTorch": "a PyTorch built for CUDA 12, e.g. `pip install torch torchvision --index-url "
               "https://download.pytorch.org/whl/cu126` (pick versions that index has)",
    "TensorFlow": "an older `tensorflow[and-cuda]` built for the CUDA your driver supports "
                  "(TensorFlow's 'tested build configurations' table lists them)",
    "JAX": "`jax[cuda12]` instead of `jax[cuda13]`",
}


def _major(version: str | None) -> int | None:
    try:
        return int(str(version).split(".")[0])
    except (TypeError, ValueError):
        return None


def check(driver_version: str | None, build_cuda: dict[str, str | None]) -> list[str]:
    """Lines judging ``driver_version`` against each framework's CUDA build (None: a CPU build)."""
    driver = _major(driver_version)
    if driver is None:
        return []
    lines = []
    for framework, cuda in build_cuda.items():
        cuda_major = _major(cuda)
        if cuda_major is None:
            continue
        needed = MINIMUM_DRIVER.get(cuda_major)
        if needed is None:
            lines.append(f"{framework} was built for CUDA {cuda}: this lesson does not know its "
                         f"minimum driver; compare with NVIDIA's CUDA compatibility table.")
        elif driver >= needed:
            lines.append(f"Driver {driver_version} is new enough for {framework} "
                         f"(CUDA {cuda} needs driver {needed} or newer).")
        else:
            lines.append(f"DRIVER TOO OLD for {framework}: it was built for CUDA {cuda}, which "
                         f"needs driver {needed} or newer, and this node has {driver_version}. "
                         f"{framework} will see no GPU. Ask your site for a newer driver, or "
                         f"install {OLDER_BUILD.get(framework, 'a build for an older CUDA')}.")
    return lines


def build_cuda() -> dict[str, str | None]:
    """The CUDA version each installed framework was built for (None: a CPU build)."""
    builds: dict[str, str | None] = {}
    if importlib.util.find_spec("torch") is not None:
        import torch

        builds["PyTorch"] = torch.version.cuda
    if importlib.util.find_spec("tensorflow") is not None:
        import tensorflow as tf

        builds["TensorFlow"] = tf.sysconfig.get_build_info().get("cuda_version")
    for major in sorted(MINIMUM_DRIVER, reverse=True):  # JAX's CUDA comes as a plugin package
        if importlib.util.find_spec(f"jax_cuda{major}_plugin") is not None:
            builds["JAX"] = str(major)
            break
    return builds
