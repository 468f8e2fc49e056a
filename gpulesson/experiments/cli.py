"""The experiments' command line: one builder that each experiment declares its options to.

A :class:`Command` lists the shared options below (``--out``, ``--run-id``, ``--seed``, ...)
and its own (:func:`option`) in the order ``--help`` shows them.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from gpulesson.machine.devices import KERAS_DEVICES
from gpulesson.records.summaries import REPEATS, WARMUP, check_epochs, default_epochs


class Command:
    """``python -m gpulesson.experiments.NAME`` (a dotted ``name``: that module), described by
    ``doc``'s first line: ``options`` in order, ``at_least_one`` refused below 1,
    ``check(parser, args)`` for the rest, ``subcommands`` name -> ``(help, options)`` (the chosen
    one in ``args.command``). ``per_backend``: once per Keras backend (:func:`other_backends`)."""

    def __init__(self, name: str, doc: str, *options, at_least_one=(), epilog: str | None = None,
                 subcommands: dict | None = None, check=None, per_backend: bool = False,
                 environment: dict | None = None):
        self.module = name if "." in name else f"gpulesson.experiments.{name}"
        self.description, self.epilog = doc.splitlines()[0], epilog
        self.options, self.at_least_one, self.check = options, tuple(at_least_one), check
        self.subcommands = subcommands or {}
        self.per_backend, self.environment = per_backend, environment or {}

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
        parser = self.parser()
        args = parser.parse_args(argv)
        for name in self.at_least_one:
            value = getattr(args, name)
            if value is not None and value < 1:
                parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
        if "quick" in args:  # also when the settings say quick mode (LESSON_QUICK=1)
            from gpulesson.datasets.settings import get_settings

            args.quick = args.quick or get_settings().quick
        if self.check:
            self.check(parser, args)
        return parser, args


def option(*flags, **settings):
    """An option of the experiment's own, as ``argparse.add_argument`` takes it."""
    return lambda parser: parser.add_argument(*flags, **settings)


def quick_default(flag: str, what: str, default, quick, **settings):
    """An option whose default quick mode changes, None until the command resolves it."""
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
    return option("--devices", nargs="+", choices=sorted(choices or KERAS_DEVICES), default=None,
                  help=help)


def backends(choices, help: str):
    return option("--backends", nargs="+", choices=choices, default=None, help=help)


def quick(help: str):
    return option("--quick", action="store_true", help=help)


def sizes(epoch: dict):
    """``--n-images``, ``--batch-size`` and ``--quick``; ``epoch`` has their (quick) defaults."""
    return group(None,
                 option("--n-images", type=int, default=None,
                        help=f"images an epoch (default {epoch['n_images']:,}; --quick "
                             f"{epoch['quick_n_images']:,})"),
                 option("--batch-size", type=int, default=None,
                        help=f"default {epoch['batch_size']} (--quick {epoch['quick_batch_size']})"),
                 quick("tiny sizes and 2 timed epochs (also when LESSON_QUICK=1)"))


def results_file(text: str) -> Path:
    """``--out``'s value, a name ending in ``.jsonl``: not a model or figure to append to."""
    path = Path(text)
    if path.suffix != ".jsonl":
        raise argparse.ArgumentTypeError(
            f"{text} is not a results file: records are JSON lines, appended to a file whose "
            f"name ends in .jsonl, e.g. --out {path.with_suffix('.jsonl').name}")
    return path


def out(default: Path):
    return option("--out", type=results_file, default=default,
                  help=f"results file to append to (default {default})")


def number(text: str, kind, what: str):
    """``kind(text)``, or a usage error saying that ``text`` is not ``what``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    value = number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number more than 0 (a learning rate, a time)."""
    value = number(text, float, "a number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {value}")
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text}")
    return value


def _epochs(text: str) -> int:
    try:
        return check_epochs(int(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


SEED = option("--seed", type=int, default=42, help="random seed of the initial weights")
RUN_ID = option("--run-id", default=None,
                help="add to this run of the results file instead of starting a new one, "
                     "skipping the conditions it already has (how an interrupted reference stage goes on)")
EPOCHS = option("--epochs", type=_epochs, default=None,
                help=f"epochs per device, the {WARMUP} warm-up epoch included (default "
                     f"{default_epochs(False)}: {WARMUP} warm-up and {REPEATS} timed; quick "
                     f"mode {default_epochs(True)}); at least {WARMUP + 1}")


def default_devices(requested: list[str] | None, gpu_visible) -> list[str]:
    """The devices asked for; if none were, the CPU, then the GPU when one is visible."""
    if requested:
        return list(requested)
    return ["cpu", "gpu"] if gpu_visible else ["cpu"]


class UsageError(ValueError):
    """A declared experiment's usage error, raised by ``measure`` before it measures."""


def refuse(message: str):
    """Stop before measuring: ``message`` on stderr, exit status 2 (as a usage error)."""
    print(message, file=sys.stderr)
    raise SystemExit(2)


def devices_or_refuse(requested: list[str] | None, gpu_visible, framework: str) -> list[str]:
    """:func:`default_devices`, refused when a GPU is asked for and ``framework`` sees none."""
    devices = default_devices(requested, gpu_visible)
    if "gpu" in devices and not gpu_visible:
        refuse(f"No GPU is visible to {framework}: run with --devices cpu, or on a machine with a GPU.")
    if requested is None and not gpu_visible:
        print("No GPU visible: recording the CPU run only.")
    return devices


def devices_here(requested) -> list[str]:
    """:func:`default_devices` with this process's Keras backend, refused when a GPU is asked for
    and it sees none; PyTorch's allocator fixed."""
    from gpulesson.machine import allocator
    from gpulesson.machine.devices import keras_device

    found = keras_device()
    allocator.fix_for(found["backend"])
    devices = default_devices(requested, found["gpu_count"])
    if "gpu" in devices and not found["gpu_count"]:
        refuse(f"No GPU is visible to Keras ({found['backend']} backend): nothing measured. "
               "Run with --devices cpu, or on a machine with a GPU.")
    return devices


def say_measured(made: list[dict], out: Path, experiment: str, run_id: str, describe) -> int:
    """A command's last words, status 0: the run's table (``describe``, unless None) and what
    was appended, or that nothing was left to measure."""
    from gpulesson.records.results import read_records

    if describe and Path(out).is_file():  # a per-backend child (no describe) reads nothing
        records = read_records(out, experiment=experiment, run_id=run_id)
        if records:
            print(describe(records))
    print(f"Appended {len(made)} record(s) of run {made[0]['run_id']} to {out}" if made
          else "Nothing left to measure.", flush=True)
    return 0


def continue_run(out: Path, experiment: str, run_id: str | None, key) -> tuple[str, set]:
    """``(run id, keys of its conditions recorded in out)``; a new run without ``run_id``."""
    from gpulesson.records.results import new_run_id, read_records

    if not run_id:
        return new_run_id(), set()
    if not Path(out).is_file():
        return run_id, set()
    records = read_records(out)
    done = {key(r) for r in records if r.get("experiment") == experiment and r.get("run_id") == run_id}
    known = sorted({r.get("run_id") for r in records} - {None})
    # An id the file lacks: a new run only in new_run_id's form (as tools/reference.py gives it).
    if run_id not in known and not re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run_id):
        listed = ", ".join(known[-5:]) + (f" (the last 5 of {len(known)})" if len(known) > 5 else "")
        refuse(f"error: --run-id {run_id}: {out} has no run of that id (its runs: "
               f"{listed or 'none'}). Give one of them to go on with it, or leave --run-id out "
               "to start a new run.")
    return run_id, done


def other_backends(parser: argparse.ArgumentParser, args: argparse.Namespace, command: Command,
                   run_id: str, backends) -> list[str] | None:
    """None in the process of the one backend asked for, which measures; otherwise the command
    run once per backend asked for (default: those of ``backends`` installed) with this command
    line's options and ``command.environment[backend]``; the backends whose process failed."""
    from gpulesson.machine import allocator
    from gpulesson.machine.devices import backend_installed, installed_backends

    missing = [b for b in args.backends or [] if not backend_installed(b)]
    if missing:
        parser.error(f"backend(s) {', '.join(missing)} not installed: pip install "
                     f"{' '.join(missing)}, or leave them out")
    chosen = args.backends or [b for b in installed_backends() if b in backends]
    if len(chosen) == 1 and os.environ.get("KERAS_BACKEND") == chosen[0]:
        return None
    options = []  # this command line's, as each process takes them
    for name, value in vars(args).items():
        if name in ("backends", "run_id", "out") or value is None or value is False or value == []:
            continue
        flag = f"--{name.replace('_', '-')}"
        options += [flag] if value is True else [flag, *map(str, value)] \
            if isinstance(value, list | tuple) else [flag, str(value)]
    failed = []
    for backend in chosen:
        print(f"--- {backend}", flush=True)
        env = allocator.environment(backend, {**os.environ, "KERAS_BACKEND": backend,
                                              **command.environment.get(backend, {})})
        child = [sys.executable, "-m", command.module, "--backends", backend, "--run-id", run_id,
                 "--out", str(args.out), *options]
        if subprocess.run(child, env=env).returncode:
            failed.append(backend)
    return failed
