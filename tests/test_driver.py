"""The driver check: a framework built for a newer CUDA than the driver allows is named, with
what to do; a driver that fits, or no driver, raises no alarm."""

from gpulesson.machine import devices, driver


def test_a_cuda_13_build_on_an_r535_driver_is_named_with_what_to_do():
    lines = driver.check("535.104.05", {"PyTorch": "13.2", "TensorFlow": "12.5.1", "JAX": None})
    assert len(lines) == 2
    torch_line, tf_line = lines
    assert torch_line.startswith("DRIVER TOO OLD for PyTorch")
    assert "580" in torch_line and "535.104.05" in torch_line and "cu126" in torch_line
    assert "new enough for TensorFlow" in tf_line and "525" in tf_line


def test_minor_version_compatibility_within_a_major_version():
    # A driver of the CUDA 12.2 era runs a CUDA 12.8 build: only the major version's minimum counts.
    assert "new enough" in driver.check("535.54.03", {"JAX": "12.8"})[0]
    assert driver.check("520.61.05", {"JAX": "12"})[0].startswith("DRIVER TOO OLD for JAX")


def test_no_driver_or_cpu_builds_say_nothing():
    assert driver.check(None, {"PyTorch": "13.2"}) == []
    assert driver.check("580.65.06", {"PyTorch": None, "TensorFlow": ""}) == []


def test_an_unknown_cuda_major_is_not_judged():
    (line,) = driver.check("600.1", {"PyTorch": "14.0"})
    assert "does not know" in line


def test_the_report_shows_the_check_when_nvml_finds_a_driver(monkeypatch):
    monkeypatch.setattr(devices, "_nvml_gpu", lambda: {"driver_version": "550.90.07"})
    monkeypatch.setattr(driver, "build_cuda", lambda: {"PyTorch": "13.2"})
    text = devices.report()
    assert "DRIVER TOO OLD for PyTorch" in text and "550.90.07" in text


def test_the_report_has_no_driver_line_without_a_driver(monkeypatch):
    monkeypatch.setattr(devices, "_nvml_gpu", lambda: {})
    assert "driver" not in devices.report().lower().replace("no usable nvidia gpu or driver", "")
