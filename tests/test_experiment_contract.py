"""A declared experiment is at most three files (gpulesson/experiments/registry.py): a toy one,
written into a package of its own, records a run from its command line, fills a page's values
through the site's placeholders and draws its figure through the figure scripts' skeleton."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap

import carpentry
import pytest
from conftest import ROOT

from gpulesson.experiments import registry

TOY = {
    "__init__.py": '''
        """The toy: how long Python takes to add up a range of whole numbers.

            python -m toyexps.toy --sizes 10 1000
        """
        from gpulesson.experiments import cli
        from gpulesson.records.recordset import RecordSet

        RECORDS = RecordSet("toy", ("device_kind", "size"))
        COMMAND = cli.Command(
            __name__, __doc__,
            cli.option("--sizes", nargs="+", type=cli.positive_int, default=[10, 1000],
                       help="how many numbers to add (default 10 1000)"),
            cli.out(RECORDS.results_file), cli.RUN_ID)
        ''',
    "measure.py": '''
        import time

        from gpulesson.records.results import machine_record
        from toyexps.toy import RECORDS


        def measure(args, *, run_id, done):
            for size in args.sizes:
                if ("cpu", size) in done:
                    continue
                started = time.perf_counter()
                total = sum(range(size))
                yield RECORDS.record(environment={**machine_record(), "backend": "python"},
                                     run_id=run_id, device_kind="cpu", size=size, total=total,
                                     seconds=time.perf_counter() - started)
        ''',
    "page.py": '''
        from gpulesson.records.figkit import need, panels, title
        from toyexps.toy import RECORDS

        FIGURES = ("toy-sums.svg",)
        FIGURE_FOLDER = "fig/00-toy"  # where the figures step draws them, in the lesson's folder


        def describe(records):
            return "\\n".join(f"{r['size']:>8} numbers: {r['total']}" for r in records)


        def substitutions(path=RECORDS.results_file):
            records = RECORDS.reference_run(path)
            return {"ref_toy_sizes": ", ".join(str(r["size"]) for r in records)
                    or "not recorded yet"}


        def figures(records):
            need(records, "run python -m toyexps.toy")
            fig, (ax,) = panels(1, (4, 2))
            ax.bar([str(r["size"]) for r in records], [r["seconds"] for r in records])
            title(fig, "The toy's sums", records)
            return (fig,)
        ''',
}


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy experiment in the package ``toyexps`` (importable here and in a child Python)
    and its results file; its modules are forgotten afterwards."""
    folder = tmp_path / "lib" / "toyexps" / "toy"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    for name, text in TOY.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    path = os.pathsep.join([str(tmp_path / "lib"), str(ROOT), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path)
    yield tmp_path / "results" / "toy.jsonl"
    for name in [m for m in sys.modules if m == "toyexps" or m.startswith("toyexps.")]:
        del sys.modules[name]


def command(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "toyexps.toy", *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def test_a_declared_experiment_is_at_most_three_files():
    assert len(TOY) <= 3 and "__main__.py" not in TOY


def test_its_command_line_records_a_run_and_goes_on_with_it(toy):
    helped = command("--help")
    assert helped.returncode == 0, helped.stderr
    assert helped.stdout.startswith("usage: python -m toyexps.toy")
    assert "how long Python takes to add up a range" in helped.stdout

    done = command("--sizes", "10", "100", "--out", str(toy))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in toy.read_text().splitlines()]
    assert [(r["experiment"], r["size"], r["total"]) for r in records] == [
        ("toy", 10, 45), ("toy", 100, 4950)]
    (run_id,) = {r["run_id"] for r in records}
    assert "100 numbers: 4950" in done.stdout and f"Appended 2 record(s) of run {run_id}" in done.stdout

    # The records layer reads them back; going on with the run measures only what it lacks.
    experiment = importlib.import_module("toyexps.toy")
    assert [r["size"] for r in experiment.RECORDS.read(toy, run_id=run_id)] == [10, 100]
    again = command("--sizes", "10", "100", "1000", "--out", str(toy), "--run-id", run_id)
    assert again.returncode == 0, again.stderr
    assert [r["size"] for r in experiment.RECORDS.read(toy, run_id=run_id)] == [10, 100, 1000]
    assert "Appended 1 record(s)" in again.stdout

    refused = command("--out", str(toy.with_suffix(".txt")))
    assert refused.returncode == 2 and "is not a results file" in refused.stderr


def test_its_command_module_is_an_experiments_main(toy):
    """The reference stages parse a step's arguments with ``NAME.__main__.COMMAND.parser``."""
    main = importlib.import_module("toyexps.toy.__main__")
    args = main.COMMAND.parser().parse_args(["--sizes", "3", "--out", str(toy)])
    assert args.sizes == [3] and main.COMMAND.module == "toyexps.toy"
    assert main.main(["--sizes", "4", "--out", str(toy)]) == 0
    assert [json.loads(line)["total"] for line in toy.read_text().splitlines()] == [6]


def test_its_page_values_reach_the_site_placeholders(toy, tmp_path, monkeypatch):
    assert importlib.import_module("toyexps.toy.__main__").main(
        ["--sizes", "5", "7", "--out", str(toy)]) == 0
    assert registry.page_sources("toyexps") == ["toyexps.toy.page"]
    shutil.copy(ROOT / "_config.yml", tmp_path / "_config.yml")
    monkeypatch.setattr(carpentry, "EXPERIMENT_PACKAGES", ("gpulesson.experiments", "toyexps"))
    assert "toyexps.toy.page" in carpentry.result_sources()
    values = carpentry.placeholder_values(tmp_path)
    assert values["ref_toy_sizes"] == "5, 7"
    filled = carpentry.fill_placeholders("Sizes: {{ ref_toy_sizes }}.", tmp_path, values)
    assert filled == "Sizes: 5, 7."


def test_its_figure_draws_through_the_figure_scripts_skeleton(toy, tmp_path):
    from gpulesson.records.figure_scripts import drawer

    assert importlib.import_module("toyexps.toy.__main__").main(
        ["--sizes", "5", "--out", str(toy)]) == 0
    experiment = registry.Declared("toyexps.toy")
    draw = drawer(experiment, experiment.FIGURES, tmp_path / "fig")
    (written,) = draw(toy)
    assert written == tmp_path / "fig" / "toy-sums.svg"
    assert "The toy's sums" in written.read_text()
    with pytest.raises(SystemExit, match=r"record one with 'python -m toyexps\.toy'"):
        draw(tmp_path / "none.jsonl")


def test_the_figures_step_draws_it_without_a_script(toy, tmp_path):
    assert registry.draw_declared(tmp_path, "toyexps") == []  # no run yet: nothing drawn
    assert importlib.import_module("toyexps.toy.__main__").main(
        ["--sizes", "5", "--out", str(toy)]) == 0
    (written,) = registry.draw_declared(tmp_path, "toyexps")
    assert written == tmp_path / "fig" / "00-toy" / "toy-sums.svg"
    assert "The toy's sums" in written.read_text()


def test_every_experiment_with_page_values_is_found():
    """No experiment package whose code defines page values is left out of the site."""
    folder = ROOT / "gpulesson" / "experiments"
    defined = {path.parent.name for path in folder.glob("*/*.py")
               if "def substitutions(" in path.read_text(encoding="utf-8")}
    found = {part for name in carpentry.result_sources()
             if name.startswith("gpulesson.experiments.")
             and (folder / (part := name.split(".")[2])).is_dir()}
    assert len(defined) >= 12 and defined == found
