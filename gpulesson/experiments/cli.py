"""The experiments' command line: one builder that each ``__main__`` declares its options to.

Every experiment's command appends its records to a results file (``--out``), most seed their
models' initial weights (``--seed``), measure the CPU and then the GPU if one is visible unless
told which devices, can go on with an earlier run (``--run-id``, skipping the conditions it
has; an id the file lacks starts a run only in the form that ``new_run_id`` gives), and end by
saying what they appended. ``--out`` names a ``.jsonl`` file.

An experiment's ``__main__`` declares its command as a :class:`Command` of options, in the
order ``--help`` lists them: the shared ones (:func:`devices`, :func:`backends`,
:func:`quick`, :func:`sizes`, :data:`EPOCHS`, :func:`out`, :data:`SEED`, :data:`RUN_ID`) and
its own (:func:`option`, as ``argparse`` takes them), in groups (:func:`group`) or in
subcommands. The training jobs share their options too (:func:`per_replica_batch`,
:data:`LEARNING_RATE`, :data:`BASE_BATCH`, :func:`job_device`, :func:`out_dir`) and refuse a
file they could not write before training (:func:`refuse_unwritable`). :meth:`Command.parse` reads a command
line, refuses the counts given below 1 and resolves quick mode (``--quick`` or
``LESSON_QUICK=1``); :func:`per_backend_command` runs one process per Keras backend, and
:func:`say_measured` prints the run's table and what was appended.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

from gpulesson.experiments.common import REPEATS, WARMUP, check_epochs, default_epochs, repeats_for
from gpulesson.machine.devices import KERAS_DEVICES

MODULE = "gpulesson.experiments."


class Command:
    """One experiment's command line: ``python -m gpulesson.experiments.NAME`` (a ``name``
    with dots: that package, e.g. a declared experiment's ``__name__``), described by
    the first line of ``doc``, with ``options`` (callables that add themselves to a parser)
    in order. ``at_least_one`` names the options refused below 1. ``subcommands``: name ->
    ``(help, options)`` of each subcommand, the chosen one in ``args.command``."""

    def __init__(self, name: str, doc: str, *options, at_least_one=(), epilog: str | None = None,
                 subcommands: dict | None = None):
        self.module = name if "." in name else MODULE + name
        self.description, self.epilog = doc.splitlines()[0], epilog
        self.options, self.at_least_one = options, tuple(at_least_one)
        self.subcommands = subcommands or {}

    def parser(self) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=f"python -m {self.module}",
                                         description=self.description, epilog=self.epilog)
        for add in self.options:
            add(parser)
        if self.subcommands:
            sub = parser.add_subparsers(dest="command", required=True)
            for name, (help, options) in self.subcommands.items():
                group(None, *options)(sub.add_parser(name, help=help))
        return parser

    def parse(self, argv=None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
        """``(parser, args)``: ``args.quick`` true also when the settings say quick mode."""
        parser = self.parser()
        args = parser.parse_args(argv)
        refuse_below_one(parser, args, self.at_least_one)
        if "quick" in args:
            from gpulesson.datasets.settings import get_settings

            args.quick = args.quick or get_settings().quick
        return parser, args


def option(*flags, **settings):
    """An option of the experiment's own, as ``argparse.add_argument`` takes it."""
    return lambda parser: parser.add_argument(*flags, **settings)


def quick_default(flag: str, what: str, default, quick, **settings):
    """An option whose default quick mode changes, None until the command resolves it: its help
    says ``what`` it is, then "(default DEFAULT; --quick: QUICK)"."""
    return option(flag, type=int, default=None, **settings,
                  help=f"{what} (default {default}; --quick: {quick})")


def group(title: str | None, *options):
    """``options`` under the heading ``title`` of ``--help`` (None: where they are added)."""
    def add(parser):
        target = parser.add_argument_group(title) if title else parser
        for each in options:
            each(target)
    return add


def devices(help: str = "devices (default: cpu, then gpu if one is visible)", choices=None):
    """``--devices``: one or more of the Keras devices (or ``choices``)."""
    return option("--devices", nargs="+", choices=sorted(choices or KERAS_DEVICES), default=None,
                  help=help)


def backends(choices, help: str):
    """``--backends``: the Keras backends, one process each (:func:`per_backend_command`)."""
    return option("--backends", nargs="+", choices=choices, default=None, help=help)


def quick(help: str):
    """``--quick``: tiny sizes and fewer repeats, as ``LESSON_QUICK=1`` also asks."""
    return option("--quick", action="store_true", help=help)


def out(default: Path):
    """``--out``: the results file, ``default`` if not given (:func:`add_out_option`)."""
    return lambda parser: add_out_option(parser, default)


def sizes(epoch: dict):
    """``--n-images``, ``--batch-size`` and ``--quick`` (:func:`add_size_options`)."""
    return lambda parser: add_size_options(parser, epoch)



DEFAULT_SEED = 42
NEW_RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")  # gpulesson.records.results.new_run_id's form


def results_file(text: str) -> Path:
    """``--out``'s value: a results file holds JSON lines, so its name ends in ``.jsonl``; any
    other name (a model, a figure, an HDF5 file) would get text appended to it."""
    path = Path(text)
    if path.suffix != ".jsonl":
        raise argparse.ArgumentTypeError(
            f"{text} is not a results file: records are JSON lines, appended to a file whose "
            f"name ends in .jsonl, e.g. --out {path.with_suffix('.jsonl').name}")
    return path


def add_out_option(parser: argparse.ArgumentParser, default: Path) -> None:
    """``--out``: the results file the records are appended to, ``default`` if not given."""
    parser.add_argument("--out", type=results_file, default=default,
                        help=f"results file to append to (default {default})")


def _number(text: str, kind, what: str):
    """``kind(text)``, or a usage error saying that ``text`` is not ``what``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    """A count of at least 1."""
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number more than 0 (a learning rate, a time)."""
    value = _number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value


def per_replica_batch(what: str):
    """``--per-replica-batch`` of a data-parallel training: images per ``what`` and step."""
    return option("--per-replica-batch", type=positive_int, default=64,
                  help=f"images per {what} and step (default 64)")


RESUME = "Run it again with the same arguments to resume after the last completed epoch."
LEARNING_RATE = option("--learning-rate", type=positive_float, default=0.01,
                       help="SGD learning rate for a global batch of --base-batch (default 0.01)")
BASE_BATCH = option("--base-batch", type=positive_int, default=64,
                    help="the batch the learning rate is tuned for; the rate is scaled "
                         "linearly to the global batch (default 64)")


def job_device(help: str):
    """``--device`` of a training job: auto (the GPU if one is visible), cpu or gpu."""
    return option("--device", choices=("auto", "cpu", "gpu"), default="auto", help=help)


def out_dir(help: str):
    """``--out-dir``: the folder of a training job's files."""
    return option("--out-dir", type=Path, default=None, help=help)


def refuse_unwritable(parser: argparse.ArgumentParser, path: Path, flag: str) -> None:
    """Before any training: a usage error where the results file ``path`` (given as ``flag``)
    could not be written, as the measurement would be lost at the end, and where the Keras
    backend is not installed (one line, no traceback)."""
    from gpulesson.errors import cannot_write_file
    from gpulesson.machine.backends import missing_backend_message

    problem = cannot_write_file(path)
    if problem:
        parser.error(f"argument {flag}: {problem}")
    problem = missing_backend_message()  # before Keras is imported
    if problem:
        parser.exit(2, f"{parser.prog}: error: {problem}\n")


def positive_seconds(text: str) -> float:
    """A time limit in seconds, more than 0 (0 or less would skip everything)."""
    seconds = _number(text, float, "a number of seconds")
    if not seconds > 0:
        raise argparse.ArgumentTypeError(
            f"must be more than 0 seconds, not {text}: a limit of {text} would skip everything")
    return seconds


def add_seed_option(parser: argparse.ArgumentParser, default: int = DEFAULT_SEED) -> None:
    """``--seed``: the random seed of the initial weights."""
    parser.add_argument("--seed", type=int, default=default,
                        help="random seed of the initial weights")


def default_devices(requested: list[str] | None, gpu_visible) -> list[str]:
    """The devices asked for; if none were, the CPU, then the GPU when one is visible."""
    if requested:
        return list(requested)
    return ["cpu", "gpu"] if gpu_visible else ["cpu"]


def devices_or_refuse(requested: list[str] | None, gpu_visible, framework: str) -> list[str] | None:
    """:func:`default_devices`, saying when the CPU is all there is to record; None, with a
    message on stderr, when a GPU is asked for and ``framework`` sees none."""
    devices = default_devices(requested, gpu_visible)
    if "gpu" in devices and not gpu_visible:
        print(f"No GPU is visible to {framework}: run with --devices cpu, or on a machine with a "
              "GPU.", file=sys.stderr)
        return None
    if requested is None and not gpu_visible:
        print("No GPU visible: recording the CPU run only.")
    return devices


def say_appended(records: list[dict], out: Path, what: str = "record(s)") -> None:
    """Print how many records of which run were appended to ``out``."""
    print(f"Appended {len(records)} {what} of run {records[0]['run_id']} to {out}", flush=True)


def say_measured(made: list[dict], out: Path, experiment: str, run_id: str, describe) -> int:
    """A command's last words: the run's table (``describe`` of the run's records in ``out``)
    and what was appended, or that nothing was left to measure; its exit status, 0."""
    from gpulesson.records.results import read_records

    if not made:
        print("Nothing left to measure.")
        return 0
    print(describe(read_records(out, experiment=experiment, run_id=run_id)))
    say_appended(made, out)
    return 0


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
    from gpulesson.records.results import new_run_id, read_records

    if not run_id:
        return new_run_id(), set()
    if not Path(out).is_file():
        return run_id, set()
    records = read_records(out)
    done = {key(r) for r in records if r.get("experiment") == experiment and r.get("run_id") == run_id}
    known = sorted({r.get("run_id") for r in records} - {None})
    # An id the file lacks: a new run only in new_run_id's form (as tools/reference.py gives it).
    if run_id not in known and not NEW_RUN_ID.fullmatch(run_id):
        listed = ", ".join(known[-5:]) + (f" (the last 5 of {len(known)})" if len(known) > 5 else "")
        print(f"error: --run-id {run_id}: {out} has no run of that id (its runs: "
              f"{listed or 'none'}). Give one of them to go on with it, or leave --run-id out "
              "to start a new run.", file=sys.stderr)
        raise SystemExit(2)
    return run_id, done


def add_epochs_option(parser: argparse.ArgumentParser) -> None:
    """``--epochs``: epochs per device, the warm-up included (default: :func:`default_epochs`);
    a number that leaves no timed epoch is refused as a usage error."""
    def epochs(text: str) -> int:
        try:
            return check_epochs(int(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument("--epochs", type=epochs, default=None,
                        help=f"epochs per device, the {WARMUP} warm-up epoch included (default "
                             f"{default_epochs(False)}: {WARMUP} warm-up and {REPEATS} timed; quick "
                             f"mode {default_epochs(True)}); at least {WARMUP + 1}")


def run_each_backend(module: str, backends, options: list[str], *, run_id: str, out: Path,
                     settings: dict | None = None) -> list[str]:
    """Run ``python -m module --backends NAME --run-id RUN --out OUT *options`` once per backend
    (a Keras process has one backend), with ``KERAS_BACKEND`` set, for PyTorch glibc malloc's
    thresholds fixed (:mod:`gpulesson.experiments.allocator`), and ``settings[NAME]`` (a dict
    of environment variables) added; the backends whose process failed."""
    from gpulesson.experiments import allocator

    failed = []
    for backend in backends:
        print(f"--- {backend}", flush=True)
        env = allocator.environment(backend, {**os.environ, "KERAS_BACKEND": backend,
                                              **(settings or {}).get(backend, {})})
        child = [sys.executable, "-m", module, "--backends", backend, "--run-id", run_id,
                 "--out", str(out), *options]
        if subprocess.run(child, env=env).returncode:
            failed.append(backend)
    return failed


def passed_on(args: argparse.Namespace, names) -> list[str]:
    """The options among ``names`` given on this command line, as arguments for a child
    process (``--n-images 1024``, ``--devices cpu gpu``, ``--quick``)."""
    found = []
    for name in names:
        value = getattr(args, name)
        if value is None or value is False or value == []:
            continue
        flag = f"--{name.replace('_', '-')}"
        found += [flag] if value is True else [flag, *map(str, value)] \
            if isinstance(value, list | tuple) else [flag, str(value)]
    return found


def chosen_backends(parser: argparse.ArgumentParser, requested, installed) -> list[str]:
    """The backends asked for (all of ``installed`` if none was); a usage error naming those
    not installed."""
    from gpulesson.machine.devices import backend_installed

    missing = [b for b in requested or [] if not backend_installed(b)]
    if missing:
        parser.error(f"backend(s) {', '.join(missing)} not installed: pip install "
                     f"{' '.join(missing)}, or leave them out")
    return list(requested or installed)


def devices_here(requested) -> list[str]:
    """In a process that measures with its own Keras backend: PyTorch's allocator fixed (set
    already where the command started the process), and the devices to measure, ``requested``
    or :func:`default_devices`; a message and exit status 2 when a GPU is asked for and the
    backend sees none."""
    from gpulesson.experiments import allocator
    from gpulesson.machine.devices import keras_device

    found = keras_device()
    allocator.fix_for(found["backend"])
    devices = default_devices(requested, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        print(f"No GPU is visible to Keras ({found['backend']} backend): nothing measured. "
              "Run with --devices cpu, or on a machine with a GPU.", file=sys.stderr)
        raise SystemExit(2)
    return devices


def refuse_below_one(parser: argparse.ArgumentParser, args: argparse.Namespace, names) -> None:
    """A usage error for any of the options ``names`` given below 1."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")


def report_backends(out: Path, experiment: str, run_id: str, describe, failed) -> int:
    """After one process per backend: the run's table (``describe`` of its records in ``out``),
    the backends whose process failed; the command's exit status."""
    from gpulesson.records.results import read_records

    if Path(out).is_file():
        print(describe(read_records(out, experiment=experiment, run_id=run_id)))
    if failed:
        print(f"error: the {', '.join(failed)} process(es) failed (above).", file=sys.stderr)
        return 1
    return 0


def per_backend_command(parser: argparse.ArgumentParser, args: argparse.Namespace, *,
                        module: str, experiment: str, condition, installed, measure_here,
                        passed, settings: dict | None = None) -> int:
    """The command of an experiment measured in one process per Keras backend, after its own
    checks of ``args``: a new run, or ``--run-id``'s, skipping the conditions (``condition`` of
    a record) it has. In the process of the one backend asked for, ``measure_here(args,
    quick=, run_id=, done=)`` appends the records; otherwise the same command runs once per
    backend (those asked for, or ``installed``), with the options named in ``passed`` and
    ``settings`` (:func:`run_each_backend`), and the run's table comes from ``module``'s page."""
    from gpulesson.datasets.settings import get_settings

    quick = args.quick or get_settings().quick
    run_id, done = continue_run(args.out, experiment, args.run_id, condition)
    backends = chosen_backends(parser, args.backends, installed)
    if len(backends) == 1 and os.environ.get("KERAS_BACKEND") == backends[0]:
        made = measure_here(args, quick=quick, run_id=run_id, done=done)
        say_appended(made, args.out) if made else print("Nothing left to measure.")
        return 0
    options = passed_on(args, passed) + (["--quick"] if quick else [])
    failed = run_each_backend(module, backends, options, run_id=run_id, out=args.out,
                              settings=settings)
    describe = importlib.import_module(f"{module}.page").describe
    return report_backends(args.out, experiment, run_id, describe, failed)


def add_size_options(parser: argparse.ArgumentParser, sizes: dict) -> None:
    """``--n-images``, ``--batch-size`` and ``--quick`` of a command whose epoch is ``sizes``:
    ``{"n_images": ..., "batch_size": ..., "quick_n_images": ..., "quick_batch_size": ...}``."""
    parser.add_argument("--n-images", type=int, default=None,
                        help=f"images an epoch (default {sizes['n_images']:,}; --quick "
                             f"{sizes['quick_n_images']:,})")
    parser.add_argument("--batch-size", type=int, default=None,
                        help=f"default {sizes['batch_size']} (--quick {sizes['quick_batch_size']})")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes and 2 timed epochs (also when LESSON_QUICK=1)")


def rule_arguments(args: argparse.Namespace, sizes: dict, *, quick: bool, run_id: str,
                   done: set) -> dict:
    """The keyword arguments of an experiment's ``measure`` for the options of
    :func:`add_size_options`: the epoch's size, the rule's warm-up and repeats, the run, and
    each record appended to ``args.out`` as it is made, with its progress printed."""
    from gpulesson.records.results import append_record

    size = "quick_" if quick else ""
    return {"n_images": args.n_images or sizes[f"{size}n_images"],
            "batch_size": args.batch_size or sizes[f"{size}batch_size"],
            "repeats": repeats_for(quick), "warmup": WARMUP, "run_id": run_id, "done": done,
            "on_record": lambda r: append_record(args.out, r),
            "progress": lambda line: print(line, flush=True)}


SEED, RUN_ID, EPOCHS = add_seed_option, add_run_id_option, add_epochs_option
