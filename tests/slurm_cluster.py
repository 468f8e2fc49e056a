"""A real one-node Slurm on this machine, for the tests of the batch jobs and the OOD app.

The session fixture ``slurm`` writes a ``slurm.conf`` for this host into a temporary folder,
starts ``munged``, ``slurmctld`` and ``slurmd`` (Debian's packages; ``tools/ensure_slurm.sh``
installs them), waits until the node is idle, and at the end cancels the jobs left and stops
exactly the daemons it started. It needs root (slurmd starts jobs as their user); elsewhere
the tests that use it skip, saying how to enable them.

The node claims more than this machine has, so that the lesson's scripts run unchanged with
their own requests (4 cores, 24 GB and a GPU per job): 8 CPUs, 128 GB and 4 GPUs of the site
config's example type. The GPUs are stand-ins: device files that Slurm counts and hands out
(``CUDA_VISIBLE_DEVICES`` is set) but that no framework can use; the jobs train on the CPU.
The partitions are the site config's GPU and CPU partitions (``_config.yml``, ``lesson_site``).

Imported by ``tests/conftest.py``, which makes the fixture available to every test.
"""

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "squeue", "sinfo", "srun")
HOW_TO_ENABLE = ("run the tests as root on a machine with Debian's Slurm and munge "
                 "(tools/ensure_slurm.sh installs them: apt-get install slurmctld slurmd "
                 "slurm-client munge ruby)")
NODE_CPUS, NODE_MEMORY_MB, NODE_GPUS = 8, 131072, 4
START_TIMEOUT = 60


def site_config() -> dict:
    """The ``lesson_site`` section of ``_config.yml``: the one place for site values."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_site"]


def _program(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")


def missing_reason() -> str | None:
    """Why a local Slurm cannot start here, or None."""
    if os.geteuid() != 0:
        return f"the Slurm tests need root: {HOW_TO_ENABLE}"
    missing = [name for name in PROGRAMS if _program(name) is None]
    if missing:
        return f"no {', '.join(missing)} here: {HOW_TO_ENABLE}"
    return None


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _gpu_type() -> str:
    return str(site_config()["gpu_type_example"])


def slurm_conf(folder: Path, node: str, ports: list[int]) -> str:
    """A slurm.conf for one node, everything (state, spool, logs, pids) under ``folder``."""
    site = site_config()
    partitions = dict.fromkeys([site["gpu_partition"], site["cpu_partition"]])
    lines = [
        "ClusterName=lesson",
        f"SlurmctldHost={node}(127.0.0.1)",
        f"SlurmctldPort={ports[0]}",
        f"SlurmdPort={ports[1]}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder}/munge.socket",
        f"StateSaveLocation={folder}/state",
        f"SlurmdSpoolDir={folder}/spool",
        f"SlurmctldPidFile={folder}/slurmctld.pid",
        f"SlurmdPidFile={folder}/slurmd.pid",
        f"SlurmctldLogFile={folder}/log/slurmctld.log",
        f"SlurmdLogFile={folder}/log/slurmd.log",
        # No cgroups in a container: plain process tracking, no task binding, no accounting.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "PropagateResourceLimits=NONE",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        "ReturnToService=2",
        # Finished jobs stay visible to scontrol for the tests' checks.
        "MinJobAge=900",
        "KillWait=10",
        # The node may claim more than the machine has (see the module's docstring).
        "SlurmdParameters=config_overrides",
        "GresTypes=gpu",
        f"NodeName={node} NodeAddr=127.0.0.1 CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} "
        f"Gres=gpu:{_gpu_type()}:{NODE_GPUS} State=UNKNOWN",
    ]
    for index, name in enumerate(partitions):
        default = "YES" if index == 0 else "NO"
        lines.append(f"PartitionName={name} Nodes={node} Default={default} MaxTime=12:00:00 "
                     "State=UP")
    return "\n".join(lines) + "\n"


def _stand_in_gpus(folder: Path) -> list[Path]:
    """Device files for the stand-in GPUs (character devices like /dev/null where allowed)."""
    devices = []
    for index in range(NODE_GPUS):
        path = folder / f"gpu{index}"
        try:
            os.mknod(path, 0o666 | 0o020000, os.makedev(1, 3))
        except OSError:
            path.touch()  # slurmd logs a complaint, but still counts it
        devices.append(path)
    return devices


@dataclass
class Cluster:
    """A running one-node Slurm: its folder, its configuration and the commands' environment."""

    folder: Path
    env: dict
    daemons: dict = field(default_factory=dict)

    @property
    def logs(self) -> Path:
        return self.folder / "log"

    def run(self, *command, check=True, timeout=60, **kwargs) -> subprocess.CompletedProcess:
        """A Slurm command against this cluster."""
        kwargs.setdefault("env", self.env)
        result = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout,
                                check=False, **kwargs)
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(map(str, command))} failed ({result.returncode}):\n"
                                 f"{result.stdout}{result.stderr}\n{self.daemon_logs()}")
        return result

    def sbatch(self, *args, cwd: Path, env: dict | None = None) -> str:
        """Submit with sbatch; returns the job id."""
        result = self.run("sbatch", "--parsable", *args, cwd=cwd, env=env or self.env)
        return result.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> list[dict]:
        """``scontrol show job`` as one dict per job (an array job has one per task)."""
        result = self.run("scontrol", "show", "job", "--oneliner", str(job_id), check=False)
        if result.returncode != 0:
            return []
        jobs = []
        for line in result.stdout.splitlines():
            fields = {}
            for item in line.split():
                key, _, value = item.partition("=")
                fields[key] = value
            jobs.append(fields)
        return jobs

    def wait(self, job_id: str, until=("COMPLETED",), timeout=300, explain=None) -> list[dict]:
        """Wait (bounded) until every job of ``job_id`` is in a final state; fail if not ``until``."""
        final = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL",
                 "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
        deadline = time.monotonic() + timeout
        while True:
            jobs = self.job(job_id)
            states = [j.get("JobState") for j in jobs]
            if jobs and all(state in final for state in states):
                break
            if time.monotonic() > deadline:
                self.run("scancel", str(job_id), check=False)
                raise AssertionError(f"job {job_id} not finished after {timeout} s (states "
                                     f"{states}):\n{self.explain(job_id, explain)}")
            time.sleep(1)
        if any(state not in until for state in states):
            raise AssertionError(f"job {job_id} ended {states}, not {list(until)}:\n"
                                 f"{self.explain(job_id, explain)}")
        return jobs

    def release_requeued(self, job_id: str, timeout=300) -> None:
        """Let a requeued job start now instead of after Slurm's hold, as a cluster does once
        the hold is over: after the node has ended the old batch step, and in a later second.

        slurmd compares credentials in whole seconds: a job started in the same second as its
        old run ended is refused ("Job credential revoked") and fails."""
        log, ended = self.logs / "slurmd.log", f"[{job_id}.batch] done with job"
        _wait_for(lambda: ended in log.read_text(errors="replace"),
                  f"end of job {job_id}'s first run", self, timeout)
        time.sleep(2 - time.time() % 1)  # into the second after the next one
        self.run("scontrol", "update", f"JobId={job_id}", "StartTime=now")

    def daemon_logs(self, lines=40) -> str:
        parts = []
        for log in sorted(self.logs.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {log.name} (last {lines} lines)\n" + "\n".join(tail))
        return "\n".join(parts)

    def explain(self, job_id: str, outputs=None) -> str:
        """The job's record, its output files and the daemons' logs, for a failure message."""
        parts = [f"--- scontrol show job {job_id}"]
        parts += [" ".join(f"{k}={v}" for k, v in j.items()) for j in self.job(job_id)]
        for path in outputs or []:
            for found in sorted(Path(path).parent.glob(Path(path).name)):
                parts.append(f"--- {found}\n{found.read_text(errors='replace')[-6000:]}")
        parts.append(self.daemon_logs())
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel the jobs left, then stop the daemons this fixture started, by their pid."""
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].poll() is None:
            self.run("scancel", "--full", "--user", "root", check=False)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                left = self.run("squeue", "--noheader", check=False).stdout.strip()
                if not left:
                    break
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.daemons.get(name)
            if process is None or process.poll() is not None:
                continue
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def start_cluster(folder: Path) -> Cluster:
    """Write the configuration, start the three daemons and wait until the node is idle."""
    node = socket.gethostname().split(".")[0]
    for sub in ("state", "spool", "log"):
        (folder / sub).mkdir(parents=True)
    key = folder / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = folder / "slurm.conf"
    conf.write_text(slurm_conf(folder, node, _free_ports(2)))
    devices = _stand_in_gpus(folder)
    (folder / "gres.conf").write_text(
        f"NodeName={node} Name=gpu Type={_gpu_type()} File={devices[0].parent}/gpu[0-{NODE_GPUS - 1}]\n")
    env = dict(os.environ, SLURM_CONF=str(conf))
    cluster = Cluster(folder, env)
    logs = {name: open(folder / "log" / f"{name}.out", "w") for name in ("munged", "slurmctld", "slurmd")}
    commands = {
        # -F, -D: in the foreground, so that each is this process' child and stopped by its pid.
        "munged": [_program("munged"), "--foreground", "--force", f"--key-file={key}",
                   f"--socket={folder}/munge.socket", f"--pid-file={folder}/munged.pid",
                   f"--log-file={folder}/log/munged.log", f"--seed-file={folder}/munged.seed"],
        "slurmctld": [_program("slurmctld"), "-D", "-i", "-f", str(conf)],
        "slurmd": [_program("slurmd"), "-D", "-f", str(conf), "-N", node],
    }
    try:
        for name, command in commands.items():
            cluster.daemons[name] = subprocess.Popen(command, env=env, stdout=logs[name],
                                                     stderr=subprocess.STDOUT)
            if name == "munged":
                _wait_for(lambda: (folder / "munge.socket").exists(), "munged's socket", cluster)
        _wait_for(lambda: cluster.run("sinfo", "--noheader", "--Node", "--format=%T",
                                      check=False).stdout.split()[:1] == ["idle"],
                  "the node to be idle", cluster)
    except BaseException:
        cluster.stop()
        raise
    finally:
        for log in logs.values():
            log.close()
    return cluster


def _wait_for(ready, what: str, cluster: Cluster, timeout=START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        for name, process in cluster.daemons.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} stopped ({process.returncode}) while waiting for "
                                   f"{what}:\n{cluster.daemon_logs()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {what} after {timeout} s:\n{cluster.daemon_logs()}")
        time.sleep(0.2)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A running one-node Slurm (see the module's docstring); skips where it cannot start."""
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        yield cluster
    finally:
        cluster.stop()
