"""Data-parallel training of the lesson's CNN (gpulesson.experiments.parallel) and its all-reduce cost model.

The training runs are real and run on CPUs: JAX in subprocesses (its backend and its number of
logical CPU devices are fixed when it starts). One subprocess trains the same global batches
on 1 device and on 4 logical devices; two processes on 127.0.0.1 (2 devices each) train them
together, exchanging gradients through gloo. All must end with the same weights.
"""

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import ROOT
from localhost import free_port
from test_jobs import lesson_folder

from gpulesson.experiments import parallel

# The run both tests compare: 3 steps of 4 x 8 images, SGD at 0.05 (tuned for 32 images).
PER_REPLICA, STEPS, RATE, BASE = 8, 3, 0.05, 32
# float32 sums in another order differ by ~1e-8 here; an SGD step changes weights by ~1e-2.
ATOL = 1e-5
TIMEOUT = 240

SINGLE_PROCESS = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    from gpulesson.experiments import parallel

    keras = parallel.use_jax(cpu_devices=4)
    devices = keras.distribution.list_devices()
    runs = {{
        # The reference: one device, the whole global batch.
        "one": dict(per_replica_batch={4 * PER_REPLICA}, devices=devices[:1]),
        # Data-parallel: four devices, a quarter each.
        "four": dict(per_replica_batch={PER_REPLICA}, devices=devices),
        # What no all-reduce would give: one replica's quarter of every batch alone.
        "quarter": dict(per_replica_batch={PER_REPLICA}, devices=devices[:1]),
    }}
    out, report = {{}}, {{"devices": devices}}
    for name, kwargs in runs.items():
        model = parallel.run_training(steps={STEPS}, learning_rate={RATE},
                                      base_batch={BASE}, log=lambda *a: None, **kwargs)
        copies = parallel.replica_copies(model)
        report[name] = dict(copies=sorted({{len(c) for _, c in copies}}),
                            in_sync=parallel.replicas_in_sync(model),
                            sharding=str(model.weights[0].value.sharding))
        out.update({{f"{{name}}_{{i}}": w for i, w in
                    enumerate(parallel.local_weights(model))}})
        if name == "one":
            initial = parallel.build_parallel_cnn({RATE})
            out.update({{f"initial_{{i}}": w for i, w in
                        enumerate(parallel.local_weights(initial))}})
    np.savez(sys.argv[1], **out)
    print(json.dumps(report))
""")


def _env():
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=str(ROOT))
    env.pop("XLA_FLAGS", None)
    return env


def _weights(npz, prefix):
    keys = sorted((k for k in npz if k.startswith(prefix + "_")), key=lambda k: int(k.split("_")[1]))
    return [npz[k] for k in keys]


def _max_difference(a, b):
    assert len(a) == len(b) > 0
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def single_process(tmp_path_factory):
    """Weights after 3 steps on 1 device, on 4 logical devices, and on a quarter batch."""
    path = tmp_path_factory.mktemp("parallel") / "weights.npz"
    result = subprocess.run([sys.executable, "-c", SINGLE_PROCESS, str(path)], cwd=ROOT, check=False,
                            env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report, np.load(path)


def test_data_parallel_steps_equal_the_single_device_steps(single_process):
    report, npz = single_process
    assert report["devices"] == ["cpu:0", "cpu:1", "cpu:2", "cpu:3"]
    initial, one, four = (_weights(npz, name) for name in ("initial", "one", "four"))
    # The steps really changed the weights, far more than the tolerance...
    assert _max_difference(initial, one) > 100 * ATOL
    # ...and 4 devices on a quarter each made the same steps as 1 device on the whole batch.
    assert _max_difference(one, four) < ATOL
    # Without the all-reduce (a replica's own quarter only) the steps would differ.
    assert _max_difference(one, _weights(npz, "quarter")) > 100 * ATOL


def test_every_device_holds_the_same_weights(single_process):
    report, _ = single_process
    # Every weight is replicated: one copy per device, none split ("P(None, ...)").
    assert report["four"]["copies"] == [4]
    assert "'batch': 4" in report["four"]["sharding"]
    assert report["four"]["in_sync"] and report["one"]["in_sync"]
    assert report["one"]["copies"] == [1]


def test_replicas_in_sync_sees_a_copy_that_differs():
    def model(*copies):
        shards = [SimpleNamespace(data=np.array(c, dtype="float32")) for c in copies]
        return SimpleNamespace(weights=[SimpleNamespace(
            path="dense/kernel", value=SimpleNamespace(addressable_shards=shards))])

    assert parallel.replicas_in_sync(model([1.0, 2.0], [1.0, 2.0]))
    assert not parallel.replicas_in_sync(model([1.0, 2.0], [1.0, 2.0], [1.0, 2.5]))
    assert parallel.local_weights(model([3.0], [3.0]))[0].tolist() == [3.0]


def test_two_processes_train_like_one(single_process, tmp_path):
    _, npz = single_process
    port = free_port()
    processes = []
    with contextlib.ExitStack() as stack:
        logs = [stack.enter_context(open(tmp_path / f"process{rank}.log", "w+"))
                for rank in range(2)]
        try:
            for rank, log in enumerate(logs):
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", "gpulesson.experiments.parallel", "train", "--cpu-devices", "2",
                     "--per-replica-batch", str(PER_REPLICA), "--steps", str(STEPS),
                     "--learning-rate", str(RATE), "--base-batch", str(BASE),
                     "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
                     "--process-id", str(rank), "--save-weights", str(tmp_path / f"w{rank}.npz")],
                    cwd=ROOT, env=_env(), stdout=log, stderr=subprocess.STDOUT, text=True))
            for process in processes:
                # A hang (a process waiting for the other forever) fails here, in bounded time.
                process.wait(timeout=TIMEOUT)
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        outputs = []
        for log in logs:
            log.seek(0)
            outputs.append(log.read())
    for rank, (process, output) in enumerate(zip(processes, outputs, strict=True)):
        assert process.returncode == 0, output[-3000:]
        assert f"process {rank}: the weights on its 2 device(s) are identical" in output
    assert "4 device(s) in 2 process(es): cpu:0, cpu:1, cpu:2048, cpu:2049" in outputs[0]
    assert "global batch 32 = 8 per device x 4; learning rate 0.05" in outputs[0]
    w0, w1 = (_weights(np.load(tmp_path / f"w{rank}.npz"), "arr") for rank in range(2))
    # Both processes hold the same weights, and they are the single-device ones.
    assert _max_difference(w0, w1) == 0
    assert _max_difference(w0, _weights(npz, "one")) < ATOL


# --- Pieces that need no training -------------------------------------------------------------


def test_process_slice_splits_every_global_batch():
    x = np.arange(12)
    # Global batches of 4: [0..3], [4..7], [8..11]; two processes take two rows of each.
    assert parallel.process_slice(x, 4, 0, 2).tolist() == [0, 1, 4, 5, 8, 9]
    assert parallel.process_slice(x, 4, 1, 2).tolist() == [2, 3, 6, 7, 10, 11]
    images = np.zeros((8, 2, 2, 3))
    assert parallel.process_slice(images, 4, 1, 2).shape == (4, 2, 2, 3)
    with pytest.raises(ValueError, match="multiple of the number of processes"):
        parallel.process_slice(x, 4, 0, 3)
    with pytest.raises(ValueError, match="not a whole number of global batches"):
        parallel.process_slice(x, 5, 0, 1)
    with pytest.raises(ValueError, match=r"process_id must be in 0\.\.1"):
        parallel.process_slice(x, 4, 2, 2)


def test_global_batch_and_learning_rate_scaling():
    assert parallel.global_batch_size(128, 4) == 512
    assert parallel.scaled_learning_rate(0.1, 1024, 256) == pytest.approx(0.4)
    assert parallel.scaled_learning_rate(0.1, 128, 256) == pytest.approx(0.05)
    # Warm-up: from the base rate to the scaled rate over the first steps.
    assert parallel.scaled_learning_rate(0.1, 1024, 256, warmup_steps=10, step=0) == pytest.approx(0.1)
    assert parallel.scaled_learning_rate(0.1, 1024, 256, warmup_steps=10, step=5) == pytest.approx(0.25)
    assert parallel.scaled_learning_rate(0.1, 1024, 256, warmup_steps=10, step=10) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="replicas must be a whole number >= 1"):
        parallel.global_batch_size(128, 0)
    with pytest.raises(ValueError, match="base_learning_rate must be > 0"):
        parallel.scaled_learning_rate(0, 512, 256)
    with pytest.raises(ValueError, match="global_batch must be a whole number"):
        parallel.scaled_learning_rate(0.1, 2.5, 256)


def test_ring_allreduce_arithmetic():
    cnn = parallel.LESSON_CNN_PARAMETERS
    assert cnn == 787_530
    # float32: 3,150,120 bytes of gradients; a ring moves 2 (N-1)/N of them per GPU.
    assert parallel.ring_allreduce_bytes(cnn, 1) == 0
    assert parallel.ring_allreduce_bytes(cnn, 2) == pytest.approx(3_150_120)
    assert parallel.ring_allreduce_bytes(cnn, 4) == pytest.approx(1.5 * 3_150_120)
    assert parallel.ring_allreduce_bytes(cnn, 8) == pytest.approx(1.75 * 3_150_120)
    assert parallel.ring_allreduce_bytes(cnn, 2, bytes_per_parameter=2) == pytest.approx(1_575_060)
    # 3.15 MB over 10 GB/s: 0.315 ms.
    assert parallel.allreduce_seconds(cnn, 2, 10.0) == pytest.approx(3.15012e-4)
    assert parallel.scaling_efficiency(0.030, 0.010) == pytest.approx(0.75)
    assert parallel.scaling_efficiency(0.030, 0.0) == 1.0
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1"):
        parallel.ring_allreduce_bytes(cnn, 0)
    with pytest.raises(ValueError, match="bandwidth_gb_s must be > 0"):
        parallel.allreduce_seconds(cnn, 2, 0)
    with pytest.raises(ValueError, match="compute_seconds must be > 0"):
        parallel.scaling_efficiency(0, 0.01)


def test_a_parameter_server_carries_all_the_gradients():
    cnn = parallel.LESSON_CNN_PARAMETERS
    # The server receives N x 3,150,120 bytes per step; a ring GPU sends less than twice one.
    assert parallel.parameter_server_bytes(cnn, 1) == 3_150_120
    assert parallel.parameter_server_bytes(cnn, 8) == 8 * 3_150_120
    for n in (2, 4, 8, 64):
        assert parallel.parameter_server_bytes(cnn, n) > parallel.ring_allreduce_bytes(cnn, n)
        assert parallel.ring_allreduce_bytes(cnn, n) < 2 * 3_150_120
    with pytest.raises(ValueError, match="n_gpus must be a whole number >= 1"):
        parallel.parameter_server_bytes(cnn, 0)


def test_cost_table_for_the_cnn_and_a_resnet50_sized_model():
    models = {"lesson CNN": (parallel.LESSON_CNN_PARAMETERS, 20.0),
              "ResNet-50 size": (parallel.RESNET50_PARAMETERS, 20.0)}
    rows = parallel.cost_table(models, {"slow": 1.0, "fast": 100.0})
    assert len(rows) == 2 * 2 * 3 and [r.n_gpus for r in rows[:3]] == [2, 4, 8]
    by_key = {(r.model, r.interconnect, r.n_gpus): r for r in rows}
    # The CNN over 1 GB/s on 8 GPUs: 5.51 MB -> 5.51 ms against 20 ms of compute.
    cnn = by_key[("lesson CNN", "slow", 8)]
    assert cnn.communication_ms == pytest.approx(5.512710)
    assert cnn.efficiency == pytest.approx(20 / 25.512710)
    assert cnn.speedup == pytest.approx(8 * 20 / 25.512710)
    # 32.6 times more parameters, the same compute: far worse on the slow link.
    big = by_key[("ResNet-50 size", "slow", 8)]
    assert big.megabytes_per_gpu == pytest.approx(179.45698)
    assert big.efficiency < 0.11
    assert cnn.efficiency > 0.75
    # More GPUs never raise the efficiency; a faster link never lowers it.
    for model in models:
        for link in ("slow", "fast"):
            effs = [by_key[(model, link, n)].efficiency for n in (2, 4, 8)]
            assert effs == sorted(effs, reverse=True)
        assert by_key[(model, "fast", 8)].efficiency > by_key[(model, "slow", 8)].efficiency
    table = parallel.format_cost_table(parallel.cost_table(models, {"slow": 1.0}, gpus=(2,))).splitlines()
    assert "efficiency" in table[0] and len(table) == 2 + 2
    # The table names each model and the bound its all-reduce meets instead of its parameter
    # count; on 2 GPUs each sends its parameters' 4 bytes once: 3.15 ms and 102.55 ms at 1 GB/s.
    cnn_row, big_row = table[2].split(), table[3].split()
    assert cnn_row[:2] == ["lesson", "CNN"] and cnn_row[5:] == ["3.15", "bandwidth", "20.0", "86%", "1.73"]
    assert big_row[:2] == ["ResNet-50", "size"]
    assert big_row[5:] == ["102.55", "bandwidth", "20.0", "16%", "0.33"]


def test_cost_command_line(capsys):
    assert parallel.main(["cost", "--compute-ms", "40", "--gpus", "2", "8"]) == 0
    out = capsys.readouterr().out
    assert "the same for both models" in out
    assert len([line for line in out.splitlines() if "NVLink" in line]) == 4
    with pytest.raises(SystemExit):
        parallel.main(["cost", "--compute-ms", "0"])
    assert "must be > 0, not 0.0" in capsys.readouterr().err


@pytest.mark.bad_input("bad argument")
def test_train_command_line_refuses_incomplete_process_settings(capsys):
    with pytest.raises(SystemExit, match="need --coordinator, --num-processes and --process-id"):
        parallel.main(["train", "--coordinator", "127.0.0.1:1234"])
    with pytest.raises(SystemExit, match="--slurm takes the processes from Slurm"):
        parallel.main(["train", "--slurm", "--process-id", "0"])
    with pytest.raises(SystemExit):
        parallel.main(["train", "--per-replica-batch", "0"])
    assert "must be at least 1, not 0" in capsys.readouterr().err


# --- The Slurm job ----------------------------------------------------------------------------

SBATCH = ROOT / "jobs" / "train-multi-node.sbatch"


def test_multi_node_job_asks_for_nodes_and_one_task_per_gpu():
    subprocess.run(["bash", "-n", str(SBATCH)], check=True)
    text = SBATCH.read_text()
    directives = dict(line[len("#SBATCH --"):].split("=", 1) for line in text.splitlines()
                      if line.startswith("#SBATCH --"))
    assert directives["nodes"] == "2"
    # One task per GPU: jax.distributed gives task SLURM_LOCALID the GPU of that number.
    assert directives["gres"] == f"gpu:{directives['ntasks-per-node']}"
    assert "gpus-per-task" not in text.replace("no --gpus-per-task", "")
    assert "export KERAS_BACKEND=jax" in text
    assert 'srun --kill-on-bad-exit=1 python -u -m gpulesson.experiments.parallel train --slurm "$@"' in text


def test_multi_node_job_runs_srun_with_its_arguments(tmp_path):
    folder = lesson_folder(tmp_path)
    # A stand-in for srun that shows what it was asked to run.
    fake_srun = folder / ".venv" / "bin" / "srun"
    fake_srun.write_text('#!/bin/sh\necho "srun $*"\necho "KERAS_BACKEND=$KERAS_BACKEND"\n')
    fake_srun.chmod(0o755)
    activate = folder / ".venv" / "bin" / "activate"
    activate.write_text(f'PATH="{fake_srun.parent}:$PATH"\n' + activate.read_text())
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "123", "SLURM_NNODES": "2", "SLURM_NTASKS": "8"}
    result = subprocess.run(["bash", str(SBATCH), "--steps", "5"], cwd=folder, env=env, check=False,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert ("srun --kill-on-bad-exit=1 python -u -m gpulesson.experiments.parallel train --slurm --steps 5"
            in result.stdout)
    assert "KERAS_BACKEND=jax" in result.stdout and "job 123: 2 nodes" in result.stdout


@pytest.mark.bad_input("not under Slurm")
def test_multi_node_job_refuses_to_run_outside_slurm(tmp_path):
    result = subprocess.run(["bash", str(SBATCH)], cwd=tmp_path, capture_output=True, text=True, check=False,
                            env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert result.returncode == 2
    assert "submit this script with sbatch" in result.stderr
    assert not (tmp_path / "results").exists()
