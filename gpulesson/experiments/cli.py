"""The command-line parts that the lesson's experiments share.

Each experiment appends its records to a results file (``--out``, by default its own file in
``results/``), most seed the initial weights of their models (``--seed``), measure the CPU and
then the GPU if one is visible unless told which devices, and end by saying what they appended.
"""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_SEED = 42


def add_out_option(parser: argparse.ArgumentParser, default: Path) -> None:
    """``--out``: the results file the records are appended to, ``default`` if not given."""
    parser.add_argument("--out", type=Path, default=default,
                        help=f"results file to append to (default {default})")


def add_seed_option(parser: argparse.ArgumentParser, default: int = DEFAULT_SEED) -> None:
    """``--seed``: the random seed of the initial weights."""
    parser.add_argument("--seed", type=int, default=default,
                        help="random seed of the initial weights")


def default_devices(requested: list[str] | None, gpu_visible) -> list[str]:
    """The devices asked for; if none were, the CPU, then the GPU when one is visible."""
    if requested:
        return list(requested)
    return ["cpu", "gpu"] if gpu_visible else ["cpu"]


def say_appended(records: list[dict], out: Path, what: str = "record(s)") -> None:
    """Print how many records of which run were appended to ``out``."""
    print(f"Appended {len(records)} {what} of run {records[0]['run_id']} to {out}", flush=True)
