"""A reference for each device: the newest run whose part on that device is complete.

A run may record one device and not the other (a GPU node's lease records the GPU's rows; the
CPU's complete rows are in an older run), or stop before its sweep ends. A page that took the
newest run whole would then lose what an older run measured completely, or show a comparison
cut in half. So each experiment says when a device's part of a run is complete (its own
``complete(part)``), and the reference for a device is the newest run whose part on it is:
a partial part never replaces a complete one. The records keep their ``run_id``, so the page
names the run, the machine and the backend of each device's numbers (:func:`part_runs`).

Imports no deep-learning framework.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from gpulesson.records import results

DEVICES = ("cpu", "gpu")


def device_part(run: list[dict], device: str) -> list[dict]:
    """The records of ``run`` measured on ``device`` ("cpu" or "gpu")."""
    return [r for r in run if r.get("device_kind") == device]


def newest_complete(grouped: dict[str, list[dict]], device: str,
                    complete: Callable[[list[dict]], bool]) -> list[dict]:
    """The part on ``device`` of the newest run (``grouped``: runs in file order) for which
    ``complete(part)`` holds; [] when no run has one."""
    for run in reversed(list(grouped.values())):
        part = device_part(run, device)
        if part and complete(part):
            return part
    return []


def reference_parts(path: str | os.PathLike, experiment: str,
                    complete: Callable[[list[dict]], bool], *, keep=None) -> list[dict]:
    """The reference records of ``experiment`` in the results file ``path``: for each device,
    CPU first, the part of the newest run that is complete on it (:func:`newest_complete`),
    the records ``keep(record)`` accepts (default all). [] without a file or a complete part."""
    path = Path(path).expanduser()
    if not path.is_file():
        return []
    records = [r for r in results.read_records(path) if keep is None or keep(r)]
    grouped = results.runs(records, experiment)
    return [r for device in DEVICES for r in newest_complete(grouped, device, complete)]


def part_runs(records) -> dict[str, str]:
    """``{device: run id}`` of each device's part of ``records``, CPU first (the first run
    seen on a device when it has several)."""
    found: dict[str, str] = {}
    for device in DEVICES:
        run = next((r["run_id"] for r in records if r.get("device_kind") == device), None)
        if run:
            found[device] = run
    return found


def run_labels(records) -> list[str]:
    """``"CPU: run ID, software"`` for each device's part of ``records``, CPU first."""
    return [f"{device.upper()}: run {run_id}, "
            f"{results.software([r for r in records if r['run_id'] == run_id])}"
            for device, run_id in part_runs(records).items()]


def host(record: dict) -> str:
    """The CPU a record's process ran on, as the record names it: "AMD EPYC, 2 cores"; a GPU
    record names the host of its GPU the same way."""
    return f"{record.get('cpu_model') or 'a CPU not named in the record'}, " \
           f"{record.get('cores_usable', '?')} cores"


def machine(part: list[dict]) -> str:
    """The machine of one device's part, in words: "AMD EPYC, 2 cores" on the CPU; "NVIDIA
    H200 beside Intel(R) Xeon(R) Processor, 16 cores" on the GPU."""
    first = part[0]
    if first.get("device_kind") == "gpu":
        return f"{first.get('device', 'a GPU')} beside {host(first)}"
    return host(first)


def provenance(records, *, file: str, extra=None) -> str:
    """Which run each device's numbers come from, as one sentence: its device, machine,
    software, run id and date, and the results file. ``extra(part)`` adds text to a device's
    clause (e.g. the load average before it)."""
    said = []
    for device, run_id in part_runs(records).items():
        part = [r for r in records if r.get("run_id") == run_id and r.get("device_kind") == device]
        more = extra(part) if extra else ""
        said.append(f"{device.upper()}: {machine(part)}; {results.software(part)}{more}; "
                    f"run {run_id} ({part[0]['date'][:10]})")
    return f"{'. '.join(said)}; `{file}`." if said else ""
