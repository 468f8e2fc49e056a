"""Feeding the GPU: training throughput of the lesson's CNN from each input pipeline.

    python -m gpulesson.feeding                        # CPU, then GPU if one is visible
    KERAS_BACKEND=jax python -m gpulesson.feeding --devices cpu gpu --sweep-devices gpu \
        --cpu-max-steps 20 --classic-max-steps 40 --max-seconds 15
    python -m gpulesson.feeding --quick --out my-feeding.jsonl

The benchmark of the episode "Feeding the GPU". It trains the lesson's CNN
(:func:`gpulesson.lesson.build_cnn`) on 50,000 CIFAR-shaped images of the synthetic stand-in
(speed does not depend on the pixel values) from each pipeline of
:data:`PIPELINES` (made by :mod:`gpulesson.feeding_pipelines`): the classic tutorial generator (the
instructive mistake), the lesson's generator on uncompressed and compressed batch-chunked files, with and
without worker processes, the whole data set in RAM, and the data already on the device. On
the best of them it then varies one setting at a time (:data:`SWEEPS`): mixed precision, XLA
compilation (``jit_compile``) off, ``steps_per_execution`` and the batch size.

How it measures. One model per setting (device, precision, jit, steps per execution, batch
size) is built and compiled once and trained with ``model.fit`` from every pipeline in turn
(its weights go on training: the speed does not depend on them). Each pipeline gets a warm-up
epoch (compiling, worker start-up, caches), which is not counted, then ``repeats`` timed
epochs. :class:`SyncedEpochTimer` reads the clock only after the epoch's last step has finished
on the device: it converts the epoch's loss to a Python number, which waits for the work behind
it (JAX and PyTorch return from a step before the GPU has done it). The records give the
median epoch time, its spread (fastest and slowest epoch) and images/s from the median. The
loader alone (no model) is timed the same way: one epoch of batches as Keras fetches them,
each converted to a tensor on the device, waiting for the last one.

A slow device may time only the first ``max_steps`` batches of each epoch (``--max-steps``,
``--cpu-max-steps``, ``--classic-max-steps``): the record says so (``partial_epoch``,
``steps``), and its images/s come from those steps. (The classic pipeline's whole-file read at
the end of each epoch then weighs more per step than in a whole epoch: a partial epoch makes
it look somewhat slower than it is.)
Timed epochs stop early once they have taken ``max_seconds`` together (at least one is timed).

Records (:func:`measurement_record`) share one ``run_id``; :func:`substitutions` gives the
episode's numbers (``ref_feed_*``), :func:`targets` checks the lesson's goals, and
``fig/08-feeding-the-gpu/figures.py`` draws the figures (:func:`figures`). Never imports TensorFlow.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gpulesson import results
from gpulesson.devices import KERAS_DEVICES as DEVICES
from gpulesson.devices import keras_device_name as check_device
from gpulesson.results import (
    NOT_RECORDED,
    data_label,
    hardware,
    make_record,
    new_run_id,
)
from gpulesson.results import duration as _seconds

EXPERIMENT = "feeding"
RESULTS_FILE = Path(__file__).resolve().parents[1] / "results" / f"{EXPERIMENT}.jsonl"
DATA = "synthetic"
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
SWEEPS = ("precision", "jit", "spe", "batch")
N_IMAGES, QUICK_N_IMAGES = 50_000, 1_024
BATCH_SIZE, QUICK_BATCH_SIZE = 256, 64
BATCH_SIZES, QUICK_BATCH_SIZES = (250, 512, 1024, 2048), (32, 128)
SPE_VALUES, QUICK_SPE_VALUES = (4, 16), (4,)
REPEATS, QUICK_REPEATS = 3, 1
WARMUP = 1
MAX_SECONDS = 30.0  # timed epochs of one pipeline stop once they took this long together
TARGET_SHARE = 0.90  # the lesson's HDF5 pipeline: at least 90 % of device-resident data
TARGET_EPOCH_SECONDS = 1.0  # and one epoch of 50,000 images in at most 1 s on the GPU
BASE = {"precision": "float32", "jit_compile": True, "steps_per_execution": 1}
BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged


# --- the pipelines (gpulesson.feeding_pipelines makes them) ----------------------------

# name -> what it is (for tables, figure labels and records)
PIPELINES: dict[str, str] = {
    "classic": "classic tutorial: chunks=True + gzip, reads all to count (the mistake)",
    "lesson": "lesson generator, batch chunks, uncompressed",
    "lesson-lzf": "lesson generator, batch chunks + lzf",
    "lesson-gzip": "lesson generator, batch chunks + gzip",
    "lesson-workers": "lesson generator, uncompressed, worker processes",
    "lesson-gzip-workers": "lesson generator, gzip, worker processes",
    "ram": "whole data set in RAM (float32 array)",
    "device": "whole data set resident on the device",
}
# The data file each pipeline reads (None: no file), by its compression in the lesson format.
FILES: dict[str, str | None] = {
    "classic": "classic", "lesson": "none", "lesson-lzf": "lzf", "lesson-gzip": "gzip",
    "lesson-workers": "none", "lesson-gzip-workers": "gzip", "ram": None, "device": None,
}
HDF5_PIPELINES = tuple(name for name, kind in FILES.items() if kind and kind != "classic")
WORKER_PIPELINES = ("lesson-workers", "lesson-gzip-workers")


def check_pipelines(names) -> list[str]:
    names = list(names)
    if not names:
        raise ValueError("no pipelines given")
    unknown = [n for n in names if n not in PIPELINES]
    if unknown:
        raise ValueError(f"unknown pipeline(s) {', '.join(map(repr, unknown))}: "
                         f"choose from {', '.join(PIPELINES)}")
    return list(dict.fromkeys(names))


# --- checks -----------------------------------------------------------------------------------

def check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    return precision


def _whole(name: str, value, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


# --- timing -----------------------------------------------------------------------------------

def _keras():
    import keras

    return keras


class _Budget:
    """Epoch times: a warm-up that is not counted, then timed epochs until ``repeats`` are
    done or they took ``max_seconds`` together."""

    def __init__(self, warmup: int, repeats: int, max_seconds: float):
        self.warmup, self.repeats, self.max_seconds = warmup, repeats, max_seconds
        self.seconds: list[float] = []

    @property
    def timed(self) -> list[float]:
        return self.seconds[self.warmup:]

    def done(self) -> bool:
        timed = self.timed
        return len(timed) >= self.repeats or (timed and sum(timed) >= self.max_seconds)


def _synchronise(logs) -> None:
    """Wait until the epoch's work is done on the device: converting the loss that its last
    step computed to a Python number has to wait for it (and, on a GPU, for everything queued
    before it)."""
    for value in (logs or {}).values():
        float(value)


def _synced_timer_class():
    keras = _keras()

    class SyncedEpochTimer(keras.callbacks.Callback):
        """Epoch wall times of ``model.fit``, each read after the device finished the epoch;
        stops training when its :class:`_Budget` is done."""

        def __init__(self, budget: _Budget):
            super().__init__()
            self.budget, self._start = budget, None

        def on_epoch_begin(self, epoch, logs=None):
            self._start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            _synchronise(logs)
            self.budget.seconds.append(time.perf_counter() - self._start)
            if self.budget.done():
                self.model.stop_training = True

    return SyncedEpochTimer


def _device_tensor(x, keras_device: str):
    keras = _keras()
    with keras.device(keras_device):
        return keras.ops.convert_to_tensor(x)


def _wait(tensor) -> None:
    """Wait for ``tensor`` by fetching one of its elements to the host (as
    :func:`gpulesson.matmul.wait`)."""
    keras = _keras()
    keras.ops.convert_to_numpy(keras.ops.reshape(tensor, (-1,))[:1])


def _batches(dataset):
    """The batches of one epoch of ``dataset`` as ``model.fit`` fetches them: with its worker
    threads or processes when it has any (Keras' own adapter, the one ``fit`` uses)."""
    from keras.src.trainers.data_adapters.py_dataset_adapter import PyDatasetAdapter

    adapter = PyDatasetAdapter(dataset, shuffle=False)
    adapter.on_epoch_begin()
    try:
        if adapter.enqueuer is None:
            for index in range(len(dataset)):
                yield dataset[index]
        else:
            yield from adapter._get_iterator()
    finally:
        adapter.on_epoch_end()


def time_loader(dataset, keras_device: str, *, warmup: int = WARMUP, repeats: int = REPEATS,
                max_seconds: float = MAX_SECONDS) -> _Budget:
    """Time epochs of ``dataset`` without a model: every batch is fetched as ``fit`` fetches it
    and converted to a tensor on ``keras_device`` (as the model would receive it); the clock
    stops once the last one is there."""
    budget = _Budget(warmup, repeats, max_seconds)
    while not budget.done():
        start = time.perf_counter()
        last = None
        for x, y in _batches(dataset):
            last = (_device_tensor(x, keras_device), _device_tensor(y, keras_device))
        _wait(last[0])
        _wait(last[1])
        budget.seconds.append(time.perf_counter() - start)
    return budget


def time_training(model, dataset, *, warmup: int = WARMUP, repeats: int = REPEATS,
                  max_seconds: float = MAX_SECONDS) -> _Budget:
    """Train ``model`` on ``dataset`` with ``fit``: ``warmup`` epochs, then timed epochs."""
    budget = _Budget(warmup, repeats, max_seconds)
    timer = _synced_timer_class()(budget)
    model.fit(dataset, epochs=warmup + repeats, callbacks=[timer], verbose=0)
    return budget


@contextlib.contextmanager
def precision_policy(precision: str):
    """Build layers in ``precision`` (a Keras dtype policy) inside the block; the previous
    global policy is restored afterwards, even after an error."""
    keras = _keras()
    check_precision(precision)
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def build_model(keras_device: str, *, precision: str = "float32", jit_compile: bool = True,
                steps_per_execution: int = 1):
    """The lesson's CNN (:func:`gpulesson.lesson.build_cnn`), compiled as
    :func:`gpulesson.lesson.compile_cnn` does (Adam, sparse categorical cross-entropy,
    accuracy) with the benchmark's ``jit_compile`` and ``steps_per_execution``."""
    keras = _keras()
    from gpulesson.lesson import build_cnn

    _whole("steps_per_execution", steps_per_execution)
    with keras.device(keras_device), precision_policy(precision):
        model = build_cnn()
        model.compile(optimizer=keras.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"],
                      jit_compile=jit_compile, steps_per_execution=steps_per_execution)
    return model


class _BusyMeter:
    """Other programs' share of the machine's CPU time while measuring, and the load average.

    The matmul benchmark's meter (:class:`gpulesson.matmul._BusyMeter`) plus
    ``os.getloadavg()`` at the end."""

    def __init__(self):
        from gpulesson.matmul import _BusyMeter as Meter

        self.meter = Meter()

    def read(self) -> dict:
        try:
            load = [round(v, 2) for v in os.getloadavg()]
        except OSError:
            load = None
        return {"other_programs_cpu_share": self.meter.other_share(), "load_average": load}


# --- records ----------------------------------------------------------------------------------

def measurement_record(budget: _Budget, *, run_id: str, device: str, pipeline: str, mode: str,
                       batch_size: int, steps: int, full_steps: int, n_images: int,
                       precision: str | None, jit_compile: bool | None,
                       steps_per_execution: int | None, group: str, extra: dict) -> dict:
    """One results-file record: one pipeline, one setting, one device, ``mode`` "train"
    (model.fit) or "loader" (batches only). ``steps`` timed batches per epoch of the
    ``full_steps`` a whole epoch of ``n_images`` has."""
    timed = budget.timed
    if not timed:
        raise ValueError("no timed epoch to record")
    images = min(steps * batch_size, n_images)
    median = statistics.median(timed)
    fields = {
        "run_id": run_id, "source": "gpulesson.feeding", "device_kind": device,
        "keras_device": check_device(device), "pipeline": pipeline,
        "pipeline_label": PIPELINES[pipeline], "mode": mode, "group": group,
        "precision": precision, "jit_compile": jit_compile,
        "steps_per_execution": steps_per_execution, "batch_size": batch_size,
        "n_images": n_images, "steps": steps, "full_epoch_steps": full_steps,
        "images_per_epoch": images, "partial_epoch": steps < full_steps,
        "warmup_epochs": budget.warmup, "repeats": len(timed),
        "warmup_seconds": budget.seconds[:budget.warmup], "epoch_seconds": timed,
        "median_epoch_seconds": median, "min_epoch_seconds": min(timed),
        "max_epoch_seconds": max(timed), "images_per_second": images / median,
        "images_per_second_low": images / max(timed),
        "images_per_second_high": images / min(timed),
        "full_epoch_seconds": n_images / (images / median), **extra,
    }
    if device == "cpu":
        fields["device"] = "CPU"
    return make_record(EXPERIMENT, data=DATA, **fields)


def runs(records) -> dict[str, list[dict]]:
    return results.runs(records, EXPERIMENT)


def reference_run(path=RESULTS_FILE) -> list[dict]:
    """The newest run with CPU and GPU records, else with GPU records, else the newest run."""
    return results.reference_run(path, EXPERIMENT)


def cpu_only_run(path=RESULTS_FILE) -> list[dict]:
    """The newest run without GPU records (e.g. a 2-core laptop's), or []."""
    path = Path(path)
    if not path.is_file():
        return []
    found = [group for group in runs(results.read_records(path)).values()
             if not any(results.is_gpu(r) for r in group)]
    return found[-1] if found else []


def find(records, device: str, pipeline: str | None = None, mode: str = "train",
         **setting) -> dict | None:
    """The record of ``device`` and ``pipeline`` in ``mode`` with the base setting (float32,
    jit, one step per execution) updated by ``setting`` and, unless given, the run's base
    batch size."""
    wanted = {**BASE, **setting} if mode == "train" else dict(setting)
    for record in records:
        if (record.get("device_kind") == device and record.get("mode") == mode
                and (pipeline is None or record.get("pipeline") == pipeline)
                and all(record.get(k) == v for k, v in wanted.items())
                and ("batch_size" in setting or record.get("group") == "pipelines")):
            return record
    return None


def best_pipeline(records, device: str) -> str | None:
    """The pipeline with the most images/s in training with the base setting."""
    found = [r for r in records if r.get("device_kind") == device and r.get("mode") == "train"
             and r.get("group") == "pipelines"]
    return max(found, key=lambda r: r["images_per_second"])["pipeline"] if found else None


def best_hdf5(records, device: str) -> dict | None:
    """The fastest training record of the lesson's generator reading an HDF5 file."""
    found = [r for r in records if r.get("device_kind") == device and r.get("mode") == "train"
             and r.get("group") == "pipelines" and r.get("pipeline") in HDF5_PIPELINES]
    return max(found, key=lambda r: r["images_per_second"]) if found else None


def targets(records) -> dict | None:
    """The lesson's goals checked on one run's GPU records; None without them.

    ``share``: images/s of the fastest lesson HDF5 pipeline / device-resident data (goal
    >= 90 %); ``epoch_seconds``: its time for an epoch of all images (goal <= 1 s; estimated
    from the timed steps when the epochs were partial).
    """
    lesson, device = best_hdf5(records, "gpu"), find(records, "gpu", "device")
    if lesson is None or device is None:
        return None
    share = lesson["images_per_second"] / device["images_per_second"]
    epoch = lesson["full_epoch_seconds"]
    return {"pipeline": lesson["pipeline"], "share": share, "share_ok": share >= TARGET_SHARE,
            "epoch_seconds": epoch, "epoch_estimated": lesson["partial_epoch"],
            "epoch_ok": epoch <= TARGET_EPOCH_SECONDS, "n_images": lesson["n_images"],
            "full_size": lesson["n_images"] >= N_IMAGES}


# --- text -------------------------------------------------------------------------------------

def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def software(records) -> str:
    first = records[0]
    backend = first["backend"]
    return f"Keras {first['versions'].get('keras', '?')}, {backend} " \
           f"{first['versions'].get(backend, '?')}"


def _setting(record) -> str:
    if record["mode"] == "loader":
        return "loader only"
    parts = [record["precision"], "jit" if record["jit_compile"] else "no jit"]
    if record["steps_per_execution"] != 1:
        parts.append(f"{record['steps_per_execution']} steps/execution")
    return ", ".join(parts)


def describe(records) -> str:
    """A table of one run: images/s and epoch time (median, range) per record."""
    if not records:
        return "No run recorded."
    lines = [f"Run {records[0]['run_id']}: {software(records)}; {data_label(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in hardware(records).items())]
    lines.append(f"{'device':6} {'pipeline':20} {'mode':6} {'setting':32} {'batch':>5} "
                 f"{'images/s':>10} {'epoch s (min-max)':>24}")
    for r in records:
        part = f" [{r['steps']}/{r['full_epoch_steps']} steps]" if r["partial_epoch"] else ""
        lines.append(
            f"{r['device_kind']:6} {r['pipeline']:20} {r['mode']:6} {_setting(r):32} "
            f"{r['batch_size']:>5} {_rate(r['images_per_second']):>10} "
            f"{r['median_epoch_seconds']:>8.3f} ({r['min_epoch_seconds']:.3f}-"
            f"{r['max_epoch_seconds']:.3f}){part}")
    checks = targets(records)
    if checks:
        lines.append(_targets_text(checks))
    return "\n".join(lines)


def _targets_text(checks: dict | None) -> str:
    if checks is None:
        return NOT_RECORDED
    share = "met" if checks["share_ok"] else "not met"
    epoch = "met" if checks["epoch_ok"] else "not met"
    how = "estimated from partial epochs" if checks["epoch_estimated"] else "measured"
    size = "" if checks["full_size"] else f" (only {checks['n_images']:,} images: not the goal's size)"
    return (f"{checks['pipeline']}: {checks['share']:.0%} of device-resident data "
            f"(goal {TARGET_SHARE:.0%}: {share}); one epoch {checks['epoch_seconds']:.2f} s, "
            f"{how} (goal {TARGET_EPOCH_SECONDS:g} s: {epoch}){size}")


# --- the page's numbers -----------------------------------------------------------------------

def _slug(pipeline: str) -> str:
    return pipeline.replace("-", "_")


def _values_of(records, prefix: str, devices) -> dict[str, str]:
    values = {}
    for device in devices:
        for pipeline in PIPELINES:
            key = f"{prefix}_{device}_{_slug(pipeline)}"
            train = find(records, device, pipeline)
            loader = find(records, device, pipeline, "loader")
            values[f"{key}_ips"] = _rate(train["images_per_second"]) if train else NOT_RECORDED
            values[f"{key}_epoch"] = (_seconds(train["full_epoch_seconds"]) if train
                                      else NOT_RECORDED)
            values[f"{key}_loader_ips"] = (_rate(loader["images_per_second"]) if loader
                                           else NOT_RECORDED)
        lesson, classic = best_hdf5(records, device), find(records, device, "classic")
        values[f"{prefix}_{device}_best_hdf5"] = lesson["pipeline"] if lesson else NOT_RECORDED
        values[f"{prefix}_{device}_classic_slowdown"] = (
            f"{lesson['images_per_second'] / classic['images_per_second']:.0f}"
            if lesson and classic else NOT_RECORDED)
        best = best_pipeline(records, device)
        values[f"{prefix}_{device}_best"] = best or NOT_RECORDED
        # How much of each epoch was timed (the epoch times above are extrapolated from it).
        lesson = find(records, device, "lesson")
        values[f"{prefix}_{device}_timed"] = NOT_RECORDED if lesson is None else (
            f"the first {lesson['steps']} of {lesson['full_epoch_steps']} batches of each epoch"
            if lesson["partial_epoch"] else "whole epochs")
    return values


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """The episode's numbers (``ref_feed_*``) from the reference run, and ``ref_feed_cpuonly_*``
    from the newest CPU-only run; NOT_RECORDED for whatever they lack."""
    records = reference_run(path)
    names = hardware(records)
    values = {
        "ref_feed_run": records[0]["run_id"] if records else NOT_RECORDED,
        "ref_feed_date": records[0]["date"][:10] if records else NOT_RECORDED,
        "ref_feed_software": software(records) if records else NOT_RECORDED,
        "ref_feed_cpu": names.get("CPU", NOT_RECORDED),
        "ref_feed_gpu": names.get("GPU", NOT_RECORDED),
        **_values_of(records, "ref_feed", ("cpu", "gpu")),
    }
    checks = targets(records)
    device = find(records, "gpu", "device")
    values["ref_feed_lesson_vs_device"] = f"{checks['share']:.0%}" if checks else NOT_RECORDED
    values["ref_feed_gpu_lesson_epoch_best"] = (_seconds(checks["epoch_seconds"]) if checks
                                                else NOT_RECORDED)
    values["ref_feed_gpu_device_epoch_best"] = (_seconds(device["full_epoch_seconds"]) if device
                                                else NOT_RECORDED)
    values["ref_feed_targets"] = _targets_text(checks)
    values["ref_feed_classic_slowdown"] = values["ref_feed_gpu_classic_slowdown"]
    lesson_gpu, lesson_cpu = find(records, "gpu", "lesson"), find(records, "cpu", "lesson")
    values["ref_feed_gpu_vs_cpu"] = (
        f"{lesson_gpu['images_per_second'] / lesson_cpu['images_per_second']:.0f}"
        if lesson_gpu and lesson_cpu else NOT_RECORDED)
    sweep = [r for r in records if r.get("device_kind") == "gpu" and r.get("group") == "batch"]
    best_batch = max(sweep, key=lambda r: r["images_per_second"]) if sweep else None
    values["ref_feed_gpu_best_batch"] = (f"{best_batch['batch_size']:,}" if best_batch
                                         else NOT_RECORDED)
    for key, group, match in (("mixed_bfloat16", "precision", {"precision": "mixed_bfloat16"}),
                              ("mixed_float16", "precision", {"precision": "mixed_float16"}),
                              ("nojit", "jit", {"jit_compile": False})):
        found = next((r for r in records if r.get("device_kind") == "gpu"
                      and r.get("group") == group
                      and all(r.get(k) == v for k, v in match.items())), None)
        values[f"ref_feed_gpu_{key}_ips"] = (_rate(found["images_per_second"]) if found
                                             else NOT_RECORDED)
    small = cpu_only_run(path)
    small_names = hardware(small)
    values["ref_feed_cpuonly_cpu"] = small_names.get("CPU", NOT_RECORDED)
    values["ref_feed_cpuonly_run"] = small[0]["run_id"] if small else NOT_RECORDED
    values.update(_values_of(small, "ref_feed_cpuonly", ("cpu",)))
    return values


# --- figures ----------------------------------------------------------------------------------

_DEVICE_COLOUR = {"cpu": "tab:blue", "gpu": "tab:orange"}
_MODE_STYLE = {"train": {"hatch": "", "alpha": 1.0},
               "loader": {"hatch": "//", "alpha": 0.45}}


def _title(fig, what: str, records) -> None:
    names = hardware(records)
    devices = " | ".join(f"{k}: {names.get(k, NOT_RECORDED)}" for k in ("CPU", "GPU"))
    fig.suptitle(f"{what} | {data_label(records)}\n{devices}\n"
                 f"{software(records)} | run {records[0]['run_id']}", fontsize=9.5)


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def _bar_text(record) -> str:
    text = f"{_rate(record['images_per_second'])}/s"
    if record["partial_epoch"]:
        text += f" ({record['steps']} steps)"
    return text + (" *" if _busy(record) else "")


def _busy_note(fig, records) -> None:
    if any(_busy(r) for r in records):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")


def figures(records):
    """Two figures of one run: ``(images/s per pipeline, settings on the best pipeline)``.

    First: one panel per device, one row per pipeline, a solid bar for training and a hatched,
    paler bar for the loader alone, each labelled with its value (error bars: fastest to
    slowest epoch). Second: training images/s on the swept pipeline for each setting varied
    from the base (float32, jit, 1 step per execution, base batch size), one panel per kind of
    setting, the base bar marked "base". A device without records says "not recorded yet".
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if not records:
        raise ValueError("no records to plot: run the benchmark first")
    devices = ("cpu", "gpu")
    fig, axes = plt.subplots(1, 2, figsize=(13, 6.2), sharey=True)
    order = [p for p in PIPELINES if any(r["pipeline"] == p for r in records)]
    positions = np.arange(len(order))
    for ax, device in zip(axes, devices, strict=True):
        ax.set_title(f"{device.upper()}", fontsize=10)
        found, labelled = False, set()
        for offset, mode in ((-0.2, "train"), (0.2, "loader")):
            for i, pipeline in enumerate(order):
                record = find(records, device, pipeline, mode)
                if record is None:
                    continue
                found = True
                rate = record["images_per_second"]
                err = [[rate - record["images_per_second_low"]],
                       [record["images_per_second_high"] - rate]]
                label = ("training (model.fit)" if mode == "train" else
                         "loader alone (no model)")
                ax.barh(i + offset, rate, height=0.38, xerr=err, capsize=2,
                        color=_DEVICE_COLOUR[device], edgecolor="black",
                        label=None if label in labelled else label, **_MODE_STYLE[mode])
                labelled.add(label)
                ax.annotate(f"{'train' if mode == 'train' else 'loader'} {_bar_text(record)}",
                            (rate, i + offset), xytext=(4, 0), textcoords="offset points",
                            va="center", fontsize=7)
        if not found:
            ax.text(0.5, 0.5, f"{device.upper()}: {NOT_RECORDED}", transform=ax.transAxes,
                    ha="center", va="center", fontsize=11, style="italic")
            ax.set_xticks([])
            continue
        ax.set_xscale("log")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
        ax.set_xlabel("images per second (log scale, median; bars: fastest to slowest epoch)")
        ax.grid(axis="x", alpha=0.3)
        ax.margins(x=0.35)
    axes[0].set_yticks(positions, [PIPELINES[p].replace(", ", ",\n", 1) for p in order],
                       fontsize=8)
    axes[0].invert_yaxis()
    base = next((r for r in records if r.get("group") == "pipelines"), records[0])
    _title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
                f" {base['n_images']:,} images)", records)
    fig.tight_layout()
    _busy_note(fig, records)

    sweeps, axes2 = plt.subplots(1, len(SWEEPS), figsize=(13, 4.6))
    swept = [r for r in records if r.get("group") in SWEEPS]
    device = "gpu" if any(r["device_kind"] == "gpu" for r in swept) else "cpu"
    swept = [r for r in swept if r["device_kind"] == device]
    pipeline = swept[0]["pipeline"] if swept else None
    base = find(records, device, pipeline) if pipeline else None
    names = {"precision": "precision", "jit": "XLA compilation",
             "spe": "steps per execution", "batch": "batch size"}
    for ax, group in zip(axes2, SWEEPS, strict=True):
        rows = [r for r in swept if r["group"] == group]
        if base:
            rows = [base, *rows]
        if group == "batch":
            rows.sort(key=lambda r: r["batch_size"])
        ax.set_title(names[group], fontsize=10)
        if len(rows) < 2:
            ax.text(0.5, 0.5, NOT_RECORDED, transform=ax.transAxes, ha="center", va="center",
                    style="italic")
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        labels = []
        for i, r in enumerate(rows):
            labels.append({"precision": r["precision"].replace("mixed_", "mixed\n"),
                           "jit": "jit on" if r["jit_compile"] else "jit off",
                           "spe": str(r["steps_per_execution"]),
                           "batch": str(r["batch_size"])}[group])
            is_base = r is base
            ax.bar(i, r["images_per_second"], color=_DEVICE_COLOUR[device], edgecolor="black",
                   hatch="" if is_base else "..",
                   yerr=[[r["images_per_second"] - r["images_per_second_low"]],
                         [r["images_per_second_high"] - r["images_per_second"]]], capsize=2)
            ax.text(i, r["images_per_second"] / 2,
                    _rate(r["images_per_second"]) + (" *" if _busy(r) else "")
                    + ("\n(base)" if is_base else ""), ha="center", va="center", fontsize=7.5,
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
        ax.set_xticks(range(len(rows)), labels, fontsize=8)
        ax.margins(y=0.2)
        ax.grid(axis="y", alpha=0.3)
    axes2[0].set_ylabel("training images per second")
    other = "" if device == "gpu" else f" | GPU: {NOT_RECORDED}"
    what = (f"{device.upper()}, pipeline '{pipeline}': one setting changed at a time "
            f"(base: float32, jit on, 1 step/execution){other}" if pipeline
            else f"Settings: {NOT_RECORDED}")
    _title(sweeps, what, records)
    sweeps.tight_layout()
    _busy_note(sweeps, [*swept, *([base] if base else [])])
    return fig, sweeps


# --- the benchmark ----------------------------------------------------------------------------

def _arrays(n_images: int, seed: int = 0):
    from gpulesson.synthetic import make_synthetic

    (x, y), _ = make_synthetic(n_images, 10, seed=seed, progress=False)
    return x, y


def run_benchmark(*, devices, pipelines, batch_size: int, n_images: int, repeats: int,
                  warmup: int = WARMUP, max_steps=None, cpu_max_steps=None,
                  classic_max_steps=None, max_seconds: float = MAX_SECONDS, workers: int = 2, sweeps=SWEEPS,
                  sweep_devices=None, sweep_pipeline: str | None = None,
                  batch_sizes=BATCH_SIZES, spe_values=SPE_VALUES,
                  precisions=PRECISIONS[1:], data_dir=None, run_id: str | None = None,
                  on_record=None, progress=print) -> list[dict]:
    """Measure; returns the records (``on_record(record)`` is called as each one is made).

    For each device: every pipeline at ``batch_size`` with the base setting, training and
    loader alone; then, on ``sweep_devices`` (default: the first device), the ``sweeps`` on
    ``sweep_pipeline`` (default: the device's fastest pipeline). ``max_steps`` (and
    ``cpu_max_steps`` for the CPU, ``classic_max_steps`` for the slow classic pipeline, when
    smaller) time partial epochs. Data files go to ``data_dir`` (default:
    a temporary folder, deleted afterwards).
    """
    from gpulesson import feeding_pipelines as fp

    pipelines = fp.check_pipelines(pipelines)
    for device in devices:
        check_device(device)
    for name, value in (("batch_size", batch_size), ("n_images", n_images),
                        ("repeats", repeats), ("workers", workers)):
        _whole(name, value)
    _whole("warmup", warmup, 0)
    for name, value in (("max_steps", max_steps), ("cpu_max_steps", cpu_max_steps),
                        ("classic_max_steps", classic_max_steps)):
        if value is not None:
            _whole(name, value)
    if batch_size > n_images:
        raise ValueError(f"batch_size {batch_size} is larger than n_images {n_images}")
    unknown = set(sweeps) - set(SWEEPS)
    if unknown:
        raise ValueError(f"unknown sweep(s) {sorted(unknown)}: choose from {', '.join(SWEEPS)}")
    if sweep_pipeline is not None:
        fp.check_pipelines([sweep_pipeline])
    for p in precisions:
        check_precision(p)
    run_id = run_id or new_run_id()
    sweep_devices = list(devices[:1] if sweep_devices is None else sweep_devices)
    made: list[dict] = []
    cleanup = None
    if data_dir is None:
        cleanup = tempfile.TemporaryDirectory(prefix="gpulesson-feeding-")
        data_dir = cleanup.name
    try:
        x, y = _arrays(n_images)
        ram = (x.astype("float32") / 255.0, y.astype("int32"))
        files: dict[int, dict] = {}

        def files_for(size, names):
            kinds = [fp.FILES[n] for n in names if fp.FILES[n]]
            have = files.setdefault(size, {})
            missing = [k for k in dict.fromkeys(kinds) if k not in have]
            if missing:
                started = time.perf_counter()
                have.update(fp.write_files(data_dir, x, y, missing, batch_size=size))
                progress(f"wrote {', '.join(missing)} file(s), batch {size} chunks, in "
                         f"{time.perf_counter() - started:.1f} s")
            return have

        def measure(device, names, *, size, group, precision="float32", jit=True, spe=1,
                    loader=True):
            keras_device = check_device(device)
            device_limit = cpu_max_steps if device == "cpu" and cpu_max_steps else max_steps
            paths = files_for(size, names)
            on_device = fp.to_device(*ram, keras_device) if "device" in names else None
            model = build_model(keras_device, precision=precision, jit_compile=jit,
                                steps_per_execution=spe)
            for name in names:
                meter = _BusyMeter()
                full = fp.make_pipeline(name, batch_size=size, files=paths, arrays=ram,
                                        device_arrays=on_device, workers=workers)
                steps_limit = device_limit
                if name == "classic" and classic_max_steps:
                    steps_limit = min(filter(None, (device_limit, classic_max_steps)))
                dataset = fp.limit(full, steps_limit)
                extra = {"workers": workers if name in fp.WORKER_PIPELINES else 0}
                if fp.FILES[name]:
                    extra.update(fp.file_info(paths[fp.FILES[name]]))
                common = {"run_id": run_id, "device": device, "pipeline": name, "batch_size": size,
                          "steps": len(dataset), "full_steps": len(full), "n_images": n_images,
                          "group": group}
                for mode in ("train", "loader") if loader else ("train",):
                    if mode == "train":
                        with keras_scope(keras_device):
                            budget = time_training(model, dataset, warmup=warmup,
                                                   repeats=repeats, max_seconds=max_seconds)
                        setting = {"precision": precision, "jit_compile": jit,
                                   "steps_per_execution": spe}
                    else:
                        budget = time_loader(dataset, keras_device, warmup=warmup,
                                             repeats=repeats, max_seconds=max_seconds)
                        setting = {"precision": None, "jit_compile": None,
                                   "steps_per_execution": None}
                    if name == "classic":
                        extra["full_reads"] = full.full_reads
                    record = measurement_record(budget, **common, mode=mode, **setting,
                                                extra={**extra, **meter.read()})
                    made.append(record)
                    if on_record:
                        on_record(record)
                    progress(f"{device} {name:20} {mode:6} {_setting(record):30} batch {size:5}: "
                             f"{_rate(record['images_per_second']):>9} images/s, epoch "
                             f"{record['median_epoch_seconds']:.3f} s"
                             + (f" ({record['steps']} of {record['full_epoch_steps']} steps)"
                                if record["partial_epoch"] else ""))
                if name == "classic":
                    full.close()
            del model

        def sweep(device):
            chosen = sweep_pipeline or best_pipeline(made, device) or pipelines[0]
            progress(f"{device}: settings on pipeline {chosen!r}")
            if "precision" in sweeps:
                for precision in precisions:
                    _tolerant(measure, progress, device, [chosen], size=batch_size,
                              group="precision", precision=precision, loader=False)
            if "spe" in sweeps:
                for spe in spe_values:
                    _tolerant(measure, progress, device, [chosen], size=batch_size,
                              group="spe", spe=spe, loader=False)
            if "batch" in sweeps:
                for size in batch_sizes:
                    if size != batch_size and size <= n_images:
                        _tolerant(measure, progress, device, [chosen], size=size,
                                  group="batch", loader=False)
            # Last: without XLA every operation runs on its own, the slowest setting by far.
            if "jit" in sweeps:
                _tolerant(measure, progress, device, [chosen], size=batch_size, group="jit",
                          jit=False, loader=False)

        # Each device's sweeps right after its pipelines: a run cut short keeps whole groups.
        for device in devices:
            measure(device, pipelines, size=batch_size, group="pipelines")
            if sweeps and device in sweep_devices:
                sweep(device)
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    return made


def _tolerant(measure, progress, *args, **kwargs) -> None:
    """Run one sweep setting; one that the backend or device cannot run (e.g. float16 on an
    old GPU) is reported and skipped, not fatal to the run."""
    try:
        measure(*args, **kwargs)
    except Exception as exc:
        progress(f"skipped {args[0]} {kwargs}: {type(exc).__name__}: {str(exc)[:200]}")


@contextlib.contextmanager
def keras_scope(keras_device: str):
    with _keras().device(keras_device):
        yield


# --- command line -----------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices to measure, in this order (default: cpu, then gpu if "
                             "visible)")
    parser.add_argument("--pipelines", nargs="+", choices=list(PIPELINES),
                        default=list(PIPELINES), help="pipelines to measure (default: all)")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"batch size of the pipeline comparison (default {BATCH_SIZE}; "
                             f"--quick: {QUICK_BATCH_SIZE})")
    parser.add_argument("--n-images", type=int, default=None,
                        help=f"training images (default {N_IMAGES:,}; --quick: "
                             f"{QUICK_N_IMAGES:,})")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"timed epochs (default {REPEATS}; --quick: {QUICK_REPEATS})")
    parser.add_argument("--warmup", type=int, default=WARMUP,
                        help=f"warm-up epochs, not counted (default {WARMUP})")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="time only the first N batches of each epoch (default: all)")
    parser.add_argument("--cpu-max-steps", type=int, default=None,
                        help="--max-steps for the CPU only (default: --max-steps)")
    parser.add_argument("--classic-max-steps", type=int, default=None,
                        help="at most N batches an epoch for the (slow) classic pipeline")
    parser.add_argument("--max-seconds", type=float, default=MAX_SECONDS,
                        help="stop timing a pipeline's epochs once they took this long "
                             f"together (default {MAX_SECONDS:g})")
    parser.add_argument("--workers", type=int, default=None,
                        help="worker processes of the *-workers pipelines (default: half the "
                             "usable cores, 2 to 8)")
    parser.add_argument("--sweeps", nargs="+", choices=[*SWEEPS, "none"], default=list(SWEEPS),
                        help="settings to vary on the best pipeline (default: all; 'none')")
    parser.add_argument("--sweep-devices", nargs="+", choices=sorted(DEVICES), default=None,
                        help="devices to run the sweeps on (default: the first device)")
    parser.add_argument("--sweep-pipeline", choices=list(PIPELINES), default=None,
                        help="pipeline to vary the settings on (default: the fastest)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=None,
                        help=f"batch sizes of the batch sweep (default "
                             f"{' '.join(map(str, BATCH_SIZES))})")
    parser.add_argument("--spe", nargs="+", type=int, default=None,
                        help=f"steps_per_execution values of the sweep (default "
                             f"{' '.join(map(str, SPE_VALUES))})")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (also when LESSON_QUICK=1), for tests")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder for the data files (default: a temporary folder)")
    parser.add_argument("--out", type=Path, default=RESULTS_FILE,
                        help=f"results file to append to (default {RESULTS_FILE})")
    return parser


def _default_workers() -> int:
    from gpulesson.devices import cpu_info

    return max(2, min(8, int(cpu_info()["cores_usable"]) // 2))


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from gpulesson.settings import get_settings

    quick = args.quick or get_settings().quick
    def given(value, quick_default, default):
        return value if value is not None else (quick_default if quick else default)

    options = {
        "batch_size": given(args.batch_size, QUICK_BATCH_SIZE, BATCH_SIZE),
        "n_images": given(args.n_images, QUICK_N_IMAGES, N_IMAGES),
        "repeats": given(args.repeats, QUICK_REPEATS, REPEATS),
        "batch_sizes": given(args.batch_sizes, QUICK_BATCH_SIZES, BATCH_SIZES),
        "spe_values": given(args.spe, QUICK_SPE_VALUES, SPE_VALUES),
    }
    for name in ("batch_size", "n_images", "repeats"):
        if options[name] < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {options[name]}")
    if options["batch_size"] > options["n_images"]:
        parser.error(f"--batch-size {options['batch_size']} is larger than --n-images "
                     f"{options['n_images']}")
    for name, values in (("--batch-sizes", options["batch_sizes"]), ("--spe", options["spe_values"])):
        if any(v < 1 for v in values):
            parser.error(f"{name} must all be at least 1, not {values}")
    for name in ("max_steps", "cpu_max_steps", "classic_max_steps", "workers"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if args.warmup < 0 or not args.max_seconds > 0:
        parser.error("--warmup must be at least 0 and --max-seconds positive")
    sweeps = [] if "none" in args.sweeps else args.sweeps

    from gpulesson.devices import keras_device
    from gpulesson.results import append_record

    found = keras_device()
    devices = args.devices or (["cpu", "gpu"] if found["gpu_count"] else ["cpu"])
    wants_gpu = "gpu" in devices or "gpu" in (args.sweep_devices or [])
    if wants_gpu and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing was measured "
              "or written. Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        return 2
    workers = args.workers if args.workers is not None else (
        2 if quick else _default_workers())
    print(f"Keras backend {found['backend']}; devices: {', '.join(devices)}; "
          f"{options['n_images']:,} images, batch {options['batch_size']}, "
          f"{options['repeats']} timed epoch(s) after {args.warmup} warm-up", flush=True)
    made = run_benchmark(
        devices=devices, pipelines=args.pipelines, warmup=args.warmup,
        max_steps=args.max_steps, cpu_max_steps=args.cpu_max_steps,
        classic_max_steps=args.classic_max_steps,
        max_seconds=args.max_seconds, workers=workers, sweeps=sweeps,
        sweep_devices=args.sweep_devices, sweep_pipeline=args.sweep_pipeline,
        data_dir=args.data_dir, on_record=lambda r: append_record(args.out, r),
        progress=lambda line: print(line, flush=True), **options)
    print(describe(made))
    print(f"Appended {len(made)} record(s) of run {made[0]['run_id']} to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
