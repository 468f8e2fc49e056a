"""Episode 7: the breast-cancer data preparation, the small MLP, its CPU-vs-GPU records, the
sweep, its figures and the numbers on the page."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from gpulesson.experiments import registry
from gpulesson.experiments import small_models as sm
from gpulesson.experiments.small_models import measure
from gpulesson.experiments.small_models.measure import PARTS
from gpulesson.experiments.small_models.page import comparison_alt, sample_summary, sweep_alt, sweep_dates
from gpulesson.records import summaries
from gpulesson.records.results import (
    NOT_RECORDED,
    append_record,
    is_gpu,
    make_record,
    read_records,
    validate_record,
)


def draw(results, folder):
    """The figures as `make figures` draws them."""
    return registry.figure_drawer(sm.__name__, folder)(results)


def figure_texts(fig):
    return " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


# ----------------------------------------------------------------------------- data and model

@pytest.fixture(scope="module")
def prepared():
    from gpulesson.lesson.sklearn import prepare_breast_cancer

    return prepare_breast_cancer()


def test_scaler_is_fitted_on_the_training_rows_only(prepared):
    from sklearn.datasets import load_breast_cancer

    (x_train, _), (x_test, _), scaler, names = prepared
    assert x_train.shape == (455, 30) and x_test.shape == (114, 30)
    assert x_train.dtype == np.float32 and names == ["malignant", "benign"]
    assert scaler.n_samples_seen_ == len(x_train)
    # The scaler's means are those of the (unscaled) training rows, not of all rows.
    raw_train = scaler.inverse_transform(x_train)
    np.testing.assert_allclose(scaler.mean_, raw_train.mean(axis=0), rtol=1e-4, atol=1e-3)
    all_rows = load_breast_cancer().data
    assert not np.allclose(scaler.mean_, all_rows.mean(axis=0), rtol=1e-6, atol=0)
    np.testing.assert_allclose(x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(x_train.std(axis=0), 1, atol=1e-3)
    assert abs(x_test.mean(axis=0)).max() > 1e-3  # scaled with the training statistics


def test_labels_are_one_hot_and_stratified(prepared):
    (_, y_train), (_, y_test), _, _ = prepared
    for y in (y_train, y_test):
        assert y.shape[1] == 2 and set(np.unique(y)) == {0.0, 1.0}
        assert (y.sum(axis=1) == 1).all()
    # Stratified: the malignant share differs by less than one test row.
    assert abs(y_train[:, 0].mean() - y_test[:, 0].mean()) < 1 / len(y_test)


def test_the_mlp_learns_and_its_checkpoint_loads(prepared, tmp_path):
    import keras

    from gpulesson import lesson

    train, test, _, _ = prepared
    model = lesson.build_mlp()
    assert model.count_params() == 650  # (30 + 1) x 16 + 17 x 8 + 9 x 2
    keras.utils.set_random_seed(1)
    path = tmp_path / "best.keras"
    checkpoint = keras.callbacks.ModelCheckpoint(path, monitor="val_loss", save_best_only=True)
    stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=True)
    run = lesson.train_mlp("cpu", model.get_weights(), train, test, 40, callbacks=[checkpoint, stopping])
    assert run["test_accuracy"] > 0.9, run["test_accuracy"]
    assert run["timing"]["epochs"] == len(run["history"]["loss"]) == len(run["history"]["val_loss"])
    assert path.is_file()
    loaded = keras.saving.load_model(path)
    x_test = test[0]
    np.testing.assert_allclose(loaded.predict(x_test, verbose=0), run["model"].predict(x_test, verbose=0),
                               atol=1e-6)
    record = sm.comparison_record(run, run_id="t", batch_size=32, n_train=455, n_test=114)
    validate_record(record)
    assert record["part"] == "comparison" and record["data"] == "breast_cancer"
    assert record["device"] == "CPU" and record["n_parameters"] == 650


# ----------------------------------------------------------------------------- sweep

def test_sweep_records_are_well_formed():
    records = sm.sweep(["cpu"], [8, 32], [4], n_rows=64, epochs=measure.MIN_EPOCHS, run_id="s",
                       progress=None)
    assert [(r["width"], r["batch_size"]) for r in records] == [(4, 8), (4, 32)]
    for r in records:
        validate_record(r)
        assert r["experiment"] == sm.RECORDS.experiment and r["part"] == "sweep" and r["run_id"] == "s"
        assert r["data"] == "random" and r["device_kind"] == "cpu" and r["device"] == "CPU"
        assert r["hidden_widths"] == [4, 2] and r["n_parameters"] == 140  # (30 + 1) x 4 + 5 x 2 + 3 x 2
        assert r["epochs"] == measure.MIN_EPOCHS and r["seconds_per_sample"] > 0
        # the rule: the first epoch the recorded warm-up, the others the timed repeats, all kept
        summary = r["summary"]
        assert summary["warmup"] == r["epoch_seconds"][:summaries.WARMUP]
        assert summary["samples"] == r["epoch_seconds"][summaries.WARMUP:]
        assert summary["n"] == measure.MIN_EPOCHS - summaries.WARMUP >= summaries.repeats_for(True)
        assert r["seconds_per_sample"] == pytest.approx(summary["median"] / r["n_rows"])
        for moment in ("start", "end"):
            load = r["load_average"][moment]
            assert load is None or len(load) == 3
    # at least MIN_BATCHES batches per epoch
    assert records[1]["n_rows"] == 32 * measure.MIN_BATCHES
    assert measure.hidden_widths(16) == (16, 8) and measure.hidden_widths(1) == (1, 1)


def epochs_around(seconds, spread=0.05):
    """A made-up warm-up epoch and three timed epochs ``spread`` apart around ``seconds``."""
    return [2.0, seconds * (1 - spread), seconds, seconds * (1 + spread)]


def fake_sweep(run_id="fake", gpu=True, date="2030-01-01T00:00:00+00:00", old=False):
    """Made-up sweep records for the figure and text code; written only to tmp folders.
    ``old``: without a ``summary``, as recorded before the measurement rule."""
    records = []
    for width in (16, 1024):
        for batch in (32, 4096):
            cpu_time = {16: 1e-5, 1024: 4e-4}[width] * (1 if batch == 32 else 0.3)
            gpu_time = {16: 4e-5, 1024: 1e-5}[width] * (1 if batch == 32 else 0.05)
            if (width, batch) == (16, 4096):
                gpu_time = cpu_time * 0.98  # the ranges overlap: no measurable difference
            for kind, seconds in (("cpu", cpu_time), ("gpu", gpu_time)):
                if kind == "gpu" and not gpu:
                    continue
                epochs = epochs_around(seconds * 4096)
                summary = {} if old else {"summary": summaries.summarise(epochs[1:], epochs[:1])}
                records.append(make_record(
                    sm.RECORDS.experiment, data="random", part="sweep", run_id=run_id, date=date,
                    device_kind=kind, device="CPU" if kind == "cpu" else "Made-up GPU",
                    width=width, batch_size=batch, n_rows=4096, epochs=4, seconds_per_sample=seconds,
                    steps_per_epoch=-(-4096 // batch), epoch_seconds=epochs, **summary,
                    seconds_per_step=seconds * batch, mean_epoch_seconds=seconds * 4096,
                    total_seconds=sum(epochs)))
    return records


def fake_comparison(run_id="fake", gpu=True):
    records = []
    for kind, epoch in (("cpu", 0.2), ("gpu", 0.5)):
        if kind == "gpu" and not gpu:
            continue
        records.append(make_record(
            sm.RECORDS.experiment, data="breast_cancer", part="comparison", run_id=run_id, device_kind=kind,
            device="CPU" if kind == "cpu" else "Made-up GPU", batch_size=32, n_train=455, n_test=114,
            epochs=4, epoch_seconds=epochs_around(epoch), first_epoch_seconds=2.0,
            mean_epoch_seconds=epoch, test_accuracy=0.95))
    return records


def test_speedups_tables_and_figures_on_made_up_records(tmp_path):
    path = tmp_path / "made-up.jsonl"
    made_up = fake_sweep("old", gpu=False) + fake_comparison("a") + fake_sweep("b")
    for record in made_up + fake_sweep("c", gpu=False):
        append_record(path, record)
    sweep = sm.reference_run("sweep", path)
    assert {r["run_id"] for r in sweep} == {"b"}  # the newest run with a GPU
    table = sm.sweep_table(sweep)
    assert "speed-up" in table and "0.25x" in table and "240.00x" in table
    assert summaries.NO_DIFFERENCE in table  # the cell whose ranges overlap
    texts = figure_texts(sm.sweep_figure(sweep))
    assert "Speed-up of the GPU" in texts and "GPU 40× faster" in texts and "GPU 4× slower" in texts
    assert "no measurable\ndifference" in texts  # overlapping ranges are not ranked
    assert "Made-up GPU" in texts and "random numbers" in texts
    values = sm.page.substitutions(path)
    assert values["ref_mlp_sweep_best"] == "240× at width 1024, batch size 4096 (GPU 240× faster)"
    assert values["ref_mlp_sweep_worst"] == "0.25× at width 16, batch size 32 (GPU 4× slower)"
    assert values["ref_mlp_sweep_paying"] == "2 of 4"  # measurably faster only
    assert values["ref_mlp_speedup"] == "0.4× (GPU 2.5× slower)"
    assert values["ref_mlp_gpu_epoch"] == "500 ms (range 475 ms–525 ms, 3 repeats)"
    assert values["ref_mlp_sweep_gpu_small_sample"] == "40 µs (range 38 µs–42 µs, 3 repeats)"
    for written in draw(path, tmp_path):
        assert written.read_bytes().startswith(b"<?xml")


def test_without_gpu_records_the_page_says_not_recorded(tmp_path):
    values = sm.page.substitutions(tmp_path / "none.jsonl")
    note = values.pop("ref_mlp_sweep_cut_note")
    assert set(values.values()) == {NOT_RECORDED}
    assert note.startswith("The GPU half of the sweep") and "not been recorded yet" in note
    path = tmp_path / "cpu-only.jsonl"
    for record in fake_comparison(gpu=False) + fake_sweep(gpu=False):
        append_record(path, record)
    values = sm.page.substitutions(path)
    for key in ("ref_mlp_gpu", "ref_mlp_gpu_epoch", "ref_mlp_speedup", "ref_mlp_sweep_gpu",
                "ref_mlp_sweep_best", "ref_mlp_sweep_paying", "ref_mlp_sweep_gpu_small_step"):
        assert values[key] == NOT_RECORDED, key
    assert values["ref_mlp_cpu_epoch"] == "200 ms (range 190 ms–210 ms, 3 repeats)"
    assert values["ref_mlp_sweep_cpu_small_sample"] == "10 µs (range 9.5 µs–10.5 µs, 3 repeats)"
    assert "GPU: no run in these records." in sm.describe_comparison(sm.reference_run("comparison", path))
    texts = figure_texts(sm.sweep_figure(sm.reference_run("sweep", path)))
    assert "no GPU sweep in this run" in texts and "10 µs" in texts and "9.5 µs–10.5 µs" in texts
    assert "Speed-up of the GPU" not in texts


def test_a_sweep_cut_short_on_a_gpu_node_is_named_and_the_complete_one_stays(tmp_path):
    """A GPU node's sweep that stopped at its deadline (3 of 4 GPU cells, no CPU half) is
    not the page's reference; the note says what it has and which run the page shows."""
    path = tmp_path / "cut.jsonl"
    cut = [r for r in fake_sweep("cut") if r["device_kind"] == "gpu"
           and (r["width"], r["batch_size"]) != (1024, 4096)]
    for record in fake_sweep("complete", gpu=False) + cut:
        append_record(path, record)
    assert {r["run_id"] for r in sm.reference_run("sweep", path)} == {"complete"}
    note = sm.page.substitutions(path)["ref_mlp_sweep_cut_note"]
    assert "on Made-up GPU (run cut, 2030-01-01) stopped before its end" in note
    assert "with 3 of its 4 GPU cells and no CPU cells" in note
    assert "the last complete one (run complete)" in note and NOT_RECORDED not in note


def test_records_made_before_the_rule_still_give_the_page_values(tmp_path):
    path = tmp_path / "old.jsonl"
    for record in fake_comparison() + fake_sweep(old=True):
        append_record(path, record)
    values = sm.page.substitutions(path)
    # the first epoch is taken as the warm-up, the others as the timed repeats
    assert values["ref_mlp_sweep_cpu_small_sample"] == "10 µs (range 9.5 µs–10.5 µs, 3 repeats)"
    assert values["ref_mlp_sweep_best"].startswith("240× at width 1024")
    one_epoch = make_record(sm.RECORDS.experiment, data="random", part="sweep", run_id="one",
                            device_kind="cpu", device="CPU", width=4, batch_size=8, n_rows=64,
                            epochs=1, epoch_seconds=[0.5], mean_epoch_seconds=0.5)
    assert "no range" in summaries.summary_text(sample_summary(one_epoch))


def test_alt_texts_name_only_what_is_drawn():
    cpu_sweep, cpu_comparison = fake_sweep(gpu=False), fake_comparison(gpu=False)
    for alt in (sweep_alt(cpu_sweep), comparison_alt(cpu_comparison)):
        assert "GPU" not in alt and "CPU" in alt, alt
    assert "from 3 µs at width 16, batch size 4096" in sweep_alt(cpu_sweep)
    assert "200 ms (range 190 ms–210 ms, 3 timed epochs)" in comparison_alt(cpu_comparison)

    alt = sweep_alt(fake_sweep())
    assert "GPU was measurably faster in 2 of 4 cells and measurably slower in 1" in alt
    assert "largest, 240×, at width 1024, batch size 4096" in alt
    alt = comparison_alt(fake_comparison())
    assert "the GPU with square markers" in alt and "GPU: first epoch 2.0 s" in alt


def test_the_figures_draw_the_spread_and_the_page_uses_their_alt_texts():
    from matplotlib.collections import LineCollection

    fig = sm.page.comparison_figure(fake_comparison())
    ax = fig.axes[0]
    assert len([c for c in ax.collections if isinstance(c, LineCollection)]) == 2  # per device
    assert sorted(len(line.get_xdata()) for line in ax.get_lines()
                  if line.get_marker() == ".") == [3, 3]  # the timed epochs as dots
    assert "GPU" not in figure_texts(sm.page.comparison_figure(fake_comparison(gpu=False))).replace(
        "no GPU run", "")
    text = (ROOT / "_episodes" / "07-small-models.md").read_text(encoding="utf-8")
    assert ":alt: {{ ref_mlp_fig_comparison_alt }}" in text
    assert ":alt: {{ ref_mlp_fig_sweep_alt }}" in text
    values = sm.page.substitutions()
    assert values["ref_mlp_fig_sweep_alt"] == sweep_alt(sm.reference_run("sweep"))
    if not any(is_gpu(r) for r in sm.reference_run("sweep")):
        assert "GPU" not in values["ref_mlp_fig_sweep_alt"]


def test_the_rule_sets_the_epochs():
    assert sm.GRID["epochs"] == summaries.WARMUP + summaries.REPEATS
    assert sm.QUICK_GRID["epochs"] == measure.QUICK_COMPARISON["epochs"] == measure.MIN_EPOCHS
    assert measure.MIN_EPOCHS == summaries.WARMUP + summaries.repeats_for(True)
    assert measure.COMPARISON["epochs"] >= summaries.WARMUP + summaries.REPEATS


def test_committed_results_are_valid_and_honest():
    records = read_records(sm.RESULTS_FILE)
    assert records, f"{sm.RESULTS_FILE} is empty: python -m gpulesson.experiments.small_models"
    for part in PARTS:
        run = sm.reference_run(part)
        assert run, f"no {part} run in {sm.RESULTS_FILE}"
        for r in run:
            validate_record(r)
            assert r["cpu_model"] and r["versions"]["keras"]
            assert r["data"] == ("breast_cancer" if part == "comparison" else "random")
        if not any(is_gpu(r) for r in run):
            key = "ref_mlp_gpu" if part == "comparison" else "ref_mlp_sweep_gpu"
            assert sm.page.substitutions()[key] == NOT_RECORDED
    # records made before the summaries: medians with ranges from their epochs
    values = sm.page.substitutions()
    assert "range" in values["ref_mlp_cpu_epoch"] and "range" in values["ref_mlp_sweep_cpu_small_sample"]


# ----------------------------------------------------------------------------- bad inputs, CLI

@pytest.mark.bad_input("bad argument")
def test_bad_devices_and_sizes_are_refused():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        measure.check_devices(["tpu"], gpu_count=1)
    with pytest.raises(ValueError, match="SKIPPED: no GPU is visible"):
        measure.check_devices(["cpu", "gpu"], gpu_count=0)
    with pytest.raises(ValueError, match="named twice"):
        measure.check_devices(["cpu", "cpu"], gpu_count=0)
    assert measure.check_devices(["cpu", "gpu"], gpu_count=1) == ["cpu", "gpu:0"]
    with pytest.raises(ValueError, match="layer width must be a whole number of at least 1"):
        measure.hidden_widths(0)
    with pytest.raises(ValueError, match="batch size"):
        measure.check_grid([32, -1], [16], 64, 2)
    with pytest.raises(ValueError, match=f"at least {measure.MIN_EPOCHS} epochs"):
        measure.check_grid([32], [16], 64, measure.MIN_EPOCHS - 1)
    with pytest.raises(ValueError, match="layer width"):
        sm.sweep(["cpu"], [32], [16, 0], n_rows=64, epochs=2, progress=None)


def refused(args, out):
    """The command stops with exit status 2 before anything is measured."""
    with pytest.raises(SystemExit) as stopped:
        registry.run(sm.__name__, [*args, "--out", str(out)])
    assert stopped.value.code == 2


@pytest.mark.parametrize("args, message", [
    (["--devices", "tpu"], "unknown device 'tpu'"),
    (["--devices", "gpu"], "SKIPPED: no GPU is visible"),
    (["--widths", "16", "0"], "layer width must be"),
    (["--batch-sizes", "0"], "batch size must be"),
    (["--parts", "everything"], "unknown part"),
])
@pytest.mark.bad_input("bad argument")
def test_the_command_refuses_bad_input_and_writes_nothing(args, message, tmp_path, capsys):
    from gpulesson.machine.devices import keras_device

    if "gpu" in args and keras_device()["gpu_count"]:
        pytest.skip("this machine has a GPU")
    out = tmp_path / "out.jsonl"
    refused(args, out)
    err = capsys.readouterr().err
    assert message in err and "Nothing was measured or written" in err
    assert not out.exists()


@pytest.mark.bad_input("missing package")
def test_the_sweep_runs_without_scikit_learn(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails
    out = tmp_path / "out.jsonl"
    refused(["--parts", "comparison"], out)
    assert "scikit-learn is not installed" in capsys.readouterr().err and not out.exists()
    assert registry.run(sm.__name__, ["--parts", "sweep", "--devices", "cpu", "--batch-sizes", "16",
                                      "--widths", "4", "--rows", "32", "--out", str(out)]) == 0
    assert [r["part"] for r in read_records(out)] == ["sweep"]
    # The lesson module the CNN episode and the GPU runs import must not need it either.
    for module in ("__init__.py", "core.py"):
        text = (ROOT / "gpulesson" / "lesson" / module).read_text(encoding="utf-8")
        assert "import sklearn" not in text and "from sklearn" not in text, module


def test_the_command_records_both_parts_under_jax(tmp_path):
    out = tmp_path / "jax.jsonl"
    env = {**os.environ, "KERAS_BACKEND": "jax", "LESSON_QUICK": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.small_models", "--devices", "cpu",
         "--batch-sizes", "16", "--widths", "4", "8", "--rows", "32", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["part"] for r in records] == ["comparison", "sweep", "sweep"]
    assert {r["backend"] for r in records} == {"jax"} and len({r["run_id"] for r in records}) == 1
    assert records[0]["epochs"] == measure.QUICK_COMPARISON["epochs"] and records[0]["start_weights"]
    # The comparison keeps its epochs' energy, or why this machine could not read it.
    energy = records[0]["energy"]
    assert energy["summary"]["n"] == records[0]["summary"]["n"] if energy["measured"] \
        else energy["reason"]


def test_a_sweep_recorded_in_parts_says_when_each_part_was_recorded(tmp_path):
    """A run resumed in a later call joins cells of two days: the page says which, per device,
    and whether the parts share machine and versions."""
    records = fake_sweep("joined")
    assert sweep_dates(records) == f"on {records[0]['date'][:10]}"
    later = [{**r, "date": "2030-01-02T00:00:00+00:00"} if r["device_kind"] == "cpu" else r
             for r in records]
    first = records[0]["date"][:10]
    text = sweep_dates(later)
    assert text.startswith(f"in parts of one run: the GPU's cells on {first} (4), "
                           "the CPU's cells on 2030-01-02 (4)")
    assert text.endswith("every part on the same machine with the same versions")
    other = [*later[:-1], {**later[-1], "cores_usable": 99}]
    assert sweep_dates(other).endswith("the parts differ in machine or versions")
    assert sweep_dates([]) == NOT_RECORDED
