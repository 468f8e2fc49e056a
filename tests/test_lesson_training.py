"""The episode's model and training function (gpulesson.lesson), its reference runs, other backends."""

import os
import re
import subprocess
import sys
from importlib.util import find_spec

import keras
import numpy as np
import pytest
from conftest import ROOT

from gpulesson import lesson
from gpulesson.datasets.load import prepare
from gpulesson.datasets.settings import get_settings
from gpulesson.experiments import cnn
from gpulesson.records.results import read_records, validate_record


@pytest.fixture(scope="module")
def quick():
    """The quick synthetic data split as the episode splits it, and initial weights."""
    settings = get_settings()
    assert settings.quick and settings.is_synthetic, "tests run on the quick synthetic stand-in"
    path = prepare(settings, progress=False)
    data = lesson.split_batches(path, settings.batch_size(256))
    keras.utils.set_random_seed(42)
    return data, lesson.build_cnn().get_weights()


def test_the_cnn_has_the_episode_architecture():
    model = lesson.build_cnn()
    assert model.count_params() == 787_530  # the number the episode explains
    kinds = [type(layer).__name__ for layer in model.layers]
    assert kinds == ["Rescaling"] + ["Conv2D", "MaxPooling2D"] * 4 + ["Flatten", "Dense", "Dropout",
                                                                    "Dense", "Dropout", "Dense"]
    # Bytes in: the first layer scales them to [0, 1], on the device that trains.
    assert float(model.layers[0].scale) == 1 / 255 and float(model.layers[0].offset) == 0.0
    ones = model.layers[0](np.full((1, 32, 32, 3), 255, np.uint8))
    assert np.allclose(np.asarray(ones), 1.0)
    assert [layer.filters for layer in model.layers if hasattr(layer, "filters")] == [32, 64, 128, 256]
    assert [layer.units for layer in model.layers if hasattr(layer, "units")] == [256, 512, 10]
    assert model.output_shape == (None, 10)


def test_runs_start_from_the_same_weights_and_learn(quick):
    (train, validation, test), initial = quick
    before = [w.copy() for w in initial]
    fingerprint = lesson.weights_fingerprint(initial)
    first = lesson.train_on("cpu", initial, train, validation, test, epochs=2, verbose=0)
    # The second run (the GPU's, in the episode) must not start from the first run's trained weights.
    second = lesson.train_on("cpu", initial, train, validation, test, epochs=1, verbose=0)
    assert first["start_weights"] == second["start_weights"] == fingerprint
    assert all(np.array_equal(a, b) for a, b in zip(before, initial)), "training changed the initial weights"
    assert lesson.weights_fingerprint(first["model"].get_weights()) != fingerprint  # it trained
    assert len(first["timing"]["epoch_seconds"]) == 2 and len(second["timing"]["epoch_seconds"]) == 1
    # The stand-in is as hard as CIFAR-10 (results/standin-calibration.jsonl): two quick epochs
    # learn its families, not yet its pairs. 0.2 on 500 test images is far above chance (0.1).
    assert first["test_accuracy"] >= 0.2, "quick training must reach well above chance (0.1)"
    assert first["evaluation_seconds"] > 0 and set(first["history"]) >= {"loss", "accuracy", "val_loss"}
    # XLA is fixed, not "auto": on TensorFlow off on every device, visible GPU or not.
    assert first["jit_compile"] is False and first["model"].jit_compile is False
    assert len(first["timing"]["validation_seconds"]) == 2


def test_fingerprint_tells_weights_apart():
    weights = [np.zeros((2, 2), np.float32), np.ones(3, np.float32)]
    changed = [weights[0], weights[1].copy()]
    changed[1][0] = 2
    assert lesson.weights_fingerprint(weights) == lesson.weights_fingerprint([w.copy() for w in weights])
    assert lesson.weights_fingerprint(weights) != lesson.weights_fingerprint(changed)


def test_reference_run_records_well_formed_runs(tmp_path):
    out = tmp_path / "runs.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    result = subprocess.run([sys.executable, "-m", "gpulesson.experiments.cnn", "--out", str(out), "--epochs", "2"],
                            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "No GPU visible: recording the CPU run only." in result.stdout
    (record,) = read_records(out, experiment=cnn.EXPERIMENT)
    validate_record(record)
    # The same run also timed prediction on the CPU, in records of their own.
    (predicted,) = [r for r in read_records(out) if r["experiment"] != cnn.EXPERIMENT]
    assert predicted["run_id"] == record["run_id"] and predicted["device"] == "CPU"
    assert record["experiment"] == cnn.EXPERIMENT and record["device"] == "CPU"
    assert record["data"] == "synthetic" and "not CIFAR-10" in record["data_label"]
    assert len(record["epoch_seconds"]) == 2 and record["batch_size"] == 64
    # What decides a CPU timing is recorded: XLA, the cores, the threads fixed to them, the load.
    assert record["jit_compile"] is False and record["load_average"]
    assert record["framework_threads"]["intra_op"] == record["cpu_cores_available"]
    assert record["test_accuracy"] > 0.2 and len(record["history"]["loss"]) == 2
    assert "Speed-up" not in result.stdout  # no GPU, no speed-up claimed

    refused = subprocess.run([sys.executable, "-m", "gpulesson.experiments.cnn", "--devices", "gpu",
                              "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode == 2 and "No GPU is visible" in refused.stderr
    assert len(read_records(out)) == 2  # nothing recorded for a refused run


# The other Keras backend the lesson's code must run on unchanged (the GPU nodes' backend, as
# setup.md says), and where it comes from. Keras on PyTorch is named there as an option, untested
# with the notebooks: the experiments' own tests run it.
OTHER_BACKENDS = [
    pytest.param("jax", marks=pytest.mark.skipif(find_spec("jax") is None,
                                                 reason="JAX is not installed (requirements/backends.txt)")),
]


@pytest.mark.parametrize("backend", OTHER_BACKENDS)
def test_the_episode_notebook_runs_unchanged_on_another_backend(backend, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "notebooks" / "05-cpu-vs-gpu.ipynb", as_version=4)
    monkeypatch.setenv("KERAS_BACKEND", backend)  # the kernel inherits it
    NotebookClient(notebook, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    text = "\n".join(output.get("text", "") + output.get("data", {}).get("text/plain", "")
                     for cell in notebook.cells if cell.cell_type == "code"
                     for output in cell.get("outputs", []))
    assert f"backend {backend}" in text and "SKIPPED: no GPU is visible" in text
    assert "same predictions after loading: True" in text
    assert "787,530" in text, "the episode's architecture, parameter for parameter"
    accuracy = float(re.search(r"Test accuracy of the cpu model: ([\d.]+)", text).group(1))
    assert accuracy >= 0.2, text  # well above chance (0.1), as on TensorFlow
    # The run's record, which the notebook appends to the learner's results file.
    record = [r for r in read_records(get_settings().work_dir / "my-results.jsonl")
              if r["backend"] == backend][-1]
    assert record["test_accuracy"] == pytest.approx(accuracy, abs=5e-4)
    assert len(record["history"]["loss"]) == get_settings().epochs(3)
    # XLA as the episode fixes it, whatever devices are visible: JAX always compiles with it.
    assert record["jit_compile"] is (backend == "jax")
