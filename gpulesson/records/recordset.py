"""The records layer: what an experiment declares about its records, and what every page does
with them the same way.

An experiment declares a :class:`RecordSet`: its name (the results file
``results/NAME.jsonl``), the fields that name one condition, the order of its backends, when a
device's part of a run is complete, and which records a page may show (the others, such as
those of a retired pipeline, stay in the file as measured). The layer then reads the file and
chooses the runs a page shows (:meth:`RecordSet.reference_run`: for each device the newest run
whose part on it is complete, :mod:`gpulesson.records.parts`), keys and finds conditions,
groups them by backend and device, and makes a condition's record of timed epochs by the
lesson's rule (:meth:`RecordSet.epoch_record`; any other record with :meth:`RecordSet.record`,
which names a CPU's device "CPU"). An experiment whose page compares one run's devices takes
:meth:`RecordSet.newest_run` instead (the newest run with CPU and GPU records,
:func:`gpulesson.records.results.reference_run`). A command reads a run that goes on with
:meth:`RecordSet.read` and refuses other settings with :func:`check_earlier`. Summaries and the
words that compare them are the rule's (:mod:`gpulesson.records.summaries`); the layer splits
a run's warm-up from its timed epochs (:func:`split_epochs`) and compares the GPU with the CPU
(:func:`gpu_against_cpu`). Imports no deep-learning framework.
"""

from __future__ import annotations

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


def every_part(part: list[dict]) -> bool:
    """A device's part of a run counts as complete whatever it holds."""
    return True


@dataclass(frozen=True)
class RecordSet:
    """One experiment's records: ``experiment`` names it and its results file (``file``
    where it shares another experiment's, ``results/FILE.jsonl``), ``condition``
    the fields that key a condition (a run that goes on skips the keys it has), ``backends``
    the order pages list backends in, ``complete(part)`` whether one device's part of a run is
    whole, ``kept(record)`` whether a page reads a record at all (not a retired condition's),
    ``shown(record)`` whether a table or figure uses it (default all of both), ``data`` what
    the records were measured on, ``warmup_key`` where a record made before the rule keeps
    its warm-up epochs (None: its first epoch was the warm-up)."""

    experiment: str
    condition: tuple[str, ...]
    backends: tuple[str, ...] = ()
    complete: Callable[[list[dict]], bool] = every_part
    kept: Callable[[dict], bool] | None = None
    shown: Callable[[dict], bool] | None = None
    data: str = "synthetic"
    warmup_key: str | None = "warmup_seconds"
    file: str | None = None

    @property
    def results_file(self):
        return results.RESULTS_DIR / f"{self.file or self.experiment}.jsonl"

    def key(self, record: dict) -> tuple:
        """The key of ``record``'s condition, its :attr:`condition` fields in order."""
        return tuple(record.get(name) for name in self.condition)

    def read(self, path=None, **match) -> list[dict]:
        """This experiment's records in ``path`` (default its results file) with the ``match``
        values (e.g. a ``run_id``), in file order; [] without the file."""
        path = Path(path or self.results_file).expanduser()
        return (results.read_records(path, experiment=self.experiment, **match)
                if path.is_file() else [])

    def runs(self, records, **match) -> dict[str, list[dict]]:
        """This experiment's ``records`` (with the ``match`` values) grouped by ``run_id``
        (:func:`gpulesson.records.results.runs`)."""
        return results.runs(records, self.experiment, **match)

    def runs_in(self, path=None, **match) -> dict[str, list[dict]]:
        """The runs of the results file ``path`` (default this experiment's) with the ``match``
        values, grouped by ``run_id`` in file order; {} without the file."""
        return self.runs(self.read(path, **match))

    def newest_run(self, path=None, *, complete=None, **match) -> list[dict]:
        """The newest run with CPU and GPU records, else with CPU records, of those
        ``complete(run)`` accepts (:func:`gpulesson.records.results.reference_run`)."""
        return results.reference_run(path or self.results_file, self.experiment,
                                     complete=complete, **match)

    def record(self, *, data: str | None = None, environment: dict | None = None,
               **fields) -> dict:
        """A results-file record of ``fields`` (:func:`gpulesson.records.results.make_record`); a CPU
        record's ``device`` is "CPU", also on a machine with a GPU."""
        if fields.get("device_kind") == "cpu":
            fields["device"] = "CPU"
        return results.make_record(self.experiment, data=data or self.data,
                                   environment=environment, **fields)

    def reference_run(self, path=None) -> list[dict]:
        """For each device, CPU first, the part of the newest run that is complete on it, of
        the records a page reads (:attr:`kept`); [] without a file or a complete part."""
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
        """The (backend, device) pairs of the ``records`` a table may use, CPU first, then in
        the order of :attr:`backends`."""
        found = {(r["backend"], r["device_kind"]) for r in self.visible(records)}
        order = {name: i for i, name in enumerate(self.backends)}
        return sorted(found, key=lambda pair: (pair[1] != "cpu", order.get(pair[0], 9), pair[0]))

    def epoch_summary(self, record: dict | None) -> dict | None:
        """The summary of a record's timed epochs (seconds): the one it keeps, or, for a record
        made before the rule, one built from its ``epoch_seconds``, the warm-up apart
        (:func:`~gpulesson.records.summaries.summary_of`); None without epochs."""
        if not record:
            return None
        return summary_of(record, "epoch_seconds", warmup_key=self.warmup_key)

    def gpu_against_cpu(self, records, summary=None) -> Comparison | None:
        """The GPU's epochs against the CPU's in one run's ``records`` (:func:`gpu_against_cpu`
        of their ``summary``, default :meth:`epoch_summary`)."""
        summary = summary or self.epoch_summary
        return gpu_against_cpu(*(summary(results.pick(records, gpu)) for gpu in (False, True)))

    def epoch_record(self, seconds: list[float], *, warmup: int, run_id: str, device: str,
                     n_images: int, own: dict, extra: dict, method: dict | None = None) -> dict:
        """One condition's record: ``seconds`` of every epoch, the first ``warmup`` of them the
        warm-up (recorded, never summarised), the experiment's ``own`` condition fields before
        the epochs, how they were timed (``method``) before their summary, ``extra`` after."""
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
    """A record's images per second as a summary (median and range over its timed epochs)."""
    if not record:
        return None
    return as_rate(summary_of(record, "epoch_seconds"), record["n_images"])


def split_epochs(epoch_seconds) -> tuple[list[float], list[float]]:
    """``(warm-up, timed)`` epochs of a run: the first :data:`WARMUP` are the warm-up, the rest
    are timed. A run of no more epochs than the warm-up has no warm-up kept apart: its epochs
    are its (single, warm) samples, which a page shows as "no range"."""
    seconds = [float(s) for s in epoch_seconds]
    if len(seconds) <= WARMUP:
        return [], seconds
    return seconds[:WARMUP], seconds[WARMUP:]


def epochs_summary(epoch_seconds) -> dict:
    """The summary of a run's epochs by the rule: :func:`split_epochs`'s timed ones, the warm-up
    apart."""
    warmup, timed = split_epochs(epoch_seconds)
    return summarise(timed, warmup)


def load_fields(before=None, after=None) -> dict:
    """``load_average_before`` and ``load_average_after`` (``os.getloadavg()`` right before and
    right after a training), where given."""
    return {key: [round(float(v), 2) for v in load]
            for key, load in (("load_average_before", before), ("load_average_after", after))
            if load is not None}


def check_earlier(earlier, **run) -> None:
    """A run goes on only with the settings its ``earlier`` records were made with (``run``:
    field -> value), so that its records compare; else a ValueError saying what to do."""
    for field, value in run.items():
        found = sorted({str(r.get(field)) for r in earlier} - {str(value)})
        if found:
            raise ValueError(
                f"run {earlier[0].get('run_id')} was recorded with {field} {', '.join(found)}, "
                f"not {value}: go on with the settings it had, or start a new run")


def gpu_against_cpu(cpu: dict | None, gpu: dict | None) -> Comparison | None:
    """The GPU's timing against the CPU's (:func:`~gpulesson.records.summaries.compare` of two
    time summaries: its ``ratio`` is the CPU's median over the GPU's), or None without both."""
    return compare(gpu, cpu) if cpu and gpu else None
