"""The records layer: what an experiment declares about its records (:class:`RecordSet`), and
what every page does with them the same way: read them, choose the run a page shows, key and
group conditions, and make a condition's record of timed epochs by the lesson's rule
(:mod:`gpulesson.records.summaries`). Imports no deep-learning framework.
"""

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gpulesson.records import parts, results
from gpulesson.records.summaries import (
    SUMMARY_KEY,
    WARMUP,
    Comparison,
    as_rate,
    compare,
    summarise,
    summary_of,
)


@dataclass(frozen=True)
class RecordSet:
    """One experiment's records: its results file (``results/FILE.jsonl``, FILE defaulting to
    ``experiment``), the ``condition`` fields that key a condition, the order of ``backends``,
    whether a device's part of a run is ``complete``, whether a page reads a record at all
    (``kept``) and shows it (``shown``), the ``data`` measured on, and where an old record
    keeps its warm-up (``warmup_key``; None: its first epoch was the warm-up). ``methods`` are
    the ``method`` values of the current way of measuring (empty: one way only), for the records
    that ``method_applies`` to (default all): a record with another value :meth:`predates` it."""

    experiment: str
    condition: tuple[str, ...]
    backends: tuple[str, ...] = ()
    complete: Callable[[list[dict]], bool] = bool  # a part that holds records
    kept: Callable[[dict], bool] | None = None
    shown: Callable[[dict], bool] | None = None
    data: str = "synthetic"
    warmup_key: str | None = "warmup_seconds"
    file: str | None = None
    methods: tuple = ()
    method_applies: Callable[[dict], bool] | None = None

    @property
    def results_file(self):
        return results.RESULTS_DIR / f"{self.file or self.experiment}.jsonl"

    def key(self, record: dict) -> tuple:
        """The key of ``record``'s condition, its :attr:`condition` fields in order."""
        return tuple(record.get(name) for name in self.condition)

    def read(self, path=None, **match) -> list[dict]:
        """This experiment's records in ``path`` (default its file) with the ``match`` values."""
        path = Path(path or self.results_file).expanduser()
        return (results.read_records(path, experiment=self.experiment, **match)
                if path.is_file() else [])

    def runs(self, records, **match) -> dict[str, list[dict]]:
        """This experiment's ``records`` with the ``match`` values, grouped by ``run_id``."""
        return results.runs(records, self.experiment, **match)

    def runs_in(self, path=None, **match) -> dict[str, list[dict]]:
        """:meth:`runs` of the records :meth:`read` gives."""
        return self.runs(self.read(path, **match))

    def newest_run(self, path=None, *, complete=None, **match) -> list[dict]:
        """The newest run with both devices, else CPU (:func:`~gpulesson.records.results.reference_run`)."""
        return results.reference_run(path or self.results_file, self.experiment,
                                     complete=complete, **match)

    def predates(self, record: dict) -> bool:
        """Whether ``record`` was measured before the current :attr:`methods`: its file keeps it,
        and a page that leaves it out or shows it says so."""
        applies = self.method_applies is None or self.method_applies(record)
        return bool(self.methods) and applies and record.get("method") not in self.methods

    def predating_devices(self, records) -> list[str]:
        """The devices ("CPU", "GPU") of the ``records`` that :meth:`predates`, CPU first."""
        return [d.upper() for d in ("cpu", "gpu")
                if any(r.get("device_kind") == d and self.predates(r) for r in records)]

    def record(self, *, data: str | None = None, environment: dict | None = None,
               **fields) -> dict:
        """A record of ``fields``; a CPU record's ``device`` is "CPU", also beside a GPU."""
        if fields.get("device_kind") == "cpu":
            fields["device"] = "CPU"
        return results.make_record(self.experiment, data=data or self.data,
                                   environment=environment, **fields)

    def reference_run(self, path=None) -> list[dict]:
        """Each device's part of the newest run complete on it (:mod:`gpulesson.records.parts`)."""
        return parts.reference_parts(path or self.results_file, self.experiment, self.complete,
                                     keep=self.kept)

    def visible(self, records) -> list[dict]:
        """The ``records`` a table or figure may use (:attr:`shown`)."""
        return [r for r in records if self.shown is None or self.shown(r)]

    def find(self, records, **fields) -> dict | None:
        """The first record a table may use whose ``fields`` have these values, or None."""
        return next((r for r in self.visible(records)
                     if all(r.get(name) == value for name, value in fields.items())), None)

    def groups(self, records) -> list[tuple[str, str]]:
        """The (backend, device) pairs of the visible ``records``, CPU first, then by :attr:`backends`."""
        found = {(r["backend"], r["device_kind"]) for r in self.visible(records)}
        order = {name: i for i, name in enumerate(self.backends)}
        return sorted(found, key=lambda pair: (pair[1] != "cpu", order.get(pair[0], 9), pair[0]))

    def epoch_summary(self, record: dict | None) -> dict | None:
        """The summary of a record's timed epochs (:func:`~gpulesson.records.summaries.summary_of`)."""
        if not record:
            return None
        return summary_of(record, "epoch_seconds", warmup_key=self.warmup_key)

    def gpu_against_cpu(self, records, summary=None) -> Comparison | None:
        """The GPU's ``summary`` (default :meth:`epoch_summary`) against the CPU's in a run."""
        summary = summary or self.epoch_summary
        return gpu_against_cpu(*(summary(results.pick(records, gpu)) for gpu in (False, True)))

    def epoch_record(self, seconds: list[float], *, warmup: int, run_id: str, device: str,
                     n_images: int, own: dict, extra: dict, method: dict | None = None) -> dict:
        """One condition's record of every epoch's ``seconds``, the first ``warmup`` apart."""
        timed = seconds[warmup:]
        if not timed:
            raise ValueError("no timed epoch to record")
        fields = {
            "run_id": run_id, "source": f"gpulesson.experiments.{self.experiment}",
            "device_kind": device, **own, "n_images": n_images, "warmup_epochs": warmup,
            "repeats": len(timed), "warmup_seconds": seconds[:warmup], "epoch_seconds": timed,
            "images_per_second": n_images / statistics.median(timed),
            **(method or {}), SUMMARY_KEY: summarise(timed, seconds[:warmup]), **extra,
        }
        return self.record(**fields)


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary."""
    if not record:
        return None
    return as_rate(summary_of(record, "epoch_seconds"), record["n_images"])


def split_epochs(epoch_seconds) -> tuple[list[float], list[float]]:
    """``(warm-up, timed)`` epochs: the first :data:`WARMUP`, then the rest (all, when no more)."""
    seconds = [float(s) for s in epoch_seconds]
    if len(seconds) <= WARMUP:
        return [], seconds
    return seconds[:WARMUP], seconds[WARMUP:]


def epochs_summary(epoch_seconds) -> dict:
    """The summary of a run's epochs, :func:`split_epochs`' warm-up apart."""
    warmup, timed = split_epochs(epoch_seconds)
    return summarise(timed, warmup)


def load_fields(before=None, after=None) -> dict:
    """``load_average_before`` and ``load_average_after`` of a training, where given."""
    return {key: [round(float(v), 2) for v in load]
            for key, load in (("load_average_before", before), ("load_average_after", after))
            if load is not None}


def check_earlier(earlier, **run) -> None:
    """A ValueError unless a run goes on with the settings (``run``) of its ``earlier`` records."""
    for field, value in run.items():
        found = sorted({str(r.get(field)) for r in earlier} - {str(value)})
        if found:
            raise ValueError(
                f"run {earlier[0].get('run_id')} was recorded with {field} {', '.join(found)}, "
                f"not {value}: go on with the settings it had, or start a new run")


def gpu_against_cpu(cpu: dict | None, gpu: dict | None) -> Comparison | None:
    """:func:`~gpulesson.records.summaries.compare` of the GPU's times with the CPU's, or None."""
    return compare(gpu, cpu) if cpu and gpu else None
