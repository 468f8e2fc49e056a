"""Allocation cost (gpulesson.classroom.charges) and the page's "Should this job use a GPU?" table
(gpulesson.experiments.decision)."""

import json

import pytest
import yaml
from conftest import ROOT

from gpulesson.classroom.charges import ChargeRatesError, Rates, allocation_cost, read_rates
from gpulesson.experiments import decision
from gpulesson.records.results import NOT_RECORDED
from gpulesson.records.summaries import summarise

RATES = Rates(unit="units", core_hour=2.0, gpu_hour=30.0)


def _config(path, **rates):
    site = {"cluster_name": "Test", **rates}
    path.write_text(yaml.safe_dump({"lesson_site": site}), encoding="utf-8")
    return path


def test_the_lessons_rates_are_marked_as_an_example():
    rates = read_rates(ROOT / "_config.yml")
    assert "example" in rates.note.lower()
    assert rates.core_hour >= 0 and rates.gpu_hour >= 0 and rates.unit


def test_rates_are_read_from_the_site_section(tmp_path):
    config = _config(tmp_path / "_config.yml", charge_unit="SU", core_hour_rate="1.5",
                     gpu_hour_rate=40, charge_note="Our rates.")
    assert read_rates(config) == Rates(unit="SU", core_hour=1.5, gpu_hour=40.0, note="Our rates.")


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("rates, message", [
    ({"charge_unit": "SU", "core_hour_rate": 1}, "lacks gpu_hour_rate"),
    ({"charge_unit": "SU", "core_hour_rate": "one", "gpu_hour_rate": 2}, "not a number"),
    ({"charge_unit": "SU", "core_hour_rate": 1, "gpu_hour_rate": -2}, "zero or more"),
])
def test_bad_rates_say_what_to_set(tmp_path, rates, message):
    with pytest.raises(ChargeRatesError, match=message):
        read_rates(_config(tmp_path / "_config.yml", **rates))


@pytest.mark.bad_input("missing file")
def test_a_missing_config_says_where_the_rates_go(tmp_path):
    with pytest.raises(ChargeRatesError, match="lesson_site section"):
        read_rates(tmp_path / "_config.yml")


def test_a_cpu_job_pays_its_core_hours_and_a_gpu_job_its_gpu_hours():
    assert allocation_cost(3600, RATES, cores=4) == pytest.approx(8.0)
    assert allocation_cost(1800, RATES, gpus=1) == pytest.approx(15.0)
    assert allocation_cost(0, RATES, cores=1) == 0


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("seconds, kwargs, message", [
    (-1, {"cores": 1}, "cannot take"),
    (10, {}, "needs cores or GPUs"),
    (10, {"cores": -2}, "needs cores or GPUs"),
])
def test_a_job_that_cannot_be_charged_is_refused(seconds, kwargs, message):
    with pytest.raises(ValueError, match=message):
        allocation_cost(seconds, RATES, **kwargs)


def test_training_time_adds_the_warmups_extra_once():
    summary = summarise([10.0, 12.0, 11.0], [25.0])
    total = decision.training_time(summary, 25.0, epochs=30)
    assert total["median"] == pytest.approx(30 * 11 + 14)
    assert (total["min"], total["max"]) == pytest.approx((30 * 10 + 14, 30 * 12 + 14))
    assert decision.training_time(summary, 5.0, epochs=2)["median"] == pytest.approx(22.0)
    assert decision.training_time(None, 1.0) is None


def _training(experiment, kind, run_id, epochs, **extra):
    return {"experiment": experiment, "run_id": run_id, "device_kind": kind,
            "device": "CPU" if kind == "cpu" else "Test GPU", "date": "2026-11-23T00:00:00",
            "backend": "tensorflow", "first_epoch_seconds": epochs[0],
            "summary": summarise(epochs[1:], epochs[:1]), **extra}


@pytest.fixture
def lesson(tmp_path):
    """A lesson folder: example rates, and results of the CNN (CPU only)."""
    _config(tmp_path / "_config.yml", charge_unit="SU", core_hour_rate=1, gpu_hour_rate=36)
    (tmp_path / "results").mkdir()
    cnn = tmp_path / "results" / "cnn-cpu-vs-gpu.jsonl"
    cnn.write_text(json.dumps(_training("cnn-cpu-vs-gpu", "cpu", "a", [130.0, 120.0, 120.0],
                                        cpu_cores_available=4)) + "\n", encoding="utf-8")
    return tmp_path


def test_without_gpu_records_the_gpu_rows_are_missing(lesson):
    values = decision.substitutions(lesson / "results" / "cnn-cpu-vs-gpu.jsonl")
    # 30 epochs of 120 s, plus the warm-up's 10 s extra: 3,610 s on 4 cores at 1 SU a core-hour.
    assert values["ref_dec_cnn_cpu_cost"].startswith("4.01 SU")
    assert values["ref_dec_cnn_cpu_cost"].endswith(", 4 cores")
    assert values["ref_dec_cnn_cpu_time"].startswith("60.2 min")
    for name in ("gpu_time", "gpu_cost", "time_verdict", "cost_verdict"):
        assert values[f"ref_dec_cnn_{name}"] == NOT_RECORDED, name


@pytest.mark.parametrize("gpu_epochs, time_verdict, cost_verdict, gpu_cost", [
    # 36 SU an hour for the GPU against 4 for the 4 cores: 9 times the rate, 10.8 times the speed.
    ([30.0, 10.0, 11.0], "11× faster", "1.2× cheaper", "3.35 SU (range 3.2–3.5 SU"),
    ([60.0, 50.0, 51.0], "2.4× faster", "3.8× costlier", "15.2 SU (range 15.1–15.4 SU"),
    # the GPU's cost range (3.67–4.57 SU) holds the CPU's (4.01–4.04 SU): the words from compare
    ([20.0, 12.0, 15.0], "8.8× faster", "no measurable difference", "4.12 SU"),
])
def test_with_gpu_records_the_table_compares_time_and_cost(lesson, gpu_epochs, time_verdict,
                                                          cost_verdict, gpu_cost):
    path = lesson / "results" / "cnn-cpu-vs-gpu.jsonl"
    cpu = _training("cnn-cpu-vs-gpu", "cpu", "b", [130.0, 120.0, 121.0], cpu_cores_available=4)
    gpu = _training("cnn-cpu-vs-gpu", "gpu", "b", gpu_epochs)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(cpu) + "\n" + json.dumps(gpu) + "\n")
    values = decision.substitutions(path)
    assert values["ref_dec_cnn_time_verdict"] == time_verdict
    assert values["ref_dec_cnn_cost_verdict"] == cost_verdict
    assert values["ref_dec_cnn_gpu_cost"].startswith(gpu_cost)  # its time at one GPU's rate
    assert values["ref_dec_cnn_gpu_cost"].endswith(", one GPU")


def test_the_lessons_own_rates_serve_results_outside_a_lesson(tmp_path):
    (tmp_path / "results").mkdir()
    values = decision.substitutions(tmp_path / "results" / "cnn-cpu-vs-gpu.jsonl")
    assert values["ref_dec_rates_note"] == read_rates(ROOT / "_config.yml").note
    assert values["ref_dec_cnn_cpu_time"] == NOT_RECORDED
