"""Contributed reference runs (results/contributed/SITE.jsonl, gpulesson.classroom.contributed): every
committed file is valid, and the validator refuses what it should. The runs checked here besides
the committed ones are made up inside the test."""

import json

import pytest
from test_class_results import record, run

from gpulesson.classroom import contributed
from gpulesson.records.results import NOT_RECORDED, ResultsFileError

COMMITTED = sorted(contributed.FOLDER.glob("*.jsonl"))


def test_the_folder_says_how_to_contribute_and_holds_only_site_files():
    assert "How to contribute" in (contributed.FOLDER / "README.md").read_text(encoding="utf-8")
    others = [p.name for p in contributed.FOLDER.iterdir() if p.suffix != ".jsonl"]
    assert others == ["README.md"]


def test_every_contributed_file_is_valid():
    runs = contributed.contributed_runs()  # raises, naming the file, for one that is not
    assert list(runs) == [path.stem for path in COMMITTED]
    for records in runs.values():
        assert all(r["date"] and r["cpu_model"] for r in records)


def test_the_page_value_lists_every_contributed_site():
    value = contributed.substitutions()["ref_contributed"]
    if not COMMITTED:
        assert value == NOT_RECORDED
    for path in COMMITTED:
        assert f"| {path.stem} |" in value


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_made_up_site_is_listed_with_its_hardware_date_and_comparison(tmp_path):
    folder = tmp_path / "contributed"
    folder.mkdir()
    write(folder / "made-up-hpc.jsonl", run(cpu=30.0, gpu=2.0, gpu_model="Made-up GPU"))
    value = contributed.substitutions(tmp_path / "contributed.jsonl")["ref_contributed"]
    assert "| made-up-hpc | 2026-01-01 |" in value
    assert "Made-up CPU, 4 cores | Made-up GPU |" in value and "faster" in value
    assert contributed.substitutions(tmp_path / "nothing.jsonl") == {"ref_contributed": NOT_RECORDED}


@pytest.mark.bad_input("corrupt file")
@pytest.mark.parametrize(("name", "records", "message"), [
    ("Made Up.jsonl", run(), "SITE.jsonl"),
    ("made-up.jsonl", run(gpu=None), "both a CPU and a GPU"),
    ("made-up.jsonl", [{**r, "date": "yesterday"} for r in run()], "ISO 8601"),
    ("made-up.jsonl", [{**r, "cpu_model": ""} for r in run()], "cpu_model"),
    ("made-up.jsonl", [run()[0], {**run()[1], "gpu": {}}], "gpu.name"),
    ("made-up.jsonl", [{**r, "run_id": None} for r in run()], "run_id"),
    ("made-up.jsonl", [{**record(), "experiment": "matmul"}], "not of 'cnn-cpu-vs-gpu'"),
    ("made-up.jsonl", [], "no records"),
], ids=["name", "no-gpu", "date", "cpu", "gpu-name", "run-id", "experiment", "empty"])
def test_a_contributed_file_that_is_not_valid_is_refused_naming_it(tmp_path, name, records, message):
    path = write(tmp_path / name, records)
    with pytest.raises(ResultsFileError, match=message) as caught:
        contributed.validate_contributed(path)
    assert str(path) in str(caught.value)
