"""A reference for each device: the newest run whose part on that device is complete (each
experiment's ``complete(part)``), so that a run cut short or measuring one device never hides
what an older run measured completely. Imports no deep-learning framework.
"""

import os
from collections.abc import Callable
from pathlib import Path

from gpulesson.records import results

DEVICES = ("cpu", "gpu")


def newest_complete(grouped: dict[str, list[dict]], device: str,
                    complete: Callable[[list[dict]], bool]) -> list[dict]:
    """The part on ``device`` of the newest of the ``grouped`` runs that ``complete`` accepts."""
    for run in reversed(list(grouped.values())):
        part = [r for r in run if r.get("device_kind") == device]
        if part and complete(part):
            return part
    return []


def reference_parts(path: str | os.PathLike, experiment: str,
                    complete: Callable[[list[dict]], bool], *, keep=None) -> list[dict]:
    """Each device's :func:`newest_complete` part, CPU first, of the records ``keep`` accepts."""
    path = Path(path).expanduser()
    if not path.is_file():
        return []
    records = [r for r in results.read_records(path) if keep is None or keep(r)]
    grouped = results.runs(records, experiment)
    return [r for device in DEVICES for r in newest_complete(grouped, device, complete)]


def part_runs(records) -> dict[str, str]:
    """``{device: run id}`` of each device's part of ``records`` (its first run), CPU first."""
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


def run_table(records, rows, line: str, what: str) -> str:
    """A command's table of a run: :func:`run_labels`, then ``line`` filled with each of ``rows``."""
    if not records:
        return f"No {what} records."
    return "\n".join([*run_labels(records), *(line.format(*row) for row in rows)])


def machine(part: list[dict]) -> str:
    """One device's machine: "AMD EPYC, 2 cores"; "NVIDIA H200 beside AMD EPYC, 16 cores"."""
    first = part[0]
    host = results.hardware([{**first, "device_kind": "cpu"}])["CPU"]
    if first.get("device_kind") == "gpu":
        return f"{first.get('device', 'a GPU')} beside {host}"
    return host


def provenance(records, *, file: str, extra=None) -> str:
    """One sentence: each device's machine, software, run and date (``extra(part)`` added),
    and the results ``file``."""
    said = []
    for device, run_id in part_runs(records).items():
        part = [r for r in records if r.get("run_id") == run_id and r.get("device_kind") == device]
        more = extra(part) if extra else ""
        said.append(f"{device.upper()}: {machine(part)}; {results.software(part)}{more}; "
                    f"run {run_id} ({part[0]['date'][:10]})")
    return f"{'. '.join(said)}; `{file}`." if said else ""
