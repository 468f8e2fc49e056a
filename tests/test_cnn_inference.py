"""The CNN's prediction conditions (gpulesson.experiments.cnn.measure): timed calls under the
measurement rule, records beside the training's, and a run that goes on."""

import json
from types import SimpleNamespace

import pytest
from conftest import ROOT

from gpulesson.experiments.cnn import measure, page
from gpulesson.records.results import NOT_RECORDED, read_records
from gpulesson.records.summaries import summarise


def test_time_calls_keeps_the_warmup_apart_and_every_timed_call():
    calls = []
    warmup, timed = measure.time_calls(lambda: calls.append(1), 1, 4)
    assert len(calls) == 5 and len(warmup) == 1 and len(timed) == 4
    assert all(s >= 0 for s in warmup + timed)


@pytest.mark.bad_input("bad argument")
def test_time_calls_needs_a_timed_call():
    with pytest.raises(ValueError, match="at least one timed call"):
        measure.time_calls(lambda: None, 1, 0)


def _record(kind: str, run_id: str, call_seconds, latency, *, batch=1000) -> dict:
    return {"experiment": measure.PREDICTIONS.experiment, "run_id": run_id, "device_kind": kind,
            "device": "CPU" if kind == "cpu" else "Test GPU", "batch_size": batch,
            "date": "2026-11-23T00:00:00+00:00", "backend": "tensorflow",
            "summary": summarise(call_seconds, [9.0]), "latency": summarise(latency, [1.0]),
            "energy": {"measured": False, "reason": "no counters in this test"}}


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_describe_says_each_devices_rate_latency_and_energy():
    text = measure.describe_predictions([_record("cpu", "r", [2.0, 1.0, 4.0], [0.010, 0.012, 0.011])])
    # the median rate is over the median call; the range from the slowest call to the fastest
    assert text.startswith("CPU (CPU): 500 images/s (range 250–1,000 images/s, 3 repeats)")
    assert "at 1000 images a call" in text and "one image 11 ms (range 10 ms–12 ms, 3 calls)" in text
    assert "(no counters in this test)" in text
    assert measure.describe_predictions([]) == "No prediction recorded."


@pytest.fixture
def lesson_results(tmp_path):
    """The lesson's CNN training records as they were before energy and prediction were kept:
    its results file without prediction records and without the training records' energy."""
    path = tmp_path / "cnn-cpu-vs-gpu.jsonl"
    old = []
    for line in (ROOT / "results" / "cnn-cpu-vs-gpu.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("experiment") == measure.PREDICTIONS.experiment:
            continue
        record.pop("energy", None)
        old.append(json.dumps(record))
    path.write_text("\n".join(old) + "\n")
    return path


def test_old_training_records_still_load(lesson_results):
    assert page.substitutions(lesson_results)["ref_cpu_epoch"] != NOT_RECORDED


def test_prediction_records_leave_the_training_alone_and_join_its_run(lesson_results):
    before = page.substitutions(lesson_results)
    run_id = page.reference_run(lesson_results)[0]["run_id"]
    with open(lesson_results, "a", encoding="utf-8") as f:
        f.write(json.dumps(_record("cpu", run_id, [2.0, 2.1], [0.01, 0.011])) + "\n")
    assert page.substitutions(lesson_results) == before
    assert [r["run_id"] for r in measure.PREDICTIONS.read(lesson_results)] == [run_id]
    assert all(r["experiment"] == measure.EXPERIMENT
               for r in read_records(lesson_results, experiment=measure.EXPERIMENT))


@pytest.fixture
def machine(monkeypatch, lesson_results):
    """The command's measure() on a machine with ``machine.gpus`` GPUs and the data of the
    lesson's file (``machine.data`` to change them); what it asks to train and to predict."""
    from gpulesson.datasets import settings
    from gpulesson.machine import devices, timing

    state = SimpleNamespace(gpus=0, data=page.reference_run(lesson_results)[0]["data"], asked=[])
    monkeypatch.setattr(timing, "set_cpu_threads", lambda threads: {})
    monkeypatch.setattr(devices, "keras_device", lambda: {"gpu_count": state.gpus})
    monkeypatch.setattr(settings, "get_settings", lambda: SimpleNamespace(
        data=state.data, quick=True, describe=lambda: "the settings"))
    for name, part in (("train", "training"), ("predict", "inference")):
        monkeypatch.setattr(measure, name, lambda devices, *args, part=part, **kwargs:
                            state.asked.append((part, devices)) or iter(()))
    return state


def _measure(out, run_id: str, *devices: str):
    done = {measure.RECORDS.key(r) for r in measure.RECORDS.read(out, run_id=run_id)}
    args = SimpleNamespace(out=out, devices=list(devices), parts=list(measure.PARTS),
                           cpu_threads=None, epochs=None, batch_size=64, seed=1)
    return list(measure.measure(args, run_id=run_id, done=done))


def test_a_continued_run_adds_the_prediction_without_training_again(lesson_results, machine,
                                                                     capsys):
    run = page.reference_run(lesson_results)
    run_id, trained = run[0]["run_id"], {r["device_kind"] for r in run}
    _measure(lesson_results, run_id, "cpu")
    assert machine.asked == [("inference", ["cpu"])]
    assert "nothing left to record" in capsys.readouterr().out
    with open(lesson_results, "a", encoding="utf-8") as f:
        f.write(json.dumps(_record("cpu", run_id, [2.0, 2.1], [0.01, 0.011])) + "\n")
    machine.gpus, machine.asked = 1, []
    _measure(lesson_results, run_id, "cpu", "gpu")
    assert machine.asked == [("training", ["gpu"])] * ("gpu" not in trained) + [("inference", ["gpu"])]


@pytest.mark.bad_input("bad argument")
def test_a_run_goes_on_only_with_its_own_data(lesson_results, machine, capsys):
    run_id = page.reference_run(lesson_results)[0]["run_id"]
    data, machine.data = machine.data, "cifar10" if machine.data == "synthetic" else "synthetic"
    with pytest.raises(SystemExit) as stopped:
        _measure(lesson_results, run_id, "cpu")
    assert stopped.value.code == 2 and f"set LESSON_DATA={data}" in capsys.readouterr().err
    assert machine.asked == []
    _measure(lesson_results, "20261128T100000Z-cccccc", "cpu")  # a new run: any data
    assert machine.asked == [("training", ["cpu"]), ("inference", ["cpu"])]
