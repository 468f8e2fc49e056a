"""The instructor guide's own words where they rest on the lesson's records and site values.

- the waits of the timing model: the prose under the table names no machine (a GPU, a number of
  cores) that the core's executed notebooks were not recorded on (their ``recorded_run``);
- the kernel on a cluster: registered from the conda environment with the setup page's command,
  with ``make kernel`` and ``make lab`` kept for a laptop;
- the readiness check by hand on a compute node asks Slurm for a GPU, with the site's values.
"""

import json
import re

from carpentry import fill_placeholders
from conftest import ROOT
from core_schedule import TABLE_END

GUIDE = ROOT / "guide.md"
CORE = ("01-introduction", "03-environments", "04-data-pipeline", "05-cpu-vs-gpu")


def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def recorded_machines() -> list[dict]:
    machines = []
    for slug in CORE:
        nb = json.loads((ROOT / "executed" / f"{slug}.ipynb").read_text(encoding="utf-8"))
        machines.append(nb["metadata"]["recorded_run"]["machine"])
    return machines


def test_the_waits_prose_names_only_the_machines_the_runs_were_recorded_on():
    text = guide()
    prose = text[text.index(TABLE_END) + len(TABLE_END):].split("\n###")[0]
    machines = recorded_machines()
    gpus = {m["gpu"] for m in machines if m.get("gpu")}
    cores = {m["cores_usable"] for m in machines}
    named_gpus = set(re.findall(r"NVIDIA [A-Z0-9][\w-]*", prose))
    assert named_gpus <= gpus, f"the guide names {named_gpus - gpus}; the records: {gpus or 'no GPU'}"
    named_cores = {int(n) for n in re.findall(r"(\d+)[- ](?:CPU )?cores?\b", prose)}
    assert named_cores <= cores, f"the guide names {named_cores} cores; the records: {cores}"
    assert "recorded_run" in prose  # where the table's machines come from


def test_on_a_cluster_the_kernel_is_registered_from_the_conda_environment():
    text = " ".join(guide().split())
    assert "register the kernel (`make kernel`)" not in text
    assert ("register the kernel from it with the setup page's command "
            "(`conda activate {{ site_conda_env }}`, then `python -m ipykernel install ...`") in text
    assert "`make kernel` and `make lab` are for a laptop" in text
    setup = " ".join((ROOT / "setup.md").read_text(encoding="utf-8").split())
    assert "python -m ipykernel install --user --name gpulesson" in setup


def test_the_check_by_hand_asks_slurm_for_a_gpu_node():
    filled = fill_placeholders(guide(), ROOT)
    by_hand = filled[filled.index("**By hand on a compute node.**"):]
    by_hand = by_hand[:by_hand.index("| Option |")]
    from carpentry import site_values

    site = {k.removeprefix("site_"): v for k, v in site_values(ROOT).items()}
    command = re.search(r"srun (.*?)--pty bash", by_hand, re.S)
    assert command, by_hand
    assert f"--partition={site['gpu_partition']}" in command[1]
    assert f"--gres={site['gres_example']}" in command[1]
    assert by_hand.index(f"conda activate {site['conda_env']}") < by_hand.index(
        "python -m gpulesson.classroom.check --inside-job")
