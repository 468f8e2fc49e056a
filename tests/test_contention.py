"""The contention benchmark of episode 5 (k trainings at once on one CPU): the measurement on
tiny data, its records, the page's values, the figure, and failing or killed trainings."""

import importlib.util
import json
import sys

import carpentry
import pytest
from conftest import ROOT

from gpulesson.experiments import contention
from gpulesson.experiments.contention import measure
from gpulesson.experiments.contention.__main__ import main as contention_main
from gpulesson.localhost import chromium_path
from gpulesson.results import NOT_RECORDED, append_record, read_records, validate_record

EPISODE = ROOT / "_episodes" / "05-cpu-vs-gpu.md"
ENVIRONMENT = {"date": "2026-11-23T10:00:00+00:00", "cpu_model": "Test CPU", "cores_usable": 2,
               "cores_total": 2, "device": "CPU", "gpu_count": 0, "backend": "tensorflow",
               "versions": {"keras": "3.15.1", "tensorflow": "2.21.0"}}


def _report(*epochs, start=0.0):
    return {"epoch_seconds": list(epochs), "framework_threads": {"intra_op": 2, "inter_op": 2},
            "cores": 2, "fit_start": 1000.0 + start, "fit_end": 1000.0 + start + sum(epochs)}


def _conditions(factor=1.0):
    """One copy alone, then two and three at once, then three with one thread each: each copy
    a warm-up epoch and two timed ones. ``factor`` multiplies the epochs of every condition
    but the copy alone."""
    def report(*epochs, start=0.0, alone=False):
        return _report(*(e * (1.0 if alone else factor) for e in epochs), start=start)

    return [
        {"copies": 1, "threads": None, "reports": [report(12.0, 9.0, 11.0, alone=True)],
         "load_before": 0.1, "load_samples": [0.5, 1.9, 2.0], "wall_seconds": 25.0},
        {"copies": 2, "threads": None,
         "reports": [report(21.0, 19.0, 21.0), report(23.0, 23.0, 25.0, start=1)],
         "load_before": 1.0, "load_samples": [2.5, 4.1], "wall_seconds": 50.0},
        {"copies": 3, "threads": None,
         "reports": [report(20.0, 39.0, 41.0), report(30.0, 44.0, 46.0, start=2),
                     report(38.0, 34.0, 36.0, start=4)],
         "load_before": 2.0, "load_samples": [4.0, 6.2], "wall_seconds": 90.0},
        {"copies": 3, "threads": 1,
         "reports": [report(16.0, 14.5, 15.5), report(16.0, 14.5, 15.5), report(16.0, 14.5, 15.5)],
         "load_before": 2.0, "load_samples": [3.0], "wall_seconds": 50.0},
    ]


def _records(run_id="20261123T100000Z-abcdef", factor=1.0):
    return contention.make_records(_conditions(factor), run_id=run_id, n_images=1000,
                                   batch_size=100, epochs=3, environment=ENVIRONMENT)


def _watched_records(run_id="20261123T100500Z-fedcba"):
    """One training shown in no browser, with Keras' bar in a browser, with a line an epoch."""
    conditions = [
        {"copies": 1, "threads": None, "watched": mode, "reports": [_report(*epochs)],
         "load_before": 0.2, "load_samples": samples, "wall_seconds": sum(epochs)}
        for mode, epochs, samples in (
            ("no browser", (30.0, 27.5, 28.5), [1.2]),
            ("browser, bar per step", (40.0, 70.0, 98.0), [2.9, 3.4]),
            ("browser, line per epoch", (31.0, 28.0, 30.0), [1.3]))]
    return contention.make_records(conditions, run_id=run_id, n_images=45000, batch_size=256,
                                   epochs=3, environment=ENVIRONMENT)


@pytest.fixture
def records_file(tmp_path):
    path = tmp_path / "contention.jsonl"
    for record in _records() + _watched_records():
        append_record(path, record)
    return path


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


# --- records ------------------------------------------------------------------------------------

def test_a_record_has_every_field_the_page_and_figure_need():
    alone, two, three, three_one = _records()
    assert alone["slowdown"] == 1.0 and alone["mean_epoch_seconds"] == 10.0
    assert alone["images_per_second"] == 100.0 and alone["first_epoch_seconds"] == 12.0
    # Copy 1 took 20 s, copy 2 24 s after their first epochs (means): 22 s against 10 s alone.
    assert two["mean_epoch_seconds"] == pytest.approx(22.0)
    assert two["slowdown"] == pytest.approx(2.2)
    assert two["images_per_second_total"] == pytest.approx(1000 / 20 + 1000 / 24)
    assert two["start_spread_seconds"] == 1.0 and two["load_max"] == 4.1
    # Two of the three copies had a first epoch faster than their later ones.
    assert three["first_epoch_fastest"] == 2 and three["per_copy"][0]["first_epoch_fastest"]
    assert three_one["threads"] == 1 and three_one["slowdown"] == pytest.approx(1.5)
    for record in (alone, two, three, three_one):
        validate_record(record)
        assert record["cpu_model"] == "Test CPU" and record["run_id"] == alone["run_id"]
    # The rule: every copy's epochs after its warm-up are the condition's samples, summarised.
    assert three["summary"]["samples"] == [39.0, 41.0, 44.0, 46.0, 34.0, 36.0]
    assert three["summary"]["warmup"] == [20.0, 30.0, 38.0] and three["summary"]["median"] == 40.0
    assert alone["summary"]["n"] == 2 and alone["summary"]["min"] == 9.0


def test_records_made_before_the_summary_get_the_same_one():
    from gpulesson.experiments.contention.records import condition_summary

    for record in _records():
        old = {k: v for k, v in record.items() if k != "summary"}
        assert condition_summary(old) == record["summary"]
    assert condition_summary(None) is None


def test_without_a_copy_alone_there_is_no_slowdown():
    records = contention.make_records(_conditions()[1:], run_id="r", n_images=1000,
                                      batch_size=100, epochs=3, environment=ENVIRONMENT)
    assert all(r["slowdown"] is None for r in records)
    assert "-" in contention.describe(records)


def test_the_table_names_every_condition(records_file):
    text = contention.describe(contention.reference_run(records_file))
    assert "Test CPU" in text and "1 thread" in text and "2.20x" in text
    assert contention.describe([]) == "No run recorded."


# --- the page's values ------------------------------------------------------------------------

def test_page_values_come_from_the_newest_run(records_file):
    for record in _records(run_id="20261123T110000Z-123456", factor=2.0):
        append_record(records_file, record)
    values = contention.substitutions(records_file)
    assert values["ref_cont_run"] == "20261123T110000Z-123456"
    assert values["ref_cont_cpu"] == "Test CPU, 2 cores"
    assert values["ref_cont_alone_rate"] == "100 images/s"
    # The episode's 45,000 images at 100 images/s.
    assert values["ref_cont_alone_lesson_epoch"] == "7.5 min"
    assert values["ref_cont_two_slowdown"] == "4.4 times"
    assert values["ref_cont_three_one_thread_slowdown"] == "3.0 times"
    assert values["ref_cont_three_load"] == "6.2"
    assert values["ref_cont_alone_first"] == "12.0 s"
    assert values["ref_cont_alone_later"] == "10.0 s (range 9.0 s–11.0 s, 2 epochs)"
    assert not [k for k, v in values.items() if NOT_RECORDED in v]


def test_a_missing_file_gives_not_recorded_values(tmp_path):
    values = contention.substitutions(tmp_path / "none.jsonl")
    assert values["ref_cont_lesson_images"] == "45,000"
    assert all(v == NOT_RECORDED for k, v in values.items() if k != "ref_cont_lesson_images")


def _episode(values_from):
    values = {**carpentry.placeholder_values(ROOT), **contention.substitutions(values_from)}
    return carpentry.fill_placeholders(EPISODE.read_text(encoding="utf-8"), ROOT, values)


SECTION = "## Is your node shared? (optional)"


def values_alt_text_is_there(section, records_file):
    """The figure's numbers reach the page in its alt text, drawn by the measuring code."""
    return f":alt: {contention.substitutions(records_file)['ref_cont_fig_alt']}" in section


def test_the_episode_reads_well_without_the_records(tmp_path):
    filled = _episode(tmp_path / "none.jsonl")
    section = filled.split(SECTION)[1].split("\n## ")[0]
    assert "contention.svg" not in section and "copies of this CNN" not in section
    assert "cpu_settings()" in section and "set_cpu_threads()" in section  # what to do stays
    assert NOT_RECORDED not in section


def test_the_episode_shows_the_measurement_once_recorded(records_file):
    filled = _episode(records_file)
    section = filled.split(SECTION)[1].split("\n## ")[0]
    assert "contention.svg" in section and "trained at once on 2 cores" in section
    assert values_alt_text_is_there(section, records_file)
    assert NOT_RECORDED not in section


# --- the figure ---------------------------------------------------------------------------------

def _figure_script():
    spec = importlib.util.spec_from_file_location(
        "contention_figure", ROOT / "fig" / "05-cpu-vs-gpu" / "contention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_figure_draws_the_spread_and_says_what_it_draws(records_file):
    import matplotlib.pyplot as plt

    records = contention.reference_run(records_file)
    (fig,) = contention.figures(records)
    try:
        left = fig.axes[0]
        # One whisker per condition (common.draw_spread), and the epochs as dots.
        assert len(left.containers) == 2 and all(len(c.lines[2]) for c in left.containers)
        assert "whiskers: fastest to slowest epoch" in fig._suptitle.get_text()
        values = contention.substitutions(records_file)
        assert fig.alt_text == values["ref_cont_fig_alt"]
        for text in ("10.0 s (range 9.0 s–11.0 s, 2 epochs)", "40.0 s (range 34.0 s–46.0 s, 6 epochs)",
                     "load 6.2", "1 thread per training", "fair share"):
            assert text in fig.alt_text, text
        (watched,) = contention.watched_figures(contention.reference_run(records_file, "watched"))
        assert watched.alt_text == values["ref_cont_fig_watched_alt"]
        assert "40.0 s, 70.0 s, 98.0 s" in watched.alt_text and "warm-up" in watched.alt_text
    finally:
        plt.close("all")
    # Without the one-thread conditions, the alt text does not speak of them.
    (fig,) = contention.figures([r for r in records if r["threads"] is None])
    assert "1 thread" not in fig.alt_text
    plt.close(fig)


def test_the_figure_script_draws_from_a_records_file(records_file, tmp_path):
    written = _figure_script().draw(records_file, tmp_path)
    assert [p.name for p in written] == ["contention.svg", "contention-watched.svg"]
    svg = written[0].read_text(encoding="utf-8")
    assert "trainings running at once" in svg and "1 thread" in svg
    svg = written[1].read_text(encoding="utf-8")
    assert "browser, bar per step" in svg and "no browser" in svg and "epoch" in svg


@pytest.mark.bad_input("missing file")
def test_the_figure_script_says_when_nothing_is_recorded(tmp_path):
    with pytest.raises(SystemExit, match=r"holds no run.*python -m gpulesson.experiments.contention"):
        _figure_script().draw(tmp_path / "none.jsonl", tmp_path)
    assert not list(tmp_path.glob("*.svg"))


# --- failing and killed trainings ---------------------------------------------------------------

@pytest.mark.bad_input("missing file")
def test_a_failing_training_is_a_clear_error(tmp_path):
    with pytest.raises(contention.WorkerError, match=r"copy 1 of 1 failed(.|\n)*no-such\.h5"):
        contention.run_condition(tmp_path / "no-such.h5", 1, n_images=64, batch_size=32,
                                 epochs=1, timeout=300)


@pytest.mark.bad_input("killed job")
def test_a_killed_training_is_a_clear_error(tmp_path, monkeypatch):
    killed = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: killed)
    with pytest.raises(contention.WorkerError, match="exit status -9"):
        contention.run_condition(tmp_path / "x.h5", 2, n_images=64, batch_size=32, epochs=1)


@pytest.mark.bad_input("killed job")
def test_a_training_without_its_timings_is_a_clear_error(tmp_path, monkeypatch):
    silent = [sys.executable, "-c", "import sys; sys.stderr.write('out of memory')"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: silent)
    with pytest.raises(contention.WorkerError, match=r"without its timings(.|\n)*out of memory"):
        contention.run_condition(tmp_path / "x.h5", 1, n_images=64, batch_size=32, epochs=1)


@pytest.mark.bad_input("killed job")
def test_trainings_past_the_limit_are_stopped_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "runs.jsonl"
    append_record(out, _records()[0])
    before = out.read_bytes()
    assert contention_main(["--quick", "--parts", "copies", "--copies", "1", "2", "--timeout",
                            "0.5", "--out", str(out)]) == 1
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
    out.write_text("noise\n" + json.dumps(_report(1.0, 2.0)) + "\n")
    err.write_text("")
    assert measure._report(out, err, 1)["epoch_seconds"] == [1.0, 2.0]


def test_series_differ_by_more_than_colour():
    import matplotlib.pyplot as plt
    from test_accessibility import problems

    figures = contention.figures(_records()) + contention.watched_figures(_watched_records())
    try:
        assert not [p for fig in figures for p in problems(fig)]
    finally:
        for fig in figures:
            plt.close(fig)


# --- the watched part ---------------------------------------------------------------------------

def test_the_watched_part_has_its_own_run_and_slowdowns_against_no_browser():
    none, bar, lines = _watched_records()
    assert {r["part"] for r in (none, bar, lines)} == {"watched"}
    assert none["slowdown"] == 1.0
    assert bar["slowdown"] == pytest.approx((70 + 98) / 2 / 28)
    assert all(r["part"] == "copies" and r["watched"] is None for r in _records())
    text = contention.describe(_watched_records())
    assert "browser, bar per step" in text and "40.0, 70.0, 98.0" in text


def test_watched_page_values_come_from_the_newest_watched_run(records_file):
    values = contention.substitutions(records_file)
    # The copies part is still read from its own run.
    assert values["ref_cont_run"] == "20261123T100000Z-abcdef"
    assert values["ref_cont_watch_images"] == "45,000" and values["ref_cont_watch_epochs"] == "3"
    assert values["ref_cont_watch_bar_epochs"] == "40, 70, 98 s"
    assert values["ref_cont_watch_bar_first"] == "40.0 s" and values["ref_cont_watch_bar_last"] == "98.0 s"
    # The bar's timed epochs (70, 98 s) against no browser's (27.5, 28.5 s): apart, by the medians.
    assert values["ref_cont_watch_bar_slowdown"] == "3.0 times"
    # With a line an epoch (28, 30 s) the ranges overlap: the medians' ratio, said to be no more.
    assert values["ref_cont_watch_lines_slowdown"] == (
        "1.0 times (by the medians; no measurable difference by the ranges)")
    assert values["ref_cont_watch_none_load"] == "1.2"
    assert values["ref_cont_watch_bar_trend"] == "grew from one epoch to the next"
    assert values["ref_cont_watch_lines_trend"] == "did not grow measurably from one epoch to the next"
    assert values["ref_cont_watch_bar_vs_none"] == "3× slower than"  # common.compare's words
    assert values["ref_cont_watch_lines_vs_none"] == "about as fast as"
    # Alone: 9 to 12 s for 1,000 images (copies), 27.5 to 30 s for 45,000 (no browser), each
    # scaled to the episode's 45,000 images.
    assert values["ref_cont_alone_range"] == "27.5 s to 9.0 min"


def test_comparisons_in_words_follow_the_numbers(records_file):
    values = contention.substitutions(records_file)
    # Three at once: epochs of 34 to 46 s against 27 to 33 s, three times one alone's 9 to 11 s.
    assert values["ref_cont_three_vs_share"] == "more than"
    assert values["ref_cont_together"].startswith(
        "Together the three processed fewer images per second than one alone (75 images/s "
        "against 100, by the median epochs)")
    # One thread each: 14.5 to 15.5 s against 34 to 46 s with the default threads (medians 15, 40).
    assert values["ref_cont_one_thread_vs_default"] == "2.7× faster than"
    assert values["ref_cont_two_slowdown"] == "2.2 times"


def test_a_copy_alone_with_one_timed_epoch_ranks_nothing():
    """Each copy one warm-up and one timed epoch: one copy alone has a single sample, no range,
    so common.compare tells no condition apart from it, and the page says so."""
    conditions = _conditions()
    for condition in conditions:
        for report in condition["reports"]:
            report["epoch_seconds"] = report["epoch_seconds"][:2]
    path_values = {}
    records = contention.make_records(conditions, run_id="r", n_images=1000, batch_size=100,
                                      epochs=2, environment=ENVIRONMENT)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "contention.jsonl"
        for record in records:
            append_record(path, record)
        path_values = contention.substitutions(path)
    assert path_values["ref_cont_alone_later"] == "9.0 s (1 epoch, no range)"
    # 19 and 23 s against 9 s: 2.3 times by the medians, with no range alone to tell them apart.
    assert path_values["ref_cont_two_slowdown"] == (
        "2.3 times (by the medians; no measurable difference by the ranges)")
    assert path_values["ref_cont_three_vs_share"] == "not measurably different from"
    assert "no measurable difference" in path_values["ref_cont_together"]
    assert "fewer" not in path_values["ref_cont_together"]


def test_a_training_in_a_browser_is_measured(tmp_path):
    """The watched part for real, tiny: JupyterLab, the notebook open in headless Chromium,
    its cells run from the page, and the same training with no browser; skipped where
    Chromium or Playwright is missing."""
    from gpulesson.experiments.contention import watched

    if chromium_path() is None or importlib.util.find_spec("playwright") is None:
        pytest.skip(watched.ENABLE)
    modes = ("no browser", "browser, bar per step")
    conditions = watched.run_watched_benchmark(modes, n_images=128, batch_size=64, epochs=2,
                                               timeout=300, data_dir=tmp_path)
    records = contention.make_records(conditions, run_id="r", n_images=128, batch_size=64,
                                      epochs=2)
    assert [r["watched"] for r in records] == list(modes)
    for record in records:
        validate_record(record)
        assert record["part"] == "watched" and len(record["per_copy"][0]["epoch_seconds"]) == 2
        # The load was sampled while the training ran, also while the page ran it.
        assert record["load_samples"] and record["load_max"] > 0
    assert records[0]["slowdown"] == 1.0 and records[1]["slowdown"] > 0


@pytest.mark.bad_input("missing file")
def test_a_failing_training_in_the_browser_is_a_clear_error(tmp_path):
    from gpulesson.experiments.contention import watched

    if chromium_path() is None or importlib.util.find_spec("playwright") is None:
        pytest.skip(watched.ENABLE)
    with pytest.raises(contention.WorkerError, match=r"failed in the notebook(.|\n)*no-such"):
        watched.run_watched(tmp_path / "no-such.h5", "browser, line per epoch", n_images=64,
                            batch_size=32, epochs=1, timeout=120)


# --- on a GPU node, going on with a run, parts that cannot run -----------------------------------

def test_the_trainings_see_no_gpu(tmp_path, monkeypatch):
    """A node's own settings would show the workers its GPU; the workers get it hidden."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    env = measure._environment()
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["JAX_PLATFORMS"] == "cpu"
    # What a started training really gets: a stand-in worker prints its environment.
    shown = [sys.executable, "-c",
             "import json, os; print(json.dumps({'epoch_seconds': [1.0], "
             "'framework_threads': None, 'cores': 1, 'fit_start': 0.0, 'fit_end': 1.0, "
             "'env': [os.environ['CUDA_VISIBLE_DEVICES'], os.environ['JAX_PLATFORMS']]}))"]
    monkeypatch.setattr(measure, "_command", lambda *a, **k: shown)
    condition = contention.run_condition(tmp_path / "x.h5", 2, n_images=64, batch_size=32, epochs=1)
    assert [r["env"] for r in condition["reports"]] == [["", "cpu"], ["", "cpu"]]
    assert condition["gpu_hidden"] is True


def test_a_record_says_its_trainings_saw_no_gpu():
    condition = {**_conditions()[0], "gpu_hidden": True,
                 "reports": [{**_report(12.0, 10.0),
                              "devices_seen": {"device": "CPU", "gpu_count": 0}}]}
    [record] = contention.make_records([condition], run_id="r", n_images=1000, batch_size=100,
                                       epochs=2, environment={**ENVIRONMENT, "gpu_count": 1})
    assert record["gpu_hidden"] is True and record["gpus_seen"] == 0
    assert record["device"] == "CPU" and record["device_kind"] == "cpu"


def _fake_trainings(monkeypatch, fail_at=None, interrupt_at=None):
    """Conditions made up at once instead of trained (epoch 10 s per copy alone, more with
    more copies); the list of the (copies, threads) run. ``fail_at``/``interrupt_at``: the
    condition that fails (WorkerError) or is interrupted (KeyboardInterrupt, as Ctrl-C)."""
    ran = []

    def run_condition(data, copies, threads=None, **kwargs):
        if (copies, threads) == fail_at:
            raise contention.WorkerError(f"training copy 1 of {copies} failed (exit status 1)")
        if (copies, threads) == interrupt_at:
            raise KeyboardInterrupt
        ran.append((copies, threads))
        seconds = 10.0 * copies / (2 if threads else 1)
        reports = [{**_report(seconds, seconds), "devices_seen": {"device": "CPU", "gpu_count": 0}}
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
    from gpulesson.experiments.contention import __main__ as command

    monkeypatch.setattr(command, "keras_backend", lambda: "torch")


def _keys(path):
    return [(r["copies"], r["threads"]) for r in read_records(path)]


@pytest.mark.bad_input("killed job")
def test_going_on_with_a_run_completes_it_and_records_nothing_twice(tmp_path, monkeypatch,
                                                                    capsys, on_torch):
    out = tmp_path / "runs.jsonl"
    args = [*COPIES_ARGS, "--run-id", "20261123T120000Z-aaaaaa", "--out", str(out)]
    ran = _fake_trainings(monkeypatch, fail_at=(2, None))
    assert contention_main(args) == 1
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
    assert "nothing measured" in capsys.readouterr().out


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
    assert contention_main(args) == 1
    ran = _fake_trainings(monkeypatch)
    before = out.read_bytes()
    from gpulesson.experiments.contention.measure import QUICK_EPOCHS

    assert contention_main([*args, "--epochs", str(QUICK_EPOCHS + 1)]) == 2
    assert "give the same sizes" in capsys.readouterr().err
    assert ran == [] and out.read_bytes() == before


def _no_browser(monkeypatch):
    """This machine as a GPU node: no Chromium, no Playwright."""
    from gpulesson.experiments.contention import watched

    monkeypatch.setattr(watched, "chromium_path", lambda: None)
    monkeypatch.setattr(watched, "_installed", lambda module: module != "playwright")

    def not_here(*args, **kwargs):
        raise AssertionError("the watched part ran without a browser")

    monkeypatch.setattr(watched, "run_watched_benchmark", not_here)
    return watched


@pytest.mark.bad_input("missing package")
def test_without_a_browser_the_watched_part_is_skipped_and_the_copies_kept(tmp_path, monkeypatch,
                                                                          capsys, on_torch):
    watched = _no_browser(monkeypatch)
    assert watched.missing() == ["Chromium", "Playwright"]
    ran = _fake_trainings(monkeypatch)
    out = tmp_path / "runs.jsonl"
    assert contention_main(["--quick", "--copies", "1", "2", "--out", str(out)]) == 0
    assert ran == [(1, None), (2, None), (1, 1), (2, 1)]
    assert {r["part"] for r in read_records(out)} == {"copies"} and len(read_records(out)) == 4
    printed = capsys.readouterr().out
    notes = [line for line in printed.splitlines() if line.startswith("Skipped the watched part")]
    assert len(notes) == 1, printed
    assert "Chromium and Playwright not found" in notes[0]
    assert "tools/ensure_chromium.sh" in notes[0] and "requirements/dev.txt" in notes[0]
    # The note comes after the copies' table: they were measured and written first.
    assert printed.index("Appended 4 record(s)") < printed.index(notes[0])


@pytest.mark.bad_input("missing package")
def test_asking_only_for_the_watched_part_without_a_browser_is_an_error(tmp_path, monkeypatch,
                                                                       capsys):
    _no_browser(monkeypatch)
    out = tmp_path / "runs.jsonl"
    assert contention_main(["--quick", "--parts", "watched", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "Chromium and Playwright not found" in error and "Nothing was measured" in error
    assert not out.exists()


@pytest.mark.bad_input("wrong backend")
def test_thread_conditions_are_skipped_where_the_backend_has_no_thread_setting(tmp_path, monkeypatch,
                                                                              capsys):
    from gpulesson.experiments.contention import __main__ as command

    assert measure.threads_honoured("tensorflow") and measure.threads_honoured("torch")
    assert not measure.threads_honoured("jax")
    monkeypatch.setattr(command, "keras_backend", lambda: "jax")
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
    assert f"Note: {note}" in contention.describe(records)
    assert f"Note: {note}" in printed.split("Run ")[-1]
