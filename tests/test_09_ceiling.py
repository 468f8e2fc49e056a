"""Episode 9's ceiling of ``fit``: the ceiling's records, words, table and figure follow what was
measured (records of pipelines the lesson no longer has are left out); the command measures and
appends records with one run id."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

from gpulesson.experiments import ceiling
from gpulesson.experiments.ceiling import page, records
from gpulesson.results import NOT_RECORDED


def record(backend, device, pipeline, seconds, n=records.N_IMAGES):
    return {"backend": backend, "device_kind": device, "pipeline": pipeline, "n_images": n,
            "run_id": "r", "date": "2026-11-23T00:00:00+00:00", "device": "CPU",
            "cpu_model": "Test CPU", "versions": {"keras": "3"}, "epoch_seconds": seconds,
            "warmup_seconds": [1.0], "images_per_second": n / sorted(seconds)[len(seconds) // 2],
            "experiment": records.EXPERIMENT}


RUN = [record("jax", "cpu", "arrays", [1.0, 1.1, 1.05, 1.0, 1.02]),
       record("jax", "cpu", "ram", [0.5, 0.52, 0.51, 0.5, 0.55]),
       record("jax", "cpu", "lesson", [1.0, 1.1, 1.2, 1.05, 1.0]),
       record("jax", "cpu", "lesson-window1", [0.53, 0.5, 0.56, 0.52, 0.51])]


def test_the_ceiling_is_the_fastest_in_memory_way_and_shares_follow_the_medians():
    top = records.ceiling(RUN, "jax", "cpu")
    assert top["pipeline"] == "ram"
    assert records.share(RUN[2], top) == pytest.approx(0.51 / 1.05)
    assert records.verdict(RUN[2], top).endswith("misses the 90% goal")
    assert "slower" in records.verdict(RUN[2], top)
    # Overlapping ranges are not a difference, and 98 % meets the goal.
    said = records.verdict(RUN[3], top)
    assert "no measurable difference" in said and said.endswith("meets the 90% goal")
    # A share just below the goal reads below it.
    assert records.share_text(0.8999) == "89%" and records.share_text(0.9) == "90%"
    assert records.verdict(top, top) == "the ceiling"
    assert records.ceiling(RUN, "torch", "cpu") is None
    # A short run (fewer epochs or images than the rule) is not judged against the goal.
    short = [{**r, "epoch_seconds": r["epoch_seconds"][:2], "n_images": 5_000} for r in RUN]
    said = records.verdict(short[2], records.ceiling(short, "jax", "cpu"))
    assert "too rough to judge the 90% goal" in said and "misses" not in said


def test_the_page_states_the_generators_share_of_the_ceiling_on_each_backend():
    run = [*RUN, record("torch", "cpu", "ram", [0.5] * 5), record("torch", "cpu", "lesson", [0.52] * 5)]
    said = page.goal_shares(run)
    assert said == ("In the reference run the lesson's own generator reached, as a share of the "
                    "ceiling, 48% on JAX (CPU) and 96% on PyTorch (CPU). Where the goal applies, "
                    "it meets it in 1 of 2 cases.")
    # TensorFlow's share is said, but no goal is set that no PyDataset can meet there.
    tf = [record("tensorflow", "cpu", "tfdata", [0.5] * 5),
          record("tensorflow", "cpu", "lesson", [1.0] * 5)]
    assert page.goal_shares(tf).endswith("ceiling, 50% on TensorFlow (CPU).")
    assert records.verdict(tf[1], tf[0]) == "50% of it (2× slower)"


def test_table_alt_text_and_page_values_say_what_was_measured(tmp_path):
    table = page.table(RUN)
    header = table.splitlines()[0]
    assert all(cell.strip() for cell in header.strip("|").split("|"))
    assert table.count("\n| JAX, CPU |") == 4
    alt = ceiling.alt_text(RUN)
    assert "JAX on the CPU" in alt and "lesson 47,619 (48%)" in alt and "GPU" not in alt
    file = tmp_path / "ceiling.jsonl"
    assert page.substitutions(file)["ref_ceil_table"] == page.NONE
    file.write_text("".join(json.dumps(r) + "\n" for r in RUN))
    values = page.substitutions(file)
    assert values["ref_ceil_table"] == table
    summary = values["ref_ceil_summary"]
    assert "JAX on the CPU (ceiling: `ram`)" in summary and "GPU" not in summary
    assert "Machine: Test CPU" in summary and "run r (2026-11-23)" in summary
    assert "malloc" not in summary  # no PyTorch record
    # the episode's note on what is missing tests the GPU's name
    assert values["ref_ceil_gpu"] == NOT_RECORDED
    gpu = [*RUN, {**record("jax", "gpu", "device", [0.1] * 5), "device": "Made-up GPU"}]
    file.write_text("".join(json.dumps(r) + "\n" for r in gpu))
    assert page.substitutions(file)["ref_ceil_gpu"] == "Made-up GPU"
    torch = [record("torch", "cpu", "ram", [0.5] * 5)]
    assert "default mode" in page.malloc_note(torch)
    fixed = [{**r, "malloc": {"mode": "fixed"}} for r in torch]
    assert page.malloc_note(fixed) == "PyTorch was measured with glibc malloc's thresholds fixed."


def test_records_of_retired_pipelines_are_read_and_left_out(tmp_path):
    """A run that also measured the reading thread and process the lesson no longer has still
    gives the page, the table and the figure, without them."""
    import matplotlib

    matplotlib.use("Agg")
    file = tmp_path / "ceiling.jsonl"
    old = [*RUN, *(record("jax", "cpu", name, [0.6] * 5) for name in records.RETIRED)]
    file.write_text("".join(json.dumps(r) + "\n" for r in old))
    kept = records.reference_run(file)
    assert [r["pipeline"] for r in kept] == [r["pipeline"] for r in RUN]
    values = page.substitutions(file)
    assert not any(name in text for name in records.RETIRED for text in values.values())
    assert values["ref_ceil_table"] == page.table(RUN)
    ceiling.figures(kept)


def test_the_figure_draws_a_panel_per_backend_and_device():
    import matplotlib

    matplotlib.use("Agg")
    run = [*RUN, record("tensorflow", "cpu", "ram", [0.7] * 5)]
    (fig,) = ceiling.figures(run)
    assert [ax.get_title(loc="left") for ax in fig.axes] == ["TensorFlow, CPU", "JAX, CPU"]
    with pytest.raises(ValueError, match=r"run python -m gpulesson\.experiments\.ceiling"):
        ceiling.figures([])


def test_the_tf_data_ceiling_gives_every_image_once_an_epoch_in_a_new_order():
    from gpulesson.experiments.ceiling.measure import tf_batches

    y = np.arange(10, dtype=np.int32)
    x = np.broadcast_to(y.astype(np.uint8)[:, None, None, None], (10, 32, 32, 3))
    dataset = tf_batches(x, y, 4, seed=1)
    assert dataset.options().autotune.enabled is False  # the wait between epochs
    epochs = [[(images.numpy(), labels.numpy()) for images, labels in dataset]
              for _ in range(6)]
    for batches in epochs:
        assert sorted(len(labels) for _, labels in batches) == [2, 4, 4]  # a short last batch
        assert sorted(np.concatenate([labels for _, labels in batches])) == list(range(10))
        for images, labels in batches:  # every image with its label
            np.testing.assert_array_equal(images[:, 0, 0, 0], labels)
    assert len({tuple(int(labels[0]) for _, labels in batches) for batches in epochs}) > 1


def test_each_backend_and_device_measures_its_own_pipelines():
    assert "tfdata" in records.pipelines_for("cpu", "tensorflow")
    assert "tfdata" not in records.pipelines_for("gpu", "jax") + records.pipelines_for("cpu", "torch")
    assert "device" in records.pipelines_for("gpu", "jax")
    assert "device" not in records.pipelines_for("cpu", "tensorflow")


def test_the_command_measures_one_process_per_backend_and_appends_one_run(tmp_path):
    out = tmp_path / "ceiling.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LESSON_QUICK": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.ceiling", "--backends", "jax",
         "--pipelines", "ram", "lesson-window1", "lesson", "--n-images", "256", "--devices", "cpu",
         "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    made = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["backend"], r["pipeline"]) for r in made] == [
        ("jax", "ram"), ("jax", "lesson-window1"), ("jax", "lesson")]
    assert len({r["run_id"] for r in made}) == 1
    for r in made:
        assert len(r["epoch_seconds"]) == 2 and len(r["warmup_seconds"]) == 1  # quick rule
        assert r["n_images"] == 256 and r["cpu_settings"]["cpu_cores_available"] >= 1
        assert r["load_average_before"] is not None
        # JAX runs in glibc's default malloc mode, and says so; each record keeps its ceiling.
        assert r["malloc"]["mode"] in ("glibc default", "not glibc")
        assert r["ceiling"]["pipeline"] == "ram"
    assert "JAX, CPU" in result.stdout and "the ceiling" in result.stdout
    # Going on with the same run measures nothing again.
    again = subprocess.run(
        [sys.executable, "-m", "gpulesson.experiments.ceiling", "--backends", "jax",
         "--pipelines", "ram", "--n-images", "256", "--devices", "cpu", "--out", str(out),
         "--run-id", made[0]["run_id"]], capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert len(out.read_text().splitlines()) == 3


def test_the_command_refuses_bad_sizes():
    result = subprocess.run([sys.executable, "-m", "gpulesson.experiments.ceiling",
                             "--n-images", "0"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert result.returncode == 2 and "--n-images must be at least 1" in result.stderr


ALLOCATOR_PROBE = ("import json; from gpulesson.experiments import allocator; "
                   "allocator.fix_for({backend!r}); print(json.dumps(allocator.mode()))")


@pytest.mark.parametrize("how", ["environment", "mallopt", "default"])
def test_pytorch_is_measured_in_one_malloc_mode_and_records_say_which(how):
    """The command gives PyTorch's process the fixed thresholds in its environment; a process
    started otherwise sets them itself (mallopt); other backends keep glibc's default. The mode
    goes into every record."""
    import platform

    from gpulesson.experiments import allocator

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("the malloc settings are glibc's")
    base = {k: v for k, v in os.environ.items() if k not in allocator.ENV}
    env = allocator.environment("torch", base) if how == "environment" else base
    assert (env.items() >= allocator.ENV.items()) == (how == "environment")
    assert allocator.environment("jax", base) == base
    code = ALLOCATOR_PROBE.format(backend="jax" if how == "default" else "torch")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**env, "PYTHONPATH": str(ROOT)}, check=True).stdout
    malloc = json.loads(out)["malloc"]
    if how == "default":
        assert malloc["mode"] == "glibc default"
    else:
        assert malloc == {"mode": "fixed", "set_by": how, "mmap_threshold": 33554432,
                          "trim_threshold": 268435456,
                          "environment": {k: env.get(k) for k in allocator.ENV}}
