"""Settings from environment variables: explicit choices, strict parsing, derived values."""

import subprocess
import sys
from pathlib import Path

import pytest

from gpulesson.datasets import settings as s
from gpulesson.datasets.settings import Settings, get_settings, prepare_command


def test_defaults_are_full_cifar10_in_home():
    got = get_settings({})
    assert (got.data, got.quick) == ("cifar10", False)
    assert got.data_dir == Path("~/gpulesson-data").expanduser()
    assert got.hdf5_path == got.data_dir / "cifar10.h5"
    assert (got.n_train, got.n_test) == (50_000, 10_000)
    assert not got.is_synthetic and got.label == "CIFAR-10"


def test_synthetic_quick_in_given_dir(tmp_path):
    got = get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": "1", "LESSON_DATA_DIR": str(tmp_path)})
    assert got.is_synthetic
    assert got.hdf5_path == tmp_path / "synthetic-quick.h5"
    assert (got.n_train, got.n_test) == (s.QUICK_N_TRAIN, s.QUICK_N_TEST)
    assert got.n_train < s.FULL_N_TRAIN and got.n_test < s.FULL_N_TEST
    assert "not CIFAR-10" in got.label


@pytest.mark.parametrize("text, expected", [
    ("1", True), ("true", True), ("YES", True), (" True ", True),
    ("0", False), ("false", False), ("No", False), ("", False),
])
def test_quick_values(text, expected):
    assert get_settings({"LESSON_QUICK": text}).quick is expected


@pytest.mark.parametrize("text", ["2", "on", "quick", "y", "-1"])
@pytest.mark.bad_input("bad argument")
def test_quick_rejects_unknown_values(text):
    with pytest.raises(ValueError, match="LESSON_QUICK") as err:
        get_settings({"LESSON_QUICK": text})
    assert repr(text) in str(err.value)


@pytest.mark.parametrize("text", ["cifar100", "CIFAR-10", "mnist", "synth"])
@pytest.mark.bad_input("bad argument")
def test_data_rejects_unknown_values_listing_the_allowed_ones(text):
    with pytest.raises(ValueError) as err:
        get_settings({"LESSON_DATA": text})
    message = str(err.value)
    assert "LESSON_DATA" in message and "cifar10" in message and "synthetic" in message


@pytest.mark.bad_input("bad argument")
def test_a_typo_in_the_data_names_every_choice_and_what_it_needs():
    """A typo must not point a learner who is offline to cifar10 alone, whose download fails
    there: every choice is named, with what it needs, and the offline one is suggested."""
    with pytest.raises(ValueError) as err:
        get_settings({"LESSON_DATA": "cifr10"})
    message = str(err.value)
    for choice in s.DATA_CHOICES:
        # one line per choice: its name, then what it needs
        assert f"    {choice} " in message and s.DATA_NEEDS[choice] in message, message
    assert "internet" in s.DATA_NEEDS["cifar10"] and "offline" in s.DATA_NEEDS["synthetic"]
    assert "python -m gpulesson.datasets.prepare --data cifar10" in message
    # How to set it, for the offline choice and for the other.
    assert "%env LESSON_DATA=synthetic" in message and "export LESSON_DATA=synthetic" in message
    assert "LESSON_DATA=cifar10" in message
    # The records' explicit choice says the same.
    with pytest.raises(ValueError, match="unknown data 'cifr10'") as err:
        s.explicit_data("cifr10")
    assert all(s.DATA_NEEDS[choice] in str(err.value) for choice in s.DATA_CHOICES)


def test_data_is_case_insensitive_and_empty_means_default():
    assert get_settings({"LESSON_DATA": "Synthetic"}).data == "synthetic"
    assert get_settings({"LESSON_DATA": ""}).data == "cifar10"


def test_settings_are_frozen_and_checked():
    settings = get_settings({})
    with pytest.raises(AttributeError):
        settings.data = "synthetic"
    with pytest.raises(ValueError):
        Settings(data="mnist", quick=False, data_dir=Path("."))


def test_reads_os_environ_by_default(monkeypatch, tmp_path):
    monkeypatch.setenv("LESSON_DATA", "synthetic")
    monkeypatch.setenv("LESSON_QUICK", "yes")
    monkeypatch.setenv("LESSON_DATA_DIR", str(tmp_path / "d"))
    assert get_settings().hdf5_path == tmp_path / "d" / "synthetic-quick.h5"


def test_describe_names_source_mode_sizes_and_file(tmp_path):
    line = get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": "1", "LESSON_DATA_DIR": str(tmp_path)}).describe()
    assert "\n" not in line
    for part in ("synthetic stand-in (not CIFAR-10)", "quick", "2,000", "500", str(tmp_path / "synthetic-quick.h5")):
        assert part in line
    full = get_settings({}).describe()
    assert "CIFAR-10" in full and "50,000" in full and "quick" not in full


def test_prepare_command_names_unusual_files_only(tmp_path):
    default = Path("~/gpulesson-data/cifar10.h5").expanduser()
    assert prepare_command("cifar10", False, default) == "python -m gpulesson.datasets.prepare --data cifar10"
    assert prepare_command("synthetic", True, tmp_path / "synthetic-quick.h5") == (
        f"python -m gpulesson.datasets.prepare --data synthetic --quick --data-dir {tmp_path}"
    )
    assert prepare_command("cifar10", False, tmp_path / "x y.h5").endswith(f"--out '{tmp_path}/x y.h5'")


def test_import_is_light():
    code = "import sys, gpulesson.datasets.settings; print(sorted(m for m in ('keras', 'tensorflow', 'h5py', 'numpy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_quick_mode_caps_the_epochs():
    quick, full = get_settings({"LESSON_QUICK": "1"}), get_settings({})
    assert quick.epochs(10) == s.QUICK_EPOCHS < 10
    assert quick.epochs(1) == 1
    assert full.epochs(10) == 10
    with pytest.raises(ValueError, match="at least 1"):
        full.epochs(0)


def test_quick_mode_caps_the_batch_size():
    quick, full = s.get_settings({"LESSON_QUICK": "1"}), s.get_settings({})
    assert quick.batch_size(256) == s.QUICK_BATCH_SIZE < 256
    assert quick.batch_size(16) == 16
    assert full.batch_size(1024) == 1024
    with pytest.raises(ValueError, match="at least 1"):
        full.batch_size(0)


# --- the learner's own folder (LESSON_WORK_DIR) --------------------------------------------------

def test_the_work_folder_defaults_to_home_and_is_created_when_first_used(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = get_settings({"LESSON_DATA_DIR": str(tmp_path / "data")})
    default = tmp_path / "gpulesson-work"
    assert not default.exists(), "reading the settings creates nothing"
    assert settings.work_dir == default and default.is_dir()
    assert not (tmp_path / "data").exists(), "the data folder is not the work folder"
    chosen = get_settings({"LESSON_WORK_DIR": str(tmp_path / "mine" / "work")})
    assert chosen.work_dir == tmp_path / "mine" / "work" and chosen.work_dir.is_dir()


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("work", ["{data}", "{data}/", "{data}/../data"])
def test_the_work_folder_may_not_be_the_data_folder(tmp_path, work):
    env = {"LESSON_DATA_DIR": str(tmp_path / "data"), "LESSON_WORK_DIR": work.format(data=tmp_path / "data")}
    with pytest.raises(ValueError) as refused:
        get_settings(env)
    message = str(refused.value)
    assert "LESSON_WORK_DIR is the data folder" in message and "%env LESSON_WORK_DIR=~/gpulesson-work" in message
    # Settings made in code are refused when the folder is used.
    settings = Settings("synthetic", quick=True, data_dir=tmp_path / "data", work_folder=tmp_path / "data")
    with pytest.raises(ValueError, match="is the data folder"):
        settings.work_dir
    assert not (tmp_path / "data").exists()


@pytest.mark.bad_input("unwritable folder")
def test_a_work_folder_that_cannot_be_made_is_named(tmp_path):
    from gpulesson.errors import DataFolderError

    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("a file")
    settings = get_settings({"LESSON_WORK_DIR": str(not_a_folder / "work")})
    with pytest.raises(DataFolderError) as failed:
        settings.work_dir
    message = str(failed.value)
    assert str(not_a_folder / "work") in message and "%env LESSON_WORK_DIR=" in message
    assert failed.value.__cause__ is None


@pytest.mark.parametrize("name", ["LESSON_DATA_DIR", "LESSON_WORK_DIR"])
@pytest.mark.parametrize("value", ["$HOME/lesson", "${HOME}/lesson", "~/lesson", '"~/lesson"',
                                   "'$HOME/lesson'"])
def test_home_in_a_folder_variable_is_expanded_as_a_shell_would(tmp_path, monkeypatch, name, value):
    """%env in a notebook keeps $HOME, ~ and quotes literally: expanded here, never a folder
    named '$HOME'."""
    monkeypatch.setenv("HOME", str(tmp_path))
    settings = get_settings({name: value, "HOME": str(tmp_path)})
    folder = settings.data_dir if name == "LESSON_DATA_DIR" else settings.work_dir
    assert folder == tmp_path / "lesson"
    assert "$" not in str(folder) and "~" not in str(folder) and '"' not in str(folder)


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("value, named", [("$HOMEDIR/lesson", "$HOMEDIR"), ("~nosuchuser9/x", "~nosuchuser9")])
def test_a_folder_variable_that_cannot_be_expanded_is_refused(tmp_path, value, named):
    with pytest.raises(ValueError) as refused:
        get_settings({"LESSON_DATA_DIR": value})
    message = str(refused.value)
    assert named in message and "%env LESSON_DATA_DIR=~/gpulesson-data" in message
    assert not any(tmp_path.iterdir())


# --- batch size and epochs: plausible typos ------------------------------------------------------

@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("quick", ["0", "1"])
def test_a_float_batch_size_says_to_use_whole_number_division(quick):
    settings = get_settings({"LESSON_QUICK": quick})
    with pytest.raises(ValueError) as refused:
        settings.batch_size(256 / 4)
    message = str(refused.value)
    assert "64.0" in message and "a float" in message and "BATCH_SIZE = 256 // 4" in message
    with pytest.raises(ValueError, match="whole number, not 2.5"):
        settings.epochs(2.5)
    assert settings.batch_size(256 // 4) == 64


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("value", [0, -3])
def test_zero_epochs_or_batch_size_say_what_to_write(value):
    from gpulesson.errors import LessonError

    settings = get_settings({})
    with pytest.raises(LessonError, match=rf"the number of epochs must be at least 1, not {value}: write e.g. EPOCHS = 3"):
        settings.epochs(value)
    with pytest.raises(LessonError, match=rf"the batch size must be at least 1, not {value}: write"):
        settings.batch_size(value)


def test_numpy_integers_are_whole_numbers():
    import numpy as np

    assert get_settings({}).batch_size(np.int64(128)) == 128
    with pytest.raises(ValueError, match="whole number, not True"):
        get_settings({}).epochs(True)
