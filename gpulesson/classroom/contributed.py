"""Reference runs that instructors contribute from their clusters, ``results/contributed/SITE.jsonl``:
episode 5's CNN records; the reference page lists each site's newest run.
"""

import datetime
import os
import re
from pathlib import Path

from gpulesson.classroom.share import EXPERIMENT as CNN_EXPERIMENT
from gpulesson.classroom.share import record_problem
from gpulesson.records import results
from gpulesson.records.summaries import compare, summary_of, summary_text

EXPERIMENT = "contributed"  # results/contributed(.jsonl): the folder of the contributed runs
FOLDER = results.RESULTS_DIR / EXPERIMENT
SITE_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def validate_contributed(path: str | os.PathLike) -> list[dict]:
    """The reference run of the contributed file ``path``, else a :class:`results.ResultsFileError`."""
    path = Path(path)
    if path.suffix != ".jsonl" or not SITE_NAME.fullmatch(path.stem):
        raise results.ResultsFileError(f"{path}: name a contributed file SITE.jsonl, SITE in "
                                       "lower-case letters, digits and '-' (such as example-hpc.jsonl)")
    records = results.read_records(path)
    if not records:
        raise results.ResultsFileError(f"{path} holds no records")
    for number, record in enumerate(records, start=1):
        problem = record_problem(record)
        if not problem and not record.get("run_id"):
            problem = "it has no run_id (record it with python -m gpulesson.experiments.cnn)"
        if not problem and not record.get("cpu_model"):
            problem = "it does not say which CPU it ran on (cpu_model)"
        if not problem and results.is_gpu(record) and not (record.get("gpu") or {}).get("name"):
            problem = "its GPU record does not name the GPU (gpu.name)"
        if not problem:
            try:
                datetime.datetime.fromisoformat(record["date"])
            except (TypeError, ValueError):
                problem = f"its date {record['date']!r} is not an ISO 8601 date"
        if problem:
            raise results.ResultsFileError(f"{path}, record {number}: {problem}")
    run = results.reference_run(path, CNN_EXPERIMENT)
    if not (results.pick(run, False) and results.pick(run, True)):
        raise results.ResultsFileError(f"{path}: no run with both a CPU and a GPU record; record one "
                                       "on a GPU node with python -m gpulesson.experiments.cnn")
    return run


def contributed_runs(folder: str | os.PathLike = FOLDER) -> dict[str, list[dict]]:
    """``{site: its reference run}`` of every valid file in ``folder``, by site name."""
    folder = Path(folder)
    return {path.stem: validate_contributed(path) for path in sorted(folder.glob("*.jsonl"))}


def table(runs: dict[str, list[dict]]) -> str:
    """A Markdown table of the contributed runs: site, date, data, hardware, epoch times."""
    rows = ["| site | date | data | CPU | GPU | CPU epoch | GPU epoch | GPU against CPU |",
            "|---|---|---|---|---|---|---|---|"]
    for site, run in runs.items():
        cpu, gpu = results.pick(run, False), results.pick(run, True)
        cpu_epochs, gpu_epochs = (summary_of(r, warmup_key=None) for r in (cpu, gpu))
        rows.append(
            f"| {site} | {gpu['date'][:10]} | {results.data_label(run)}, {gpu['n_train']:,} images | "
            f"{cpu['cpu_model']}, {cpu.get('cores_usable', '?')} cores | {gpu['gpu']['name']} | "
            f"{summary_text(cpu_epochs, results.duration, what='epochs')} | "
            f"{summary_text(gpu_epochs, results.duration, what='epochs')} | "
            f"{compare(gpu_epochs, cpu_epochs).sentence} |")
    return "\n".join(rows)


def substitutions(path=None) -> dict[str, str]:
    """``ref_contributed``: the table of the contributed runs, or :data:`results.NOT_RECORDED`."""
    folder = FOLDER if path is None else Path(path).with_suffix("")
    runs = contributed_runs(folder) if folder.is_dir() else {}
    return {"ref_contributed": table(runs) if runs else results.NOT_RECORDED}
