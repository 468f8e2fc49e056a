"""The lesson's measurement records: one JSON object a line in a results file that a run only
appends to (a diff shows what was measured); :func:`data_label` refuses to mix data sources.
"""

import datetime
import json
import math
import os
import platform
import secrets
from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.datasets.settings import NO_LABEL as NO_DATA_LABEL

# The lesson's folder and its results/, where every experiment keeps results/<EXPERIMENT>.jsonl.
LESSON_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = LESSON_ROOT / "results"

REQUIRED_KEYS = ("experiment", "device", "date", "backend")


class ResultsFileError(ValueError):
    """A results file or record is not valid; the message names the file and line."""


def _version(module: str) -> str | None:
    try:
        return __import__(module).__version__
    except ImportError:
        return None


def machine_record() -> dict:
    """When (ISO 8601, UTC) and on what CPU; imports no deep-learning framework."""
    from gpulesson.machine import devices

    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        **devices.cpu_info(),
    }


def environment_record() -> dict:
    """Where and when a measurement is made (no host name: the file is public)."""
    from gpulesson.machine import devices

    device = devices.keras_device()
    versions = {
        "python": platform.python_version(),
        "keras": _version("keras"),
        device["backend"]: device["backend_version"],
        "numpy": _version("numpy"),
        "h5py": _version("h5py"),
    }
    return {
        **machine_record(),
        "device": device["device"],
        "gpu_count": device["gpu_count"],
        "backend": device["backend"],
        "versions": versions,
    }


def make_record(experiment: str, *, data: str, environment: dict | None = None, **measurements) -> dict:
    """A complete record: the environment, the data source and its label, and ``measurements`` (which win)."""
    if data not in LABELS:
        raise ValueError(f"data must be one of {', '.join(LABELS)}, not {data!r}")
    record = {**(environment_record() if environment is None else environment),
              "experiment": experiment, "data": data, "data_label": LABELS[data], **measurements}
    if environment is None:  # measured here, through Keras: say on what hardware and precision
        record = {**device_facts(record), **record}
    return record


def ran_on_gpu(record: dict) -> bool:
    """Whether a record's measurement ran on a GPU: its ``device_kind``, else its ``device``."""
    if "device_kind" in record:
        return record["device_kind"] == "gpu"
    return bool(record.get("gpu_count")) and str(record.get("device", "CPU")).upper() != "CPU"


def device_facts(record: dict) -> dict:
    """``float32_precision``, and for a GPU ``gpu``: TF32 alone can change a float32 rate severalfold."""
    from gpulesson.machine import devices

    if not ran_on_gpu(record):
        return {"float32_precision": devices.float32_precision()}
    backend = {"pytorch": "torch"}.get(record.get("backend"), record.get("backend"))
    gpu = devices.gpu_facts(backend)
    return {"gpu": gpu, "float32_precision": devices.float32_precision(backend, gpu)}


def _to_json(value):
    """numpy scalars and arrays (e.g. from Keras histories) as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} cannot be stored in a results file")


def validate_record(record: dict) -> None:
    """:class:`ResultsFileError` unless ``record`` has the required keys and agreeing data labels."""
    if not isinstance(record, dict):
        raise ResultsFileError(f"a record must be a dict, not {type(record).__name__}")
    missing = [key for key in REQUIRED_KEYS if record.get(key) in (None, "")]
    if missing:
        raise ResultsFileError(
            f"record is missing {', '.join(missing)} (every record needs {', '.join(REQUIRED_KEYS)}; "
            "make_record() fills in all but 'experiment')"
        )
    data = record.get("data")
    if data is not None or "data_label" in record:
        if data not in LABELS:
            raise ResultsFileError(f"record has data={data!r}: use one of {', '.join(LABELS)}")
        if record.get("data_label") != LABELS[data]:
            raise ResultsFileError(
                f"record with data={data!r} must have data_label={LABELS[data]!r}, "
                f"not {record.get('data_label')!r}"
            )


def append_record(path: str | os.PathLike, record: dict) -> Path:
    """Append ``record`` as one fsynced line, so a crash leaves at most one incomplete last line."""
    validate_record(record)
    try:
        line = json.dumps(record, default=_to_json, allow_nan=False, ensure_ascii=False)
    except ValueError as exc:  # NaN or infinity: not valid JSON
        bad = [k for k, v in record.items() if isinstance(v, float) and not math.isfinite(v)]
        raise ResultsFileError(
            f"record has values that are not finite numbers ({', '.join(bad) or exc}): "
            "JSON cannot store NaN or infinity; store None instead"
        ) from exc
    path = Path(path).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        end = f.seek(0, os.SEEK_END)
        f.seek(max(end - 1, 0))
        # A previous write cut short (no final newline) must not swallow this record.
        prefix = b"\n" if end and f.read(1) != b"\n" else b""
        f.write(prefix + line.encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    return path


def read_records(path: str | os.PathLike, **filters) -> list[dict]:
    """The records of ``path`` equal to ``filters``; :class:`ResultsFileError` names a corrupt line."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"No results file {path}: append_record() creates it with the first record.")
    records = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ResultsFileError(
                    f"{path}, line {number} is not a valid JSON record ({exc.msg}): "
                    "fix or delete that line (e.g. a run interrupted while writing)"
                ) from exc
            if not isinstance(record, dict):
                raise ResultsFileError(
                    f"{path}, line {number} holds a {type(record).__name__}, not a record (JSON object)"
                )
            if all(key in record and record[key] == value for key, value in filters.items()):
                records.append(record)
    return records


def data_label(records) -> str:
    """The one data label of ``records``; ValueError for none or for mixed data sources."""
    labels = {r.get("data_label") or LABELS.get(r.get("data"), NO_DATA_LABEL) for r in records}
    if not labels:
        raise ValueError("no records: there is no data label to give")
    if len(labels) > 1:
        raise ValueError(
            f"the records mix data sources ({'; '.join(sorted(labels))}): "
            "select one with read_records(path, data=...)"
        )
    return labels.pop()


# --- Runs: the records one command or notebook appends together, sharing a ``run_id`` -------

NOT_RECORDED = "not recorded yet"


def new_run_id() -> str:
    """A run id that sorts by time: ``20261121T101500Z-3fa9c2``."""
    now = datetime.datetime.now(datetime.UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def is_gpu(record: dict) -> bool:
    return record.get("device_kind") == "gpu"


def pick(records, gpu: bool) -> dict | None:
    """The first CPU (``gpu=False``) or GPU record of ``records``, or None."""
    return next((r for r in records if is_gpu(r) == gpu), None)


def runs(records, experiment: str, **match) -> dict[str, list[dict]]:
    """The records of ``experiment`` (and with the ``match`` key values) grouped by ``run_id``,
    runs in file order; within a run the CPU records come first, each kind in file order."""
    grouped: dict[str, list[dict]] = {}
    for record in records:
        if (record.get("experiment") == experiment and record.get("run_id")
                and all(record.get(key) == value for key, value in match.items())):
            grouped.setdefault(record["run_id"], []).append(record)
    return {run_id: sorted(group, key=is_gpu) for run_id, group in grouped.items()}


def reference_run(path: str | os.PathLike, experiment: str, *, complete=None, **match) -> list[dict]:
    """The newest complete run in ``path`` with CPU and GPU records, else with CPU records, else
    the newest complete run, else the newest; ``[]`` when there is none."""
    path = Path(path).expanduser()
    if not path.is_file():
        return []
    grouped = list(runs(read_records(path), experiment, **match).values())
    finished = [group for group in grouped if complete is None or complete(group)]
    with_cpu = [group for group in finished if not all(is_gpu(r) for r in group)]
    with_both = [group for group in with_cpu if any(is_gpu(r) for r in group)]
    return (with_both or with_cpu or finished or grouped or [[]])[-1]


def speedup(records, key: str = "mean_epoch_seconds") -> float | None:
    """How many times shorter the GPU's ``key`` time is than the CPU's (None without both)."""
    cpu, gpu = pick(records, False), pick(records, True)
    if not cpu or not gpu or not cpu.get(key) or not gpu.get(key):
        return None
    return cpu[key] / gpu[key]


def software(records) -> str:
    """``"Keras 3.15.1, jax 0.10.2"``: Keras and the backends of a record or records."""
    records = [records] if isinstance(records, dict) else list(records)
    first = {}
    for record in records:  # the first record of each backend
        first.setdefault(record["backend"], record.get("versions", {}))
    backends = ", ".join(f"{name} {versions.get(name, '?')}" for name, versions in first.items())
    return f"Keras {records[0].get('versions', {}).get('keras', '?')}, {backends}"


def hardware(records) -> dict[str, str]:
    """``{"CPU": "<model>, <n> cores", "GPU": "<name>"}`` of the records' devices."""
    result = {}
    for record in records:
        if is_gpu(record):
            result["GPU"] = record["device"]
        else:
            result["CPU"] = f"{record.get('cpu_model', 'CPU')}, {record.get('cores_usable', '?')} cores"
    return result


def duration(seconds: float) -> str:
    """Seconds as a short text: '41 µs', '2.5 ms', '840 ms', '12.3 s', '4.5 min', '2.1 h'."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
