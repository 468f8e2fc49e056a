"""The input-pipeline benchmark of episode 9 (gpulesson.experiments.feeding): its pipelines,
timing and records, the measurement rule, and the command line, on the CPU at tiny sizes. The
page's values and figures are tested in test_09_feeding_page.py."""

import inspect
import json
import os
import subprocess
import sys
from functools import partial

import h5py
import numpy as np
import pytest
from conftest import ROOT
from feeding_helpers import BATCH, REPEATS, N, do_nothing_model, write_records

from gpulesson.experiments import feeding, registry
from gpulesson.experiments.feeding import measure
from gpulesson.experiments.feeding import pipelines as fp
from gpulesson.machine import timing
from gpulesson.machine.devices import keras_device_name
from gpulesson.records import summaries
from gpulesson.records.results import append_record, read_records, validate_record

feeding_main = partial(registry.run, "gpulesson.experiments.feeding")


def test_every_pipeline_gives_well_formed_records(feeding_measured):
    records, lines, _ = feeding_measured
    assert not [line for line in lines if line.startswith("skipped")], lines
    assert len({r["run_id"] for r in records}) == 1
    base = [r for r in records if r["group"] == "pipelines"]
    assert base == records  # the settings are the speed ladder's
    assert {(r["pipeline"], r["mode"]) for r in base} == {
        (p, m) for p in measure.PIPELINES for m in ("train", "loader")}
    for r in records:
        validate_record(r)
        assert r["experiment"] == "feeding" and r["data"] == "synthetic"
        assert r["device"] == "CPU" and r["device_kind"] == "cpu" and r["cpu_model"]
        assert r["cores_usable"] >= 1 and r["backend"] and r["versions"]["keras"] and r["date"]
        assert r["images_per_second"] == pytest.approx(
            r["images_per_epoch"] / r[summaries.SUMMARY_KEY]["median"])
        assert r["warmup_epochs"] == 1 and len(r["warmup_seconds"]) == 1
        assert r["repeats"] == REPEATS
        assert not r["partial_epoch"] and r["steps"] == r["full_epoch_steps"]
        assert r["load_average"] is None or len(r["load_average"]) == 3
        for key in ("load_average_before", "load_average_after"):
            assert key in r and (r[key] is None or len(r[key]) == 3)
        assert json.loads(json.dumps(r)) == r  # JSON-ready
        assert r["malloc"]["mode"]  # the allocator mode it was measured in
    train = [r for r in base if r["mode"] == "train"]
    assert {(r["precision"], r["jit_compile"], r["steps_per_execution"]) for r in train} == {
        ("float32", True, 1)}
    classic = measure.find(records, "cpu", "classic")
    assert classic["compression"] == "gzip" and classic["chunks"][1:] != [32, 32, 3]
    lesson = measure.find(records, "cpu", "lesson")
    assert lesson["chunks"] == [BATCH, 32, 32, 3] and lesson["compression"] is None
    assert measure.find(records, "cpu", "lesson-workers")["workers"] == 2


def test_the_precision_policy_is_restored_after_an_error():
    import keras

    with pytest.raises(RuntimeError, match="inside"), measure.precision_policy("mixed_float16"):
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
        raise RuntimeError("inside")
    assert keras.mixed_precision.global_policy().name == "float32"
    model = feeding.build_model("cpu", precision="mixed_bfloat16")
    assert model.layers[0].compute_dtype == "bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"


# --- the pipelines -------------------------------------------------------------------------------

def _numbered(n):
    """Images that carry their own row number in their first two bytes."""
    x = np.zeros((n, 32, 32, 3), dtype=np.uint8)
    x[:, 0, 0, 0], x[:, 0, 0, 1] = np.arange(n) % 256, np.arange(n) // 256
    return x, (np.arange(n) % 10).astype(np.uint8)


def _ids(images):
    images = np.asarray(images)
    assert images.dtype == np.uint8, f"a pipeline gave {images.dtype}: every one gives bytes"
    pixels = images[:, 0, 0, :2].astype(int)
    return pixels[:, 0] + 256 * pixels[:, 1]


def test_the_classic_file_is_guessed_chunks_with_gzip(tmp_path):
    x, y = _numbered(N)
    path = fp.write_files(tmp_path, x, y, ["classic"], batch_size=BATCH)["classic"]
    with h5py.File(path, "r") as f:
        dataset = f["x"]
        assert dataset.compression == "gzip" and dataset.chunks is not None
        # h5py guessed the chunks (chunks=True): they cut across images
        assert dataset.chunks[1:] != (32, 32, 3)
    assert fp.file_info(path)["compression"] == "gzip"
    # for the full data set this layout gives h5py's guess (6250, 4, 4, 1)
    from h5py._hl.filters import guess_chunk

    from gpulesson.experiments.layouts import layout_options

    assert layout_options("auto chunks + gzip", (50_000, 32, 32, 3))["chunks"] is True
    assert guess_chunk((50_000, 32, 32, 3), None, 1) == (6250, 4, 4, 1)


def test_the_classic_generator_reads_the_whole_dataset_every_epoch(tmp_path, monkeypatch):
    x, y = _numbered(N)
    path = fp.write_files(tmp_path, x, y, ["classic"], batch_size=BATCH)["classic"]
    reads = []
    original = h5py.Dataset.__getitem__

    def counting(self, key, *args, **kwargs):
        result = original(self, key, *args, **kwargs)
        if self.name == "/x":
            reads.append(len(result))
        return result

    monkeypatch.setattr(h5py.Dataset, "__getitem__", counting)
    classic = fp.ClassicBatches(path, BATCH)
    assert reads == [N]  # counting the images read them all
    for _ in range(2):
        batches = list(measure._batches(classic))
        assert len(batches) == 3
    # every epoch: 3 batch reads, then the whole dataset again to count it
    assert reads == [N, BATCH, BATCH, BATCH, N, BATCH, BATCH, BATCH, N]
    assert classic.full_reads == 3
    # and its shuffle never reaches the batches (the first mistake)
    assert list(_ids(batches[0][0])) == list(range(BATCH))
    classic.close()


@pytest.mark.parametrize("pipeline", ["lesson", "lesson-gzip", "ram", "device"])
def test_a_pipeline_delivers_every_image_once_per_epoch(tmp_path, pipeline):
    x, y = _numbered(N + 5)  # a smaller last batch
    files = fp.write_files(tmp_path, x, y, ["none", "gzip"], batch_size=BATCH)
    ram = (x, y.astype("int32"))
    dataset = fp.make_pipeline(pipeline, batch_size=BATCH, files=files, arrays=ram,
                               device_arrays=fp.to_device(*ram, "cpu"))
    orders = []
    for _ in range(2):
        ids = np.concatenate([_ids(np.asarray(b[0])) for b in measure._batches(dataset)])
        assert sorted(ids) == list(range(N + 5))
        orders.append(list(ids))
    assert orders[0] != orders[1]  # shuffled anew every epoch


def test_the_workers_pipeline_reads_in_worker_processes(tmp_path):
    x, y = _numbered(N)
    files = fp.write_files(tmp_path, x, y, ["none"], batch_size=BATCH)
    dataset = fp.make_pipeline("lesson-workers", batch_size=BATCH, files=files, workers=2)
    assert dataset.workers == 2 and dataset.use_multiprocessing
    ids = np.concatenate([_ids(b[0]) for b in measure._batches(dataset)])
    assert sorted(ids) == list(range(N))
    # the batches were read by the worker processes: this process never opened the file
    assert dataset._file is None


def test_a_partial_epoch_is_timed_and_recorded_as_such(tmp_path):
    x, y = _numbered(N)
    ram = (x, y.astype("int32"))
    full = fp.make_pipeline("ram", batch_size=BATCH, arrays=ram)
    part = fp.limit(full, 2)
    assert len(part) == 2 and fp.limit(full, 10) is full and fp.limit(full, None) is full
    budget = feeding.time_loader(part, "cpu", warmup=1, repeats=2)
    record = measure.measurement_record(
        budget, run_id="r", device="cpu", pipeline="ram", mode="loader", batch_size=BATCH,
        steps=len(part), full_steps=len(full), n_images=N, precision=None, jit_compile=None,
        steps_per_execution=None, group="pipelines", extra={})
    assert record["partial_epoch"] and record["steps"] == 2 and record["images_per_epoch"] == 64
    assert record["full_epoch_seconds"] == pytest.approx(N / record["images_per_second"])
    assert len(record["epoch_seconds"]) == 2


def test_a_slow_epoch_never_cuts_the_repeats():
    """The rule: a warm-up and every timed epoch asked for, however long they take (a 40-step
    CPU epoch used to stop a condition after one timed epoch)."""
    budget = timing.Budget(warmup=1, repeats=summaries.REPEATS)
    budget.seconds += [900.0]
    assert not budget.done()  # the warm-up does not count
    for _ in range(summaries.REPEATS - 1):
        budget.seconds += [600.0]
        assert not budget.done()
    budget.seconds += [600.0]
    assert budget.done() and budget.timed == [600.0] * summaries.REPEATS
    assert "max_seconds" not in inspect.signature(feeding.run_benchmark).parameters


def test_every_record_follows_the_measurement_rule(feeding_measured):
    records, _, _ = feeding_measured
    for r in records:
        summary = r[summaries.SUMMARY_KEY]
        assert summary["n"] == r["repeats"] == len(r["epoch_seconds"]) >= REPEATS
        assert summary["samples"] == r["epoch_seconds"]
        assert summary["warmup"] == r["warmup_seconds"] and len(summary["warmup"]) == summaries.WARMUP
        assert summary["min"] <= summary["median"] <= summary["max"]
        assert measure.RECORDS.epoch_summary(r) == summary
        rate = measure.rate_summary(r)
        assert rate["median"] == pytest.approx(r["images_per_second"])
        assert rate["min"] == pytest.approx(r["images_per_epoch"] / summary["max"])
    assert set(measure.RECORDS.methods) == set(fp.DEVICE_METHODS.values())  # `device`'s methods


@pytest.mark.parametrize("call, message", [
    (lambda: measure.check_pipelines(["lesson", "nope"]), "unknown pipeline.*'nope'"),
    (lambda: measure.check_pipelines([]), "no pipelines"),
    (lambda: keras_device_name("tpu"), "unknown device 'tpu'"),
    (lambda: measure.precision_policy("float64").__enter__(), "unknown precision 'float64'"),
    (lambda: feeding.run_benchmark(devices=["cpu"], pipelines=["ram"], batch_size=64,
                                   n_images=32, repeats=1), "larger than n_images"),
    (lambda: feeding.run_benchmark(devices=["cpu"], pipelines=["ram"], batch_size=0,
                                   n_images=32, repeats=1), "batch_size must be"),
    (lambda: fp.make_pipeline("ram", batch_size=0, arrays=_numbered(4)), "batch size"),
])
@pytest.mark.bad_input("bad argument")
def test_bad_input_gives_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()



@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.bad_input("bad argument")
def test_the_benchmark_refuses_keras_workers_where_they_deliver_wrong_data(backend):
    assert measure.pipelines_for(backend) == [p for p in measure.PIPELINES
                                          if p not in measure.WORKER_PIPELINES]
    assert measure.pipelines_for("tensorflow") == list(measure.PIPELINES)
    with pytest.raises(ValueError, match=f"batches of earlier epochs with the {backend}"):
        measure.check_pipelines(["lesson", "lesson-gzip-workers"], backend)


# --- the command line ---------------------------------------------------------------------------

@pytest.mark.bad_input("no GPU")
def test_the_command_refuses_the_gpu_without_one(tmp_path, capsys):
    import keras

    from gpulesson.machine.devices import keras_device

    if keras_device()["gpu_count"]:
        pytest.skip("a GPU is visible")
    out = tmp_path / "f.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        feeding_main(["--devices", "gpu", "--out", str(out)])
    assert exit_info.value.code == 2
    assert "No GPU is visible" in capsys.readouterr().err
    assert not out.exists()
    del keras


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "0"], "--batch-size must be at least 1"),
    (["--n-images", "16", "--batch-size", "64"], "larger than --n-images"),
    (["--pipelines", "nope"], "invalid choice: 'nope'"),
    (["--max-steps", "0"], "--max-steps must be at least 1"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--sweeps", "none"], "unrecognized arguments: --sweeps"),
    (["--devices", "tpu"], "invalid choice: 'tpu'"),
    (["--repeats", "x"], "invalid int value"),
    (["--repeats", "1"], "--repeats must be at least"),
    (["--quick", "--repeats", "1"], f"--repeats must be at least {summaries.QUICK_REPEATS}"),
    (["--warmup", "0"], "--warmup must be at least 1"),
    (["--max-seconds", "30"], "unrecognized arguments: --max-seconds"),
])
@pytest.mark.bad_input("bad argument")
def test_bad_arguments_get_clear_errors(tmp_path, capsys, args, message):
    out = tmp_path / "f.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        feeding_main([*args, "--out", str(out)])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_the_command_runs_on_jax_without_tensorflow(tmp_path):
    """The GPU machine has JAX and Keras but no TensorFlow: the command must not need it."""
    out = tmp_path / "jax.jsonl"
    code = (
        "import sys\n"
        "class NoTensorFlow:  # importing it fails, as if not installed; sys.modules keeps no trace\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'tensorflow':\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoTensorFlow())\n"
        "from gpulesson.experiments.feeding.__main__ import main\n"
        "status = main(['--quick', '--devices', 'cpu', '--n-images', '64',\n"
        "    '--batch-size', '32', '--pipelines', 'lesson', 'lesson-ahead',\n"  # device: test_09_device_path
        f"    '--out', {str(out)!r}])\n"
        "sys.exit(status)\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    records = read_records(out)
    assert len(records) == 4 and {r["backend"] for r in records} == {"jax"}
    assert len({r["run_id"] for r in records}) == 1
    assert {(r["pipeline"], r["mode"]) for r in records} == {
        (p, m) for p in ("lesson", "lesson-ahead") for m in ("train", "loader")}
    assert "img/s" in done.stdout and "Appended 4 record(s)" in done.stdout
    assert not any(r["workers"] for r in records)


_CARRY_OVER = '''
import keras
import numpy as np


class Numbered(keras.utils.PyDataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        x = np.full((2, 1), i, dtype="float32")
        return x, x


seen = []


def record(y_true, y_pred):
    try:
        seen.append(int(np.asarray(y_true)[0, 0]))
    except Exception:
        pass  # the symbolic build: no values
    return keras.ops.mean(y_pred) * 0.0


model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
model.compile(optimizer="sgd", loss=record, run_eagerly=True)
model.fit(Numbered(workers=2, max_queue_size=3), epochs=1, shuffle=False, verbose=0)
print(sorted(seen))
'''


def test_keras_workers_still_carry_batches_over_on_jax():
    """The reason for measure.WRONG_DATA_WITH_WORKERS, checked on the installed Keras: with
    JAX, fit's symbolic build starts the enqueuer, and the batches it read ahead come back in
    the first epoch (stop() moves them to the ready queue). When this fails, Keras has fixed
    it: check PyTorch too, then relax the rule and episode 9's section on workers."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", _CARRY_OVER], env=env, capture_output=True,
                          text=True, check=False, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(seen) == 12 and seen != list(range(12)), (
        f"every batch once ({seen}): Keras no longer carries batches over on JAX")


# --- going on with an interrupted run -----------------------------------------------------------

_TINY = ["--quick", "--devices", "cpu", "--n-images", str(N), "--batch-size", str(BATCH),
         "--pipelines", "ram", "device"]  # 4 conditions


def _stop_at_the_loader(*args, **kwargs):
    raise RuntimeError("stopped in the second condition")


@pytest.mark.bad_input("killed job")
def test_a_run_that_goes_on_records_only_the_conditions_it_lacks(tmp_path, monkeypatch, capsys):
    out, data = tmp_path / "f.jsonl", tmp_path / "data"
    argv = [*_TINY, "--out", str(out), "--data-dir", str(data)]
    monkeypatch.setattr(measure, "build_model", do_nothing_model)
    # Interrupted in its second condition (ram's loader): the first one's record is kept.
    with monkeypatch.context() as patch:
        patch.setattr(measure, "time_loader", _stop_at_the_loader)
        with pytest.raises(RuntimeError, match="second condition"):
            feeding_main(argv)
    [first] = read_records(out)
    assert (first["pipeline"], first["mode"]) == ("ram", "train")
    run_id = first["run_id"]
    # Another run's record of the same condition does not count for this run.
    append_record(out, {**first, "run_id": "another-run"})
    capsys.readouterr()

    assert feeding_main([*argv, "--run-id", run_id]) == 0
    printed = capsys.readouterr().out
    assert f"1 of 4 condition(s) recorded in run {run_id} already" in printed
    mine = read_records(out, run_id=run_id)
    keys = [measure.RECORDS.key(r) for r in mine]
    assert len(keys) == len(set(keys)) == 4, keys
    assert mine[0] == first  # kept as it was, not measured again
    assert {(r["pipeline"], r["mode"], r["group"]) for r in mine} == {
        ("ram", "train", "pipelines"), ("ram", "loader", "pipelines"),
        ("device", "train", "pipelines"), ("device", "loader", "pipelines")}
    assert "Appended 3 record(s)" in printed
    assert printed.count(" loader ") >= 2  # the whole run's table, not only what was appended

    # A run that has everything measures nothing: no model is even built.
    before = out.read_text()
    monkeypatch.setattr(measure, "build_model", _stop_at_the_loader)
    assert feeding_main([*argv, "--run-id", run_id]) == 0
    assert out.read_text() == before
    assert "Nothing left to measure." in capsys.readouterr().out


@pytest.mark.bad_input("bad argument")
def test_a_run_goes_on_only_with_the_sizes_it_had(tmp_path, capsys):
    budget = timing.Budget(warmup=1, repeats=1)
    budget.seconds += [2.0, 1.0]
    run_id = "earlier"
    out = write_records(tmp_path / "f.jsonl", [measure.measurement_record(
        budget, run_id=run_id, device="cpu", pipeline="ram", mode="train", batch_size=BATCH,
        steps=3, full_steps=3, n_images=N, precision="float32", jit_compile=True,
        steps_per_execution=1, group="pipelines", extra={})])
    before = out.read_text()
    with pytest.raises(SystemExit) as exit_info:
        feeding_main([*_TINY[:3], "--n-images", str(2 * N), "--run-id", run_id, "--out", str(out)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"run {run_id} was recorded with n_images {N}, not {2 * N}" in err
    assert out.read_text() == before


