"""Episode 5's headline (gpulesson.experiments.cnn.gpu_use): the speed-up as the range over
every recorded run of the same devices, each run named; the CPU's training rate beside its own
float32 matrix products; the fastest run's median epoch on that CPU. Made-up records only."""

from test_06_matmul import made_up
from test_reference import record

from gpulesson.experiments.cnn import gpu_use, page
from gpulesson.experiments.cnn.gpu_use import achieved_tflops
from gpulesson.records.results import NOT_RECORDED, append_record

SAME = {"cpu_model": "Test CPU", "cores_usable": 2, "backend": "jax"}


def cnn_run(run_id, cpu_epochs, gpu_epochs, **cpu_fields):
    cpu = {**record("cpu:0", run_id, epochs=cpu_epochs), **SAME, **cpu_fields}
    gpu = {**record("gpu:0", run_id, epochs=gpu_epochs), **SAME, "device": "Made-up GPU"}
    return [cpu, gpu]


def write(path, records):
    for made in records:
        append_record(path, made)
    return path


def test_the_speed_up_is_the_range_over_the_runs_of_the_same_devices(tmp_path):
    runs = write(tmp_path / "cnn-cpu-vs-gpu.jsonl", [
        *cnn_run("20260101T000000Z-aaaaaa", (9.0, 4.0, 4.0), (3.0, 0.1, 0.1)),   # 40x
        *cnn_run("20260102T000000Z-bbbbbb", (9.0, 5.0, 5.0), (3.0, 0.2, 0.2)),   # 25x
        # another CPU: not the same devices, so not in the range
        *cnn_run("20260103T000000Z-cccccc", (9.0, 8.0, 8.0), (3.0, 0.1, 0.1), cores_usable=8),
    ])
    reference = cnn_run("r", (9.0, 4.0, 4.0), (3.0, 0.1, 0.1))
    values = gpu_use.substitutions(reference, runs)
    assert values["ref_head_speedups"] == "25× (bbbbbb), 40× (aaaaaa)"
    assert values["ref_head_speedup_range"] == "25× to 40×"
    assert values["ref_head_gpu_epochs"] == "100 ms (aaaaaa), 200 ms (bbbbbb)"
    assert values["ref_head_cpu_epochs"] == "4.0 s (aaaaaa), 5.0 s (bbbbbb)"
    assert values["ref_head_compiler"] == "XLA:CPU through JAX"
    # the fastest median epoch of any framework on that CPU, and that it is the only kind recorded
    assert values["ref_head_cpu_best"].startswith("4.0 s, with XLA:CPU through JAX in float32 "
                                                  "(run aaaaaa): the only")
    # no matrix products recorded on that CPU: the comparison is not made up
    assert values["ref_head_cpu_matmul"] == values["ref_head_cpu_share"] == NOT_RECORDED


def test_the_cpus_rate_is_set_beside_its_matrix_products(tmp_path):
    runs = write(tmp_path / "cnn-cpu-vs-gpu.jsonl", cnn_run("20260101T000000Z-aaaaaa",
                                                            (9.0, 4.0, 4.0), (3.0, 0.1, 0.1)))
    write(tmp_path / "matmul.jsonl", [  # beside the CNN's file, where the page reads it
        made_up("cpu", {1024: 40.0, 2048: 50.0}, run_id="20260101T000000Z-mmmmmm"),
        made_up("cpu", {1024: 400.0}, run_id="20260101T000000Z-other", cores_usable=8),
    ])
    reference = cnn_run("20260101T000000Z-aaaaaa", (9.0, 4.0, 4.0), (3.0, 0.1, 0.1))
    values = gpu_use.substitutions(reference, runs)
    rate = achieved_tflops(reference[0])
    assert values["ref_head_cpu_tflops"] == f"{rate:.2g} TFLOP/s"
    assert values["ref_head_cpu_matmul"] == "0.05 TFLOP/s (n = 2,048)"  # the same CPU's, not 8 cores'
    assert values["ref_head_cpu_matmul_run"] == "mmmmmm"
    assert values["ref_head_cpu_share"] == f"{100 * rate / 0.05:.0f} %"


def test_without_both_devices_nothing_is_claimed(tmp_path):
    runs = write(tmp_path / "cnn-cpu-vs-gpu.jsonl", [{**record("cpu:0", "r"), **SAME}])
    values = gpu_use.substitutions([{**record("cpu:0", "r"), **SAME}], runs)
    assert values["ref_head_speedups"] == values["ref_head_speedup_range"] == NOT_RECORDED
    assert gpu_use.substitutions([], runs) == {**dict.fromkeys(gpu_use.KEYS, NOT_RECORDED),
                                               "ref_use_feeding": ""}
    assert set(gpu_use.KEYS) <= page.substitutions(runs).keys()
