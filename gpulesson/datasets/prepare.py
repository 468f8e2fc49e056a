"""Create the HDF5 data file the notebooks read, once, on a login node (which has internet); an
instructor may prepare both sizes in a folder learners can read and set LESSON_DATA_DIR to it.

    python -m gpulesson.datasets.prepare [--data {cifar10,synthetic}] [--quick] [--data-dir DIR] [--out PATH]
"""

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from gpulesson.datasets.settings import DATA_CHOICES, get_settings, hdf5_filename
from gpulesson.errors import LessonDataError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gpulesson.datasets.prepare",
        description="Create (or check and reuse) the HDF5 data file the lesson's notebooks read. "
        "Defaults come from LESSON_DATA, LESSON_QUICK and LESSON_DATA_DIR.",
    )
    parser.add_argument("--data", choices=DATA_CHOICES, help="data set (default: $LESSON_DATA or cifar10)")
    parser.add_argument("--quick", action=argparse.BooleanOptionalAction, default=None,
                        help="small sizes for quick runs (default: $LESSON_QUICK)")
    parser.add_argument("--data-dir", type=Path,
                        help="folder of the data files (default: $LESSON_DATA_DIR or ~/gpulesson-data)")
    # A string: argparse's Path would drop the slash of 'newdir/', a folder, making it a file.
    parser.add_argument("--out", help="write this file instead of DATA_DIR/<data>[-quick].h5")
    parser.add_argument("--force", action="store_true", help="re-create the file even if a valid one exists")
    parser.add_argument("--seed", type=int, help="random seed of the synthetic data (default 0)")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        settings = get_settings()
    except ValueError as exc:  # a setting it cannot read: its own message, not argparse's usage
        print(f"error: {exc}", file=sys.stderr)
        return 2
    overrides = {"data": args.data, "quick": args.quick, "data_dir": args.data_dir}
    settings = dataclasses.replace(settings, **{k: v for k, v in overrides.items() if v is not None})
    if args.seed is not None and not settings.is_synthetic:
        parser.error("--seed only applies to --data synthetic")
    if args.out is not None and args.out.endswith(("/", os.sep)):
        out = Path(args.out)
        print(f"error: --out {out}/ names a folder (it ends in /): name the file, e.g. --out "
              f"{out / hdf5_filename(settings.data, settings.quick)}, or pass --data-dir {out}",
              file=sys.stderr)
        return 2

    from gpulesson.datasets.hdf5 import validate_hdf5
    from gpulesson.datasets.load import prepare

    try:
        path = prepare(settings, force=args.force, out=args.out, seed=args.seed or 0)
        info = validate_hdf5(path)
    except LessonDataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: the partial file is already deleted (atomic_hdf5)
        print("Stopped: no data file was written. Run the same command again to prepare it.",
              file=sys.stderr)
        return 130
    size_mb = path.stat().st_size / 1e6
    print(f"{path}: {size_mb:.1f} MB, {info.label}, "
          f"{info.n_train:,} training and {info.n_test:,} test images.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
