"""Create the HDF5 data file the notebooks read.

    python -m gpulesson.prepare [--data {cifar10,synthetic}] [--quick | --no-quick]
                                [--data-dir DIR] [--out PATH] [--force] [--seed N]

Defaults come from the environment (LESSON_DATA, LESSON_QUICK, LESSON_DATA_DIR). Run it once
on a login node of a cluster (which has internet) so that CIFAR-10 is downloaded into the Keras
cache and converted; the notebooks on the compute nodes then only read the file. An existing
valid file is reused.

For a workshop, an instructor can prepare the files once in a folder that learners can read
(both sizes: with and without --quick), make it readable (chmod -R a+rX DIR), and have learners
set LESSON_DATA_DIR=DIR: the notebooks read the files there as they are, and write nothing into
that folder (learners' own files go to LESSON_WORK_DIR).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from gpulesson.errors import LessonDataError
from gpulesson.settings import DATA_CHOICES, get_settings


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpulesson.prepare",
        description="Create (or check and reuse) the HDF5 data file the lesson's notebooks read. "
        "Defaults come from LESSON_DATA, LESSON_QUICK and LESSON_DATA_DIR.",
    )
    parser.add_argument("--data", choices=DATA_CHOICES, help="data set (default: $LESSON_DATA or cifar10)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=None,
                        help="small sizes for quick runs (default: $LESSON_QUICK)")
    parser.add_argument("--data-dir", type=Path,
                        help="folder of the data files (default: $LESSON_DATA_DIR or ~/gpulesson-data)")
    parser.add_argument("--out", type=Path, help="write this file instead of DATA_DIR/<data>[-quick].h5")
    parser.add_argument("--force", action="store_true", help="re-create the file even if a valid one exists")
    parser.add_argument("--seed", type=int, help="random seed of the synthetic data (default 0)")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = get_settings()
    except ValueError as exc:
        parser.error(str(exc))
    overrides = {"data": args.data, "quick": args.quick, "data_dir": args.data_dir}
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if args.seed is not None and not settings.is_synthetic:
        parser.error("--seed only applies to --data synthetic")

    from gpulesson.data import prepare
    from gpulesson.hdf5 import validate_hdf5

    try:
        path = prepare(settings, force=args.force, out=args.out, seed=args.seed or 0)
        info = validate_hdf5(path)
    except LessonDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    size_mb = path.stat().st_size / 1e6
    print(f"{path}: {size_mb:.1f} MB, {info.label}, "
          f"{info.n_train:,} training and {info.n_test:,} test images.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
