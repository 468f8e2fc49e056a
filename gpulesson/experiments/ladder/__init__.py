"""Train the lesson's CNN once per rung of the speed ladder, in two process starts, and record
each rung's epochs, clock, test accuracies and meters.

    python -m gpulesson.experiments.ladder                      # released Keras's rungs (JAX)
    python -m gpulesson.experiments.ladder --part limit         # the plain-JAX limit
    python -m gpulesson.experiments.ladder --part nightly --nightly .whl/nightly

Each part runs its rungs in a new process, twice: first each rung with an empty compilation cache
of its own (its first epoch compiles), then with what that start stored (older runs shared one
among a part's rungs: records say what it held). ``--nightly DIR`` installs the keras-nightly
wheel in DIR into a folder of its own, first on the children's ``PYTHONPATH``: a pre-release,
apart from the pinned Keras.
"""

import argparse
import itertools
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.records.recordset import RecordSet

# One record a rung and process start; the page's run is the newest with CPU and GPU records.
RECORDS = RecordSet("ladder", ("device_kind", "rung", "start"))
SPE, LARGE_FACTOR = 16, 4  # steps a call, and the large batch's factor
STARTS = 2  # process starts per rung: the second reads the programs its first stored
PARTS = ("keras", "limit", "nightly")


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
_COSTS = {"bf16": "float32 arithmetic (bf16 on tensor cores)",
          "spe": f"Python and logs between steps ({SPE} steps a call)",
          "batch": f"steps ({LARGE_FACTOR}x the batch, learning rate scaled, warm-up)"}
for _feed, _on in itertools.product(("device", "read-ahead"), itertools.product((False, True), repeat=3)):
    if _names := [name for name, on in zip(_COSTS, _on, strict=True) if on]:
        RUNGS["+".join([_feed, *_names])] = _rung(_feed, *_on, "the combination's costs: "
                                                  + ", ".join(map(_COSTS.get, _names)))
# The stream read by processes instead of a thread (Grain's workers: a reader thread shares the
# training process's interpreter lock with a host-bound step), and the RAM reference of the
# stream's goal at the best settings.
RUNGS["grain"] = _rung("grain", removes="reading in the training process (Grain's workers "
                       "read the stored blocks, `grain_blocks`)")
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
                            removes="`fit` itself, at the best stream rung's batch and precision")
# The stream's rungs first: what one process keeps in memory from rung to rung (small programs,
# XLA's tuning) then helps the device's rungs, not the goal's.
_FIRST = ("taught", "read-ahead", "grain", "ram", "device", "scan:read-ahead", "scan:device", "limit")
START_ORDER = sorted(RUNGS, key=lambda n: next(i for i, p in enumerate(_FIRST) if n.startswith(p)))


def rungs_of(part: str) -> list[str]:
    return [n for n in START_ORDER if RUNGS[n]["part"] == part]


COMMAND = cli.Command(
    "ladder", __doc__,
    cli.devices("devices (default: the GPU if one is visible, else the CPU)"),
    cli.option("--part", choices=PARTS, default="keras", help="which rungs"),
    cli.option("--rungs", nargs="+", default=None, help="only these rungs of the part"),
    cli.option("--nightly", type=Path, default=None,
               help="folder of the keras-nightly wheel (needed by --part nightly)"),
    cli.option("--start", type=int, default=None, help=argparse.SUPPRESS),
    cli.option("--cache", type=Path, default=None, help=argparse.SUPPRESS),  # a folder per rung in it
    cli.out(RECORDS.results_file), cli.SEED, cli.RUN_ID)
