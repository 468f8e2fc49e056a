"""Grain's worker processes: the records (one per backend, device, per-item work and number of
worker processes), each compared with no worker, and what a page takes from them."""

from __future__ import annotations

import statistics

from gpulesson.experiments.ceiling.records import N_IMAGES  # noqa: F401 (the ceiling's epoch)
from gpulesson.experiments.common import compare_middle
from gpulesson.experiments.pagewords import measurably
from gpulesson.experiments.recordset import RecordSet, rate_summary
from gpulesson.machine.devices import BACKEND_TITLES

EXPERIMENT = "workers"
DATA = "synthetic"  # speed does not depend on the pixel values
BACKENDS = ("jax", "torch")  # Grain needs no TensorFlow; on TensorFlow any Python feed pays more
NAMES = BACKEND_TITLES
# name -> what is done to each block before training (tables, figure labels, records)
WORK: dict[str, str] = {
    "none": "the stored blocks as they are",
    "augment": "flip_crop: each image shifted and flipped, one at a time in Python",
}
CONDITION = ("backend", "device_kind", "work", "workers", "batch_size")
# How the epochs were timed. "epoch-split": the dataset holds exactly the epochs fit trains,
# as episode 9 teaches, and every epoch is split where its time went (measure.EpochSplitter:
# before the first batch, up to the last, after the last), so that a slow last epoch is named,
# not trimmed away. "spare-epoch" (before): one epoch more than fit trains, so that no timed
# epoch reached the end of the data; without ``method`` (before that): the last epoch with
# workers on a GPU may include the workers' shutdown, unsplit.
METHOD = "epoch-split"
STALL_FACTOR = 1.5  # a last epoch this many times the other timed epochs' median stalled


def measurement_record(seconds: list[float], *, warmup: int, run_id: str, device: str, work: str,
                       workers: int, batch_size: int, n_images: int, extra: dict) -> dict:
    return RECORDS.epoch_record(
        seconds, warmup=warmup, run_id=run_id, device=device, n_images=n_images, extra=extra,
        own={"work": work, "work_label": WORK[work], "workers": workers, "batch_size": batch_size},
        method={"method": METHOD})


def teardown_may_be_timed(record: dict) -> bool:
    """Whether the last timed epoch may hold the workers' shutdown: a record from before
    :data:`METHOD`, with workers, on JAX on a GPU (where Keras fetches one batch ahead and so
    reached the end of the data inside the last epoch)."""
    return (record.get("method") is None and bool(record.get("workers"))
            and record.get("device_kind") == "gpu" and record.get("backend") == "jax")


def stall(record: dict) -> dict | None:
    """The last timed epoch where it took over :data:`STALL_FACTOR` times the others' median:
    its ``seconds``, the ``others``' median, its ``split`` (None for older records) and
    ``where`` the longest part of the split went; None for a last epoch like the others."""
    timed = record.get("epoch_seconds") or []
    if len(timed) < 3:
        return None
    others = statistics.median(timed[:-1])
    if timed[-1] <= STALL_FACTOR * others:
        return None
    splits = record.get("epoch_splits") or []
    split = splits[-1] if len(splits) == len(timed) + len(record.get("warmup_seconds") or []) \
        else None
    where = (max(("after_last_batch", "first_batch", "longest_gap"), key=split.__getitem__)
             if split else None)
    return {"seconds": timed[-1], "others": others, "split": split, "where": where}


def complete(part: list[dict]) -> bool:
    """Whether one device's part is a complete grid: each backend's works all measured with
    no worker and the same counts of workers (a run stopped in its grid is not)."""
    for backend in {r["backend"] for r in part}:
        counts = {tuple(worker_counts(part, backend, r["device_kind"], r["work"]))
                  for r in part if r["backend"] == backend}
        if len(counts) != 1:
            return False
        (found,) = counts
        if 0 not in found or len(found) < 2:
            return False
    return True


# The reference: for each device, CPU first, the newest run whose part is a complete grid.
RECORDS = RecordSet(EXPERIMENT, CONDITION, backends=BACKENDS, complete=complete, data=DATA)
RESULTS_FILE, condition, groups = RECORDS.results_file, RECORDS.key, RECORDS.groups
reference_run = RECORDS.reference_run


def find(records, backend: str, device: str, work: str, workers: int) -> dict | None:
    return RECORDS.find(records, backend=backend, device_kind=device, work=work, workers=workers)


def worker_counts(records, backend: str, device: str, work: str) -> list[int]:
    return sorted({r["workers"] for r in records if (r["backend"], r["device_kind"], r["work"])
                   == (backend, device, work)})


def conditions(records, backend: str, device: str) -> list[tuple[str, int, dict]]:
    """``(work, workers, record)`` of a backend and device, by work, then number of workers."""
    return [(work, n, r) for work in WORK for n in worker_counts(records, backend, device, work)
            if (r := find(records, backend, device, work, n))]


def against_none(record: dict, records) -> str:
    """``record`` against the same work with no worker, from the middle epochs ("1.4× slower",
    "no measurable difference"); '' for the record with none, or without it."""
    base = find(records, record["backend"], record["device_kind"], record["work"], 0)
    if base is None or record is base:
        return ""
    return measurably(compare_middle(rate_summary(record), rate_summary(base),
                                     higher_is_better=True))


def best(records, backend: str, device: str, work: str) -> dict | None:
    """The fastest record of ``work`` with worker processes, if any."""
    found = [r for n in worker_counts(records, backend, device, work) if n
             if (r := find(records, backend, device, work, n))]
    return max(found, key=lambda r: r["images_per_second"], default=None)


def cost_ms(records, backend: str, device: str, key: str) -> float | None:
    """The median of a cost measured alone in ms (``read_ms``: reading a block; ``work_ms``:
    augmenting it) over a backend's and device's records."""
    found = [r[key] for r in records if (r["backend"], r["device_kind"]) == (backend, device)
             and r.get(key) is not None]
    return statistics.median(found) if found else None
