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


def add_run_id_option(parser: argparse.ArgumentParser) -> None:
    """``--run-id``: go on with an earlier run instead of starting a new one.

    A reference stage that was stopped (its time limit, a lost job) runs its commands again with
    the same run id; each command then measures only the conditions that run does not have yet,
    so a re-run never records a condition twice.
    """
    parser.add_argument("--run-id", default=None,
                        help="add to this run of the results file instead of starting a new "
                             "one, skipping the conditions it already has (how an interrupted "
                             "reference stage goes on)")


def continue_run(out: Path, experiment: str, run_id: str | None, key) -> tuple[str, set]:
    """``(run id, keys of the conditions already recorded)`` for a run that may go on.

    Without ``run_id``: a new run, nothing recorded. With it: the keys ``key(record)`` of the
    records of ``experiment`` with that run id in ``out`` (none if the file is missing).
    """
    from gpulesson.results import new_run_id, read_records

    if not run_id:
        return new_run_id(), set()
    if not Path(out).is_file():
        return run_id, set()
    done = {key(record) for record in read_records(out, experiment=experiment, run_id=run_id)}
    return run_id, done
