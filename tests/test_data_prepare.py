"""Preparing the data file: reuse of valid files, re-creation of bad ones, the real CIFAR-10
path through a mirror, and the command line (python -m gpulesson.datasets.prepare)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from data_fixtures import closed_port_url, make_cifar_archive, no_proxy

from gpulesson.datasets import settings as settings_module
from gpulesson.datasets.cifar10 import CLASS_NAMES
from gpulesson.datasets.hdf5 import arrays_checksum, validate_hdf5
from gpulesson.datasets.load import load_arrays, prepare, shuffle_rows
from gpulesson.datasets.prepare import main
from gpulesson.datasets.settings import get_settings
from gpulesson.datasets.synthetic import make_synthetic


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean lesson environment in tmp_path (whatever the test session set before)."""
    for name in ("LESSON_DATA", "LESSON_QUICK", "LESSON_CIFAR10_URL", "LESSON_CIFAR10_SHA256"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LESSON_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    no_proxy(monkeypatch)
    return monkeypatch


def synthetic_quick(tmp_path):
    return get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": "1", "LESSON_DATA_DIR": str(tmp_path)})


def test_prepare_writes_then_reuses(tmp_path, capsys):
    settings = synthetic_quick(tmp_path)
    path = prepare(settings, progress=False)
    assert path == settings.hdf5_path
    assert "Wrote" in capsys.readouterr().out
    info = validate_hdf5(path, verify_checksum=True)
    assert (info.n_train, info.n_test, info.label) == (2000, 500, settings.label)
    (x, y), (xt, yt) = make_synthetic(2000, 500, seed=0, progress=False)
    x, y = shuffle_rows(x, y)  # the training rows in the order every lesson file keeps them
    assert info.attrs["checksum_sha256"] == arrays_checksum({"x_train": x, "y_train": y, "x_test": xt, "y_test": yt})
    assert info.attrs["quick"] is True and info.attrs["seed"] == 0

    stamp = path.stat().st_mtime_ns, path.stat().st_ino
    assert prepare(settings, progress=False) == path
    assert "Reusing" in capsys.readouterr().out
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == stamp


@pytest.mark.parametrize("spoil, expect", [
    (lambda path: path.write_bytes(b"\0" * 100), "cannot be used"),
    (lambda path: prepare(synthetic_quick(path.parent), seed=5, force=True, progress=False), "seed 5"),
])
@pytest.mark.bad_input("corrupt file")
def test_prepare_recreates_unusable_or_mismatching_files(tmp_path, capsys, spoil, expect):
    settings = synthetic_quick(tmp_path)
    spoil(settings.hdf5_path)
    capsys.readouterr()
    prepare(settings, progress=False)
    assert expect in capsys.readouterr().out
    info = validate_hdf5(settings.hdf5_path, verify_checksum=True)
    assert info.attrs["seed"] == 0


def test_force_and_out(tmp_path, capsys):
    settings = synthetic_quick(tmp_path)
    out = tmp_path / "elsewhere" / "mine.h5"
    assert prepare(settings, out=out, progress=False) == out
    assert not settings.hdf5_path.exists()
    inode = out.stat().st_ino
    prepare(settings, out=out, force=True, progress=False)
    assert "Wrote" in capsys.readouterr().out.splitlines()[-1]
    assert out.stat().st_ino != inode  # a new file was renamed into place


def test_cifar10_from_a_mirror_in_quick_mode(env, tmp_path):
    archive = make_cifar_archive(tmp_path / "mirror", n_per_batch=20, n_test=12)
    env.setenv("LESSON_CIFAR10_URL", archive.url)
    env.setenv("LESSON_CIFAR10_SHA256", archive.sha256)
    env.setattr(settings_module, "QUICK_N_TRAIN", 30)
    env.setattr(settings_module, "QUICK_N_TEST", 5)
    settings = get_settings({"LESSON_QUICK": "1", "LESSON_DATA_DIR": str(tmp_path)})
    (x, y), (xt, yt), source, names = load_arrays(settings, progress=False)
    assert source == "cifar10" and names == CLASS_NAMES
    np.testing.assert_array_equal(x, archive.x_train[:30])
    np.testing.assert_array_equal(yt, archive.y_test[:5])
    assert (tmp_path / "keras" / "datasets").is_dir()  # KERAS_HOME is read when loading

    path = prepare(settings, progress=False)
    info = validate_hdf5(path, verify_checksum=True)
    assert (info.source, info.synthetic, info.n_train, info.n_test) == ("cifar10", False, 30, 5)
    assert info.attrs["origin"] == archive.url and info.class_names == CLASS_NAMES


# --- the command line ------------------------------------------------------------------------

def test_cli_synthetic_quick(env, tmp_path, capsys):
    assert main(["--data", "synthetic", "--quick", "--data-dir", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "d" / "synthetic-quick.h5"
    assert str(path) in out and "MB" in out and "synthetic stand-in" in out and "2,000" in out
    validate_hdf5(path, verify_checksum=True)
    assert main(["--data", "synthetic", "--quick", "--data-dir", str(tmp_path / "d")]) == 0
    assert "Reusing" in capsys.readouterr().out


def test_cli_defaults_come_from_the_environment(env, tmp_path, capsys):
    env.setenv("LESSON_DATA", "synthetic")
    env.setenv("LESSON_QUICK", "1")
    assert main(["--seed", "7", "--out", str(tmp_path / "s.h5")]) == 0
    info = validate_hdf5(tmp_path / "s.h5")
    assert (info.source, info.n_train, info.attrs["seed"]) == ("synthetic", 2000, 7)
    assert not (tmp_path / "data").exists()


@pytest.mark.bad_input("no internet")
def test_cli_unavailable_cifar10_fails_cleanly(env, tmp_path, capsys):
    env.setenv("LESSON_CIFAR10_URL", closed_port_url())
    assert main(["--data", "cifar10", "--quick"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Could not get CIFAR-10")
    assert "python -m gpulesson.datasets.prepare --data cifar10" in err and "LESSON_DATA=synthetic" in err
    assert "Traceback" not in err
    assert not (tmp_path / "data").exists() or os.listdir(tmp_path / "data") == []


@pytest.mark.parametrize("argv, message", [
    (["--data", "cifar10", "--seed", "1"], "--seed only applies"),
    (["--data", "mnist"], "invalid choice"),
])
@pytest.mark.bad_input("bad argument")
def test_cli_usage_errors(env, capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.bad_input("bad argument")
def test_cli_unreadable_setting_says_how_to_set_it(env, capsys):
    """A setting of the environment it cannot read: its own message, without argparse's usage
    (which lists options, not the variable to fix)."""
    env.setenv("LESSON_QUICK", "maybe")
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: LESSON_QUICK='maybe' is not understood") and "usage:" not in err
    assert "export LESSON_QUICK=1" in err


@pytest.mark.bad_input("no internet")
def test_cli_as_a_module_end_to_end(tmp_path):
    """The real command, in a fresh interpreter: success, then a failure without a traceback."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LESSON_")}
    env.update(LESSON_DATA_DIR=str(tmp_path), KERAS_HOME=str(tmp_path / "keras"), no_proxy="127.0.0.1")
    command = [sys.executable, "-m", "gpulesson.datasets.prepare"]
    done = subprocess.run(command + ["--data", "synthetic", "--quick"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "synthetic-quick.h5" in done.stdout
    env["LESSON_CIFAR10_URL"] = closed_port_url()
    failed = subprocess.run(command + ["--data", "cifar10"], env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 1
    assert "Could not get CIFAR-10" in failed.stderr and "Traceback" not in failed.stderr
    assert sorted(p.name for p in tmp_path.glob("*.h5")) == ["synthetic-quick.h5"]
    assert not list(tmp_path.glob(".*.tmp"))
