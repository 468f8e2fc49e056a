"""Measurement records in a JSON Lines results file."""

import datetime
import json
import os
import platform

import numpy as np
import pytest

from gpulesson.datasets.settings import LABELS
from gpulesson.records import results
from gpulesson.records.results import (
    ResultsFileError,
    append_record,
    data_label,
    environment_record,
    make_record,
    read_records,
)


def record(**values):
    base = {"experiment": "fit", "device": "CPU", "date": "2025-01-01T00:00:00+00:00",
            "backend": "tensorflow"}
    return {**base, **values}


@pytest.fixture(scope="module")
def env():
    return environment_record()


def test_environment_record_describes_hardware_and_versions(env):
    import h5py
    import keras

    date = datetime.datetime.fromisoformat(env["date"])
    assert date.utcoffset() == datetime.timedelta(0)
    assert env["cpu_model"] and env["cores_usable"] == len(os.sched_getaffinity(0))
    assert env["backend"] == keras.backend.backend()
    assert env["device"] == "CPU" if env["gpu_count"] == 0 else env["device"] != "CPU"
    versions = env["versions"]
    assert versions["python"] == platform.python_version()
    assert versions["keras"] == keras.__version__
    assert versions["numpy"] == np.__version__ and versions["h5py"] == h5py.__version__
    assert versions[env["backend"]] == __import__(env["backend"]).__version__
    assert platform.node() not in json.dumps(env)


def test_make_record_carries_the_data_label(env, monkeypatch):
    monkeypatch.setattr(results, "environment_record", lambda: dict(env))
    rec = make_record("fit", data="synthetic", epoch_seconds=[1.0, 2.0], device="GPU override")
    assert rec["data"] == "synthetic" and rec["data_label"] == LABELS["synthetic"]
    assert rec["experiment"] == "fit" and rec["device"] == "GPU override"
    with pytest.raises(ValueError, match="data must be one of"):
        make_record("fit", data="cifar100")


def test_append_and_read_round_trip(tmp_path):
    path = tmp_path / "new" / "folder" / "results.jsonl"
    first = record(data="synthetic", data_label=LABELS["synthetic"], epoch_seconds=np.array([1.5, 0.5]),
                   images_per_second=np.float32(100.0), epochs=np.int64(2))
    append_record(path, first)
    append_record(path, record(device="NVIDIA H100", images_per_second=2000.0))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    records = read_records(path)
    assert records[0]["epoch_seconds"] == [1.5, 0.5] and records[0]["epochs"] == 2
    assert records[1]["device"] == "NVIDIA H100"
    assert read_records(path, device="CPU") == [records[0]]
    assert read_records(path, device="CPU", data="synthetic") == [records[0]]
    assert read_records(path, data="cifar10") == []


@pytest.mark.parametrize("missing", results.REQUIRED_KEYS)
def test_required_keys(tmp_path, missing):
    rec = record()
    del rec[missing]
    with pytest.raises(ResultsFileError, match=missing):
        append_record(tmp_path / "r.jsonl", rec)
    assert not (tmp_path / "r.jsonl").exists()


def test_data_source_and_label_must_agree(tmp_path):
    with pytest.raises(ResultsFileError, match="data_label"):
        append_record(tmp_path / "r.jsonl", record(data="synthetic", data_label="CIFAR-10"))
    with pytest.raises(ResultsFileError, match="data="):
        append_record(tmp_path / "r.jsonl", record(data="imagenet", data_label="ImageNet"))


def test_nan_is_refused_with_a_clear_error(tmp_path):
    with pytest.raises(ResultsFileError, match="images_per_second.*None"):
        append_record(tmp_path / "r.jsonl", record(images_per_second=float("nan")))


def test_blank_lines_are_skipped_and_corrupt_lines_named(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record()) + "\n\n   \n" + json.dumps(record(device="GPU")) + "\n")
    assert [r["device"] for r in read_records(path)] == ["CPU", "GPU"]
    path.write_text(json.dumps(record()) + "\n\n" + '{"experiment": "fit", "dev\n')
    with pytest.raises(ResultsFileError, match=rf"{path.name}, line 3 is not a valid JSON record"):
        read_records(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(ResultsFileError, match="line 1 holds a list"):
        read_records(path)
    with pytest.raises(FileNotFoundError, match="append_record"):
        read_records(tmp_path / "missing.jsonl")


def test_a_cut_short_line_does_not_swallow_the_next_record(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(record()) + "\n" + '{"experiment": "cut')
    append_record(path, record(device="GPU"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[-1])["device"] == "GPU"
    with pytest.raises(ResultsFileError, match="line 2"):
        read_records(path)


def test_data_label():
    synthetic = record(data="synthetic", data_label=LABELS["synthetic"])
    cifar = record(data="cifar10", data_label=LABELS["cifar10"])
    assert data_label([synthetic, synthetic]) == LABELS["synthetic"]
    assert data_label([cifar]) == "CIFAR-10"
    assert data_label([record()]) == results.NO_DATA_LABEL
    with pytest.raises(ValueError, match="mix data sources"):
        data_label([synthetic, cifar])
    with pytest.raises(ValueError, match="mix data sources"):
        data_label([cifar, record()])
    with pytest.raises(ValueError, match="no records"):
        data_label([])
