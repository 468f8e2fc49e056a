"""Episode 9's Grain workers: the records' comparisons, table, words and figure follow what was
measured; the command measures, appends records with one run id and goes on with a run."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from gpulesson.experiments.ceiling.page import N_IMAGES
from gpulesson.experiments.workers import measure, page
from gpulesson.records import parts, summaries


def record(backend, work, n_workers, seconds, device="cpu"):
    return {"backend": backend, "device_kind": device, "work": work, "workers": n_workers,
            "n_images": N_IMAGES, "run_id": "r", "date": "2026-11-26T00:00:00+00:00",
            "device": "CPU", "cpu_model": "Test CPU", "cores_usable": 2,
            "versions": {"keras": "3", "jax": "0.1"}, "grain": "0.2.18",
            "cpu_settings": {"cpu_cores_available": 2}, "epoch_seconds": seconds,
            "warmup_seconds": [3.0], "read_ms": 0.4, "work_ms": 2.2,
            "images_per_second": N_IMAGES / sorted(seconds)[len(seconds) // 2],
            "experiment": page.RECORDS.experiment}


RUN = [record("jax", "none", 0, [0.40, 0.41, 0.42, 0.40, 0.43]),
       record("jax", "none", 1, [0.60, 0.62, 0.61, 0.65, 0.60]),
       record("jax", "none", 2, [0.58, 0.61, 0.60, 0.59, 0.66]),
       record("jax", "augment", 0, [0.60, 0.62, 0.63, 0.60, 0.61]),
       record("jax", "augment", 1, [0.58, 0.70, 0.61, 0.66, 0.60]),
       record("jax", "augment", 2, [0.45, 0.46, 0.47, 0.45, 0.44])]


def test_default_worker_counts_go_up_to_the_cores_and_8_at_most():
    assert measure.default_workers(1) == [0, 1]
    assert measure.default_workers(2) == [0, 1, 2]
    assert measure.default_workers(6) == [0, 1, 2, 4]
    assert measure.default_workers(64) == [0, 1, 2, 4, 8]


def test_each_count_of_workers_is_compared_with_none_in_the_rules_words():
    assert page.against_none(RUN[0], RUN) == ""  # the baseline itself
    assert page.against_none(RUN[1], RUN) == "1.5× slower"
    assert page.against_none(RUN[4], RUN) == "no measurable difference"  # ranges overlap
    assert page.against_none(RUN[5], RUN) == "1.4× faster"


def test_the_findings_say_the_costs_and_the_best_count_against_none():
    said = page.findings([{**r, "method": page.METHOD} for r in RUN])
    assert said == ("Each comparison reads the middle three of five epochs. "
                    "JAX, CPU (2 cores; a block: read 0.4 ms, `flip_crop` 2.2 ms): "
                    "the best count of workers was 1.5× slower than none for the stored blocks "
                    "(2) and 1.4× faster than none with `flip_crop` (2).")


def test_table_alt_text_and_page_values_say_what_was_measured(tmp_path):
    table = page.table(RUN)
    assert table.count("\n| JAX, CPU |") == len(RUN)
    assert "| 1 | 81,967 (range 76,923–83,333, 5 epochs) | 1.5× slower |" in table
    assert "| 0 | 121,951 (range 116,279–125,000, 5 epochs) | baseline |" in table
    alt = page.alt_text(RUN)
    assert "blocks as stored: 0 workers 121,951, 1 worker 81,967, 2 workers 83,333" in alt
    assert "GPU" not in alt
    file = tmp_path / "workers.jsonl"
    assert page.substitutions(file)["ref_workers_table"] == page.NONE
    file.write_text("".join(json.dumps(r) + "\n" for r in RUN))
    values = page.substitutions(file)
    assert values["ref_workers_table"] == table
    assert values["ref_workers_summary"].endswith(
        "run r (2026-11-26); `results/workers.jsonl`.")
    assert "Grain 0.2.18" in values["ref_workers_summary"]
    assert "CPU: Test CPU, 2 cores" in values["ref_workers_summary"]


def test_the_figure_has_a_panel_a_backend_and_a_bar_a_condition():
    run = [*RUN, record("torch", "none", 0, [0.5] * 5), record("torch", "none", 1, [0.6] * 5)]
    (figure,) = page.figures(run)
    axes = figure.get_axes()
    assert [ax.get_title(loc="left") for ax in axes] == [
        "JAX, CPU: Test CPU, 2 cores\nrun r", "PyTorch, CPU: Test CPU, 2 cores\nrun r"]
    assert [len(ax.patches) for ax in axes] == [6, 2]
    with pytest.raises(ValueError, match=r"python -m gpulesson\.experiments\.workers"):
        page.figures([])


def test_the_committed_run_is_the_pages_and_its_figure_is_drawn_from_it():
    """Each device's part of the reference is a complete grid of one run, named by its run and
    machine; the CPU's grid has both works, and a GPU part beside it is from a GPU run."""
    committed = page.RECORDS.reference_run()
    by_device = {}
    for r in committed:
        by_device.setdefault(r["device_kind"], []).append(r)
    for device, part in by_device.items():
        assert len({r["run_id"] for r in part}) == 1, device
        assert page.complete(part), device
        assert part[0]["run_id"] in page.provenance(committed)
    if "cpu" in by_device:
        assert {r["work"] for r in by_device["cpu"]} == set(page.WORK)
    assert {r["work"] for r in committed} == set(page.WORK)
    assert all(r["repeats"] >= 5 and r["n_images"] == N_IMAGES for r in committed)
    assert all(r["read_ms"] > 0 and r["work_ms"] > 0 for r in committed)
    summary = page.substitutions()["ref_workers_summary"]
    assert "not recorded" not in summary
    for part in by_device.values():
        assert parts.machine(part) in summary
    (figure,) = page.figures(committed)
    titles = [ax.get_title(loc="left") for ax in figure.get_axes()]
    assert all(any(part[0]["run_id"] in t for t in titles) for part in by_device.values())


# Made-up records shaped like the H200's: 4 workers with one slow last epoch (the workers'
# shutdown), none with epochs about twice as long.
H200_NONE = [0.67, 0.734, 0.733, 0.672, 0.586]
H200_FOUR = [0.352, 0.337, 0.34, 0.341, 1.675]


def gpu_record(n_workers, seconds, *, method=None, run_id="g"):
    made = {**record("jax", "augment", n_workers, seconds, device="gpu"), "run_id": run_id,
            "device": "Made-up GPU", "cpu_model": "Made-up Xeon", "cores_usable": 16}
    return {**made, "method": method} if method else made


def test_one_slow_epoch_does_not_decide_the_comparison():
    run = [gpu_record(0, H200_NONE), gpu_record(4, H200_FOUR)]
    # The whole ranges overlap (the slow last epoch); the middle three epochs do not.
    assert summaries.compare(page.rate_summary(run[1]), page.rate_summary(run[0]),
                          higher_is_better=True).sentence == summaries.NO_DIFFERENCE
    assert page.against_none(run[1], run) == "2× faster"
    said = page.findings(run)
    assert "2× faster than none with `flip_crop` (4)" in said
    # One slow epoch on either side does not flip it either way.
    slow_none = [gpu_record(0, [0.34, 0.35, 0.33, 0.34, 2.0]), gpu_record(4, [0.35, 0.34] * 2 + [0.33])]
    assert page.against_none(slow_none[1], slow_none) == summaries.NO_DIFFERENCE
    # A record of the current method whose last epoch is like the others has none to name.
    fixed = [gpu_record(0, H200_NONE, method=page.METHOD),
             gpu_record(4, [*H200_FOUR[:4], 0.35], method=page.METHOD)]
    assert "stop" not in page.findings(fixed)


def test_the_data_hold_the_epochs_fit_trains_and_each_epoch_is_split(monkeypatch):
    """As the lesson's code does, the dataset holds exactly the epochs fit trains: the last
    epoch meets the end of the data, and the split of every epoch says where its time went."""
    asked = {}

    def fake_blocks(path, epochs, batch_size, **options):
        asked["epochs"] = epochs
        return list(range(epochs * 3)), 3

    class FakeModel:
        stop_training = False

        def fit(self, dataset, *, epochs, steps_per_epoch, callbacks, **options):
            taken = iter(dataset)
            for callback in callbacks:
                callback.set_model(self)
            for epoch in range(epochs):
                for callback in callbacks:
                    callback.on_epoch_begin(epoch)
                for step in range(steps_per_epoch):
                    next(taken)
                    for callback in callbacks:
                        callback.on_train_batch_end(step)
                for callback in callbacks:
                    callback.on_epoch_end(epoch, {})
            asked["left"] = len(list(taken))

    monkeypatch.setattr(measure, "grain_blocks", fake_blocks)
    seconds, split = measure._fit(FakeModel(), "file.h5", work="none", workers=2,
                                  batch_size=8, warmup=1, repeats=2)
    assert len(seconds) == 3 and asked["epochs"] == 3 and asked["left"] == 0
    assert [s["batches"] for s in split["epoch_splits"]] == [3, 3, 3]
    assert split["exit_seconds"] >= 0 and split["teardown_seconds"] >= 0


def test_a_stalled_last_epoch_is_split_named_and_kept_on_the_page():
    """A last epoch that waits after its last batch (the end of the data, the workers
    stopping) is told apart from a refill before its first batch or between two, and the page
    shows it beside the verdict that leaves it out."""
    ticks = iter([0.0, 0.1, 0.2, 0.3, 0.3,          # epoch 1: three batches, no wait at the end
                  1.0, 1.1, 1.2, 1.3, 2.8,          # epoch 2: 1.5 s after its last batch
                  3.0, 3.9, 4.0, 4.1, 4.1,          # epoch 3: 0.9 s before its first batch
                  5.0, 5.1, 5.9, 6.0, 6.0])         # epoch 4: a gap of 0.8 s before batch 2
    splitter = measure.EpochSplitter(clock=lambda: next(ticks))
    for epoch in range(4):
        splitter.on_epoch_begin(epoch)
        for batch in range(3):
            splitter.on_train_batch_end(batch)
        splitter.on_epoch_end(epoch)
    first, tail, refill, gap = splitter.splits
    assert tail["after_last_batch"] == pytest.approx(1.5)
    assert tail["to_last_batch"] == pytest.approx(0.3)
    assert refill["first_batch"] == pytest.approx(0.9)
    assert gap["longest_gap"] == pytest.approx(0.8) and gap["longest_gap_at"] == 1
    assert first["after_last_batch"] == pytest.approx(0.0)
    # On a record: the last of five timed epochs 1.8 s against 0.35 s, split as epoch 2 above
    seconds = [0.35, 0.34, 0.36, 0.35, 1.8]
    stalled = {**gpu_record(4, seconds, method=page.METHOD), "exit_seconds": 0.01,
               "teardown_seconds": 0.2,
               "epoch_splits": [first] * 5 + [{**tail, "to_last_batch": 0.3,
                                               "after_last_batch": 1.5}]}
    base = gpu_record(0, H200_NONE, method=page.METHOD)
    slow = page.stall(stalled)
    assert slow["where"] == "after_last_batch" and slow["others"] == pytest.approx(0.35)
    assert page.stall(base) is None
    run = [base, stalled]
    row = next(r for r in page.rows(run) if r[2] == "4")
    assert row[-1].startswith(page.against_none(stalled, run))  # the middle three decide
    assert "its last epoch 1.8 s, 5.1× the others (below)" in row[-1]
    said = page.findings(run)
    assert "the last epoch took 1.8 s against a median of 0.35 s; 1.5 s of it after its last " \
           "batch, where the iterator met the end of the data and Grain's workers stopped" in said
    assert "the dataset's teardown took 200 ms" in said
    assert "the current method" not in said
    # an older record's stall is shown too, said to be unsplit
    old = gpu_record(4, seconds)
    assert page.stall(old)["split"] is None
    assert "not split" in page.findings([gpu_record(0, H200_NONE), old])
    assert "GPU records shown predate the current method" in page.findings([gpu_record(0, H200_NONE), old])


def test_a_device_part_is_the_reference_only_when_its_grid_is_complete(tmp_path):
    """A GPU part cut short (no worker count beside none) does not replace the complete one,
    and a GPU-only run does not hide the CPU's complete grid."""
    file = tmp_path / "workers.jsonl"
    gpu = [gpu_record(0, H200_NONE), gpu_record(4, H200_FOUR)]
    cut = [gpu_record(0, H200_NONE, run_id="later")]
    file.write_text("".join(json.dumps(r) + "\n" for r in [*RUN, *gpu, *cut]))
    reference = page.RECORDS.reference_run(file)
    assert [(r["run_id"], r["device_kind"]) for r in reference] == \
        [("r", "cpu")] * len(RUN) + [("g", "gpu")] * 2
    assert not page.complete(cut)
    assert not page.complete(RUN[:4])  # "augment" measured with fewer counts than "none"
    values = page.substitutions(file)
    assert "run r (2026-11-26)" in values["ref_workers_summary"]
    assert "run g (2026-11-26)" in values["ref_workers_summary"]
    assert "Made-up GPU beside Made-up Xeon, 16 cores" in values["ref_workers_summary"]
    assert "CPU: Test CPU, 2 cores" in values["ref_workers_summary"]
    assert "later" not in "".join(values.values())


def test_bars_stand_on_their_ticks_where_a_panel_has_one_work():
    (figure,) = page.figures([*RUN, gpu_record(0, H200_NONE), gpu_record(4, H200_FOUR)])
    gpu_axes = figure.get_axes()[-1]
    centres = sorted(p.get_x() + p.get_width() / 2 for p in gpu_axes.patches)
    assert centres == pytest.approx(list(gpu_axes.get_xticks()))
    cpu_axes = figure.get_axes()[0]
    assert cpu_axes.get_ylim() != gpu_axes.get_ylim()  # each panel on its own scale


def run_command(*args, env=None):
    return subprocess.run([sys.executable, "-m", "gpulesson.experiments.workers", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


def test_bad_options_are_usage_errors():
    result = run_command("--workers", "-1")
    assert result.returncode == 2 and "--workers takes 0 (none) or more" in result.stderr
    result = run_command("--backends", "tensorflow")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_the_command_measures_appends_and_goes_on_with_a_run(tmp_path):
    pytest.importorskip("grain")
    out = tmp_path / "workers.jsonl"
    env = {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "LESSON_DATA": "synthetic"}
    args = ["--backends", "jax", "--quick", "--works", "augment", "--workers", "0", "1",
            "--n-images", "256", "--out", str(out)]
    result = run_command(*args, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    made = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["work"], r["workers"]) for r in made] == [("augment", 0), ("augment", 1)]
    assert len({r["run_id"] for r in made}) == 1
    for r in made:
        assert r["repeats"] == 2 and len(r["warmup_seconds"]) == 1 and r["grain"]
        assert r["work_ms"] > 0 and r["read_ms"] > 0 and r["cpu_settings"]["cpu_cores_available"]
        assert r["method"] == page.METHOD  # every epoch split where its time went
        assert len(r["epoch_splits"]) == 3 and r["teardown_seconds"] >= 0
    again = run_command(*args, "--run-id", made[0]["run_id"], env=env)
    assert again.returncode == 0 and "Nothing left to measure." in again.stdout
    assert len(out.read_text().splitlines()) == 2
