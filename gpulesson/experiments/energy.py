"""Energy in the records and on the pages: what an experiment keeps of a meter
(:mod:`gpulesson.energy`), and the words a page shows for it.

A record's ``energy`` is either ``{"measured": True, "source", "images", "summary"}`` (the
joules of each timed interval and their summary, the warm-up apart, by the lesson's rule) or
``{"measured": False, "reason"}`` where no counter could be read. Records made before energy
was measured have no ``energy``: the page says "not measured" for them.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpulesson.energy import EnergyUnavailable, Intervals, open_meter, unmeasured
from gpulesson.experiments.common import scale, summarise, summary_text

NOT_MEASURED = "not measured (the record was made before energy was measured)"
UNMEASURABLE = "not measurable on this machine"


def measured(source: str, joules: Sequence[float], warmup: int, images: int) -> dict:
    """A record's ``energy``: the summary of the ``joules`` of each interval, the first
    ``warmup`` of them the warm-up, and the ``images`` each interval processed."""
    values = [float(j) for j in joules]
    if len(values) <= warmup:
        raise ValueError(f"{len(values)} energy reading(s) leave no timed interval after "
                         f"{warmup} warm-up")
    return {"measured": True, "source": source, "images": int(images),
            "summary": summarise(values[warmup:], values[:warmup], unit="J")}


def start_intervals(device_kind: str, **kwargs) -> tuple[Intervals, str | None]:
    """``(intervals, reason)``: intervals on the device's meter, its thread started (leave it
    with :func:`stop_intervals`), and None; or intervals that record nothing and the reason
    no meter can be read."""
    try:
        meter = open_meter(device_kind, **kwargs)
    except EnergyUnavailable as exc:
        return Intervals(None), str(exc)
    meter.__enter__()
    return Intervals(meter), None


def stop_intervals(intervals: Intervals, reason: str | None, *, warmup: int, images: int) -> dict:
    """Stop the meter of :func:`start_intervals`; the record's ``energy`` of its intervals."""
    if intervals.meter is None:
        return unmeasured(reason or "no energy meter")
    intervals.meter.__exit__(None, None, None)
    if len(intervals.joules) <= warmup:
        return unmeasured("the meter read no interval after the warm-up")
    return measured(intervals.meter.source, intervals.joules, warmup, images)


def energy_callback(intervals):
    """A Keras callback that reads ``intervals`` (:class:`gpulesson.energy.Intervals`) at the
    start and the end of each epoch: no synchronisation is added to the steps."""
    import keras

    class EpochEnergy(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            intervals.begin()

        def on_epoch_end(self, epoch, logs=None):
            intervals.end()

    return EpochEnergy()


def energy_summary(record: dict | None, per_image: bool = False,
                   factor: float = 1.0) -> dict | None:
    """The summary of a record's joules per interval (or per image), times ``factor`` (e.g.
    the epochs of a whole training); None unless measured."""
    energy = (record or {}).get("energy")
    if not isinstance(energy, dict) or not energy.get("measured"):
        return None
    return scale(energy["summary"], factor / energy["images"] if per_image else factor, "J")


def _joules(value: float) -> str:
    """Joules with a unit that keeps the number short: "0.012 J", "412 J", "3.1 kJ"."""
    from gpulesson.experiments.common import fmt_number

    if abs(value) >= 10_000:
        return f"{fmt_number(value / 1e3)} kJ"
    return f"{fmt_number(value)} J"


def energy_text(record: dict | None, *, per_image: bool = False, factor: float = 1.0,
                what: str = "epochs", missing: str = NOT_MEASURED) -> str:
    """A page's view of a record's energy: "412 J (range 405–420 J, 5 epochs)", per image if
    asked, times ``factor``; "not measurable on this machine (<reason>)"; ``missing`` for a record without an
    energy measurement (made before it was kept), or for no record."""
    if not record:
        return missing
    energy = record.get("energy")
    if not isinstance(energy, dict):
        return missing
    if not energy.get("measured"):
        return f"{UNMEASURABLE} ({energy.get('reason') or 'no reason recorded'})"
    return summary_text(energy_summary(record, per_image, factor), _joules, what=what)
