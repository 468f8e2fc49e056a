"""Episode 9's settings on the GPU (``gpulesson.experiments.gpu_settings``): the settings, the
target's choice and goals, and the page without and with GPU records (made up here, shaped like
the first H200 records; no GPU number is typed into the lesson)."""

import pytest

from gpulesson.experiments import gpu_settings
from gpulesson.experiments.common import Budget
from gpulesson.experiments.gpu_settings import page, records
from gpulesson.results import NOT_RECORDED, append_record


def test_each_setting_changes_one_thing_and_the_learning_rate_follows_the_batch():
    base = records.options("default")
    assert base == {"feed": "generator", "batch_size": 256, "precision": "float32",
                    "steps_per_execution": 1, "learning_rate": 1e-3}
    for name in records.SETTINGS:
        changed = {k for k, v in records.options(name).items() if base[k] != v}
        expected = set(records.SETTINGS[name][1]) | (
            {"learning_rate"} if name == "batch" else set())
        assert changed == expected, name
    assert records.options("batch")["learning_rate"] == pytest.approx(4e-3)
    target = records.options("target", ["bf16", "batch"])
    assert target["feed"] == "device" and target["precision"] == "mixed_bfloat16"
    assert target["batch_size"] == 1024 and target["steps_per_execution"] == 1
    assert records.options("target-ram", ["bf16", "batch"]) == {**target, "feed": "ram"}


def made(setting, seconds, *, device="gpu", accuracy=0.5, combined=None, run_id="r1"):
    budget = Budget(1, 5)
    budget.seconds = [10.0, *seconds]
    record = records.measurement_record(
        budget, run_id=run_id, device=device, setting=setting,
        what=records.SETTINGS[setting][0] if setting in records.SETTINGS
        else f"fed from {'the device' if setting == 'target' else 'RAM'}",
        chosen=records.options(setting, combined or []), n_images=45_000,
        forward_flops=31_000_000, test_accuracy=accuracy, test_loss=1.0, data="synthetic",
        extra={"combined": combined} if combined is not None else {})
    if device == "gpu":
        record.update({"device": "NVIDIA H200", "gpu": {"name": "NVIDIA H200"}})
    return record


def h200_shaped(tmp_path, target_seconds=0.1, ram_seconds=0.095, target_accuracy=0.42):
    """A run with the default at 0.6 s an epoch, steps per execution no different, bf16 and the
    large batch measurably faster, and the targets."""
    path = tmp_path / "gpu-settings.jsonl"
    rows = [made("default", [0.60, 0.61, 0.62, 0.60, 0.61], accuracy=0.40),
            made("spe", [0.59, 0.60, 0.61, 0.62, 0.60]),
            made("bf16", [0.40, 0.41, 0.42, 0.40, 0.41]),
            made("batch", [0.20, 0.21, 0.20, 0.22, 0.21], accuracy=0.41)]
    combined = records.helped(rows, "gpu")
    assert combined == ["bf16", "batch"]  # spe's range overlaps the default's
    rows += [made("target", [target_seconds] * 5, accuracy=target_accuracy, combined=combined),
             made("target-ram", [ram_seconds] * 5, combined=combined)]
    for r in rows:
        append_record(path, r)
    return path


def test_without_gpu_records_the_page_says_so_once(tmp_path):
    values = gpu_settings.substitutions(tmp_path / "none.jsonl")
    assert values["ref_gpuset_gpu"] == NOT_RECORDED
    assert values["ref_gpuset_table"] == NOT_RECORDED
    cpu_only = tmp_path / "cpu.jsonl"
    append_record(cpu_only, made("default", [9.0, 9.1, 9.2, 9.0, 9.1], device="cpu"))
    assert gpu_settings.substitutions(cpu_only)["ref_gpuset_gpu"] == NOT_RECORDED


def test_the_page_shows_each_row_and_how_far_the_target_got(tmp_path):
    values = gpu_settings.substitutions(h200_shaped(tmp_path))
    assert values["ref_gpuset_gpu"] == "NVIDIA H200"
    table = values["ref_gpuset_table"]
    for name in ("default", "spe", "bf16", "batch", *records.TARGETS):
        assert f"| `{name}` |" in table
    assert "no measurable difference" in table  # spe
    assert "2.9× faster" in table  # the large batch: 0.61 / 0.21
    assert "fed from RAM |" in table
    target = values["ref_gpuset_target"]
    assert "The target (bf16 + batch, from the device)" in target
    assert "in 0.1 s (goal 0.1 s: met)" in target
    assert "95% of the rate" in target and "(goal 90%: met)" in target
    # the default, spe and bf16 train alike: 0.400, 0.500 and 0.500 (made()'s default)
    assert ("test accuracy 0.420 (goal: the default's 0.400; the 3 rows that train as the "
            "default does span 0.400-0.500: met)") in target
    assert "alone reached" not in target


def test_a_target_below_the_defaults_accuracy_says_so_and_what_the_batch_alone_reached(tmp_path):
    target = gpu_settings.substitutions(h200_shaped(tmp_path, target_accuracy=0.39))[
        "ref_gpuset_target"]
    assert "test accuracy 0.390" in target and "span 0.400-0.500: not met)" in target
    assert "The batch of 1024 alone reached 0.410: its epochs take 44 steps, not 176." in target


def test_a_target_that_misses_its_goals_says_so(tmp_path):
    values = gpu_settings.substitutions(h200_shaped(tmp_path, target_seconds=0.2,
                                                    ram_seconds=0.1))
    assert "goal 0.1 s: not met" in values["ref_gpuset_target"]
    assert "50% of the rate" in values["ref_gpuset_target"]
    assert "(goal 90%: not met)" in values["ref_gpuset_target"]


def test_the_achieved_rate_and_the_figure_come_from_the_records(tmp_path):
    path = h200_shaped(tmp_path)
    run = gpu_settings.reference_run(path)
    default = gpu_settings.find(run, "gpu", "default")
    assert default["achieved_tflops"] == pytest.approx(3 * 31e6 * 45_000 / 0.61 / 1e12)
    (fig,) = gpu_settings.figures(run)
    assert len(fig.axes[0].patches) >= len(run)
    assert "default 0.61 s" in gpu_settings.alt_text(run)
    assert page.describe(run).count("| `") == len(run)
    # the made-up target is 6 times faster than the default: a logarithmic axis, said in words
    assert fig.axes[0].get_xscale() == "log" and "logarithmic" in gpu_settings.alt_text(run)
    (tmp_path / "close").mkdir()
    (close,) = gpu_settings.figures(gpu_settings.reference_run(
        h200_shaped(tmp_path / "close", target_seconds=0.5, ram_seconds=0.5)))
    assert close.axes[0].get_xscale() == "linear"


def test_every_feed_of_a_file_keeps_its_batches_in_the_generators_order(tmp_path):
    """``fit`` gets ``shuffle=False`` with the lesson's generator and the arrays in RAM: fit's
    default would reorder the generator's batches (a window read for almost every batch)."""
    from conftest import random_hdf5

    from gpulesson.experiments.gpu_settings import measure

    path = random_hdf5(tmp_path, 64)
    for name in ("default", "ram"):
        fit, _, _ = measure._feed({**records.options(name), "batch_size": 16}, path=path,
                                  cut=48, keras_device="cpu", epochs=2, seed=1)
        assert fit["shuffle"] is False, name
