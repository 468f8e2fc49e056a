"""A hyper-parameter sweep as a Slurm job array: the grid, and one table of its results.

Each task of ``jobs/sweep-array.sbatch`` turns its id into arguments of :mod:`.train_job`.
"""

import csv
import itertools
import json
import sys
from pathlib import Path

from gpulesson.experiments import cli
from gpulesson.experiments.train_job import HISTORY, PARAMS, RECORD, read_history
from gpulesson.records.pagewords import markdown_table
from gpulesson.records.results import data_label, duration, hardware

# Task i of the array trains with GRID_POINTS[i]: every combination, batch size varying slowest.
GRID = {"batch_size": (64, 128, 256), "learning_rate": (1e-3, 3e-4)}
GRID_POINTS = [dict(zip(GRID, values, strict=True)) for values in itertools.product(*GRID.values())]
COLUMNS = ("run", "batch_size", "learning_rate", "epochs", "best_val_accuracy",
           "test_accuracy", "mean_epoch_seconds", "device", "status")


def grid_point(index: int) -> dict:
    """The parameters of array task ``index``; IndexError names the valid range."""
    if not 0 <= index < len(GRID_POINTS):
        raise IndexError(f"task index {index} is not in the grid: use 0-{len(GRID_POINTS) - 1} "
                         f"({len(GRID_POINTS)} combinations; see python -m gpulesson.experiments.sweep list)")
    return dict(GRID_POINTS[index])


def arguments(point: dict) -> list[str]:
    """A grid point as command-line arguments of train_job: ``--batch-size 64 ...``."""
    return [part for key, value in point.items() for part in (f"--{key.replace('_', '-')}", f"{value:g}")]


def _row(folder: Path) -> dict:
    """The table row of a run folder of train_job (finished or not)."""
    if (folder / RECORD).exists():
        record = json.loads((folder / RECORD).read_text())
        device = "GPU" if record.get("device_kind") == "gpu" else "CPU"
        return {"run": folder.name, **{key: record.get(key) for key in COLUMNS[1:-2]},
                "status": "finished", "device": device, "_record": record}
    params = json.loads((folder / PARAMS).read_text())["params"]
    done = len(read_history(folder / HISTORY)) if (folder / HISTORY).exists() else 0
    return {"run": folder.name, "batch_size": params["batch_size"],
            "learning_rate": params["learning_rate"], "epochs": done,
            "status": f"not finished ({done}/{params['epochs']} epochs)"}


def gather(folders) -> list[dict]:
    """The rows of all train_job runs below ``folders``, sorted by batch size and learning rate."""
    runs = sorted({p.parent for folder in map(Path, folders) for p in folder.rglob("params.json")})
    if not runs:
        raise FileNotFoundError(f"no train_job runs (folders with params.json) below "
                                f"{', '.join(map(str, folders))}")
    return sorted(map(_row, runs), key=lambda r: (r["batch_size"], -r["learning_rate"], r["run"]))


SHOWN = {"mean_epoch_seconds": duration, "best_val_accuracy": "{:.3f}".format,
         "test_accuracy": "{:.3f}".format, "learning_rate": "{:g}".format}  # other cells: str


def markdown(rows) -> str:
    """The table as Markdown, after a line that says which data and hardware it comes from
    (ValueError for runs of different data)."""
    records = [row["_record"] for row in rows if "_record" in row]
    lines = []
    if records:
        lines.append(f"Data: {data_label(records)}. Hardware: "
                     + "; ".join(f"{kind} {name}" for kind, name in hardware(records).items()) + ".\n")
    cells = [["-" if row.get(k) is None else SHOWN.get(k, str)(row[k]) for k in COLUMNS] for row in rows]
    lines.append(markdown_table(COLUMNS, cells))
    return "\n".join(lines) + "\n"


COMMAND = cli.Command("sweep", __doc__, subcommands={
    "list": ("the grid, one line per array task", ()),
    "params": ("one task's arguments for train_job", (
        cli.option("--index", type=int, required=True, help="the array task id"),)),
    "gather": ("one table of the runs below the folders", (
        cli.option("folders", nargs="+", type=Path),
        cli.option("--markdown", type=Path, help="default <first folder>/sweep.md"),
        cli.option("--csv", type=Path, help="default <first folder>/sweep.csv")))})


def main(argv=None) -> int:
    args = COMMAND.parser().parse_args(argv)
    if args.command == "list":
        for index, point in enumerate(GRID_POINTS):
            print(index, " ".join(arguments(point)))
        print(f"Array range: --array=0-{len(GRID_POINTS) - 1}")
        return 0
    if args.command == "params":
        try:
            print(" ".join(arguments(grid_point(args.index))))
        except IndexError as exc:
            print(exc, file=sys.stderr)
            return 2
        return 0
    try:
        rows = gather(args.folders)
        table = markdown(rows)
    except (FileNotFoundError, ValueError) as exc:
        print(f"Cannot gather: {exc}", file=sys.stderr)
        return 2
    md_path = args.markdown or args.folders[0] / "sweep.md"
    csv_path = args.csv or args.folders[0] / "sweep.csv"
    md_path.write_text(table)
    with open(csv_path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    print(table + f"\nWritten: {md_path} and {csv_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
