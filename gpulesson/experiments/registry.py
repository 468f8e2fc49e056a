"""Where the lesson finds its experiments, so that none is listed by hand.

The site's ``ref_*`` values come from every experiment package whose ``page`` module has
``substitutions(path)`` (:func:`page_sources`), in the order of their names. An older package
has a ``__main__.py`` and a page that gives ``EXPERIMENT``. A *declared* one is three files:
``__init__`` declares ``RECORDS`` (a :class:`~gpulesson.records.recordset.RecordSet`) and
``COMMAND`` (a :class:`~gpulesson.experiments.cli.Command`); ``measure.py`` has ``measure(args,
*, run_id, done)``, yielding each record as it is made; ``page.py`` has ``substitutions(path)``
and may have ``describe(records)`` (the command's table), ``figures(records)`` with ``FIGURES``
and ``FIGURE_FOLDER``, and ``reference_run(path)``. Importing :mod:`gpulesson.experiments`
installs the import hook that gives a declared package its ``__main__``, :func:`run`. Imports
only the standard library until an experiment is asked for.
"""

import functools
import importlib
import importlib.abc
import importlib.util
import pkgutil
import sys
from pathlib import Path

PACKAGE = "gpulesson.experiments"


def experiment_packages(package: str = PACKAGE) -> list[str]:
    """The sub-packages of ``package`` (each an experiment), in the order of their names."""
    found = importlib.import_module(package)
    return [f"{package}.{each.name}" for each in sorted(pkgutil.iter_modules(found.__path__),
                                                         key=lambda each: each.name)
            if each.ispkg]


def page_sources(package: str = PACKAGE) -> list[str]:
    """The ``page`` modules of ``package``'s experiments whose ``substitutions()`` fill the pages."""
    pages = [f"{name}.page" for name in experiment_packages(package)]
    return [page for page in pages
            if importlib.util.find_spec(page) and hasattr(importlib.import_module(page), "substitutions")]


def results_name(module) -> str:
    """The name in ``results/`` of the file a page module's ``substitutions()`` reads: its
    ``EXPERIMENT``'s, else its package's ``RECORDS``'."""
    if hasattr(module, "EXPERIMENT"):
        return f"{module.EXPERIMENT}.jsonl"
    return importlib.import_module(module.__name__.rpartition(".")[0]).RECORDS.results_file.name


def declares(module) -> bool:
    """Whether ``module`` is a declared experiment's package: it has ``COMMAND`` and ``RECORDS``."""
    return all(hasattr(module, name) for name in ("COMMAND", "RECORDS"))


class Declared:
    """A declared experiment as the tools, the site and the figures step read it: its package's
    ``RECORDS`` and ``COMMAND``, ``EXPERIMENT``, ``RESULTS_FILE``, ``measure``, and its page's
    names (``substitutions``, ``figures``, ...)."""

    def __init__(self, name: str):
        package = importlib.import_module(name)
        self.__name__, self.RECORDS, self.COMMAND = name, package.RECORDS, package.COMMAND
        self.EXPERIMENT, self.RESULTS_FILE = self.RECORDS.experiment, self.RECORDS.results_file

    @functools.cached_property
    def page(self):
        return importlib.import_module(f"{self.__name__}.page")

    @property
    def measure(self):
        return importlib.import_module(f"{self.__name__}.measure").measure

    def __getattr__(self, name: str):
        """The page's ``name``; a page without ``describe`` gives a line a device naming its run
        and software, without ``reference_run`` the records', without ``FIGURES`` none."""
        from gpulesson.records.parts import run_labels

        if name.startswith("_"):
            raise AttributeError(name)
        defaults = {"describe": lambda records: "\n".join(run_labels(records)),
                    "reference_run": self.RECORDS.reference_run, "FIGURES": ()}
        return getattr(self.page, name, defaults[name]) if name in defaults else getattr(self.page, name)


def experiment(name: str):
    """Experiment package ``name`` as the site and the tools read it."""
    module = importlib.import_module(name)
    return Declared(name) if declares(module) else module


def run(name: str, argv=None) -> int:
    """The command of the declared experiment ``name``: each record ``measure`` yields for a new
    run, or ``--run-id``'s missing conditions, appended to ``--out`` at once (a stopped run keeps
    what it made), then the run's table and what was appended (or which backend failed)."""
    from gpulesson.errors import cannot_write_file
    from gpulesson.experiments import cli
    from gpulesson.records.results import append_record, read_records

    experiment = Declared(name)
    parser, args = experiment.COMMAND.parse(argv)
    records = experiment.RECORDS
    problem = cannot_write_file(args.out)
    if problem:  # before any measuring, which would be lost at the end
        parser.error(f"argument --out: {problem}")
    run_id, done = cli.continue_run(args.out, records.experiment,
                                   getattr(args, "run_id", None), records.key)  # None: a new run
    per_backend = experiment.COMMAND.per_backend
    if per_backend:
        failed = cli.other_backends(parser, args, experiment.COMMAND, run_id, records.backends)
        if failed is not None:
            if Path(args.out).is_file():
                print(experiment.describe(read_records(args.out, experiment=records.experiment,
                                                       run_id=run_id)))
            if failed:
                print(f"error: the {', '.join(failed)} process(es) failed (above).", file=sys.stderr)
            return 1 if failed else 0
    made = []
    try:
        for record in experiment.measure(args, run_id=run_id, done=done):
            append_record(args.out, record)
            made.append(record)
    except cli.UsageError as exc:
        parser.error(str(exc))
    return cli.say_measured(made, args.out, records.experiment, run_id,
                            None if per_backend else experiment.describe)


def figure_drawer(name: str, folder: Path):
    """The ``draw(results)`` that saves declared experiment ``name``'s ``FIGURES`` in ``folder``
    from its reference run (or its page's ``page_runs(path)``); nothing without a run."""
    from gpulesson.records.figure_scripts import drawer

    experiment = Declared(name)
    runs = getattr(experiment, "page_runs", None)
    return drawer(experiment, experiment.FIGURES, folder, until_recorded=name.rpartition(".")[2],
                  run=runs, figures=runs and (lambda found: experiment.figures(*found)))


def draw_declared(root: Path, package: str = PACKAGE) -> list[Path]:
    """`make figures` for every declared experiment of ``package`` whose page names its
    ``FIGURES`` and their ``FIGURE_FOLDER`` in ``root``, drawn from ``root/results``."""
    written = []
    for name in experiment_packages(package):
        found = experiment(name)
        folder = isinstance(found, Declared) and getattr(found, "FIGURE_FOLDER", None)
        if folder and found.FIGURES:
            written += figure_drawer(name, root / folder)(root / "results" / found.RESULTS_FILE.name)
    return written


# The ``__main__`` module the import hook gives a declared package.
COMMAND_MODULE = '''from functools import partial

from gpulesson.experiments import registry

COMMAND = registry.Declared({package!r}).COMMAND
main = partial(registry.run, {package!r})

if __name__ == "__main__":
    raise SystemExit(main())
'''


class _DeclaredCommands(importlib.abc.MetaPathFinder, importlib.abc.InspectLoader):
    """Finds and loads ``P.__main__`` (:data:`COMMAND_MODULE`) for an imported package ``P`` that
    declares ``COMMAND`` and ``RECORDS``; asked last, so a ``__main__.py`` on disk always wins."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, last = fullname.rpartition(".")
        module = sys.modules.get(package)
        if last == "__main__" and declares(module):  # origin: sys.argv[0] under python -m
            return importlib.util.spec_from_loader(fullname, self, origin=module.__file__,
                                                   is_package=False)
        return None

    def get_source(self, fullname: str) -> str:
        return COMMAND_MODULE.format(package=fullname.rpartition(".")[0])


def install() -> None:
    """Put the hook that gives declared packages their ``__main__`` last on ``sys.meta_path``."""
    if not any(isinstance(finder, _DeclaredCommands) for finder in sys.meta_path):
        sys.meta_path.append(_DeclaredCommands())
