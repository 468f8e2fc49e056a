"""The job part's checklist on a GPU node, kept as a record for the instructor's guide.

``python -m gpulesson.check --inside-job --record results/check-gpu.jsonl`` appends the compute
node's items as one record (:func:`check_record`): the GPUs as ``nvidia-smi`` names them, its
driver, the date, the CPU, the Keras backend and the versions (what
:func:`gpulesson.results.make_record` adds, the GPU's facts with them), and the items, with the
home folder written ``~`` (the file is public; no host name). The lesson's budgeted GPU run
(``tools/budget.py``) runs it on its GPU node, so the record comes back with ``results/``.

As a source of page values (``RESULT_SOURCES`` in ``_ext/carpentry.py``), :func:`substitutions`
gives the guide the newest record made beside a GPU: ``ref_check_gpu`` (the items as the check
prints them) and ``ref_check_gpu_title`` (the GPU, its driver, the date and the versions), or
:data:`~gpulesson.results.NOT_RECORDED` for both until a GPU node has run it.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from gpulesson.check.report import Item, all_passed, items_from_json, text
from gpulesson.results import (
    NOT_RECORDED,
    RESULTS_DIR,
    append_record,
    is_gpu,
    make_record,
    read_records,
    software,
)

EXPERIMENT = "check-gpu"  # results/check-gpu.jsonl
RESULTS_FILE = RESULTS_DIR / f"{EXPERIMENT}.jsonl"


def _public(value: str, home: str) -> str:
    return value.replace(home, "~") if home and home != "/" else value


def check_record(items: list[Item], settings, gpus: list[str], driver: str | None,
                 environment: dict | None = None) -> dict:
    """The record of a compute node's checklist: ``gpus`` and ``driver`` as ``nvidia-smi``
    reported them (``[]`` and None without a GPU); ``environment``: as for ``make_record``
    (default: asked of this machine, Keras and the GPU included)."""
    home = str(Path.home())
    public = [{key: _public(value, home) if isinstance(value, str) else value
               for key, value in asdict(item).items()} for item in items]
    return make_record(EXPERIMENT, data=settings.data, environment=environment,
                       device_kind="gpu" if gpus else "cpu", quick=settings.quick,
                       nvidia_smi={"gpus": gpus, "driver": driver}, passed=all_passed(items),
                       items=public)


def append_check(path, items: list[Item], settings) -> Path:
    """Append this node's checklist ``items`` to the results file ``path``."""
    from gpulesson.check.job import nvidia_smi

    _, driver, gpus = nvidia_smi("job")
    return append_record(path, check_record(items, settings, gpus, driver))


def title(record: dict) -> str:
    """'1 × NVIDIA H100 80GB HBM3, driver 550.54.15, on 2026-12-01 (Keras 3.15.1, jax 0.6.2)'."""
    gpus = record["nvidia_smi"]["gpus"]
    return (f"{len(gpus)} × {gpus[0]}, driver {record['nvidia_smi']['driver']}, on "
            f"{record['date'][:10]} ({software(record)})")


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """``ref_check_gpu`` and ``ref_check_gpu_title`` of the newest record with a GPU."""
    path = Path(path)
    records = [r for r in read_records(path, experiment=EXPERIMENT) if is_gpu(r)] \
        if path.is_file() else []
    if not records:
        return {"ref_check_gpu": NOT_RECORDED, "ref_check_gpu_title": NOT_RECORDED}
    newest = records[-1]
    return {"ref_check_gpu": text(items_from_json(newest)), "ref_check_gpu_title": title(newest)}
