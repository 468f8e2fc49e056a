"""One process of a DDP training: which one, from the launcher's variables (torchrun's win over
srun's, whose processes meet on the step's first node), and its training. Rank 0 owns the out
folder: ``params.json``, ``checkpoint.pt`` (until the run has finished), ``model.pt`` and
``record.json`` (last), on a file system that every node sees.
"""

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from gpulesson.errors import LessonDataError
from gpulesson.experiments import cli, train_job

EXPERIMENT = "torch-ddp"
MODEL, CHECKPOINT = "model.pt", "checkpoint.pt"
PORT_BASE, PORT_SPAN = 20000, 20000  # a job-id-derived port, away from the ephemeral range

COMMAND = cli.Command(
    "torch_ddp", "Train the PyTorch episode's CNN with DistributedDataParallel: one process per "
    "GPU, started by torchrun or srun (or alone).",
    cli.option("--epochs", type=cli.positive_int, default=3,
               help="epochs in all, resumed ones included (default 3)"),
    train_job.per_replica_batch("process"), train_job.LEARNING_RATE, train_job.BASE_BATCH,
    cli.option("--n-train", type=cli.positive_int, default=2048, help="training images (default 2048)"),
    cli.option("--data", choices=("synthetic", "mnist"), default="synthetic",
               help="the MNIST-shaped stand-in made in memory, or MNIST (default synthetic)"),
    cli.option("--seed", type=int, default=0, help="seed of the weights and the order"),
    cli.option("--no-dropout", action="store_true", help="leave dropout out (then any number of processes "
               "gives the same weights as one process on the same global batch)"),
    cli.option("--drop-last", action="store_true", help="leave out the last samples that do not fill a "
               "share for every process (default: repeat a few, as DistributedSampler does)"),
    train_job.job_device("the GPU of this process' local rank if there is one (default)"),
    cli.option("--out-dir", type=Path, default=None,
               help="folder of this run (default results/jobs/torch-ddp-<job id>/)"),
    epilog=train_job.RESUME)


class LaunchError(RuntimeError):
    """The variables describe no launch; the message says how to start the script."""


@dataclass(frozen=True)
class Launch:
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int
    launcher: str  # "torchrun", "srun" or "single"

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def first_host(nodelist: str) -> str:
    """The first host of a Slurm host list: ``gpu[03-05,07],cpu1`` -> ``gpu03``."""
    match = re.match(r"\s*([^,\[\s]+)(?:\[([^\]]+)\])?", nodelist or "")
    if not match:
        raise LaunchError(f"cannot read a host from the node list {nodelist!r}")
    prefix, ranges = match.groups()
    return prefix + ranges.split(",")[0].split("-")[0] if ranges else prefix


def _int(environ, name: str) -> int:
    try:
        return int(environ[name])
    except ValueError:
        raise LaunchError(f"{name}={environ[name]!r} is not a whole number") from None


def from_environment(environ=None) -> Launch:
    """The launch this process is part of (:class:`Launch`); one process when no launcher."""
    env = os.environ if environ is None else environ
    if "RANK" in env or "WORLD_SIZE" in env:
        missing = [n for n in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if n not in env]
        if missing:
            raise LaunchError(f"{', '.join(missing)} not set: start the script with torchrun, "
                              "or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT together")
        launch = Launch(_int(env, "RANK"), _int(env, "WORLD_SIZE"),
                        _int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else _int(env, "RANK"),
                        env["MASTER_ADDR"], _int(env, "MASTER_PORT"), "torchrun")
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env and "SLURM_STEP_ID" in env:
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
        if not env.get("MASTER_ADDR") and not nodes:
            raise LaunchError("SLURM_JOB_NODELIST is not set: run the script with srun inside "
                              "a Slurm job, or set MASTER_ADDR")
        if not env.get("MASTER_PORT") and not env.get("SLURM_JOB_ID"):
            raise LaunchError("neither MASTER_PORT nor SLURM_JOB_ID is set: run the script "
                              "with srun inside a Slurm job, or set MASTER_PORT")
        port = (_int(env, "MASTER_PORT") if env.get("MASTER_PORT")
                else PORT_BASE + _int(env, "SLURM_JOB_ID") % PORT_SPAN)
        launch = Launch(_int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS"),
                        _int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0,
                        env.get("MASTER_ADDR") or first_host(nodes), port, "srun")
    else:
        return Launch(0, 1, 0, "127.0.0.1", 0, "single")
    if launch.world_size < 1 or not 0 <= launch.rank < launch.world_size:
        raise LaunchError(f"rank {launch.rank} of {launch.world_size} processes: the rank must "
                          "be at least 0 and below the number of processes")
    return launch


def choose_backend(cuda_available: bool) -> str:
    """NCCL (NVIDIA's library, GPU to GPU) where the processes have GPUs, else gloo."""
    return "nccl" if cuda_available else "gloo"


def save_atomically(obj, path) -> Path:
    """``torch.save(obj)`` whole or not at all (:func:`..train_job.replace_atomically`)."""
    import torch

    return train_job.replace_atomically(Path(path), lambda f: torch.save(obj, f))


def load_checkpoint(path):
    """The checkpoint at ``path``, or None if there is none; ValueError if it is unreadable."""
    import torch

    path = Path(path)
    if not path.exists():
        return None
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a file that is not a checkpoint, whatever torch says about it
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"{path} is not a readable checkpoint ({type(exc).__name__}: {first_line}); "
                         "move it away to start the run again from epoch 1, or restore the file") from None


def main(argv=None) -> int:
    args = COMMAND.parser().parse_args(argv)
    try:
        launch = from_environment()
    except LaunchError as exc:
        print(f"Cannot tell which process this is: {exc}", file=sys.stderr)
        return 2
    import torch.distributed as dist

    from gpulesson.experiments.parallel.training import global_batch_size, scaled_learning_rate
    from gpulesson.experiments.torch_ddp import training

    try:
        device = training.pick_device(launch.local_rank, args.device)
    except RuntimeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    backend = choose_backend(device.type == "cuda")
    batch = global_batch_size(args.per_replica_batch, launch.world_size)
    rate = scaled_learning_rate(args.learning_rate, batch, args.base_batch)
    params = {"epochs": args.epochs, "per_replica_batch": args.per_replica_batch,
              "world_size": launch.world_size, "global_batch": batch, "learning_rate": rate,
              "n_train": args.n_train, "data": args.data, "seed": args.seed,
              "dropout": not args.no_dropout, "drop_last": args.drop_last}
    out = (args.out_dir or train_job.JOBS_DIR / f"{EXPERIMENT}-{train_job.job_id()}").expanduser().resolve()

    if launch.launcher != "single":
        # torchrun and srun (one process too: DDP and NCCL still run) meet at MASTER_ADDR:MASTER_PORT.
        os.environ.setdefault("MASTER_ADDR", launch.master_addr)
        os.environ.setdefault("MASTER_PORT", str(launch.master_port))
        dist.init_process_group(backend, init_method="env://", rank=launch.rank,
                                world_size=launch.world_size)
    train_job.stop_on_signals()
    try:
        code = None  # rank 0 decides, and says why where there is nothing to train
        if launch.is_main and (code := train_job.refused_or_finished(out, params)) is None:
            train_job.start_run(out, params)
        if dist.is_initialized():
            box = [code]
            dist.broadcast_object_list(box, src=0)
            code = box[0]
        return _train(args, params, launch, device, backend, out) if code is None else code
    except train_job.Stopped as stop:
        if not launch.is_main:
            return 128 + stop.signum
        checkpoint = load_checkpoint(out / CHECKPOINT)
        done = checkpoint["epoch"] if checkpoint else 0
        return train_job.stopped(stop, f"{out / CHECKPOINT} holds {done} completed epoch(s)")
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def _train(args, params, launch, device, backend, out: Path) -> int:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from gpulesson.experiments.torch_ddp import training
    from gpulesson.lesson.torch import state_fingerprint

    def log(text):
        if launch.is_main:
            print(text, flush=True)

    try:
        checkpoint = load_checkpoint(out / CHECKPOINT)
    except ValueError as exc:
        log(str(exc))
        return 2
    try:
        dataset = training.load_dataset(args.data, args.n_train, args.seed)
    except (ValueError, LessonDataError) as exc:
        log(f"No usable data: {exc}")
        return 2
    sampler = training.make_sampler(len(dataset), launch.world_size, launch.rank,
                                    seed=args.seed, drop_last=args.drop_last)
    model = training.build_model(args.seed, dropout=not args.no_dropout).to(device)
    plain = model  # what DDP wraps below: the same weights
    optimizer = torch.optim.SGD(model.parameters(), lr=params["learning_rate"], momentum=0.9)
    history, first_epoch = [], 0
    if checkpoint:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        history, first_epoch = list(checkpoint["history"]), int(checkpoint["epoch"])
    if dist.is_initialized():
        # Copies rank 0's weights to every rank, and all-reduces the gradients from now on.
        model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)

    share = len(sampler)
    extra = share * launch.world_size - len(dataset)
    log(f"{launch.world_size} process(es) ({launch.launcher}), backend {backend}, device "
        f"{device.type}; global batch {params['global_batch']} = {launch.world_size} x "
        f"{args.per_replica_batch}, learning rate {params['learning_rate']:g}; files in {out}")
    log(f"Each process reads {share} of the {len(dataset)} samples per epoch"
        + (f" ({extra} repeated to even out the processes)" if extra > 0 else "")
        + (f" ({-extra} left out, --drop-last)" if extra < 0 else "") + ".")
    log(f"Resuming after epoch {first_epoch} from {out / CHECKPOINT}." if checkpoint
        else "No checkpoint: starting at epoch 1.")

    def on_epoch_end(epoch, loss):
        history.append(loss)
        if launch.is_main:
            save_atomically({"epoch": epoch + 1, "model": plain.state_dict(),
                             "optimizer": optimizer.state_dict(), "history": history}, out / CHECKPOINT)

    training.train_epochs(model, optimizer, dataset, sampler, per_replica_batch=args.per_replica_batch,
                          device=device, first_epoch=first_epoch, epochs=args.epochs,
                          on_epoch_end=on_epoch_end, log=log, batch_delay=train_job.batch_delay())
    # One write with its newline: print() writes the line and its end separately, and the
    # other process's lines can fall in between them on a shared, unbuffered output.
    print(f"rank {launch.rank}: weights {state_fingerprint(plain.state_dict())}\n", end="", flush=True)
    if not launch.is_main:
        return 0
    save_atomically(plain.state_dict(), out / MODEL)
    train_job.write_json(out / train_job.RECORD, {
        "experiment": EXPERIMENT, "run_id": json.loads((out / train_job.PARAMS).read_text())["run_id"],
        **params, "launcher": launch.launcher, "backend": backend, "device": device.type,
        "loss": history, "job_id": os.environ.get("SLURM_JOB_ID"),
        "restart_count": int(os.environ.get("SLURM_RESTART_COUNT") or 0)})
    (out / CHECKPOINT).unlink(missing_ok=True)
    print(f"Finished {len(history)} epochs: final loss {history[-1]:.4f}; weights in "
          f"{out / MODEL}.", flush=True)
    return 0
