"""A workshop's own measurements: each learner's CNN run shared as a new file in one class folder,
written under a ``.`` name, then linked (else renamed) to its final name, so that a reader sees a
whole file or none on a file system that may not lock. No host or user name is kept::

    {"format": "gpulesson-class-run", "format_version": 1, "nickname": "Ada" or null,
     "shared": "<ISO 8601 date>", "records": [<CPU record>, <GPU record>]}
"""

import contextlib
import datetime
import json
import math
import os
import re
import secrets
from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.records.results import ResultsFileError, _to_json, new_run_id, validate_record
from gpulesson.records.summaries import summary_of

CLASS_ENV = "LESSON_CLASS_RESULTS"  # the class folder; wins over the site value when set
FORMAT = "gpulesson-class-run"
FORMAT_VERSION = 1  # raise it when the file changes; readers skip files of a newer version
SUFFIX = ".json"
EXPERIMENT = "cnn-cpu-vs-gpu"  # the experiment a class file shares (episode 5's CNN)
MAX_NICKNAME = 40
MAX_BYTES = 2_000_000  # a class file of one run is a few kB; anything this large is not one


class ClassFolderError(OSError):
    """The class folder is not set, missing, not a folder, or cannot be read or written."""


def class_folder(site_value: str | os.PathLike | None = None,
                 environ=None) -> Path | None:
    """The class folder: :data:`CLASS_ENV` if set, else ``site_value``; None when neither names one."""
    env = os.environ if environ is None else environ
    text = (env.get(CLASS_ENV, "") or "").strip() or str(site_value or "").strip()
    return Path(text).expanduser() if text else None


def check_nickname(nickname: str | None) -> str | None:
    """A nickname as it is shared: stripped, None if empty; a ValueError says what is wrong."""
    if nickname is None:
        return None
    if not isinstance(nickname, str):
        raise ValueError(f"the nickname must be text, not {type(nickname).__name__}")
    text = nickname.strip()
    if len(text) > MAX_NICKNAME or any(not ch.isprintable() for ch in text):
        raise ValueError(f"nickname {nickname!r}: use at most {MAX_NICKNAME} printable "
                         "characters on one line (or leave it empty to share none)")
    return text or None


def record_problem(record) -> str | None:
    """What makes ``record`` unfit for the class figure (not episode 5's CNN on a CPU or a GPU, with
    its data, sizes and epoch times), or None."""
    try:
        validate_record(record)
    except ResultsFileError as exc:
        return str(exc)
    if record.get("experiment") != EXPERIMENT:
        return f"a record of {record.get('experiment')!r}, not of {EXPERIMENT!r}"
    if record.get("device_kind") not in ("cpu", "gpu"):
        return f"device_kind is {record.get('device_kind')!r}, not 'cpu' or 'gpu'"
    if record.get("data") not in LABELS:
        return f"data is {record.get('data')!r}, not one of {', '.join(LABELS)}"
    for key in ("n_train", "batch_size"):
        if not isinstance(record.get(key), int) or isinstance(record.get(key), bool) \
                or record[key] < 1:
            return f"{key} is {record.get(key)!r}, not a positive whole number"
    try:
        summary = summary_of(record, warmup_key=None)
    except (TypeError, ValueError):
        summary = None
    if summary is None or not all(isinstance(v, float) and math.isfinite(v) and v > 0
                                  for v in summary["samples"]):
        return "its epoch times are missing or not positive numbers"
    return None


def _publish(temporary: Path, folder: Path, stem: str) -> Path:
    """Give ``temporary`` a final name in ``folder`` that no other file has, in one step."""
    for _ in range(10):
        final = folder / f"{stem}-{secrets.token_hex(4)}{SUFFIX}"
        try:
            os.link(temporary, final)  # fails, rather than overwrite, if the name is taken
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: rename, to a name not yet there
            if final.exists():
                continue
            os.replace(temporary, final)
            return final
        temporary.unlink()
        return final
    raise ClassFolderError(f"no free file name in {folder} after 10 tries")


def existing_class_folder(folder: str | os.PathLike, advice: str) -> Path:
    """``folder`` as a Path; a :class:`ClassFolderError` ending in ``advice`` when it is no folder."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ClassFolderError(f"the class folder {folder} {what}: check its path {advice}")
    return folder


def write_run(records, folder: str | os.PathLike, *, nickname: str | None = None) -> Path:
    """Write one run's ``records`` as a new file in the class ``folder``; return its path (a
    ValueError for bad records)."""
    records = list(records)
    if not records:
        raise ValueError("no records to share: train on the CPU (and the GPU) first")
    for record in records:
        problem = record_problem(record)
        if problem:
            raise ValueError(f"this record cannot be shared: {problem}")
    document = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "nickname": check_nickname(nickname),
                "shared": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                "records": records}
    data = (json.dumps(document, default=_to_json, allow_nan=False, ensure_ascii=False)
            + "\n").encode()
    folder = existing_class_folder(folder, f"with your instructor (set {CLASS_ENV} or "
                                           "lesson_site: class_results)")
    run_id = re.sub(r"[^A-Za-z0-9-]", "", str(document["records"][0].get("run_id") or "")) \
        or new_run_id()
    temporary = folder / f".run-{run_id}-{secrets.token_hex(8)}.part"
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(descriptor, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return _publish(temporary, folder, f"run-{run_id}")
    except OSError as exc:
        if isinstance(exc, ClassFolderError):
            raise
        raise ClassFolderError(f"cannot write to the class folder {folder} "
                               f"({exc.strerror or exc}): ask your instructor to let the class "
                               "write there") from exc
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)  # nothing half-written stays behind


def share_run(records, site_value: str | os.PathLike | None = None, *,
              nickname: str | None = None, kept: str | os.PathLike | None = None,
              say=print) -> Path | None:
    """Share one run's ``records`` in the class folder and say where; never stops a run (returns None)."""
    folder = class_folder(site_value)
    where = f"; your records are kept in {kept}" if kept else ""
    if folder is None:
        say(f"Not shared: no class folder is set (set {CLASS_ENV}, or class_results in "
            f"_config.yml){where}.")
        return None
    try:
        path = write_run(records, folder, nickname=nickname)
    except ClassFolderError as exc:
        say(f"Not shared: {exc}{where}.")
        return None
    say(f"Shared with the class as {path}")
    return path
