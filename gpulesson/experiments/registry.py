"""Where the lesson finds its experiments, so that none is listed by hand.

The site's ``ref_*`` values come from every experiment package with page values
(:func:`page_sources`), in the order of their names. An older package has a ``__main__.py`` and
gives ``substitutions`` and ``EXPERIMENT``. A *declared* one is three files: ``__init__``
declares ``RECORDS`` (a :class:`~gpulesson.records.recordset.RecordSet`) and ``COMMAND`` (a
:class:`~gpulesson.experiments.cli.Command`); ``measure.py`` has ``measure(args, *, run_id,
done)``, yielding each record as it is made; ``page.py`` has ``substitutions(path)`` and may
have ``describe(records)`` (the command's table), ``figures(records)`` with ``FIGURES`` and
``FIGURE_FOLDER``, and ``reference_run(path)``. :class:`Declared` gathers these parts; an import
hook (:func:`install`, done by importing :mod:`gpulesson.experiments`) gives such a package its
``__main__``: :func:`run`. Imports only the standard library until an experiment is asked for.
"""

from __future__ import annotations

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


def page_module(name: str) -> str | None:
    """The module whose ``substitutions()`` give experiment package ``name``'s page values: the
    package where it has them, else its ``page`` module; None for a package without values."""
    if hasattr(importlib.import_module(name), "substitutions"):
        return name
    page = f"{name}.page"
    if importlib.util.find_spec(page) and hasattr(importlib.import_module(page), "substitutions"):
        return page
    return None


def page_sources(package: str = PACKAGE) -> list[str]:
    """The modules whose ``substitutions()`` fill the pages, one an experiment package of
    ``package`` that has page values (:func:`page_module`), in the order of their names."""
    return [page for name in experiment_packages(package) if (page := page_module(name))]


def results_name(module) -> str:
    """The name in ``results/`` of the file a page module's ``substitutions()`` reads: its
    ``EXPERIMENT``'s, else (a declared experiment's page) its package's ``RECORDS``'."""
    if hasattr(module, "EXPERIMENT"):
        return f"{module.EXPERIMENT}.jsonl"
    name = module.__name__
    package = name if hasattr(module, "__path__") else name.rpartition(".")[0]
    return importlib.import_module(package).RECORDS.results_file.name


def declares(module) -> bool:
    """Whether ``module`` is a declared experiment's package: it declares ``COMMAND`` and
    ``RECORDS``."""
    return all(hasattr(module, name) for name in ("COMMAND", "RECORDS"))


class Declared:
    """A declared experiment's parts under the names the figures step and the site read:
    ``__name__``, ``RECORDS``, ``COMMAND``, ``EXPERIMENT``, ``RESULTS_FILE``, ``measure``,
    ``substitutions``, ``describe``, ``reference_run``, ``figures``, ``FIGURES``."""

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

    @property
    def substitutions(self):
        return self.page.substitutions

    @property
    def describe(self):
        """The page's table of a run, else a line a device naming its run and software."""
        from gpulesson.records.parts import run_labels

        return getattr(self.page, "describe", lambda records: "\n".join(run_labels(records)))

    @property
    def reference_run(self):
        return getattr(self.page, "reference_run", self.RECORDS.reference_run)

    @property
    def figures(self):
        return self.page.figures

    @property
    def FIGURES(self) -> tuple[str, ...]:  # the SVG files that figure_drawer saves
        return tuple(getattr(self.page, "FIGURES", ()))


def experiment(name: str):
    """Experiment package ``name`` as the site and the tools read it."""
    module = importlib.import_module(name)
    return Declared(name) if declares(module) else module


def run(name: str, argv=None) -> int:
    """The command of the declared experiment ``name``: a new run, or ``--run-id``'s without
    the conditions it has; each record ``measure`` yields appended to ``--out`` at once (a
    stopped run keeps what it made), then the run's table and what was appended (a
    ``per_backend`` command: after each backend's process, which failed)."""
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
    """The ``draw(results)`` that saves declared experiment ``name``'s ``FIGURES`` in ``folder``,
    from its reference run, or, where its page has ``page_runs(path)``, from those runs, one
    argument of ``figures`` each; a results file without a run draws nothing."""
    from gpulesson.records.figure_scripts import drawer

    experiment = Declared(name)
    runs = getattr(experiment.page, "page_runs", None)
    return drawer(experiment, experiment.FIGURES, folder, until_recorded=name.rpartition(".")[2],
                  run=runs, figures=runs and (lambda found: experiment.figures(*found)))


def draw_declared(root: Path, package: str = PACKAGE) -> list[Path]:
    """The figures of every declared experiment of ``package`` whose page names them and their
    folder in ``root`` (``FIGURE_FOLDER``), drawn from ``root/results`` (:func:`figure_drawer`):
    `make figures`."""
    written = []
    for name in experiment_packages(package):
        if not declares(importlib.import_module(name)):
            continue
        experiment = Declared(name)
        folder = getattr(experiment.page, "FIGURE_FOLDER", None)
        if experiment.FIGURES and folder:
            written += figure_drawer(name, root / folder)(root / "results" / experiment.RESULTS_FILE.name)
    return written


# The ``__main__`` module the import hook gives a declared package.
COMMAND_MODULE = '''"""The command line that {package} declares (gpulesson.experiments.registry)."""
from functools import partial

from gpulesson.experiments import registry

COMMAND = registry.Declared({package!r}).COMMAND
_parser = COMMAND.parser
main = partial(registry.run, {package!r})

if __name__ == "__main__":
    raise SystemExit(main())
'''


class _CommandLoader(importlib.abc.InspectLoader):
    def __init__(self, package: str):
        self.package = package

    def is_package(self, fullname: str) -> bool:
        return False

    def get_source(self, fullname: str) -> str:
        return COMMAND_MODULE.format(package=self.package)


class _DeclaredCommands(importlib.abc.MetaPathFinder):
    """Finds ``P.__main__`` for an imported package ``P`` that declares ``COMMAND`` and
    ``RECORDS``; asked last, so a ``__main__.py`` on disk always wins."""

    def find_spec(self, fullname, path=None, target=None):
        package, _, last = fullname.rpartition(".")
        module = sys.modules.get(package)
        if last != "__main__" or not declares(module):
            return None
        # sys.argv[0] under python -m: the file that declares the command
        return importlib.util.spec_from_loader(fullname, _CommandLoader(package),
                                               origin=str(Path(module.__file__)))


def install() -> None:
    """Put the hook that gives declared packages their ``__main__`` last on ``sys.meta_path``."""
    if not any(isinstance(finder, _DeclaredCommands) for finder in sys.meta_path):
        sys.meta_path.append(_DeclaredCommands())
