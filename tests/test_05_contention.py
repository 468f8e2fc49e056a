"""The contention benchmark of episode 5 (k trainings at once on one CPU): the measurement on
tiny data, failing or killed trainings, and going on with a run. Its records, the
page's values and the figure are tested in test_05_contention_page.py."""

import json
import sys

import pytest
from contention_helpers import made_up_records, made_up_report, made_up_watched

from gpulesson.experiments import contention, registry
from gpulesson.experiments.contention import measure, page
from gpulesson.records.results import append_record, read_records, validate_record


def contention_main(argv) -> int:
    """The command, as ``python -m gpulesson.experiments.contention`` runs it."""
    return registry.run("gpulesson.experiments.contention", argv)


# --- the measurement, on tiny data -----------------------------------------------------------

def test_k_trainings_at_once_are_measured_and_recorded(tmp_path):
    out = tmp_path / "runs.jsonl"
    assert contention_main(["--quick", "--parts", "copies", "--copies", "1", "2", "--n-images", "128",
                            "--batch-size", "64", "--epochs", "1", "--cpu-threads",
                            "--out", str(out)]) == 0
    records = read_records(out)
    assert [(r["copies"], r["threads"]) for r in records] == [(1, None), (2, None)]
    assert len({r["run_id"] for r in records}) == 1
    for record in records:
        validate_record(record)
        assert record["experiment"] == "contention" and record["device"] == "CPU"
        assert record["data"] == "synthetic" and record["backend"]
        assert len(record["per_copy"]) == record["copies"]
        for copy in record["per_copy"]:
            assert len(copy["epoch_seconds"]) == 1 and copy["epoch_seconds"][0] > 0
            assert copy["images_per_second"] == pytest.approx(128 / copy["epoch_seconds"][0])
        assert record["images_per_second_total"] == pytest.approx(
            sum(c["images_per_second"] for c in record["per_copy"]))
        assert record["load_samples"] and record["load_max"] == max(record["load_samples"])
        assert record["cpu_cores_available"] >= 1 and record["framework_threads"]
        # The trainings ran with the GPU hidden, and their framework saw none.
        assert record["gpu_hidden"] is True and record["gpus_seen"] == 0
        # Both copies trained at the same time, not one after the other.
        assert record["overlap_seconds"] > 0
    assert records[0]["slowdown"] == pytest.approx(1.0)
    assert records[1]["slowdown"] == pytest.approx(
        records[1]["mean_epoch_seconds"] / records[0]["mean_epoch_seconds"])



# --- failing and killed trainings ---------------------------------------------------------------

@pytest.mark.bad_input("missing file")
def test_a_failing_training_is_a_clear_error(tmp_path):
    with pytest.raises(measure.WorkerError, match=r"copy 1 of 1 failed(.|\n)*no-such\.h5"):
        measure.run_condition(tmp_path / "no-such.h5", 1, n_images=64, batch_size=32,
                                 epochs=1, timeout=300)


@pytest.mark.bad_input("killed job")
def test_a_killed_training_is_a_clear_error(tmp_path, monkeypatch):
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: killed)
    with pytest.raises(measure.WorkerError, match="exit status -9"):
        measure.run_condition(tmp_path / "x.h5", 2, n_images=64, batch_size=32, epochs=1)


@pytest.mark.bad_input("killed job")
def test_a_training_without_its_timings_is_a_clear_error(tmp_path, monkeypatch):
    silent = [sys.executable, "-c", "import sys; sys.stderr.write('out of memory')"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: silent)
    with pytest.raises(measure.WorkerError, match=r"without its timings(.|\n)*out of memory"):
        measure.run_condition(tmp_path / "x.h5", 1, n_images=64, batch_size=32, epochs=1)


@pytest.mark.bad_input("killed job")
def test_trainings_past_the_limit_are_stopped_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "runs.jsonl"
    append_record(out, made_up_records()[0])
    before = out.read_bytes()
    with pytest.raises(SystemExit, match=r"^1$"):
        contention_main(["--quick", "--parts", "copies", "--copies", "1", "2", "--timeout", "0.5",
                         "--out", str(out)])
    error = capsys.readouterr().err
    assert "ran past the limit of 0.5 s" in error and "--timeout" in error
    assert "Nothing was written" in error
    assert out.read_bytes() == before


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("args, message", [
    (["--copies", "0"], "--copies must be at least 1"),
    (["--n-images", "64", "--batch-size", "128"], "larger than --n-images"),
    (["--timeout", "0"], "--timeout must be positive"),
    (["--cpu-threads", "0"], "--cpu-threads must be at least 1"),
])
def test_bad_arguments_are_refused_before_anything_runs(tmp_path, capsys, args, message):
    out = tmp_path / "runs.jsonl"
    with pytest.raises(SystemExit):
        contention_main([*args, "--quick", "--out", str(out)])
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_worker_output_is_one_json_line(tmp_path):
    """The worker's report format, read back as the parent reads it."""
    out, err = tmp_path / "o", tmp_path / "e"
    out.write_text("noise\n" + json.dumps(made_up_report(1.0, 2.0)) + "\n")
    err.write_text("")
    assert measure._report(out, err, 1)["epoch_seconds"] == [1.0, 2.0]


# --- on a GPU node, going on with a run ---------------------------------------------------------

def test_the_trainings_see_no_gpu(tmp_path, monkeypatch):
    """A node's own settings would show the workers its GPU; the workers get it hidden."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    # What a started training gets: a stand-in worker prints its environment.
    shown = [sys.executable, "-c",
             "import json, os; print(json.dumps({'epoch_seconds': [1.0], "
             "'framework_threads': None, 'cores': 1, 'fit_start': 0.0, 'fit_end': 1.0, "
             "'env': [os.environ['CUDA_VISIBLE_DEVICES'], os.environ['JAX_PLATFORMS']]}))"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: shown)
    condition = measure.run_condition(tmp_path / "x.h5", 2, n_images=64, batch_size=32, epochs=1)
    assert [r["env"] for r in condition["reports"]] == [["", "cpu"], ["", "cpu"]]
    assert condition["gpu_hidden"] is True



def _fake_trainings(monkeypatch, fail_at=None, interrupt_at=None):
    """Conditions made up at once instead of trained (epoch 10 s per copy alone, more with
    more copies); the list of the (copies, threads) run. ``fail_at``/``interrupt_at``: the
    condition that fails (WorkerError) or is interrupted (KeyboardInterrupt, as Ctrl-C)."""
    ran = []

    def run_condition(data, copies, threads=None, **kwargs):
        if (copies, threads) == fail_at:
            raise measure.WorkerError(f"training copy 1 of {copies} failed (exit status 1)")
        if (copies, threads) == interrupt_at:
            raise KeyboardInterrupt
        ran.append((copies, threads))
        seconds = 10.0 * copies / (2 if threads else 1)
        reports = [{**made_up_report(seconds, seconds), "devices_seen": {"device": "CPU", "gpu_count": 0}}
                   for _ in range(copies)]
        return {"copies": copies, "threads": threads, "reports": reports, "gpu_hidden": True,
                "load_before": 0.1, "load_samples": [1.0], "wall_seconds": 2 * seconds}

    monkeypatch.setattr(measure, "run_condition", run_condition)
    monkeypatch.setattr(measure, "write_data", lambda folder, *a, **k: folder)
    return ran


COPIES_ARGS = ["--quick", "--parts", "copies", "--copies", "1", "2", "--cpu-threads", "1"]


@pytest.fixture
def on_torch(monkeypatch):
    """The workers' backend taken as PyTorch, which has a per-process thread setting."""
    monkeypatch.setattr(measure, "keras_backend", lambda: "torch")


def _keys(path):
    return [(r["copies"], r["threads"]) for r in read_records(path)]


@pytest.mark.bad_input("killed job")
def test_going_on_with_a_run_completes_it_and_records_nothing_twice(tmp_path, monkeypatch,
                                                                    capsys, on_torch):
    out = tmp_path / "runs.jsonl"
    args = [*COPIES_ARGS, "--run-id", "20261123T120000Z-aaaaaa", "--out", str(out)]
    ran = _fake_trainings(monkeypatch, fail_at=(2, None))
    with pytest.raises(SystemExit, match=r"^1$"):
        contention_main(args)
    error = capsys.readouterr().err
    assert "Nothing was written" in error and "--run-id 20261123T120000Z-aaaaaa" in error
    assert ran == [(1, None)] and _keys(out) == [(1, None)], "the failed condition is not written"

    ran = _fake_trainings(monkeypatch)
    assert contention_main(args) == 0
    assert ran == [(2, None), (1, 1), (2, 1)], "only what the run lacked"
    records = read_records(out)
    assert _keys(out) == [(1, None), (2, None), (1, 1), (2, 1)]
    assert {r["run_id"] for r in records} == {"20261123T120000Z-aaaaaa"}
    # Slowdowns against the copy alone recorded by the first command.
    assert [r["slowdown"] for r in records] == pytest.approx([1.0, 2.0, 0.5, 1.0])
    summary = capsys.readouterr().out
    assert "going on: 1 condition(s) recorded already" in summary
    assert "Appended 3 record(s)" in summary and summary.count("1 thread ") == 2

    ran = _fake_trainings(monkeypatch)
    before = out.read_bytes()
    assert contention_main(args) == 0
    assert ran == [] and out.read_bytes() == before
    assert "Nothing left to measure" in capsys.readouterr().out


@pytest.mark.bad_input("killed job")
def test_a_run_stopped_after_its_first_condition_keeps_that_record(tmp_path, monkeypatch, on_torch):
    out = tmp_path / "runs.jsonl"
    _fake_trainings(monkeypatch, interrupt_at=(2, None))
    with pytest.raises(KeyboardInterrupt):
        contention_main([*COPIES_ARGS, "--out", str(out)])
    [record] = read_records(out)
    validate_record(record)
    assert (record["copies"], record["threads"], record["slowdown"]) == (1, None, 1.0)


@pytest.mark.bad_input("bad argument")
def test_going_on_with_other_sizes_is_refused(tmp_path, monkeypatch, capsys, on_torch):
    out = tmp_path / "runs.jsonl"
    _fake_trainings(monkeypatch, fail_at=(2, None))
    args = [*COPIES_ARGS, "--run-id", "r1", "--out", str(out)]
    with pytest.raises(SystemExit, match=r"^1$"):
        contention_main(args)
    ran = _fake_trainings(monkeypatch)
    before = out.read_bytes()
    with pytest.raises(SystemExit, match=r"^2$"):
        contention_main([*args, "--epochs", str(contention.QUICK_EPOCHS + 1)])
    assert "go on with the settings it had" in capsys.readouterr().err
    assert ran == [] and out.read_bytes() == before


def test_going_on_with_a_former_watched_run_measures_every_copies_condition(tmp_path, monkeypatch,
                                                                           on_torch):
    """The results file keeps the former watched part's records (one training alone, shown in
    a browser or not): they are no copies condition, and their sizes are not the run's."""
    out = tmp_path / "runs.jsonl"
    for record in made_up_watched("20261123T120000Z-bbbbbb"):
        append_record(out, record)
    ran = _fake_trainings(monkeypatch)
    assert contention_main([*COPIES_ARGS, "--run-id", "20261123T120000Z-bbbbbb",
                            "--out", str(out)]) == 0
    assert ran == [(1, None), (2, None), (1, 1), (2, 1)]
    assert [r["part"] for r in read_records(out)] == ["watched"] * 2 + ["copies"] * 4


@pytest.mark.bad_input("wrong backend")
def test_thread_conditions_are_skipped_where_the_backend_has_no_thread_setting(tmp_path, monkeypatch,
                                                                              capsys):
    assert [measure.threads_skipped(b, [1]) for b in ("tensorflow", "torch")] == [None, None]
    monkeypatch.setattr(measure, "keras_backend", lambda: "jax")
    ran = _fake_trainings(monkeypatch)
    out = tmp_path / "runs.jsonl"
    assert contention_main([*COPIES_ARGS, "--out", str(out)]) == 0
    assert ran == [(1, None), (2, None)], "no one-thread condition on JAX"
    records = read_records(out)
    assert all(r["threads"] is None for r in records)
    for record in records:
        [note] = record["skipped_conditions"]
        assert "1 thread(s) per copy were skipped" in note and "jax" in note
    printed = capsys.readouterr().out
    assert printed.startswith("Note: the condition(s) with 1 thread(s) per copy were skipped")
    # The run's table, read back from the file, says so too.
    assert f"Note: {note}" in page.describe(records)
    assert f"Note: {note}" in printed.split("Run ")[-1]
