"""The words every experiment's page shares (gpulesson/records/pagewords.py)."""

from gpulesson.records import pagewords as words
from gpulesson.records.results import NOT_RECORDED

CPU = {"run_id": "r1", "date": "2026-11-28T10:00:00", "backend": "jax",
       "versions": {"jax": "0.10.2"}, "device_kind": "cpu", "cpu_model": "AMD EPYC",
       "cores_usable": 2, "n_train": 45000, "batch_size": 256, "epochs": 6}
GPU = {**CPU, "device_kind": "gpu", "device": "NVIDIA H200"}


def test_lists_read_as_prose():
    assert [words.listed(items) for items in (["a"], ["a", "b"], [1, 2, 3])] == [
        "a", "a and b", "1, 2 and 3"]


def test_a_run_is_named_by_its_first_record_and_each_device_by_its_own():
    found = words.run_values("ref", [CPU, GPU], "run", "date", "backend", "cpu", "gpu", "n_train")
    assert found == {"ref_run": "r1", "ref_date": "2026-11-28", "ref_backend": "jax 0.10.2",
                     "ref_cpu": "AMD EPYC, 2 cores", "ref_gpu": "NVIDIA H200",
                     "ref_n_train": "45,000"}
    assert words.run_values("ref", [CPU], "gpu") == {"ref_gpu": NOT_RECORDED}
    assert set(words.run_values("ref", [], "run", "epochs").values()) == {NOT_RECORDED}


def test_what_is_missing_says_so_and_names_the_command_that_records_it():
    assert words.median_text(None) == words.accuracy(None) == words.first_epoch(None) == NOT_RECORDED
    assert words.none_yet("ceiling run", "python -m x") == (
        "No ceiling run has been recorded yet: `python -m x` records one.")
    assert words.recorded_by("python -m x", "them") == "(`python -m x` records them)"
    assert (words.met(True), words.met(False)) == ("met", "not met")


def test_a_median_names_its_range_and_its_epochs():
    summary = {"median": 2.0, "min": 1.5, "max": 2.5, "n": 5}
    assert words.median_text(summary) == "2.0 s (range 1.5 s–2.5 s, 5 epochs)"
