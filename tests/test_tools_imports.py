"""The scripts in ``tools/`` import one another by their file names (``import steps``): none of
them imports a script that imports it back, at the top or inside a function, so that each can
be read, run and tested on its own."""

import ast
from pathlib import Path

from conftest import ROOT
from test_package_layout import cycles

TOOLS = ROOT / "tools"


def tools_graph(folder: Path = TOOLS) -> dict[str, set[str]]:
    """Each script's name -> the scripts of ``folder`` it imports, wherever in the file."""
    names = {path.stem for path in folder.glob("*.py")}
    graph = {}
    for path in sorted(folder.glob("*.py")):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
        graph[path.stem] = {name for name in found if name in names and name != path.stem}
    return graph


def test_no_tool_imports_a_tool_that_imports_it():
    graph = tools_graph()
    # The graph sees imports inside functions too: reference's command hands over to budget.
    assert "budget" in graph["reference"] and "steps" in graph["budget"]
    found = cycles(graph)
    assert not found, ("tools that import each other (move what both need into a module that "
                       "imports neither): " + "; ".join(" <-> ".join(c) for c in found))


def test_the_tools_check_finds_a_planted_circle(tmp_path):
    (tmp_path / "first.py").write_text("import os\nimport second\n")
    (tmp_path / "second.py").write_text("def main():\n    from first import run\n")
    (tmp_path / "third.py").write_text("from second import main\nimport os.path\n")
    graph = tools_graph(tmp_path)
    assert graph == {"first": {"second"}, "second": {"first"}, "third": {"second"}}
    assert cycles(graph) == [["first", "second"]]
    (tmp_path / "second.py").write_text("def main():\n    return 1\n")
    assert cycles(tools_graph(tmp_path)) == []
