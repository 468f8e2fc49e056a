"""What only a compute node can show, run inside the job with the kernel's Python and settings:
GPUs, the driver against each framework's CUDA, the data read offline, a few training steps on each
device (a smoke test, not a measurement), and the kernel's settings.
"""

import errno
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

from gpulesson.classroom.check import limits, login
from gpulesson.classroom.check.report import fail, ok, run, skip

STEPS, BATCH = 4, 32  # a handful of steps: does it train at all, not how fast
NO_GPU_FIX = ("check that gpu_partition and gres_example (e.g. gpu:1) in _config.yml name GPU "
              "nodes and a GPU; if they do, ask the site's support why nvidia-smi finds no GPU there")
# One backend per process: Keras chooses its backend once, at import.
BACKEND_PROBE = ("import json\nfrom gpulesson.machine.devices import keras_device\n"
                 "print('CHECK ' + json.dumps(keras_device()))\n")


def nvidia_smi():
    """(item, driver version or None, GPU names)."""
    title = "GPUs (nvidia-smi)"

    def no_gpu(why):
        return fail(title, f"no GPU: {why}", NO_GPU_FIX), None, []

    if shutil.which("nvidia-smi") is None:
        return no_gpu("nvidia-smi is not on this node")
    result = run("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader")
    if result is None:
        return no_gpu("nvidia-smi did not answer in 60 s")
    rows = [line.split(", ") for line in result.stdout.strip().splitlines() if ", " in line]
    if result.returncode != 0 or not rows:
        said = (result.stdout + result.stderr).strip().splitlines()
        return no_gpu(said[-1] if said else "nvidia-smi lists none")
    names = [row[0] for row in rows]
    return ok(title, f"{len(names)} × {names[0]}, driver {rows[0][1]}"), rows[0][1], names


def backend_gpus():
    """One item per installed Keras backend: does it see the GPU?"""
    from gpulesson.machine.devices import BACKEND_TITLES, installed_backends

    items = []
    for backend in installed_backends():
        title = f"GPU in Keras ({BACKEND_TITLES[backend]})"
        result = run(sys.executable, "-c", BACKEND_PROBE, timeout=300,
                     env={**os.environ, "KERAS_BACKEND": backend})
        result = result or subprocess.CompletedProcess([], -1, "", "no answer in 300 s")
        found = [line[6:] for line in result.stdout.splitlines() if line.startswith("CHECK ")]
        if not found:
            tail = result.stderr.strip().splitlines()[-1:] or ["no answer"]
            items.append(fail(title, f"could not start: {tail[0]}", f"reinstall it: "
                              f"{sys.executable} -m pip install -r requirements/gpu.txt "
                              "-c requirements/constraints.txt"))
            continue
        device = json.loads(found[0])
        items.append(ok(title, f"{device['gpu_count']} GPU(s), {device['device']}")
                     if device["gpu_count"] else
                     fail(title, f"{BACKEND_TITLES[backend]} {device['backend_version']} sees no "
                          "GPU though nvidia-smi does", "install its CUDA build (requirements/"
                          "gpu.txt; see the driver line below)"))
    return items


def driver_items(driver: str):
    from gpulesson.machine import driver as driver_check

    title = "Driver and CUDA builds"
    try:
        lines = driver_check.check(driver, driver_check.build_cuda())
    except Exception as exc:  # a framework that fails to import: its own item says more
        return [skip(title, f"a framework did not load ({type(exc).__name__})")]
    if not lines:
        return [skip(title, "no framework here was built for CUDA")]
    bad = [line for line in lines if line.startswith("DRIVER TOO OLD")]
    if bad:
        return [fail(title, bad[0].split(". ")[0], bad[0].split(". ", 2)[-1])]
    return [ok(title, " ".join(lines))]


def data_item(settings):
    """The prepared file, validated and read (no network: nothing here downloads)."""
    from gpulesson.datasets.hdf5 import read_hdf5
    from gpulesson.errors import DataFileError

    title = "Data read on this node"
    try:
        x, y = read_hdf5(settings.hdf5_path, "train", 0, STEPS * BATCH)
    except (DataFileError, OSError) as exc:
        return fail(title, login.first_sentence(exc), "prepare the data on the login node in a "
                    f"folder the compute nodes mount: {settings.prepare_command()}"), None
    return ok(title, f"{settings.hdf5_path} ({len(x)} images read)"), (x, y)


def train_items(arrays, gpu_expected: bool, no_gpu_why: str):
    """A few steps of the lesson's CNN on the CPU and, where Keras sees one, on the GPU."""
    import numpy as np

    if arrays is None:  # the data item failed: train on random bytes, the smoke test still runs
        rng = np.random.default_rng(0)
        arrays = (rng.integers(0, 256, (STEPS * BATCH, 32, 32, 3), dtype=np.uint8),
                  rng.integers(0, 10, STEPS * BATCH).astype(np.uint8))
    import keras

    from gpulesson.lesson.core import build_cnn, compile_cnn
    from gpulesson.machine.devices import keras_device

    device_info = keras_device()
    backend = device_info["backend"]
    items = []
    for device, title in (("cpu", "Training steps on the CPU"), ("gpu:0", "Training steps on the GPU")):
        if device != "cpu" and not device_info["gpu_count"]:
            items.append(fail(title, f"no GPU for Keras ({backend})", NO_GPU_FIX)
                         if gpu_expected else skip(title, no_gpu_why))
            continue
        try:
            with keras.device(device):
                model = compile_cnn(build_cnn())
                history = model.fit(*arrays, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
            loss = history.history["loss"][-1]
        except Exception as exc:  # a smoke test: any failure is the finding
            items.append(fail(title, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}",
                              "run notebooks/05-cpu-vs-gpu.ipynb on this node to see the whole "
                              "error, and send it to the site's support"))
            continue
        items.append(ok(title, f"{STEPS} steps of the lesson's CNN with {backend}, loss "
                               f"{loss:.2f}") if math.isfinite(loss) else
                     fail(title, f"loss {loss}", "send this file to the site's support"))
    return items


def class_folder_item(site_value):
    """Can this node create and remove a file in the class folder, as a learner's job does?"""
    from gpulesson.classroom.share import CLASS_ENV, class_folder

    title = "Class folder written from this node"
    folder = class_folder(site_value)
    if folder is None:
        return skip(title, f"class_results is empty and {CLASS_ENV} unset: the class shares no runs")
    try:
        handle, probe = tempfile.mkstemp(prefix=".gpulesson-check-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return fail(title, f"{folder} is not there on this node", "ask the site's support "
                        "whether the compute nodes mount it, or set class_results in _config.yml "
                        "to a folder on a file system they mount (read-write)")
        return fail(title, f"cannot create a file in {folder} here ({exc.strerror})",
                    f"on the login node: chgrp CLASSGROUP {folder} && chmod 2775 {folder} (or "
                    f"chmod 1777 {folder}); if the login node's check of it passed, ask the site's "
                    "support whether the compute nodes mount it read-only")
    return ok(title, f"{folder} (a file created and removed)")


def inside_job(settings, *, gpu_expected: bool = True, where: str = "job", settings_item=None):
    """Every check of a compute node (``gpu_expected``: on the GPU partition)."""
    # On a laptop the kernel's settings were checked already, from its kernel.json.
    if settings_item is None and gpu_expected:
        settings_item = login.check_settings(
            os.environ, "the job runs with the settings of the kernel's spec: " + login.register_fix())
    # A laptop has no class folder (a cluster's job is given it, see submit).
    items = [settings_item, class_folder_item(login.site_values().get("class_results"))] \
        if gpu_expected else []
    gpu, driver, _ = nvidia_smi()
    items.append(gpu if driver or gpu_expected else
                 skip(gpu.name, "no NVIDIA GPU here: the lesson trains on the CPU"))
    items += backend_gpus() + driver_items(driver) if driver else [
        skip("GPU in Keras and driver", "no GPU (see nvidia-smi)")]
    data, arrays = data_item(settings)
    items.append(data)
    why = "no GPU (see nvidia-smi)" if gpu_expected else "no GPU here: the lesson trains on the CPU"
    items += train_items(arrays, gpu_expected and bool(driver), why)
    if gpu_expected:  # what a GPU session's job meets on a cluster: its partition, its modules
        items += [limits.partition_item(login.site_values(), os.environ),
                  limits.module_item(os.environ)]
    for item in items:
        item.where = where
    return items
