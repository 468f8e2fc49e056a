"""Which process this is, and where the processes meet, from the launcher's variables (pure
Python, so that the job script's logic can be tested anywhere).

``torchrun`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``;
``srun`` sets ``SLURM_PROCID``, ``SLURM_NTASKS``, ``SLURM_LOCALID``, and the processes meet on
the step's first node, on a port derived from the job id (which a requeued job keeps).
torchrun's variables win (torchrun started inside an ``srun`` step).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

PORT_BASE, PORT_SPAN = 20000, 20000  # a job-id-derived port, away from the ephemeral range


class LaunchError(RuntimeError):
    """The variables do not describe a launch; the message says how to start the script."""


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
        nodes = (env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
                 or env.get("SLURM_NODELIST"))
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
    """``"nccl"`` where the processes have GPUs (NVIDIA's library, GPU to GPU), else ``"gloo"``."""
    return "nccl" if cuda_available else "gloo"
