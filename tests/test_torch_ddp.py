"""PyTorch's DistributedDataParallel on the CPU (gloo): launch, sampler, checkpoints, resume.

Several processes on 127.0.0.1 are started twice over: by ``torchrun`` itself, and by hand with
the variables torchrun sets (so that the test knows each process and can kill one). Every
subprocess has a timeout. Tolerance: two processes and one process on the same global batch
add the same numbers in another order (the mean of two half-batch means against one mean), so
their float32 weights agree to ``ATOL`` after a few steps, not bit for bit; a lost or repeated
step moves them by far more.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from conftest import ROOT
from localhost import free_port

from gpulesson.experiments.torch_ddp import command
from gpulesson.experiments.torch_ddp.command import CHECKPOINT, load_checkpoint, save_atomically
from gpulesson.experiments.torch_ddp.training import make_sampler

ATOL = 1e-5  # as in tests/test_parallel.py
TIMEOUT = 300
EPOCHS = 3
# 64 images, 16 per global batch: 4 steps per epoch; no dropout, so that the runs can agree.
TRAIN = ["--epochs", str(EPOCHS), "--n-train", "64", "--learning-rate", "0.05",
         "--base-batch", "16", "--no-dropout"]
MODULE = [sys.executable, "-m", "gpulesson.experiments.torch_ddp"]


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_"))}
    return {**env, "OMP_NUM_THREADS": "1", **extra}


def run(args, **env):
    result = subprocess.run(args, cwd=ROOT, env=_env(**env), capture_output=True, text=True,
                            timeout=TIMEOUT, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def rank_fingerprints(log: str) -> dict[str, str]:
    """{rank: weights fingerprint} from the ranks' "rank N: weights H" lines (12 hex digits,
    as state_fingerprint gives: text run together on a shared output cannot pass as one)."""
    return dict(re.findall(r"rank (\d+): weights ([0-9a-f]{12})", log))


def weights(folder):
    return torch.load(folder / "model.pt", map_location="cpu", weights_only=True)


def max_difference(a, b):
    assert a.keys() == b.keys() and a
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def start_ranks(out, world_size=2, **env):
    """``world_size`` processes with torchrun's variables, by hand: [Popen]."""
    port = str(free_port())
    return [subprocess.Popen(
        [*MODULE, *TRAIN, "--per-replica-batch", str(16 // world_size), "--out-dir", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=_env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size),
                 MASTER_ADDR="127.0.0.1", MASTER_PORT=port, **env))
        for rank in range(world_size)]


def finish(processes):
    outputs = []
    for process in processes:
        try:
            outputs.append(process.communicate(timeout=TIMEOUT)[0])
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
    return outputs


# --- which process am I ------------------------------------------------------------------------

def test_torchrun_variables_win_and_srun_variables_are_read():
    torchrun = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "node1",
                "MASTER_PORT": "29500", "SLURM_PROCID": "0", "SLURM_NTASKS": "1",
                "SLURM_STEP_ID": "0"}
    assert command.from_environment(torchrun) == command.Launch(3, 4, 1, "node1", 29500, "torchrun")
    srun = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_STEP_ID": "0",
            "SLURM_STEP_NODELIST": "gpu[07-08]", "SLURM_JOB_ID": "123"}
    got = command.from_environment(srun)
    assert (got.rank, got.world_size, got.local_rank, got.master_addr, got.launcher) == (
        5, 8, 1, "gpu07", "srun")
    assert got.master_port == command.PORT_BASE + 123
    assert command.from_environment({}).launcher == "single"
    assert command.first_host("cpu1,gpu[03-05]") == "cpu1"


def test_the_backend_follows_the_device():
    assert command.choose_backend(True) == "nccl" and command.choose_backend(False) == "gloo"


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("environ, message", [
    ({"RANK": "0", "WORLD_SIZE": "2"}, "MASTER_ADDR, MASTER_PORT not set: start the script with torchrun"),
    ({"RANK": "2", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, "rank 2 of 2"),
    ({"RANK": "x", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, "not a whole number"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0"}, "SLURM_JOB_NODELIST is not set"),
    ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "0", "SLURM_JOB_NODELIST": "n1"},
     "neither MASTER_PORT nor SLURM_JOB_ID"),
])
def test_a_launch_that_does_not_add_up_is_explained(environ, message):
    with pytest.raises(command.LaunchError, match=message):
        command.from_environment(environ)


# --- every sample once per epoch ----------------------------------------------------------------

def shares(n, world_size, epoch, drop_last=False):
    """The sample numbers each rank's sampler gives it in ``epoch``, in order."""
    samplers = [make_sampler(n, world_size, rank, seed=7, drop_last=drop_last)
                for rank in range(world_size)]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    return [list(sampler) for sampler in samplers]


@pytest.mark.parametrize("world_size", [1, 2, 4])
def test_the_ranks_read_every_sample_once_per_epoch(world_size):
    for epoch in range(3):
        parts = shares(64, world_size, epoch)
        assert {len(p) for p in parts} == {64 // world_size}
        assert sorted(i for p in parts for i in p) == list(range(64))


def test_set_epoch_gives_a_new_order_that_a_restart_repeats():
    first, second = shares(64, 2, 0), shares(64, 2, 1)
    assert first[0] != second[0] and sorted(first[0] + first[1]) == sorted(second[0] + second[1])
    assert shares(64, 2, 1) == second  # the same order after a restart at epoch 1
    # Without set_epoch, every epoch repeats the first one's order.
    sampler = make_sampler(64, 2, 0, seed=7)
    assert list(sampler) == list(sampler) == first[0]


def test_an_uneven_count_is_padded_or_dropped_as_asked():
    # 10 samples on 4 ranks: the sampler repeats 2 so that every rank has 3 ...
    parts = shares(10, 4, 0)
    seen = [i for p in parts for i in p]
    assert {len(p) for p in parts} == {3} and set(seen) == set(range(10)) and len(seen) == 12
    # ... or, with drop_last, leaves 2 out: every rank has 2, none is read twice.
    parts = shares(10, 4, 0, drop_last=True)
    seen = [i for p in parts for i in p]
    assert {len(p) for p in parts} == {2} and len(set(seen)) == len(seen) == 8


# --- checkpoints --------------------------------------------------------------------------------

@pytest.mark.bad_input("interrupted write")
def test_a_checkpoint_interrupted_while_written_leaves_the_last_one(tmp_path, monkeypatch):
    path = save_atomically({"epoch": 1}, tmp_path / CHECKPOINT)

    def half_then_fail(obj, f):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        save_atomically({"epoch": 2}, path)
    assert load_checkpoint(path) == {"epoch": 1}


@pytest.mark.bad_input("corrupt file")
def test_a_corrupt_checkpoint_is_named_with_what_to_do(tmp_path):
    (tmp_path / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"is not a readable checkpoint .* move it away"):
        load_checkpoint(tmp_path / CHECKPOINT)
    assert load_checkpoint(tmp_path / "none.pt") is None


# --- two processes train like one ---------------------------------------------------------------

@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    out = tmp_path_factory.mktemp("one")
    run([*MODULE, *TRAIN, "--per-replica-batch", "16", "--out-dir", str(out)])
    return out


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    out = tmp_path_factory.mktemp("two")
    result = run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                  "--nproc-per-node=2", "-m", "gpulesson.experiments.torch_ddp", *TRAIN,
                  "--per-replica-batch", "8", "--out-dir", str(out)])
    return out, result.stdout


def test_two_processes_under_torchrun_give_the_weights_of_one(one_process, two_processes):
    out, log = two_processes
    assert "2 process(es) (torchrun), backend gloo" in log and "global batch 16 = 2 x 8" in log
    assert "Each process reads 32 of the 64 samples per epoch." in log
    # DDP keeps the replicas identical ...
    # (The processes share one output, so their lines may interleave.)
    prints = rank_fingerprints(log)
    assert sorted(prints) == ["0", "1"] and len(set(prints.values())) == 1, log
    # ... and equal to one process on the whole global batch.
    assert max_difference(weights(out), weights(one_process)) < ATOL
    record = json.loads((out / "record.json").read_text())
    assert record["world_size"] == 2 and len(record["loss"]) == EPOCHS
    assert not (out / CHECKPOINT).exists()


def test_the_comparison_would_see_one_step_more(one_process, tmp_path):
    # The tolerance must be able to fail: one epoch more moves the weights by far more.
    run([*MODULE, *TRAIN[2:], "--epochs", str(EPOCHS + 1), "--per-replica-batch", "16",
         "--out-dir", str(tmp_path)])
    assert max_difference(weights(tmp_path), weights(one_process)) > 100 * ATOL


# --- a killed process, and the run resumed ------------------------------------------------------

def _completed_epochs(out):
    try:
        checkpoint = load_checkpoint(out / CHECKPOINT)
    except ValueError:
        return 0
    return checkpoint["epoch"] if checkpoint else 0


@pytest.mark.bad_input("killed job")
def test_a_killed_process_and_a_restart_lose_nothing(two_processes, tmp_path):
    out = tmp_path / "run"
    ranks = start_ranks(out, LESSON_BATCH_DELAY="0.3")
    deadline = time.monotonic() + TIMEOUT
    while _completed_epochs(out) < 1:
        assert time.monotonic() < deadline and ranks[0].poll() is None, "no first epoch"
        time.sleep(0.2)
    ranks[1].send_signal(signal.SIGKILL)
    logs = finish(ranks)
    assert ranks[1].returncode == -signal.SIGKILL and ranks[0].returncode != 0, logs[0]
    done = _completed_epochs(out)
    assert 1 <= done < EPOCHS and not (out / "record.json").exists(), logs[0]

    # The same command again: it goes on after the last completed epoch.
    restarted = start_ranks(out)
    logs = finish(restarted)
    assert [p.returncode for p in restarted] == [0, 0], logs
    assert f"Resuming after epoch {done} from" in logs[0]
    trained = [line for line in logs[0].splitlines() if line.startswith("epoch ")]
    assert len(trained) == EPOCHS - done and trained[0].startswith(f"epoch {done + 1}/"), logs[0]
    record = json.loads((out / "record.json").read_text())
    assert len(record["loss"]) == EPOCHS
    # The same weights as the run that was never interrupted (same processes, same order).
    assert max_difference(weights(out), weights(two_processes[0])) < ATOL


@pytest.mark.bad_input("bad argument")
def test_a_restart_with_other_arguments_is_refused(one_process):
    before = (one_process / "model.pt").read_bytes()
    result = subprocess.run([*MODULE, *TRAIN, "--per-replica-batch", "32", "--out-dir",
                             str(one_process)], cwd=ROOT, env=_env(), capture_output=True,
                            text=True, timeout=TIMEOUT, check=False)
    assert result.returncode == 2
    assert "Refusing to train" in result.stderr and "per_replica_batch 16 -> 32" in result.stderr
    assert (one_process / "model.pt").read_bytes() == before
    again = run([*MODULE, *TRAIN, "--per-replica-batch", "16", "--out-dir", str(one_process)])
    assert "is finished already" in again.stdout


@pytest.mark.bad_input("bad argument")
def test_half_a_launch_is_refused_with_what_to_do(tmp_path):
    result = subprocess.run([*MODULE, "--out-dir", str(tmp_path)], cwd=ROOT, timeout=TIMEOUT,
                            env=_env(RANK="0", WORLD_SIZE="2"), capture_output=True, text=True,
                            check=False)
    assert result.returncode == 2 and "start the script with torchrun" in result.stderr
    assert not any(tmp_path.iterdir())


def test_the_reference_run_checks_ddp_on_a_gpu_node_and_records_nothing():
    import reference
    import steps

    from gpulesson.experiments.torch_ddp.command import COMMAND

    step = steps.DDP_CHECK
    assert step in reference.STAGES["core"].steps and step.gpu_only and not step.resumable
    argv = steps.command(step, "run-1", gpu=True, python="py")
    assert argv[:4] == ["py", "-m", "torch.distributed.run", "--standalone"]
    assert "--run-id" not in argv and "--nproc-per-node=gpu" in argv
    args = COMMAND.parser().parse_args(argv[argv.index("gpulesson.experiments.torch_ddp") + 1:])
    assert args.device == "gpu" and not str(args.out_dir).startswith("results")


@pytest.mark.bad_input("no GPU")
@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible here")
def test_asking_for_a_gpu_without_one_says_what_to_do(tmp_path):
    result = subprocess.run([*MODULE, "--device", "gpu", "--out-dir", str(tmp_path)], cwd=ROOT,
                            env=_env(), capture_output=True, text=True, timeout=TIMEOUT,
                            check=False)
    assert result.returncode == 2 and "use --device cpu, or run on a GPU node" in result.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.bad_input("missing file")
def test_missing_mnist_is_named_with_what_to_do(tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    result = subprocess.run([*MODULE, "--data", "mnist", "--out-dir", str(tmp_path / "run")],
                            cwd=ROOT, timeout=TIMEOUT, capture_output=True, text=True, check=False,
                            env=_env(LESSON_DATA_DIR=str(data_dir)))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "No usable data: MNIST could not be loaded" in result.stdout
    assert "python -m gpulesson.datasets.mnist" in result.stdout
    assert not (tmp_path / "run" / CHECKPOINT).exists()
