"""The figures of a run: epoch times and the time bars (``fig/05-cpu-vs-gpu/reference.py``)."""

from __future__ import annotations

from gpulesson.results import data_label, hardware, is_gpu
from gpulesson.results import pick as _pick


def figures(records, *, first_epoch: str = "includes compiling", hardware_names=None):
    """The epoch-time plot and the time bar chart of one run's records: ``(fig, fig)``.

    ``first_epoch`` says what the first epoch's extra time includes; ``hardware_names``
    replaces :func:`gpulesson.results.hardware` of the records in the titles."""
    from gpulesson import compare_plots

    if not records:
        raise ValueError("no records to plot: run the training first, or record a reference run")
    label = data_label(records)
    cpu, gpu = _pick(records, False), _pick(records, True)
    names = dict(hardware_names or hardware(records))
    # The devices that ran, named; one that did not is said in words ("no GPU run"), not
    # titled "GPU: not recorded yet" as if that were its name.
    ran = {"CPU": cpu, "GPU": gpu}
    detail = "; ".join([f"{kind}: {names.get(kind, kind)}" for kind in ran if ran[kind]]
                       + [f"no {kind} run" for kind in ran if not ran[kind]])
    epochs = compare_plots.epoch_times(cpu["epoch_seconds"] if cpu else None,
                                       gpu["epoch_seconds"] if gpu else None,
                                       label=label, hardware=detail, first_epoch=first_epoch)
    rows = [{**r, "device": "GPU" if is_gpu(r) else "CPU"} for r in records]
    return epochs, compare_plots.time_bars(rows, label=label)
