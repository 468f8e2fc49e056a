"""Episode 5's finished runs come back after a restart instead of training again
(gpulesson.classroom.finished_runs, called by the catch-up cells)."""

import json

import keras
import numpy as np
import pytest
from conftest import ROOT

from gpulesson.classroom.finished_runs import RESULTS_NAME, RUNS_DIR, reload_runs, save_runs
from gpulesson.datasets.settings import get_settings
from gpulesson.records.results import append_record, make_record

ENVIRONMENT = {"date": "2026-11-28T12:00:00Z", "backend": "tensorflow"}


def settings_for(tmp_path, quick="1"):
    return get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": quick,
                         "LESSON_WORK_DIR": str(tmp_path / "work"),
                         "LESSON_DATA_DIR": str(tmp_path / "data")})


def a_run(device: str) -> tuple[dict, dict]:
    """(what train_on returns, its record) for a tiny model."""
    model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(2)])
    timing = {"epochs": 2, "epoch_seconds": [2.0, 1.0], "validation_seconds": [0.2, 0.1],
              "first_epoch_seconds": 2.0, "steady_mean_epoch_seconds": 1.0,
              "steady_median_epoch_seconds": 1.0, "images_per_second": 100.0}
    run = {"device": device, "model": model, "history": {"loss": [1.0, 0.5]},
           "timing": {**timing, "total_seconds": 3.0}, "evaluation_seconds": 0.3,
           "test_loss": 0.6, "test_accuracy": 0.4, "start_weights": "abc123",
           "jit_compile": False}
    kind = "gpu" if device.startswith("gpu") else "cpu"
    device_name = "NVIDIA H200" if kind == "gpu" else "CPU"
    record = make_record("cnn-fit", data="synthetic", environment=ENVIRONMENT, device_kind=kind,
                         keras_device=device, **timing, training_seconds=3.0,
                         evaluation_seconds=0.3, total_seconds=3.3, test_loss=0.6,
                         test_accuracy=0.4, start_weights="abc123", jit_compile=False,
                         history=run["history"], run_id="20261128T120000Z-aaaaaa",
                         device=device_name)
    return run, record


def saved(tmp_path, capsys, gpu=False, settings=None):
    settings = settings or settings_for(tmp_path)
    results = settings.work_dir / RESULTS_NAME
    cpu_run, cpu_record = a_run("cpu")
    gpu_run, gpu_record = a_run("gpu:0") if gpu else (None, None)
    for record in filter(None, (cpu_record, gpu_record)):
        append_record(results, record)
    save_runs(results, "20261128T120000Z-aaaaaa", settings, cpu_run=cpu_run, gpu_run=gpu_run)
    assert "the catch-up cells reload this run" in capsys.readouterr().out
    return settings, cpu_run


def test_a_saved_run_comes_back_as_train_on_returned_it(tmp_path, capsys):
    settings, cpu_run = saved(tmp_path, capsys)
    namespace = {}
    assert reload_runs(namespace, settings, gpu_visible=False)
    out = capsys.readouterr().out
    assert out.startswith("Reloaded your finished run 20261128T120000Z-aaaaaa (cpu_run, saved in")
    assert namespace["gpu_run"] is None and len(namespace["records"]) == 1
    back = namespace["cpu_run"]
    assert {k: v for k, v in back.items() if k != "model"} == {
        k: v for k, v in cpu_run.items() if k != "model"}
    x = np.ones((1, 3), "float32")
    assert np.allclose(back["model"].predict(x, verbose=0), cpu_run["model"].predict(x, verbose=0))


def test_nothing_is_reloaded_over_the_kernels_own_runs_or_for_other_settings(tmp_path, capsys):
    settings, _ = saved(tmp_path, capsys)
    mine = {"cpu_run": "my own"}
    assert not reload_runs(mine, settings, gpu_visible=False) and mine == {"cpu_run": "my own"}
    # Full size instead of quick mode: the saved run is not this one.
    assert not reload_runs({}, settings_for(tmp_path, quick="0"), gpu_visible=False)
    # A CPU-only run where a GPU is visible now: train again, for the GPU run.
    assert not reload_runs({}, settings, gpu_visible=True)
    assert capsys.readouterr().out == ""


def test_with_its_gpu_half_a_run_is_reloaded_where_a_gpu_is_visible(tmp_path, capsys):
    settings, _ = saved(tmp_path, capsys, gpu=True)
    namespace = {}
    assert reload_runs(namespace, settings, gpu_visible=True)
    assert namespace["gpu_run"]["device"] == "gpu:0" and len(namespace["records"]) == 2


@pytest.mark.bad_input("corrupt file")
def test_a_broken_index_or_results_file_means_training_again(tmp_path, capsys):
    settings, _ = saved(tmp_path, capsys)
    (settings.work_dir / RESULTS_NAME).write_text("{not json\n", encoding="utf-8")
    assert not reload_runs({}, settings, gpu_visible=False)
    next((settings.work_dir / RUNS_DIR).glob("*.json")).write_text("[", encoding="utf-8")
    assert not reload_runs({}, settings, gpu_visible=False)


def test_saving_keeps_a_file_it_did_not_make(tmp_path, capsys):
    settings = settings_for(tmp_path)
    folder = settings.work_dir / RUNS_DIR
    folder.mkdir(parents=True)
    mine = folder / "20261128T120000Z-aaaaaa-cpu_run.keras"
    mine.write_text("mine", encoding="utf-8")
    saved(tmp_path, capsys, settings=settings)
    kept = [p for p in folder.iterdir() if p.read_bytes() == b"mine"]
    assert len(kept) == 1 and kept[0] != mine  # moved aside under a new name, said in one line
    assert json.loads((folder / "20261128T120000Z-aaaaaa.json").read_text())["models"] == {
        "cpu_run": mine.name, "gpu_run": None}


def test_episode_5_saves_its_runs_beside_the_results_file_that_reload_reads():
    text = (ROOT / "_episodes" / "05-cpu-vs-gpu.md").read_text(encoding="utf-8")
    assert f'my_results = settings.work_dir / "{RESULTS_NAME}"' in text
    assert "save_runs(my_results, run_id, settings, cpu_run=cpu_run, gpu_run=gpu_run)" in text
