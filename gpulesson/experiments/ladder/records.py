"""The ladder's rungs (ways to train the lesson's CNN on its HDF5 file, each removing one named
cost), its records (one a rung and process start) and the goals a page reads from them."""

from __future__ import annotations

import itertools
import math
import statistics

from gpulesson.experiments.common import ORDER_FIELD, SUMMARY_KEY, summarise
from gpulesson.experiments.recordset import RecordSet
from gpulesson.machine import flops
from gpulesson.machine.devices import keras_device_name
from gpulesson.records.summaries import overlap

EXPERIMENT = "ladder"
# The page's run is the newest with CPU and GPU records (RecordSet.newest_run).
RECORDS = RecordSet(EXPERIMENT, ("device_kind", "rung", "start"))
RESULTS_FILE, reference_run = RECORDS.results_file, RECORDS.newest_run
BASE_LEARNING_RATE, LARGE_FACTOR, SPE = 1e-3, 4, 16
WARMUP_EPOCHS = 2  # a scaled learning rate is reached linearly over the first two epochs' steps
EPOCHS = {"base": 6, "large": 12}  # the default's 6 epochs; 4 times fewer updates need more
QUICK_EPOCHS = {"base": 3, "large": 4}
STARTS = 2  # process starts per rung: the second finds the first's compilation cache
PARTS = ("keras", "limit", "nightly")
RATIO_GOAL = 1.3  # the best released-Keras stream rung within 1.3x of the limit's epoch
RAM_GOAL = 0.9  # the stream at least 0.9x as fast as the same settings fed from RAM
STREAMS = ("stream", "read-ahead", "grain")  # feeds that read the HDF5 file while training


def _rung(feed: str, bf16=False, spe=False, large=False, removes: str = "", part="keras"):
    return {"feed": feed, "precision": "mixed_bfloat16" if bf16 else "float32",
            "steps_per_execution": SPE if spe else 1, "batch": "large" if large else "base",
            "removes": removes, "part": part}


# name -> options. The first four remove one cost each; then every combination of the three
# settings (settings interact: one at a time misses that), from the device and from the stream.
RUNGS: dict[str, dict] = {
    "taught": _rung("stream", removes="nothing (the lesson's generator, batch 256, "
                    "float32: TF32 on the card)"),
    "read-ahead": _rung("read-ahead", removes="reading in series with the step (a thread reads "
                        "the next window)"),
    "ram": _rung("ram", removes="the generator (`fit(x, y, batch_size=...)` on arrays in RAM)"),
    "device": _rung("device", removes="each batch's copy to the card (the data on the device, "
                    "`DeviceBatches`)"),
}
for _feed, (_b, _s, _l) in itertools.product(("device", "read-ahead"),
                                             itertools.product((False, True), repeat=3)):
    if _b or _s or _l:
        _on = {"bf16": _b, "spe": _s, "batch": _l}
        RUNGS["+".join([_feed, *(n for n, on in _on.items() if on)])] = _rung(
            _feed, _b, _s, _l, "the combination's costs: " + ", ".join(
                w for w, on in (("float32 arithmetic (bf16 on tensor cores)", _b),
                                (f"Python and logs between steps ({SPE} steps a call)", _s),
                                (f"steps ({LARGE_FACTOR}x the batch, learning rate scaled, "
                                 "warm-up)", _l)) if on))
# The stream read by processes instead of a thread (Grain's workers: a reader thread shares the
# training process's interpreter lock with a host-bound step), and the RAM reference of the
# stream's goal at the best settings.
RUNGS["grain"] = _rung("grain", removes="reading in the training process (Grain's worker "
                       "processes read the stored blocks, `grain_blocks`)")
RUNGS["grain+bf16+spe+batch"] = _rung("grain", True, True, True,
                                      "the combination's costs, read by Grain's workers")
RUNGS["ram+bf16+spe+batch"] = _rung("ram", True, True, True, "the combination's costs, from "
                                    "arrays in RAM (the stream's reference)")
for _feed in ("device", "read-ahead"):
    RUNGS[f"scan:{_feed}+bf16+spe+batch"] = _rung(
        _feed, True, True, True, part="nightly",
        removes="the Python loop of `steps_per_execution` (one `jax.lax.scan`; keras-nightly, "
                "a pre-release)")
RUNGS["limit"] = _rung("device", removes="`fit` itself (one compiled call an epoch with "
                       "`jax.lax.scan`, plain JAX)", part="limit")
RUNGS["limit+best"] = _rung("device", True, False, True, part="limit",
                            removes="`fit` itself, at the best stream rung's batch and "
                            "precision")
ORDER = list(RUNGS)
# Start 1 compiles the stream's rungs before the device's: they share programs, and the goal's
# time to accuracy must include its own compile.
_FIRST = ("taught", "read-ahead", "grain", "ram", "device", "scan:read-ahead", "scan:device", "limit")
START_ORDER = sorted(ORDER, key=lambda n: next(i for i, p in enumerate(_FIRST) if n.startswith(p)))


def rungs_of(part: str) -> list[str]:
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, not {part!r}")
    return [n for n in START_ORDER if RUNGS[n]["part"] == part]


def batch_size(rung: dict, base: int) -> int:
    return base * (LARGE_FACTOR if rung["batch"] == "large" else 1)


def learning_rate(batch: int, base: int) -> float:
    """The linear scaling rule: 1e-3 at the base batch, times the batch's factor."""
    return BASE_LEARNING_RATE * batch / base


def warmup_steps(batch: int, base: int, n_images: int) -> int:
    """:data:`WARMUP_EPOCHS` epochs' steps where the rate is scaled; none at the base batch."""
    return 0 if batch == base else WARMUP_EPOCHS * math.ceil(n_images / batch)


def warmup_rate(step, peak: float, steps: int, minimum=min):
    """The rate at optimizer step ``step``: linear from ``peak / steps`` to ``peak`` over
    ``steps`` steps, then ``peak``; ``minimum`` lets a framework's op stand in."""
    return peak if steps <= 0 else peak * minimum(1.0, (step + 1) / steps)


def epochs_for(rung: dict, quick: bool) -> int:
    return (QUICK_EPOCHS if quick else EPOCHS)[rung["batch"]]


def measurement_record(*, run_id: str, rung: str, start: int, device: str, watched: dict,
                       chosen: dict, n_images: int, data: str, extra: dict) -> dict:
    """One rung in one process start; ``watched``: the epochs' fields (``measure.EpochWatch``)."""
    seconds = watched["epoch_seconds"]
    if len(seconds) < 2:
        raise ValueError("a rung needs at least 2 epochs: the first compiles")
    median = statistics.median(seconds[1:])
    fields = {"run_id": run_id, "source": "gpulesson.experiments.ladder", "rung": rung,
              "start": start, "device_kind": device, "keras_device": keras_device_name(device),
              **RUNGS[rung], **chosen, "n_images": n_images, **watched,
              "median_epoch_seconds": median,
              "achieved_tflops": flops.tflops(flops.training_flops_per_image(), n_images, median),
              "test_accuracy": watched["test_accuracies"][-1],
              SUMMARY_KEY: summarise(seconds[1:], seconds[:1]), ORDER_FIELD: False, **extra}
    return RECORDS.record(data=data, **fields)


def starts(records, rung: str) -> list[dict]:
    return sorted((r for r in records if r.get("rung") == rung), key=lambda r: r["start"])


def summary(records, rung: str) -> dict | None:
    """The rung's timed epochs over all its starts (each start's first epoch apart)."""
    found = starts(records, rung)
    if not found:
        return None
    return summarise([s for r in found for s in r["epoch_seconds"][1:]],
                     [r["epoch_seconds"][0] for r in found])


def mean_of(records, rung: str, key: str) -> float | None:
    values = [r[key] for r in starts(records, rung) if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def time_to(record: dict, accuracy: float) -> float | None:
    """Seconds from the start of training (compiling included, evaluations left out) to the
    end of the first epoch that reached ``accuracy``; None if none did."""
    for reached, clock in zip(record["test_accuracies"], record["epoch_end_seconds"], strict=True):
        if reached >= accuracy:
            return clock
    return None


def target_accuracy(records) -> float | None:
    """The default's test accuracy after its epochs, in the first start."""
    first = starts(records, "taught")
    return first[0]["test_accuracy"] if first else None


def _stream_rungs(records) -> list[str]:
    """The released-Keras rungs that read the HDF5 file while training, as recorded."""
    return [n for n in ORDER if RUNGS[n]["part"] == "keras" and RUNGS[n]["feed"] in STREAMS
            and starts(records, n)]


def best_stream(records) -> str | None:
    """The released-Keras stream rung with the shortest median epoch."""
    found = [(summary(records, n)["median"], n) for n in _stream_rungs(records)]
    return min(found)[1] if found else None


def limit_options(records) -> dict:
    """``limit+best``'s precision and batch: the run's best stream rung's (the limit's part runs
    after Keras's), else bf16 at the large batch."""
    source = RUNGS[best_stream(records) or "limit+best"]
    return {"precision": source["precision"], "batch": source["batch"]}


def limit_for(records, rung: str) -> str | None:
    """The limit's rung recorded at ``rung``'s batch and precision (as recorded, else as planned)."""
    options = (starts(records, rung) or [RUNGS[rung]])[0]
    for name in ("limit", "limit+best"):
        found = starts(records, name)
        if found and (found[0]["batch"], found[0]["precision"]) == (options["batch"],
                                                                     options["precision"]):
            return name
    return None


def goals(records) -> dict | None:
    """The best stream rung's two goals: its epoch within :data:`RATIO_GOAL` of the limit at
    its batch and precision, and the default's test accuracy sooner than the default, compiling
    included (first starts). None without the default and a stream rung."""
    best, target = best_stream(records), target_accuracy(records)
    if best is None or target is None:
        return None
    limit = limit_for(records, best)
    ratio = summary(records, best)["median"] / summary(records, limit)["median"] if limit else None
    mine, default = (time_to(starts(records, n)[0], target) for n in (best, "taught"))
    return {"rung": best, "limit": limit, "ratio": ratio,
            "ratio_met": None if ratio is None else ratio <= RATIO_GOAL,
            "target": target, "time": mine, "default_time": default,
            "time_met": mine is not None and default is not None and mine < default}


def ram_twin(rung: str) -> str | None:
    """The rung that feeds ``rung``'s settings from arrays in RAM, if the ladder has one."""
    options = RUNGS[rung]
    return next((n for n in ORDER if RUNGS[n]["feed"] == "ram" and RUNGS[n]["part"] == "keras"
                 and all(RUNGS[n][k] == options[k]
                         for k in ("precision", "steps_per_execution", "batch"))), None)


def ram_goals(records) -> list[dict]:
    """The stream against RAM at batch 256 float32 and at the best stream rung's settings (those
    a RAM rung feeds): the fastest stream rung recorded (``rung``), its RAM twin (``ram``), RAM's
    median epoch over the stream's (``share``), whether it meets :data:`RAM_GOAL`, and whether
    their epochs' ranges overlap."""
    found = []
    twins = dict.fromkeys(ram_twin(n) for n in filter(None, ["taught", best_stream(records)]))
    for twin in filter(None, twins):
        same = [n for n in _stream_rungs(records) if ram_twin(n) == twin]
        rung = min(same, key=lambda n: summary(records, n)["median"]) if same else None
        mine, ram = (summary(records, n) if n else None for n in (rung, twin))
        both = mine is not None and ram is not None
        share = ram["median"] / mine["median"] if both else None
        found.append({"rung": rung, "ram": twin, "share": share,
                      "met": both and share >= RAM_GOAL, "overlap": both and overlap(mine, ram)})
    return found
