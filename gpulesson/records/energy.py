"""Energy in the records and on the pages: what an experiment keeps of a meter
(:mod:`gpulesson.machine.energy`), and the words a page shows for it.

A record's ``energy`` is ``measured`` with ``window`` "each" (every timed interval's joules;
older records have no ``window``) or "phase" (intervals too short for the meter one by one, the
whole timed phase as one window); or not ``measured``, ``below_resolution`` or with the
``reason`` no counter could be read. A window is never read as 0 J.
"""

import time

from gpulesson.machine.energy import MIN_CHANGES, EnergyUnavailable, Intervals, open_meter, unmeasured
from gpulesson.machine.timing import synchronise
from gpulesson.records.results import duration
from gpulesson.records.summaries import fmt_number, scale, summarise, summary_text

MAX_WINDOW_SECONDS = 30.0  # energy_of_calls stops here, counted or not

NOT_MEASURED = "not measured (the record was made before energy was measured)"
UNMEASURABLE = "not measurable on this machine"
BELOW_RESOLUTION = "below the resolution of the meter"


def measured(source: str, joules, warmup: int, images: int) -> dict:
    """A record's ``energy`` of each interval's ``joules``, the first ``warmup`` the warm-up."""
    values = [float(j) for j in joules]
    if len(values) <= warmup:
        raise ValueError(f"{len(values)} energy reading(s) leave no timed interval after "
                         f"{warmup} warm-up")
    return {"measured": True, "source": source, "images": int(images),
            "summary": summarise(values[warmup:], values[:warmup], unit="J")}


def start_intervals(device_kind: str, **kwargs) -> tuple[Intervals, str | None]:
    """``(intervals, None)`` on the device's meter, its thread started (leave it with
    :func:`stop_intervals`); or intervals that record nothing and why no meter can be read."""
    try:
        meter = open_meter(device_kind, **kwargs)
    except EnergyUnavailable as exc:
        return Intervals(None), str(exc)
    meter.__enter__()
    return Intervals(meter), None


def _meter_fields(meter) -> dict:
    step = meter.step_joules if meter.counter else None
    return {"source": meter.source, "step_joules": step, "min_changes": MIN_CHANGES}


def phase_energy(meter, window: dict, *, images: int, what: str = "timed intervals") -> dict:
    """A record's ``energy`` of one ``window`` of intervals of ``images`` images each: measured
    where the meter's reading changed often enough in it, else below its resolution."""
    fields = {**_meter_fields(meter), "joules": float(window["joules"]),
              "seconds": float(window["seconds"]), "changes": int(window["changes"])}
    if window["changes"] >= MIN_CHANGES and window["joules"] > 0:
        intervals = int(window["intervals"])
        return {"measured": True, "window": "phase", "images": int(images),
                "intervals": intervals, **fields,
                "summary": summarise([window["joules"] / intervals], unit="J")}
    step = f", {fields['step_joules']:.3g} J a step" if fields["step_joules"] else ""
    reason = (f"the {what} lasted {window['seconds']:.3g} s in all, in which the meter's "
              f"reading changed {window['changes']} time(s){step}; a measurement needs at "
              f"least {MIN_CHANGES} changes")
    return {"measured": False, "below_resolution": True, "reason": reason, **fields}


def stop_intervals(intervals: Intervals, reason: str | None, *, warmup: int, images: int) -> dict:
    """Stop the meter of :func:`start_intervals`; the ``energy`` of each timed interval where
    every one was long enough for the meter, else of the whole timed phase as one window."""
    if intervals.meter is None:
        return unmeasured(reason or "no energy meter")
    intervals.meter.__exit__(None, None, None)
    if len(intervals.joules) <= warmup:
        return unmeasured("the meter read no interval after the warm-up")
    timed = intervals.changes[warmup:]
    if min(timed) >= MIN_CHANGES and min(intervals.joules[warmup:]) > 0:
        return {**measured(intervals.meter.source, intervals.joules, warmup, images),
                "window": "each", "changes": list(intervals.changes),
                **_meter_fields(intervals.meter)}
    return phase_energy(intervals.meter, intervals.window(warmup), images=images)


def energy_of_calls(fn, device_kind: str, *, images: int, meter=None,
                    max_seconds: float = MAX_WINDOW_SECONDS, **kwargs) -> dict:
    """A record's ``energy`` of calls of ``fn`` (``images`` images each, each waiting for its
    work) repeated in one window until the meter's reading changed often enough, or
    ``max_seconds`` passed; ``meter``: default the device's (:func:`open_meter` with ``kwargs``)."""
    from gpulesson.machine.timing import timed

    if meter is None:
        try:
            meter = open_meter(device_kind, **kwargs)
        except EnergyUnavailable as exc:
            return unmeasured(str(exc))
    with meter:
        start = meter.reading()
        calls, began = 0, time.perf_counter()
        while True:
            timed(fn)
            calls += 1
            if (meter.changes - start[1] >= MIN_CHANGES
                    or time.perf_counter() - began >= max_seconds):
                break
        end = meter.reading()
    window = {"joules": end[0] - start[0], "changes": end[1] - start[1],
              "seconds": end[2] - start[2], "intervals": calls}
    return phase_energy(meter, window, images=images, what=f"{calls} call(s)")


def energy_callback(intervals):
    """A Keras callback that reads ``intervals`` at each epoch's start and, once its work is
    done (its logs fetched, as the epoch timer does), its end."""
    import keras

    class EpochEnergy(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            intervals.begin()

        def on_epoch_end(self, epoch, logs=None):
            synchronise(logs)  # the epoch's work is done before the meter is read
            intervals.end()

    return EpochEnergy()


def energy_summary(record: dict | None, per_image: bool = False,
                   factor: float = 1.0) -> dict | None:
    """The summary of a record's joules per interval (or per image), times ``factor`` (e.g.
    a whole training's epochs); None unless measured."""
    energy = (record or {}).get("energy")
    if not isinstance(energy, dict) or not energy.get("measured") or _zero_intervals(energy):
        return None
    return scale(energy["summary"], factor / energy["images"] if per_image else factor, "J")


def _zero_intervals(energy: dict) -> bool:
    """Whether an older record read its intervals one by one and some read 0 J: they were
    shorter than a step of the counter, so none of its numbers is a measurement."""
    summary = energy.get("summary") or {}
    return ("window" not in energy
            and min([*summary.get("samples", []), *summary.get("warmup", [])], default=1) <= 0)


OLD_ZERO = ("the record read its intervals one by one, and some read 0 J: each was shorter "
            "than a step of the counter")


def _joules(value: float) -> str:
    """Joules with a unit that keeps the number short: "0.012 J", "412 J", "3.1 kJ"."""
    if abs(value) >= 10_000:
        return f"{fmt_number(value / 1e3)} kJ"
    return f"{fmt_number(value)} J"


def energy_text(record: dict | None, *, per_image: bool = False, factor: float = 1.0,
                what: str = "epochs", missing: str = NOT_MEASURED) -> str:
    """A page's view of a record's energy: "412 J (range 405–420 J, 5 epochs)", per image if
    asked, times ``factor``; "not measurable on this machine (<reason>)"; ``missing`` without
    a record or its energy."""
    energy = (record or {}).get("energy")
    if not isinstance(energy, dict):
        return missing
    if energy.get("below_resolution"):
        return f"{BELOW_RESOLUTION} ({energy['reason']})"
    if energy.get("measured") and _zero_intervals(energy):
        return f"{BELOW_RESOLUTION} ({OLD_ZERO})"
    if not energy.get("measured"):
        return f"{UNMEASURABLE} ({energy.get('reason') or 'no reason recorded'})"
    if energy.get("window") == "phase":  # "0.25 J (the mean of 5 epochs, measured as one window ...)"
        mean = energy["joules"] / energy["intervals"] * factor
        if per_image:
            mean /= energy["images"]
        return (f"{_joules(mean)} (the mean of {energy['intervals']:,} {what}, measured as one "
                f"window of {_joules(energy['joules'])} in {duration(energy['seconds'])}: one "
                f"{what.rstrip('s')} alone is too short for the meter)")
    return summary_text(energy_summary(record, per_image, factor), _joules, what=what)
