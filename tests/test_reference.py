"""Run records of the CNN comparison, the reference run, its figures, and the numbers in the episodes."""

from types import SimpleNamespace

import pytest
from conftest import ROOT

from gpulesson.experiments import cnn, registry
from gpulesson.experiments.cnn.gpu_use import full_training_seconds
from gpulesson.experiments.cnn.page import substitutions
from gpulesson.records.results import (
    NOT_RECORDED,
    append_record,
    duration,
    is_gpu,
    speedup,
    validate_record,
)


def fake_run(device, epochs=(5.0, 2.0, 2.0), evaluation=0.5, accuracy=0.6):
    timing = {"epochs": len(epochs), "epoch_seconds": list(epochs), "first_epoch_seconds": epochs[0],
              "steady_mean_epoch_seconds": sum(epochs[1:]) / (len(epochs) - 1) if len(epochs) > 1 else None,
              "steady_median_epoch_seconds": None, "total_seconds": sum(epochs),
              "images_per_second": 900 / epochs[-1]}
    timing["validation_seconds"] = [0.1 * s for s in epochs]
    return {"device": device, "timing": timing, "evaluation_seconds": evaluation, "test_loss": 1.0,
            "test_accuracy": accuracy, "start_weights": "abc", "history": {"loss": [2.0, 1.5, 1.2]},
            "jit_compile": False}


def record(device, run_id, **kwargs):
    batches = [SimpleNamespace(batch_size=256, n_images=n) for n in (900, 100, 200)]
    return cnn.run_record(fake_run(device, **kwargs), data="synthetic", run_id=run_id, batches=batches)


def test_run_record_fields():
    cpu, gpu = record("cpu:0", "r1"), record("gpu:0", "r1", epochs=(3.0, 0.2, 0.2))
    for r in (cpu, gpu):
        validate_record(r)
    assert cpu["device"] == "CPU" and cpu["device_kind"] == "cpu" and gpu["device_kind"] == "gpu"
    assert cpu["mean_epoch_seconds"] == 2.0  # the warm-up epoch is left out
    assert cpu["training_seconds"] == 9.0 and cpu["total_seconds"] == 9.5
    assert speedup([cpu, gpu]) == pytest.approx(10.0)
    assert speedup([cpu]) is None
    one_epoch = record("cpu:0", "r2", epochs=(4.0,))
    assert one_epoch["mean_epoch_seconds"] == 4.0


def test_run_record_keeps_what_decides_the_timing():
    cpu = record("cpu:0", "r1")
    # Validation of the epochs after the first (0.2 s each), the same epochs as the mean.
    assert cpu["mean_validation_seconds"] == pytest.approx(0.2)
    assert cpu["validation_seconds"] == pytest.approx([0.5, 0.2, 0.2])
    assert cpu["jit_compile"] is False
    assert 1 <= cpu["cpu_cores_available"] <= cpu["cpu_cores_machine"]
    assert len(cpu["load_average"]) == 3 and cpu["framework_threads"]


def test_reference_run_prefers_the_newest_run_with_a_gpu(tmp_path):
    path = tmp_path / "runs.jsonl"
    assert cnn.reference_run(path) == []
    for r in (record("cpu:0", "a"), record("cpu:0", "b"), record("gpu:0", "b", epochs=(3.0, 0.5, 0.5)),
              record("cpu:0", "c")):
        append_record(path, r)
    chosen = cnn.reference_run(path)
    assert [r["run_id"] for r in chosen] == ["b", "b"] and chosen[1]["device_kind"] == "gpu"
    only_cpu = tmp_path / "cpu.jsonl"
    for r in (record("cpu:0", "a"), record("cpu:0", "c")):
        append_record(only_cpu, r)
    assert [r["run_id"] for r in cnn.reference_run(only_cpu)] == ["c"]


def test_describe_and_estimates():
    cpu, gpu = record("cpu:0", "r"), record("gpu:0", "r", epochs=(3.0, 0.2, 0.2))
    text = cnn.describe([cpu, gpu], full_n_train=45_000)
    # The median epochs after the warm-up: 2 s against 0.2 s.
    assert "Speed-up of the GPU over the CPU: 10.0× per epoch" in text and "synthetic stand-in" in text
    assert "warm-up epoch 5.0 s, then 2.0 s (range 2.0 s–2.0 s, 2 epochs) per epoch" in text
    assert "Training 30 epochs of 45,000 images" in text
    # 30 epochs of 2 s on 900 images, scaled to 45,000 images, plus the 3 s of extra warm-up once
    assert full_training_seconds(cpu, 30, 45_000) == pytest.approx(3 + 30 * 2 * 50)
    assert "Speed-up" not in cnn.describe([cpu])
    assert duration(0.5) == "500 ms" and duration(150) == "2.5 min"


def test_substitutions_say_plainly_what_is_missing(tmp_path):
    values = substitutions(tmp_path / "none.jsonl")
    # episode 9's sentence on this run beside the feeding benchmark is left out, not "missing"
    assert values.pop("ref_use_feeding") == "" and set(values.values()) == {NOT_RECORDED}
    path = tmp_path / "runs.jsonl"
    append_record(path, record("cpu:0", "r"))
    values = substitutions(path)
    # An epoch after the warm-up: the median and range of the timed epochs.
    assert values["ref_cpu_epoch"] == "2.0 s (range 2.0 s–2.0 s, 2 epochs)"
    assert values["ref_gpu_epoch"] == NOT_RECORDED
    assert values["ref_speedup"] == NOT_RECORDED and values["ref_gpu_vs_cpu"] == NOT_RECORDED
    assert values["ref_cpu_workshop"] == "9.0 s"  # the first epoch and two more of 2 s
    assert values["ref_cpu_jit_compile"] == "off"
    assert values["ref_cpu_validation"] == "200 ms (range 200 ms–200 ms, 2 epochs)"
    assert values["ref_cpu_cores"].isdigit() and values["ref_cpu_load"].endswith("after the training")
    assert "GPU" not in values["ref_fig_epoch_times_alt"] + values["ref_fig_time_bars_alt"]
    append_record(path, record("gpu:0", "r", epochs=(3.0, 0.25, 0.25)))
    values = substitutions(path)
    assert values["ref_speedup"] == "8.0×" and values["ref_gpu_vs_cpu"] == "8× faster"
    assert values["ref_gpu_epoch"] == "250 ms (range 250 ms–250 ms, 2 epochs)"
    assert "GPU" in values["ref_fig_epoch_times_alt"] and "8× faster" in values["ref_fig_time_bars_alt"]


def test_records_made_before_the_settings_were_kept_say_so(tmp_path):
    path = tmp_path / "old.jsonl"
    old = record("cpu:0", "r")
    for key in ("jit_compile", "mean_validation_seconds", "validation_seconds", "cpu_cores_available",
                "load_average", "summary"):
        del old[key]
    append_record(path, old)
    values = substitutions(path)
    for key in ("ref_cpu_jit_compile", "ref_cpu_validation", "ref_cpu_cores", "ref_cpu_load"):
        assert values[key] == NOT_RECORDED, key


def test_reference_results_file_exists_and_is_valid():
    records = cnn.reference_run()
    assert records, f"{cnn.RESULTS_FILE} must hold at least one run (python -m gpulesson.experiments.cnn)"
    for r in records:
        validate_record(r)
        assert r["experiment"] == cnn.EXPERIMENT and r["cpu_model"] and r["versions"]["keras"]
    if not any(is_gpu(r) for r in records):  # honest about what is missing
        assert substitutions()["ref_gpu"] == NOT_RECORDED


def _with_figures() -> list[str]:
    """The experiments whose pages name figures that `make figures` draws (draw_declared)."""
    return [name for name in registry.experiment_packages()
            if isinstance(found := registry.experiment(name), registry.Declared)
            and getattr(found, "FIGURE_FOLDER", None) and found.FIGURES]


@pytest.mark.parametrize("name", _with_figures(), ids=lambda name: name.rpartition(".")[2])
def test_committed_figures_are_what_make_figures_draws_from_the_committed_results(name, tmp_path):
    found = registry.Declared(name)
    drawn = registry.figure_drawer(name, tmp_path)(found.RESULTS_FILE)
    assert [path.name for path in drawn] == list(found.FIGURES)
    for path in drawn:
        committed = ROOT / found.FIGURE_FOLDER / path.name
        assert committed.exists(), f"{committed} is missing: run make figures"
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed.name} is not what {found.RESULTS_FILE.name} gives: run make figures")


def test_the_episode_page_shows_the_reference_numbers(built_site):
    html_dir, _ = built_site
    page = (html_dir / "_episodes" / "05-cpu-vs-gpu.html").read_text(encoding="utf-8")
    values = substitutions()
    assert "{{" not in page
    for key in ("ref_cpu", "ref_cpu_epoch", "ref_cpu_accuracy"):
        assert values[key] in page, key
    if NOT_RECORDED in values["ref_gpu_epoch"]:
        # Without a GPU run the page says so once, in words, and shows the CPU table.
        assert page.count("GPU reference run has not been recorded yet") == 1
        assert NOT_RECORDED not in page.split("each later epoch")[1].split("</table>")[0]
    else:
        for key in ("ref_gpu", "ref_gpu_epoch", "ref_speedup"):
            assert values[key] in page, key
