"""Grain's worker processes: the records, one per backend, device, per-item work and number of
worker processes, and what a page takes from them.

A record is one condition (:data:`CONDITION`): its warm-up and timed epochs, their summary, the
cost of the per-item work and of reading a block measured alone, the cores and load it ran
with. Each number of workers is compared with none (the blocks read and worked on in the
training process, by Grain's reading threads) through
:func:`~gpulesson.experiments.common.compare`, so that a difference inside the noise is not
called one. Imports no deep-learning framework.
"""

from __future__ import annotations

import statistics

from gpulesson import results
from gpulesson.devices import BACKEND_TITLES
from gpulesson.experiments.ceiling.records import N_IMAGES  # noqa: F401 (the ceiling's epoch, re-exported)
from gpulesson.experiments.common import SUMMARY_KEY, as_rate, compare, summarise, summary_of
from gpulesson.results import make_record

EXPERIMENT = "workers"
RESULTS_FILE = results.RESULTS_DIR / f"{EXPERIMENT}.jsonl"
DATA = "synthetic"  # speed does not depend on the pixel values
BACKENDS = ("jax", "torch")  # Grain needs no TensorFlow; on TensorFlow any Python feed pays more
NAMES = BACKEND_TITLES
# name -> what is done to each block before training (tables, figure labels, records)
WORK: dict[str, str] = {
    "none": "the stored blocks as they are",
    "augment": "flip_crop: each image shifted and flipped, one at a time in Python",
}
CONDITION = ("backend", "device_kind", "work", "workers", "batch_size")


def condition(record: dict) -> tuple:
    """The key of ``record``'s condition: a run that goes on skips the ones it has."""
    return tuple(record.get(name) for name in CONDITION)


def measurement_record(seconds: list[float], *, warmup: int, run_id: str, device: str, work: str,
                       workers: int, batch_size: int, n_images: int, extra: dict) -> dict:
    """One results-file record: ``seconds`` of every epoch, the first ``warmup`` of them the
    warm-up (recorded, never summarised)."""
    timed = seconds[warmup:]
    if not timed:
        raise ValueError("no timed epoch to record")
    fields = {
        "run_id": run_id, "source": "gpulesson.experiments.workers", "device_kind": device,
        "work": work, "work_label": WORK[work], "workers": workers, "batch_size": batch_size,
        "n_images": n_images, "warmup_epochs": warmup, "repeats": len(timed),
        "warmup_seconds": seconds[:warmup], "epoch_seconds": timed,
        "images_per_second": n_images / statistics.median(timed),
        SUMMARY_KEY: summarise(timed, seconds[:warmup]), **extra,
    }
    if device == "cpu":
        fields["device"] = "CPU"
    return make_record(EXPERIMENT, data=DATA, **fields)


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary (median and range over its timed epochs)."""
    return as_rate(summary_of(record, "epoch_seconds"), record["n_images"]) if record else None


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The newest run with GPU records, else the newest run (:func:`gpulesson.results.reference_run`)."""
    return results.reference_run(path, EXPERIMENT)


def groups(records) -> list[tuple[str, str]]:
    """The (backend, device) pairs of ``records``, in the order of :data:`BACKENDS`, CPU first."""
    found = {(r["backend"], r["device_kind"]) for r in records}
    order = {name: i for i, name in enumerate(BACKENDS)}
    return sorted(found, key=lambda pair: (pair[1] != "cpu", order.get(pair[0], 9), pair[0]))


def find(records, backend: str, device: str, work: str, workers: int) -> dict | None:
    return next((r for r in records if (r.get("backend"), r.get("device_kind"), r.get("work"),
                                        r.get("workers")) == (backend, device, work, workers)),
                None)


def worker_counts(records, backend: str, device: str, work: str) -> list[int]:
    """The numbers of workers measured for ``work`` on a backend and device, smallest first."""
    return sorted({r["workers"] for r in records if (r["backend"], r["device_kind"], r["work"])
                   == (backend, device, work)})


def conditions(records, backend: str, device: str) -> list[tuple[str, int, dict]]:
    """``(work, workers, record)`` of a backend and device, by work as :data:`WORK` orders them,
    then by number of workers."""
    return [(work, n, r) for work in WORK for n in worker_counts(records, backend, device, work)
            if (r := find(records, backend, device, work, n))]


def against_none(record: dict, records) -> str:
    """``record`` against the same work with no worker process, in the rule's words
    ("1.4× slower than", "about as fast as"); '' for the record with none, or without it."""
    base = find(records, record["backend"], record["device_kind"], record["work"], 0)
    if base is None or record is base:
        return ""
    return compare(rate_summary(record), rate_summary(base), higher_is_better=True).sentence


def best(records, backend: str, device: str, work: str) -> dict | None:
    """The record with worker processes that is fastest for ``work`` (by median), if any."""
    found = [r for n in worker_counts(records, backend, device, work) if n
             if (r := find(records, backend, device, work, n))]
    return max(found, key=lambda r: r["images_per_second"], default=None)


def cost_ms(records, backend: str, device: str, key: str) -> float | None:
    """The median over the records of a backend and device of a cost each keeps in ms
    (``work_ms``: the lesson's augmentation of one block; ``read_ms``: reading one), measured
    alone, in the training process."""
    found = [r[key] for r in records if (r["backend"], r["device_kind"]) == (backend, device)
             and r.get(key) is not None]
    return statistics.median(found) if found else None
