"""The stand-in's calibration: the record of the lesson's CNN on it, its targets, figures and
the values the instructor notes show."""


import numpy as np
import pytest

from gpulesson.datasets.synthetic import PAIRS, SYNTHETIC_CLASS_NAMES
from gpulesson.experiments import calibration, registry
from gpulesson.experiments.calibration.measure import generator_fingerprint
from gpulesson.experiments.calibration.page import describe, findings, reference_run, substitutions
from gpulesson.records.results import NOT_RECORDED, read_records, validate_record

COMMAND = "python -m gpulesson.experiments.calibration"


def calibration_main(argv) -> int:
    return registry.run("gpulesson.experiments.calibration", argv)


@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    """A quick calibration run through the command line, read back from its results file."""
    out = tmp_path_factory.mktemp("calibration") / "calibration.jsonl"
    assert calibration_main(["--quick", "--out", str(out)]) == 0
    (record,) = read_records(out)
    return out, record


def test_a_quick_run_records_what_the_notes_need(quick_record):
    out, record = quick_record
    validate_record(record)
    assert record["experiment"] == calibration.EXPERIMENT and record["data"] == "synthetic"
    assert record["device"] == "CPU" and record["cpu_model"] and record["versions"]["keras"]
    assert (record["n_train"], record["n_validation"], record["n_test"]) == (1800, 200, 500)
    assert record["epochs"] == 2 and record["batch_size"] == 64
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        assert len(record["history"][key]) == 2, key
    assert len(record["test_accuracy_per_epoch"]) == len(record["test_loss_per_epoch"]) == 2
    assert all(0 <= a <= 1 for a in record["test_accuracy_per_epoch"])
    # two epochs, fewer than the workshop's three: the last epoch's matrix is the one there is
    (matrix,) = record["confusion"].values()
    assert np.asarray(matrix).shape == (10, 10) and np.sum(matrix) == 500
    assert np.trace(matrix) / 500 == pytest.approx(record["test_accuracy_per_epoch"][-1])
    assert record["generator"] == generator_fingerprint()
    assert len(record["load_average"]["start"] or [0, 0, 0]) == 3

    values = substitutions(out)
    assert all(key.startswith("ref_calib_") for key in values)
    assert NOT_RECORDED not in values.values(), values
    assert values["ref_calib_epochs"] == "2" and values["ref_calib_n_train"] == "1,800"
    assert values["ref_calib_workshop_epochs"] == "2"
    text = describe([record])
    assert "synthetic stand-in (not CIFAR-10)" in text and "Test accuracy after 2 epochs" in text


def test_findings_read_overfitting_and_pairs_from_a_record():
    matrix = np.diag([80] * 10)
    matrix[4, 5] = matrix[5, 4] = 15  # few spots and many spots
    matrix[0, 9] = 10
    record = {
        "workshop_epochs": 3,
        "history": {"loss": [1.5, 1.0, 0.8, 0.5, 0.3], "accuracy": [0.4, 0.6, 0.7, 0.8, 0.9],
                    "val_loss": [1.4, 1.0, 0.9, 1.0, 1.2], "val_accuracy": [0.4, 0.6, 0.65, 0.66, 0.66]},
        "test_accuracy_per_epoch": [0.4, 0.55, 0.6, 0.7, 0.68],
        "confusion": {"3": matrix.tolist(), "5": matrix.tolist()},
    }
    found = findings(record)
    assert found["workshop_accuracy"] == 0.6 and found["best_accuracy"] == 0.7 and found["best_epoch"] == 4
    assert found["val_loss_low_epoch"] == 3 and found["overfits"]
    assert found["final_pair_share"] == pytest.approx(30 / 40)
    assert found["most_confused"] == (4, 5)
    record["history"]["val_loss"] = [1.4, 1.0, 0.9, 0.8, 0.7]  # still falling: no overfitting
    assert not findings(record)["overfits"]


def test_no_record_says_not_recorded(tmp_path):
    values = substitutions(tmp_path / "none.jsonl")
    assert values and set(values.values()) == {NOT_RECORDED}


# ------------------------------------------------------------------ the committed full-size record

@pytest.fixture(scope="module")
def reference():
    records = reference_run()
    assert records, f"{calibration.RESULTS_FILE} must hold a record: {COMMAND}"
    return records[0]


def test_the_committed_record_is_full_size_and_of_this_generator(reference):
    validate_record(reference)
    assert reference["data"] == "synthetic" and reference["backend"] and reference["date"]
    assert reference["load_average"]["start"] is not None
    assert (reference["n_train"], reference["n_validation"], reference["n_test"]) == (45_000, 5_000, 10_000)
    assert reference["epochs"] >= 30 and reference["batch_size"] == 256
    assert reference["generator"] == generator_fingerprint(reference["data_seed"]), (
        f"the stand-in changed since the calibration was recorded: run {COMMAND}")


def test_the_stand_in_behaves_like_cifar10(reference):
    """The targets: CIFAR-like accuracy after the workshop's epochs, overfitting, pair confusions."""
    found = findings(reference)
    low, high = calibration.TARGET_ACCURACY
    assert found["workshop_epochs"] == 3
    assert low <= found["workshop_accuracy"] <= high, found
    assert found["overfits"] and found["val_loss_low_epoch"] < 30, found
    assert found["final_train_accuracy"] > found["final_accuracy"] + 0.05, found
    assert found["workshop_pair_share"] > 0.5 and found["final_pair_share"] > 0.5, found
    assert found["most_confused"] in PAIRS


def test_the_notes_values_come_from_the_record(reference):
    values = substitutions()
    found = findings(reference)
    assert values["ref_calib_workshop_accuracy"] == f"{found['workshop_accuracy']:.1%}"
    assert values["ref_calib_n_train"] == "45,000" and values["ref_calib_epochs"] == str(reference["epochs"])
    a, b = found["most_confused"]
    assert values["ref_calib_most_confused"] == f"{SYNTHETIC_CLASS_NAMES[a]} and {SYNTHETIC_CLASS_NAMES[b]}"


def test_the_figures_go_to_the_episode_that_shows_them():
    # what they draw from the committed results: test_reference.py, for every experiment
    assert registry.Declared("gpulesson.experiments.calibration").page.FIGURE_FOLDER == "fig/05-cpu-vs-gpu"


# ------------------------------------------------------------------------------------ bad input

@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("args, message", [
    (["--epochs", "0"], "epochs must be a whole number >= 1"),
    (["--n-train", "10"], "n_train=10 is too small"),
    (["--quick", "--batch-size", "5000"], "batch_size=5000 is larger than the 1800 training images"),
])
def test_bad_sizes_are_refused_before_any_work(tmp_path, capsys, args, message):
    out = tmp_path / "calibration.jsonl"
    with pytest.raises(SystemExit) as stopped:
        calibration_main([*args, "--out", str(out)])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Nothing was measured or written" in err
    assert not out.exists()


@pytest.mark.bad_input("no GPU")
def test_a_gpu_asked_for_without_one_is_refused(tmp_path, capsys):
    from gpulesson.machine.devices import keras_device

    if keras_device()["gpu_count"]:
        pytest.skip("a GPU is visible here")
    out = tmp_path / "calibration.jsonl"
    with pytest.raises(SystemExit) as stopped:
        calibration_main(["--quick", "--device", "gpu", "--out", str(out)])
    assert stopped.value.code == 2
    assert "No GPU is visible" in capsys.readouterr().err and not out.exists()
