"""Episode 8, the same comparison in PyTorch: the run records, the reference run and its
figures, the notebook and the recording command without PyTorch, and going on with a run. MNIST
and the lesson's PyTorch code are tested in test_08_pytorch_code.py."""

import json
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
from conftest import ROOT, blocked_imports
from gpulesson.experiments.torch_reference.__main__ import main as torch_main

from gpulesson.experiments import registry, torch_reference
from gpulesson.records.results import NOT_RECORDED, append_record, read_records, validate_record

torch = pytest.importorskip("torch", reason="PyTorch is an optional extra (requirements/torch.txt)")

pytestmark = pytest.mark.usefixtures("no_network")
NOTEBOOK = ROOT / "notebooks" / "08-pytorch.ipynb"


# --- records, reference run, numbers and figures ---------------------------------------------

def fake_run(device, epochs=(4.0, 2.0, 2.0), evaluation=0.5, accuracy=0.9):
    return {"device": device, "epoch_seconds": list(epochs), "train_loss": [1.0, 0.5, 0.4][:len(epochs)],
            "evaluation_seconds": evaluation, "test_loss": 0.3, "test_accuracy": accuracy,
            "start_weights": "abc123", "batch_size": 128}


MADE_UP_GPU = {"name": "Made-up GPU for tests", "driver_version": None,
               "cuda_driver_version": None, "cuda_runtime_version": None,
               "compute_capability": "9.0", "memory_total_mib": 1024}


@pytest.fixture
def made_up_gpu(monkeypatch):
    """Records of a made-up GPU, for tests in temporary folders only."""
    real = torch_reference.measure.torch_environment

    def environment(device):
        if device.startswith("cuda"):
            return {**real("cpu"), "device": "Made-up GPU for tests", "gpu_count": 1,
                    "gpu": dict(MADE_UP_GPU),
                    "float32_precision": {"matmul": "float32", "convolution": "tf32",
                                          "setting": "made up"}}
        return real(device)

    # run_record reads it in measure.py, the module it lives in, not in the package.
    monkeypatch.setattr(torch_reference.measure, "torch_environment", environment)


def record(device, run_id, **kwargs):
    return torch_reference.run_record(fake_run(device, **kwargs), data="synthetic_mnist", run_id=run_id,
                                      n_train=6000, n_test=1000)


def test_run_records_are_well_formed(made_up_gpu):
    cpu, gpu = record("cpu", "r"), record("cuda", "r", epochs=(3.0, 0.25, 0.25))
    for r in (cpu, gpu):
        validate_record(r)
        json.dumps(r, allow_nan=False)
        assert r["experiment"] == torch_reference.RECORDS.experiment and r["backend"] == "pytorch"
        assert r["versions"]["torch"] == torch.__version__ and r["torch_threads"] >= 1
        assert r["data_label"] == "synthetic stand-in (not MNIST)" and r["cpu_model"]
    assert cpu["device"] == "CPU" and cpu["device_kind"] == "cpu"
    assert gpu["device"] == "Made-up GPU for tests" and gpu["device_kind"] == "gpu"
    assert cpu["mean_epoch_seconds"] == 2.0 and cpu["first_epoch_seconds"] == 4.0  # warm-up left out
    assert cpu["training_seconds"] == 8.0 and cpu["total_seconds"] == 8.5
    assert cpu["images_per_second"] == 3000
    assert record("cpu", "r", epochs=(5.0,))["mean_epoch_seconds"] == 5.0
    # The measurement rule: every epoch kept, the warm-up apart from the timed ones' summary.
    assert cpu["epoch_seconds"] == [4.0, 2.0, 2.0]
    assert cpu["summary"] == {"unit": "s", "n": 2, "median": 2.0, "min": 2.0, "max": 2.0,
                              "samples": [2.0, 2.0], "warmup": [4.0]}
    assert gpu["summary"]["samples"] == [0.25, 0.25] and gpu["summary"]["warmup"] == [3.0]
    assert record("cpu", "r", epochs=(5.0,))["summary"]["warmup"] == []  # one epoch: no warm-up apart
    # How float32 was computed: on the CPU in float32; the GPU's facts only on a GPU record.
    assert cpu["float32_precision"]["matmul"] == "float32" and "gpu" not in cpu
    assert gpu["gpu"]["name"] == "Made-up GPU for tests" and gpu["float32_precision"]["convolution"] == "tf32"
    assert len(cpu["load_average"]) == 3 and "load_average_before" not in cpu
    with pytest.raises(ValueError, match="no epoch times"):
        record("cpu", "r", epochs=())
    with pytest.raises(ValueError, match="data must be one of"):
        torch_reference.run_record(fake_run("cpu"), data="mnist-ish", run_id="r", n_train=1, n_test=1)


def test_a_record_keeps_the_load_before_and_after(made_up_gpu):
    kept = torch_reference.run_record(fake_run("cpu"), data="synthetic_mnist", run_id="r",
                                      n_train=6000, n_test=1000, load_before=(0.5, 0.25, 0.125),
                                      load_after=[1.987, 1.0, 0.5])
    assert kept["load_average_before"] == [0.5, 0.25, 0.12] and kept["load_average_after"][0] == 1.99


def test_a_cuda_record_says_which_gpu_and_how_float32_was_computed(monkeypatch):
    """torch_environment of a CUDA device, on a machine without one: PyTorch made to see a
    made-up GPU, whose facts gpulesson.machine.devices gives; the precision is read from PyTorch's
    own settings, as on a real GPU."""
    from gpulesson.machine import devices

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: MADE_UP_GPU["name"])
    asked = []
    monkeypatch.setattr(devices, "gpu_facts",
                        lambda backend=None: asked.append(backend) or dict(MADE_UP_GPU))
    # PyTorch's own settings (module attributes that monkeypatch cannot undo), put back after.
    before = (torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32)
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.allow_tf32 = True
    try:
        gpu = torch_reference.measure.torch_environment("cuda")
    finally:
        torch.set_float32_matmul_precision(before[0])
        torch.backends.cudnn.allow_tf32 = before[1]
    assert asked == ["torch"] and gpu["gpu"] == MADE_UP_GPU and gpu["device"] == MADE_UP_GPU["name"]
    assert gpu["float32_precision"]["matmul"] == "float32"
    assert gpu["float32_precision"]["convolution"] == "tf32"  # compute capability 9.0 has TF32
    assert "cudnn.allow_tf32=True" in gpu["float32_precision"]["setting"]
    cpu = torch_reference.measure.torch_environment("cpu")
    assert "gpu" not in cpu and cpu["float32_precision"]["setting"] == "CPU"


def test_reference_run_and_placeholders(tmp_path, made_up_gpu):
    path = tmp_path / "runs.jsonl"
    values = torch_reference.page.substitutions(path)
    assert values and set(values.values()) == {NOT_RECORDED}
    assert all(key.startswith("ref_torch_") for key in values)
    append_record(path, record("cpu", "a", epochs=(4.0, 2.5, 2.0, 2.25)))
    values = torch_reference.page.substitutions(path)
    # An epoch after the warm-up: the median and range of the timed epochs (the rule's words).
    assert values["ref_torch_cpu_epoch"] == "2.2 s (range 2.0 s–2.5 s, 3 epochs)"
    assert values["ref_torch_cpu_total"] == "11.2 s" and values["ref_torch_cpu_first_epoch"] == "4.0 s"
    assert values["ref_torch_epochs"] == "4" and values["ref_torch_epochs_timed"] == "1 warm-up and 3 timed"
    assert values["ref_torch_gpu"] == values["ref_torch_speedup"] == NOT_RECORDED
    assert values["ref_torch_gpu_vs_cpu"] == values["ref_torch_gpu_epoch"] == NOT_RECORDED
    assert values["ref_torch_data"] == "synthetic stand-in (not MNIST)"
    # Alt texts from what is drawn: a CPU-only run's figures name no GPU.
    for key in ("ref_torch_fig_epoch_times_alt", "ref_torch_fig_time_bars_alt"):
        assert "GPU" not in values[key] and "CPU" in values[key], values[key]
    assert "2.2 s (range 2.0 s–2.5 s, 3 epochs)" in values["ref_torch_fig_epoch_times_alt"]
    assert "one-off start-up costs" in values["ref_torch_fig_epoch_times_alt"]
    for r in (record("cpu", "b"), record("cuda", "b", epochs=(3.0, 0.25, 0.25)), record("cpu", "c")):
        append_record(path, r)
    chosen = torch_reference.reference_run(path)
    assert [r["run_id"] for r in chosen] == ["b", "b"] and chosen[1]["device_kind"] == "gpu"
    values = torch_reference.page.substitutions(path)
    assert values["ref_torch_speedup"] == "8.0×" and values["ref_torch_gpu"] == "Made-up GPU for tests"
    assert values["ref_torch_gpu_vs_cpu"] == "8× faster"  # common.compare's words
    # Alt texts from what is drawn: the made-up GPU is named, with its epochs and the comparison.
    epochs_alt, bars_alt = (values["ref_torch_fig_epoch_times_alt"],
                            values["ref_torch_fig_time_bars_alt"])
    assert "Made-up GPU for tests" in epochs_alt and "GPU" in bars_alt
    assert '"8× faster"' in bars_alt
    assert (epochs_alt, bars_alt) == torch_reference.page.alt_texts(chosen)
    text = torch_reference.describe(chosen)
    assert "Speed-up of the GPU over the CPU: 8.0×" in text and "not MNIST" in text


def test_overlapping_epochs_are_no_measurable_difference(tmp_path, made_up_gpu):
    path = tmp_path / "runs.jsonl"
    for r in (record("cpu", "b", epochs=(4.0, 2.0, 3.0)), record("cuda", "b", epochs=(3.0, 2.5, 1.5))):
        append_record(path, r)
    values = torch_reference.page.substitutions(path)
    assert values["ref_torch_gpu_vs_cpu"] == "no measurable difference"
    assert values["ref_torch_speedup"] == "1.2× by the medians, no measurable difference by the ranges"
    assert "no measurable difference" in values["ref_torch_fig_time_bars_alt"]


def test_figures_of_a_made_up_gpu_run_say_what_they_show(tmp_path, made_up_gpu):
    path = tmp_path / "runs.jsonl"
    for r in (record("cpu", "b"), record("cuda", "b", epochs=(3.0, 0.25, 0.25))):
        append_record(path, r)
    epochs, bars = torch_reference.figures(torch_reference.reference_run(path))
    title = epochs._suptitle.get_text()
    assert "not MNIST" in title and "Made-up GPU for tests" in title
    notes = [t.get_text() for t in epochs.axes[0].texts]
    assert len(notes) == 2 and all("one-off start-up costs" in n and "compiling" not in n for n in notes)
    assert "not MNIST" in bars._suptitle.get_text()
    # The GPU's bar says what common.compare says of the two devices' epochs.
    assert any("8× faster" in t.get_text() for t in bars.axes[0].texts)
    assert (epochs.alt_text, bars.alt_text) == torch_reference.page.alt_texts(
        torch_reference.reference_run(path))
    drawn = registry.figure_drawer(torch_reference.__name__, tmp_path)(path)  # as make figures does
    assert [p.name for p in drawn] == ["reference-epoch-times.svg", "reference-time-bars.svg"]
    assert all(p.read_bytes().startswith(b"<?xml") for p in drawn)


def test_committed_results_are_valid_and_honest_about_the_gpu():
    records = read_records(torch_reference.RESULTS_FILE)
    assert records, ("record a run: python -m gpulesson.experiments.torch_reference "
                     f"({torch_reference.RESULTS_FILE})")
    for r in records:
        validate_record(r)
        assert r["experiment"] == torch_reference.RECORDS.experiment and r["backend"] == "pytorch"
        assert r["versions"]["torch"] and r["cpu_model"] and r["data"] in ("mnist", "synthetic_mnist")
    chosen = torch_reference.reference_run()
    if not any(r["device_kind"] == "gpu" for r in chosen):
        assert torch_reference.page.substitutions()["ref_torch_gpu"] == NOT_RECORDED


# --- without PyTorch -------------------------------------------------------------------------

def test_check_torch_makes_later_cells_no_ops_without_pytorch(monkeypatch, capsys):
    shell = SimpleNamespace(input_transformers_post=[])
    assert torch_reference.check_torch(shell) is True
    assert shell.input_transformers_post == [] and "PyTorch 2." in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "torch", None)
    assert torch_reference.check_torch(shell) is False
    assert torch_reference.check_torch(shell) is False
    assert "SKIPPED: PyTorch is not installed" in capsys.readouterr().out
    [transform] = shell.input_transformers_post
    assert transform(["import torch\n", "torch.zeros(1)\n"]) == [torch_reference.measure.SKIPPED_CELL]


@pytest.fixture
def without_torch(tmp_path):
    """The environment of a Python in which PyTorch and torchvision cannot be imported."""
    return blocked_imports(tmp_path / "blocker", "torch", "torchvision")


@pytest.mark.bad_input("missing package")
def test_the_notebook_skips_itself_without_pytorch(without_torch, tmp_path):
    script = textwrap.dedent(f"""
        import json, sys
        import nbformat
        from nbclient import NotebookClient
        assert __import__("importlib").util.find_spec("torch") is None
        nb = nbformat.read({str(NOTEBOOK)!r}, as_version=4)
        NotebookClient(nb, kernel_name="python3", timeout=120,
                       resources={{"metadata": {{"path": {str(ROOT)!r}}}}}).execute()
        outputs = [[o.get("text", "") for o in cell.outputs]
                   for cell in nb.cells if cell.cell_type == "code"]
        json.dump(outputs, sys.stdout)
    """)
    done = subprocess.run([sys.executable, "-c", script], check=False, env=without_torch,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = json.loads(done.stdout)
    assert "SKIPPED: PyTorch is not installed" in "".join(outputs[0])
    assert "requirements/torch.txt" in "".join(outputs[0])
    assert len(outputs) > 10
    for later in outputs[1:]:
        assert "".join(later).startswith("Skipped: PyTorch is not installed"), later


@pytest.mark.bad_input("missing package")
def test_the_recording_command_without_pytorch(without_torch, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.torch_reference", "--out",
         str(tmp_path / "torch.jsonl")],
        check=False, env=without_torch, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and "requirements/torch.txt" in done.stderr



# --- going on with an interrupted recording run ---------------------------------------------------

@pytest.fixture
def fake_training(monkeypatch, made_up_gpu):
    """The command with a made-up GPU and instant, made-up training; ``calls`` lists the devices
    trained on; training on the GPU raises while ``stop_on_gpu`` is set."""
    from gpulesson.lesson import torch as lesson_torch

    state = SimpleNamespace(calls=[], stop_on_gpu=True)

    def train_on(device, initial_state, train_set, test_set, epochs, batch_size, **kwargs):
        state.calls.append(device)
        if device == "cuda" and state.stop_on_gpu:
            raise RuntimeError("stopped while training on the GPU")
        return {**fake_run(device, epochs=(2.0,) + (1.0,) * (epochs - 1)), "batch_size": batch_size}

    monkeypatch.setattr(lesson_torch, "train_on", train_on)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return state


@pytest.mark.bad_input("killed job")
def test_a_run_that_goes_on_trains_only_on_the_devices_it_lacks(tmp_path, fake_training, capsys):
    out = tmp_path / "torch.jsonl"
    argv = ["--devices", "cpu", "gpu", "--out", str(out)]
    with pytest.raises(RuntimeError, match="on the GPU"):
        torch_main(argv)
    [cpu] = read_records(out)  # the device that finished is kept
    assert cpu["device_kind"] == "cpu" and fake_training.calls == ["cpu", "cuda"]
    run_id = cpu["run_id"]
    append_record(out, {**cpu, "device_kind": "gpu", "run_id": "another-run"})  # not this run's
    capsys.readouterr()

    # Going on with other settings would mix two comparisons in one run: refused.
    with pytest.raises(SystemExit) as refused:
        torch_main([*argv, "--run-id", run_id, "--batch-size", "16"])
    assert refused.value.code == 2
    assert "was recorded with batch_size 64, not 16" in capsys.readouterr().err

    fake_training.calls.clear()
    fake_training.stop_on_gpu = False
    assert torch_main([*argv, "--run-id", run_id]) == 0
    printed = capsys.readouterr().out
    assert fake_training.calls == ["cuda"] and "going on with gpu" in printed
    mine = read_records(out, run_id=run_id)
    assert [r["device_kind"] for r in mine] == ["cpu", "gpu"] and mine[0] == cpu
    assert "Speed-up of the GPU over the CPU" in printed  # the whole run, read back
    assert "Appended 1 record(s)" in printed

    before = out.read_text()
    assert torch_main([*argv, "--run-id", run_id]) == 0
    assert fake_training.calls == ["cuda"] and out.read_text() == before
    assert "nothing left to record" in capsys.readouterr().out
