"""Record a run of the learner notebooks, whose outputs the site shows under each code cell.

    LESSON_DATA=cifar10 python tools/record_run.py            # every notebook, full size
    LESSON_DATA=synthetic python tools/record_run.py --only 04 05
    LESSON_DATA=synthetic python tools/record_run.py --quick --only 01   # a try-out, labelled so
    python tools/record_run.py --clean-only      # colours and machine paths out, nothing run again

Each notebook runs on a fresh kernel in a temporary copy, with the data chosen explicitly; its
cleaned copy and provenance go to ``executed/NN-slug.ipynb`` atomically.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the lesson's package, installed or not
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import clean_outputs  # noqa: E402
import make_notebooks  # noqa: E402
import recorded  # noqa: E402
from recorded import EXECUTED_DIR  # noqa: E402

from gpulesson.machine.preflight import require_or_exit  # noqa: E402

DATA_LABELS = {
    "cifar10": "CIFAR-10 (and MNIST in the PyTorch episode), the real data sets",
    "synthetic": "synthetic stand-in (not CIFAR-10; in the PyTorch episode not MNIST either)",
}
SIZE_LIMIT = 10_000_000  # bytes, for all executed copies together
DEFAULT_TIMEOUT = 3 * 3600  # seconds per notebook
PACKAGES = ("keras", "tensorflow", "jax", "torch", "numpy", "h5py")

# Runs on the kernel before the first cell (left out of the record): each figure gets alt text
# from its titles and labels, and tqdm draws its text bar, not a widget a static page cannot draw.
KERNEL_SETUP = r'''
def _recorded_run_text_bars():
    import sys

    import tqdm.auto
    import tqdm.std

    class TextBar(tqdm.std.tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("file", sys.stdout)
            super().__init__(*args, **kwargs)

    tqdm.auto.tqdm = TextBar


def _recorded_run_alt_text():
    from IPython import get_ipython
    from matplotlib.figure import Figure
    # Loading the inline backend registers its PNG formatter for figures, wrapped below.
    import matplotlib_inline.backend_inline  # noqa: F401

    def describe(fig):
        parts = []
        if fig._suptitle is not None and fig._suptitle.get_text():
            parts.append(fig._suptitle.get_text())
        axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison or ax.images]
        titles = [ax.get_title() for ax in axes if ax.get_title()]
        if len(axes) > 4:
            kind = "images" if all(ax.images for ax in axes) else "panels"
            parts.append(f"{len(axes)} {kind}" + (": " + ", ".join(titles) if titles else ""))
        else:
            for ax in axes:
                bits = [ax.get_title()] if ax.get_title() else []
                if ax.get_xlabel() or ax.get_ylabel():
                    bits.append(f"{ax.get_ylabel() or 'values'} against "
                                f"{ax.get_xlabel() or 'position'}")
                legend = ax.get_legend()
                if legend is not None:
                    labels = [t.get_text() for t in legend.get_texts()]
                    bits.append("series: " + ", ".join(labels))
                if ax.images and not bits:
                    bits.append("an image")
                if bits:
                    parts.append("; ".join(bits))
        text = ". ".join(parts) or "a figure without titles or labels"
        return "Figure drawn by the code above: " + text

    png = get_ipython().display_formatter.formatters["image/png"]
    draw = png.lookup_by_type(Figure)

    def with_alt(fig, *args, **kwargs):
        result = draw(fig, *args, **kwargs)
        data, metadata = result if isinstance(result, tuple) else (result, {})
        return data, {**(metadata or {}), "alt": describe(fig)}

    png.for_type(Figure, with_alt)


_recorded_run_alt_text()
_recorded_run_text_bars()
del _recorded_run_alt_text, _recorded_run_text_bars
'''

PROBE = r'''
import json
from gpulesson.machine import devices

facts = devices.cpu_info()
try:
    facts.update(devices.keras_device())
except Exception as exc:  # the record says so rather than guessing a GPU
    facts["probe_error"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(facts))
'''


class RecordError(RuntimeError):
    """The run cannot start as asked; the message says what to do."""


def choose_data(arg: str | None, environ) -> str:
    from gpulesson.datasets.settings import explicit_data
    from gpulesson.errors import SettingsError

    try:
        return explicit_data(arg or environ.get("LESSON_DATA", ""))
    except SettingsError as exc:
        raise RecordError(f"{exc} (or --data cifar10|synthetic)") from None


def choose_quick(arg: bool, environ) -> bool:
    value = environ.get("LESSON_QUICK", "").strip().lower()
    if value not in ("", "0", "false", "no") and not arg:
        raise RecordError(f"LESSON_QUICK={environ['LESSON_QUICK']} is set: unset it for the "
                          "lesson's recorded run (full size), or pass --quick for a try-out")
    return arg


def select_notebooks(only: list[str] | None, root: Path = ROOT) -> list[Path]:
    notebooks = sorted((root / make_notebooks.NOTEBOOK_DIR).glob("*.ipynb"))
    if not only:
        return notebooks
    chosen = [nb for nb in notebooks if any(nb.stem.startswith(prefix) for prefix in only)]
    unknown = [p for p in only if not any(nb.stem.startswith(p) for nb in notebooks)]
    if unknown:
        raise RecordError(f"no notebook starts with {', '.join(unknown)}; there are: "
                          + ", ".join(nb.stem for nb in notebooks))
    return chosen


def kernel_environment(data: str, quick: bool, work_dir: Path | None = None) -> dict:
    """The kernel's environment; ``work_dir``: a new, empty work folder, for a first run's outputs."""
    env = dict(os.environ)
    if work_dir is not None:
        env["LESSON_WORK_DIR"] = str(work_dir)
    env.update(
        LESSON_DATA=data,
        LESSON_QUICK="1" if quick else "0",
        # The lesson's package from this folder, as `make lab` gives learners.
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        # Figures inline, as in JupyterLab (a test run may have set Agg for its own process).
        MPLBACKEND="module://matplotlib_inline.backend_inline",
        # TensorFlow's C++ start-up log is no output of the lesson's code (clean_outputs.CPP_LOG).
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    return env


def versions(facts: dict) -> dict:
    """Python, Keras, the backend's framework (as probed), then the other packages installed."""
    found = {"python": platform.python_version()}
    if facts.get("backend_version"):
        found[facts["backend"]] = facts["backend_version"]
    for package in PACKAGES:
        for distribution in (package, f"{package}-cpu"):
            try:
                found.setdefault(package, version(distribution))
            except PackageNotFoundError:
                continue
            break
    return dict(sorted(found.items(), key=lambda item: item[0] not in ("python", "keras")))


def probe_machine(env: dict) -> dict:
    """CPU, cores and the backend's GPU, asked in a process of its own with the kernels' environment."""
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=600)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RecordError("could not ask this Python about the machine (python -c "
                          f"'from gpulesson.machine import devices'):\n{done.stderr[-2000:]}")
    return json.loads(lines[-1])


def printed_references(stem: str, results_dir: Path | None = None) -> dict[str, list[str]]:
    """The reference runs episode ``stem``'s notebook prints; a change makes its copy stale."""
    from gpulesson.experiments.registry import experiment

    ceiling, cnn, feeding, matmul, small_models, torch_reference = (
        experiment(f"gpulesson.experiments.{name}") for name in (
            "ceiling", "cnn", "feeding", "matmul", "small_models", "torch_reference"))
    from gpulesson.records import results

    folder = Path(results_dir or results.RESULTS_DIR)
    readers = {
        "05": {"cnn": (cnn.reference_run, cnn.RESULTS_FILE)},
        "07": {"mlp comparison": (lambda path: small_models.reference_run("comparison", path),
                                  small_models.RESULTS_FILE),
               "mlp sweep": (lambda path: small_models.reference_run("sweep", path),
                             small_models.RESULTS_FILE)},
        "08": {"pytorch": (torch_reference.reference_run, torch_reference.RESULTS_FILE)},
        "09": {"feeding": (feeding.reference_run, feeding.RESULTS_FILE),
               "ceiling": (ceiling.reference_run, ceiling.RESULTS_FILE)},
        "10": {"cnn": (cnn.reference_run, cnn.RESULTS_FILE),
               "matmul": (matmul.reference_run, matmul.RESULTS_FILE)},  # ResNet-50's step
    }
    return {name: sorted({r["run_id"] for r in read(folder / file.name)})
            for name, (read, file) in readers.get(stem[:2], {}).items()}


def provenance(facts: dict, data: str, quick: bool, wall_s: float, cells: list[str],
               references: dict | None = None) -> dict:
    gpu = facts.get("device") if facts.get("device") not in (None, "CPU") else None
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 1),
        "machine": {"cpu_model": facts["cpu_model"], "cores_usable": facts["cores_usable"],
                    "cores_total": facts["cores_total"], "gpu": gpu,
                    "gpu_count": facts.get("gpu_count", 0)},
        "backend": facts.get("backend", "unknown: " + facts.get("probe_error", "")),
        "versions": versions(facts),
        "data": data,
        "data_label": DATA_LABELS[data],
        "quick": quick,
        "command": "python tools/record_run.py",
        "cells": cells,
        "references": references or {},
    }


def execute(notebook: Path, workdir: Path, timeout: float, env: dict):
    """Run ``notebook`` in ``workdir`` on a fresh kernel within ``timeout`` s; (notebook, wall s)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    nb = nbformat.read(notebook, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(KERNEL_SETUP))
    n_code = sum(cell.cell_type == "code" for cell in nb.cells) - 1
    started = time.monotonic()
    deadline = started + timeout
    count = {"done": 0}

    def progress(cell, cell_index, **_):
        if cell.cell_type != "code" or cell_index == 0:
            return
        count["done"] += 1
        print(f"  {notebook.stem}: cell {count['done']}/{n_code} done "
              f"({time.monotonic() - started:.0f} s)", flush=True)

    client = NotebookClient(
        nb, kernel_name="python3", resources={"metadata": {"path": str(workdir)}},
        timeout_func=lambda cell: max(1, int(deadline - time.monotonic())),
        on_cell_executed=progress, record_timing=False,
    )
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits this process's environment
    try:
        client.execute()
    except CellTimeoutError:
        raise RecordError(f"the notebook ran over its time limit of {timeout:g} s (--timeout) "
                          f"in its code cell {count['done'] + 1}") from None
    finally:
        os.environ.clear()
        os.environ.update(saved)
    del nb.cells[0]
    return nb, time.monotonic() - started


def write_atomically(nb: dict, path: Path) -> None:
    """``nb`` validated, then written through a file beside ``path``: a failed write leaves the
    previous record whole (sources as lists of lines, as notebooks/ are written)."""
    import nbformat

    node = nbformat.from_dict(nb)
    nbformat.validate(node)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(nbformat.writes(node) + "\n", encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def record(notebook: Path, out_dir: Path, *, data: str, quick: bool, facts: dict, env: dict,
           timeout: float) -> Path:
    """Execute one notebook and write its cleaned, labelled copy to ``out_dir``."""
    workdir = Path(tempfile.mkdtemp(prefix=".record-run-", dir=ROOT))
    try:
        shutil.copy2(notebook, workdir / notebook.name)
        nb, wall_s = execute(workdir / notebook.name, workdir, timeout, env)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    paths = clean_outputs.machine_paths(work=env.get("LESSON_WORK_DIR"))
    nb = clean_outputs.clean_notebook(json.loads(json.dumps(nb)), paths=paths)
    nb["metadata"][recorded.METADATA_KEY] = provenance(
        facts, data, quick, wall_s, recorded.code_hashes(nb), printed_references(notebook.stem))
    target = out_dir / notebook.name
    write_atomically(nb, target)
    return target


def size_of(folder: Path) -> int:
    return sum(path.stat().st_size for path in Path(folder).glob("*.ipynb"))


def check_size(folder: Path, limit: int = SIZE_LIMIT) -> str | None:
    """A message when the executed copies together are larger than ``limit`` bytes."""
    total = size_of(folder)
    if total > limit:
        return (f"{Path(folder).name}/ holds {total / 1e6:.2f} MB of executed notebooks, over the "
                f"limit of {limit / 1e6:.0f} MB: show fewer or smaller figures")
    return None


def code_sources(episode: Path) -> list[str]:
    """The code cells of an episode's complete notebook, as the recorded run executed them."""
    cells = make_notebooks.build_notebooks(episode)[0].cells
    return [cell.source for cell in cells if cell.cell_type == "code"]


def stale_cells(sources: list[str], nb: dict) -> list[str]:
    """The first line of every changed or new code cell, and a line for recorded cells now gone."""
    problems = [f"changed or new cell: {(source.strip().splitlines() or [''])[0]!r}"
                for source, outputs in zip(sources, recorded.match_cells(sources, nb), strict=True)
                if outputs is None]
    gone = sum(cell["cell_type"] == "code" for cell in nb["cells"]) - (len(sources) - len(problems))
    if gone > 0:
        problems.append(f"{gone} recorded cell(s) no longer in the episode")
    return problems


def stale_records(root: Path) -> list[str]:
    """A line per executed copy whose code no longer matches its episode: what, and its refresh."""
    problems, executed = [], recorded.EXECUTED_DIR
    for path in sorted((root / executed).glob("*.ipynb")):
        episode = root / "_episodes" / f"{path.stem}.md"
        if not episode.exists():
            problems.append(f"{executed}/{path.name} has no episode _episodes/{episode.name}: remove it")
            continue
        try:
            nb = recorded.read_record(path)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        run = nb["metadata"][recorded.METADATA_KEY]
        command = recorded.refresh_command(path.stem, run.get("data", "cifar10"))
        if recorded.code_hashes(nb) != run.get("cells"):
            problems.append(f"{executed}/{path.name} was edited after its run; refresh it: {command}")
            continue
        changed = stale_cells(code_sources(episode), nb)
        # A copy recorded before its references were kept cannot say: only a kept one is checked.
        kept, now = run.get("references"), printed_references(path.stem, root / "results")
        changed += [f"the reference it prints changed ({name}: run {', '.join(kept[name])} -> "
                    f"{', '.join(now.get(name, [])) or 'none'})"
                    for name in sorted(kept or {}) if kept[name] != now.get(name)]
        if changed:
            problems.append(f"{executed}/{path.name} is stale ({'; '.join(changed)}); "
                            f"refresh it: {command}")
    return problems


def clean_records(folder: Path, only: list[str] | None = None) -> list[Path]:
    """The executed copies in ``folder`` cleaned of colours and machine folders; those changed."""
    changed = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        if only and not any(path.name.startswith(prefix) for prefix in only):
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        if clean_outputs.plain_outputs(nb):
            write_atomically(nb, path)
            changed.append(path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=sorted(DATA_LABELS),
                        help="the data (else LESSON_DATA; one of the two is required)")
    parser.add_argument("--quick", action="store_true",
                        help="quick mode (LESSON_QUICK=1): a try-out, not the lesson's record")
    parser.add_argument("--only", nargs="+", metavar="NN",
                        help="only the notebooks whose names start with these, e.g. 04 05")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds allowed for each whole notebook (default %(default)s)")
    parser.add_argument("--out", type=Path, default=ROOT / EXECUTED_DIR,
                        help="folder of the executed copies (default: executed/)")
    parser.add_argument("--clean-only", action="store_true",
                        help="run nothing: take the terminal colours (ANSI escapes, Rich's coloured "
                             "HTML) and this machine's folders (checkout, environment, home) out of "
                             "the executed copies' outputs")
    parser.add_argument("--stale", action="store_true",
                        help="run nothing: list the executed copies whose code cells or printed "
                             "reference runs changed since their run, each with the command that "
                             "refreshes it (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.stale:
        problems = stale_records(ROOT)
        print("\n".join(problems) or "no executed copy is stale")
        return 1 if problems else 0
    if args.clean_only:
        changed = clean_records(args.out, args.only)
        print(f"{len(changed)} executed notebook(s) cleaned of colours and of this machine's paths"
              + "".join(f"\n  {path.name}" for path in changed))
        return 0
    # Before minutes of work: the executing stack and what every notebook imports.
    require_or_exit(("nbclient", "nbformat", "ipykernel", "jupytext", "keras", "h5py", "numpy",
                     "matplotlib", "tqdm"), what="tools/record_run.py")
    work = None
    try:
        data = choose_data(args.data, os.environ)
        quick = choose_quick(args.quick, os.environ)
        notebooks = select_notebooks(args.only)
        stale = make_notebooks.out_of_sync()
        if stale:
            raise RecordError("the notebooks differ from their episodes:\n  " + "\n  ".join(stale)
                              + "\nrun 'python tools/make_notebooks.py' first")
        work = Path(tempfile.mkdtemp(prefix=".record-run-work-", dir=ROOT))
        env = kernel_environment(data, quick, work / "gpulesson-work")
        return record_all(notebooks, args, data, quick, probe_machine(env), env)
    except RecordError as exc:
        print(f"record_run: {exc}", file=sys.stderr)
        return 2
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


def record_all(notebooks, args, data: str, quick: bool, facts: dict, env: dict) -> int:
    """Record each notebook in turn, in one work folder, as a learner goes through them."""
    gpu = facts.get("device") if facts.get("gpu_count") else "no GPU"
    print(f"Recording {len(notebooks)} notebook(s) on {facts['cpu_model']} "
          f"({facts['cores_usable']} cores), {gpu}, backend {facts.get('backend')}, "
          f"data {data}, {'quick mode' if quick else 'full size'}", flush=True)
    failed = []
    for notebook in notebooks:
        print(f"{notebook.stem}: running", flush=True)
        try:
            target = record(notebook, args.out, data=data, quick=quick, facts=facts, env=env,
                            timeout=args.timeout)
        except Exception as exc:  # one failed notebook must not lose the others' records
            failed.append(notebook.stem)
            message = str(exc).strip().splitlines()
            print(f"{notebook.stem}: FAILED, its previous record is kept: "
                  f"{type(exc).__name__}: {' '.join(message[-3:])[:1500]}", file=sys.stderr)
            continue
        print(f"{notebook.stem}: recorded in {target.relative_to(args.out.parent)} "
              f"({target.stat().st_size / 1e6:.2f} MB)", flush=True)
    too_large = check_size(args.out)
    if too_large:
        print(too_large, file=sys.stderr)
        return 1
    print(f"{args.out.name}/ holds {size_of(args.out) / 1e6:.2f} MB of executed "
          f"notebooks (limit {SIZE_LIMIT / 1e6:.0f} MB)")
    if failed:
        print(f"not recorded: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
