"""The records layer (gpulesson.records.recordset): what every experiment's records share."""

import json

import pytest

from gpulesson.records.recordset import RecordSet, check_earlier, epochs_summary, load_fields

MACHINE = {"cpu_model": "Made-up CPU", "cores_usable": 2, "cores_total": 2, "gpu_count": 0,
           "backend": "jax", "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
TOY = RecordSet("toy", ("device_kind", "size"), complete=lambda part: len(part) == 2,
                kept=lambda r: r.get("size") != 0, shown=lambda r: not r.get("wrong"))


def _file(tmp_path, *runs):
    """A results file of the toy experiment and another one: ``runs`` are (run id, device,
    sizes) in file order."""
    path = tmp_path / "toy.jsonl"
    lines = [{"experiment": "other", "run_id": "x", "device_kind": "cpu", "device": "CPU",
              "date": "2026-11-28", "backend": "jax"}]
    for run_id, device, sizes in runs:
        lines += [{"experiment": "toy", "run_id": run_id, "device_kind": device,
                   "device": "CPU" if device == "cpu" else "NVIDIA H200", "date": "2026-11-28",
                   "backend": "jax", "size": size} for size in sizes]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_missing_file_reads_as_no_records(tmp_path):
    missing = tmp_path / "none.jsonl"
    assert TOY.read(missing) == [] and TOY.runs_in(missing) == {}
    assert TOY.reference_run(missing) == [] and TOY.newest_run(missing) == []


def test_each_device_keeps_its_newest_complete_part_and_a_cut_run_never_replaces_it(tmp_path):
    path = _file(tmp_path, ("a", "cpu", [1, 2]), ("b", "gpu", [1, 2]), ("c", "cpu", [1]),
                 ("d", "cpu", [0, 3]))
    chosen = TOY.reference_run(path)
    # d's size 0 is not kept, so its part is cut like c's: a's CPU part stays, beside b's GPU.
    assert [(r["run_id"], r["size"]) for r in chosen] == [("a", 1), ("a", 2), ("b", 1), ("b", 2)]
    assert list(TOY.runs_in(path)) == ["a", "b", "c", "d"]
    assert [r["run_id"] for r in TOY.read(path, run_id="c")] == ["c"]


def test_the_newest_run_of_a_comparison_has_both_devices(tmp_path):
    path = _file(tmp_path, ("a", "cpu", [1]), ("a", "gpu", [1]), ("b", "cpu", [1]))
    assert {r["run_id"] for r in TOY.newest_run(path)} == {"a"}


def test_a_table_finds_only_the_records_it_may_show():
    records = [{"device_kind": "cpu", "size": 1, "wrong": True}, {"device_kind": "cpu", "size": 1}]
    assert TOY.find(records, size=1) is records[1]
    assert TOY.key(records[1]) == ("cpu", 1)


def test_a_cpu_record_names_its_device_cpu_and_a_shared_file_is_named():
    made = TOY.record(environment={**MACHINE, "device": "NVIDIA H200"}, device_kind="cpu")
    assert made["device"] == "CPU" and made["experiment"] == "toy" and made["data"] == "synthetic"
    assert RecordSet("toy-inference", (), file="toy").results_file.name == "toy.jsonl"


def test_the_rule_keeps_the_first_epoch_apart_and_the_load_where_given():
    summary = epochs_summary([9.0, 1.0, 2.0, 3.0])
    assert summary["warmup"] == [9.0] and summary["median"] == 2.0 and summary["n"] == 3
    assert epochs_summary([4.0])["samples"] == [4.0]
    assert load_fields([1.234, 2, 3], None) == {"load_average_before": [1.23, 2.0, 3.0]}


@pytest.mark.bad_input("bad argument")
def test_a_run_goes_on_only_with_the_settings_it_had():
    earlier = [{"run_id": "r1", "batch_size": 64}]
    check_earlier(earlier, batch_size=64)
    with pytest.raises(ValueError, match="run r1 was recorded with batch_size 64, not 16: go on"):
        check_earlier(earlier, batch_size=16)


def test_a_record_predates_the_current_method_only_where_a_method_applies():
    one_way = RecordSet("toy", ("size",))
    assert not one_way.predates({"method": None})
    records = RecordSet("toy", ("pipeline",), methods=("compiled take", "slice view"),
                        method_applies=lambda r: r["pipeline"] == "device")
    old = {"pipeline": "device", "device_kind": "gpu"}
    new = {"pipeline": "device", "device_kind": "cpu", "method": "slice view"}
    other = {"pipeline": "ram", "device_kind": "cpu"}
    assert [records.predates(r) for r in (old, new, other)] == [True, False, False]
    assert records.predating_devices([old, new, other]) == ["GPU"]
    assert records.predating_devices([new, other]) == []
