"""The device report and the image grid."""

import os
import subprocess
import sys

import numpy as np
import pytest

from gpulesson.datasets.synthetic import SYNTHETIC_CLASS_NAMES, make_synthetic
from gpulesson.machine import devices
from gpulesson.records.plots import show_images


@pytest.fixture(scope="module")
def text():
    return devices.report()


def test_report_names_python_cpu_keras_and_backend(text):
    import keras

    assert f"Keras {keras.__version__}, backend: {keras.backend.backend()}" in text
    assert sys.version.split()[0] in text
    cores = len(os.sched_getaffinity(0))
    assert f"cores: {cores} usable" in text
    assert "CPU:" in text


def test_report_covers_every_framework(text):
    for title, module, _ in devices.FRAMEWORKS:
        line = next(line for line in text.splitlines() if line.startswith(title))
        try:
            version = __import__(module).__version__
        except ImportError:
            assert line == f"{title}: not installed"
        else:
            assert line.startswith(f"{title} {version}:")
    assert "Traceback" not in text and "cuInit" not in text


def test_no_gpu_line_matches_what_tensorflow_sees(text):
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        assert devices.NO_GPU not in text and "GPU(s):" in text
    else:
        assert devices.NO_GPU in text


@pytest.mark.bad_input("missing package")
def test_missing_or_broken_frameworks_do_not_stop_the_report(monkeypatch):
    def broken():
        raise RuntimeError("CUDA driver version is insufficient")

    monkeypatch.setattr(devices, "FRAMEWORKS", (
        ("Ghost", "a_module_that_is_not_installed", broken),
        ("Broken", "numpy", broken),
    ))
    text = devices.report()
    assert "Ghost: not installed" in text
    assert "Broken: installed but failed to start (RuntimeError" in text
    assert devices.NO_GPU in text


def test_driver_noise_is_summarised_not_printed(monkeypatch, capfd):
    def noisy():
        os.write(2, b"E0000 cuda_executor.cc: failed call to cuInit: UNKNOWN ERROR (303)\n")
        return "1.0", []

    monkeypatch.setattr(devices, "FRAMEWORKS", (("Noisy", "numpy", noisy),))
    text = devices.report()
    assert "Noisy 1.0: no GPU (it looked for CUDA" in text
    captured = capfd.readouterr()
    assert "cuInit" not in captured.out + captured.err


def test_module_entry_point():
    done = subprocess.run([sys.executable, "-m", "gpulesson.machine.devices"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "backend:" in done.stdout


def test_show_images_labels_the_data_source():
    (x, y), _ = make_synthetic(20, 0, progress=False)
    label = "synthetic stand-in (not CIFAR-10)"
    fig = show_images(x, y, SYNTHETIC_CLASS_NAMES, n=12, ncols=6, title="Training images", label=label)
    try:
        assert "Training images" in fig.get_suptitle() and label in fig.get_suptitle()
        shown = [ax for ax in fig.axes if ax.images]
        assert len(shown) == 12 and len(fig.axes) == 12
        assert [ax.get_title() for ax in shown] == [SYNTHETIC_CLASS_NAMES[v] for v in y[:12]]
        np.testing.assert_array_equal(shown[3].images[0].get_array(), x[3])
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def test_show_images_without_label_says_so():
    x = np.zeros((3, 32, 32, 3), np.uint8)
    fig = show_images(x, [0, 1, 2], ["a", "b", "c"], n=16, ncols=8)
    assert "data source not given" in fig.get_suptitle()
    assert sum(1 for ax in fig.axes if ax.images) == 3
    with pytest.raises(ValueError):
        show_images(x[:0], [], ["a"])


def test_a_visible_gpu_is_named_in_the_report_and_the_record(monkeypatch):
    def one_gpu():
        return "2.0", [{"id": "/physical_device:GPU:0", "name": "NVIDIA H100"}]

    monkeypatch.setattr(devices, "FRAMEWORKS", (("TensorFlow", "tensorflow", one_gpu),))
    text = devices.report()
    assert "TensorFlow 2.0: 1 GPU(s): /physical_device:GPU:0 (NVIDIA H100)" in text
    assert devices.NO_GPU not in text
    assert devices._probe("tensorflow")[1][0]["name"] == "NVIDIA H100"
    with pytest.raises(ValueError, match="no GPU probe"):
        devices._probe("mlx")
