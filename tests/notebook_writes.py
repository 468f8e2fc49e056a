"""Every place a notebook's code writes a file, found by reading the code (no kernel runs).

A *write* is a call that creates or changes a file or folder: ``append_record(path, ...)``,
``model.save(path)``, ``keras.callbacks.ModelCheckpoint(path)``, ``atomic_hdf5(path)``,
``h5py.File(path, "w")``, ``open(path, "a")``, ``path.mkdir()``, a benchmark's
``data_dir=path`` and the like (:data:`SINKS`). For each one, :func:`writes` gives the code of
the path and the assignments it comes from, so that a test can run exactly that code and see
where the path is. A path built inside a function the notebook defines comes from the
function's parameter: its callers are found the same way, so every write is traced back to a
statement at the top level of a cell.
"""

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

# Calls that write, by the name called (a function or a method): the argument that is the
# path (its position, and its keyword). None: the path is the object the method is called on.
SINKS = {
    "append_record": (0, "path"),
    "write_hdf5": (0, "path"),
    "atomic_hdf5": (0, "path"),
    "write_files": (0, "directory"),
    "write_layout": (0, "path"),
    "compare_layouts": (2, "directory"),
    "run_benchmark": (None, "data_dir"),
    "ModelCheckpoint": (0, "filepath"),
    "save": (0, "filepath"),
    "save_weights": (0, "filepath"),
    "savefig": (0, "fname"),
    "to_csv": (0, "path_or_buf"),
    "keep_earlier": (0, "path"),
    "save_runs": (0, "results_file"),  # into my-runs/, beside the results file
    "mkdir": None,
    "touch": None,
    "write_text": None,
    "write_bytes": None,
    "unlink": None,
    "rename": None,
}
# Calls that write only in some modes: the mode's position and keyword.
MODED = {"open": (1, "mode"), "File": (1, "mode")}
# A call whose name looks like a write but is neither in SINKS nor here is reported, so that a
# new helper that writes cannot slip past the check unseen.
LOOKS_LIKE_A_WRITE = re.compile(r"^(write|save|dump|export|store|copy|move)|mkdir|save")
NOT_WRITES = {"write", "dumps"}  # a file object's write (its open() is checked), json.dumps


def _copies_in_memory(node) -> bool:
    """``array.copy()``: a method named copy called with nothing copies an object in memory;
    a file copy (``shutil.copy(src, dst)``) names where it writes."""
    return (isinstance(node.func, ast.Attribute) and node.func.attr == "copy"
            and not node.args and not node.keywords)


@dataclass(frozen=True)
class Write:
    """One write in a notebook: where, the code of its path, and what that code needs."""

    notebook: str
    cell: int
    call: str
    path: str  # the path's code, as written
    setup: tuple[str, ...]  # the assignments it depends on, in order
    problem: str = ""  # why the path could not be traced (empty: it was)

    def __str__(self):
        return f"{self.notebook} cell {self.cell}: {self.call}({self.path})"


def code_cells(notebook: Path) -> list[str]:
    """The notebook's code cells, IPython's % and ! lines left out (they are not Python)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["\n".join(line for line in "".join(cell["source"]).splitlines()
                      if not line.lstrip().startswith(("%", "!")))
            for cell in cells if cell["cell_type"] == "code"]


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _argument(node: ast.Call, position, keyword):
    for kw in node.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is not None and len(node.args) > position:
        return node.args[position]
    return None


def _path_of(node: ast.Call):
    """The expression of the path a call writes to, or None if this call does not write."""
    name = _called(node)
    if name in MODED:
        mode = _argument(node, *MODED[name])
        if not isinstance(mode, ast.Constant) or not set(str(mode.value)) & set("wax+"):
            return None
        return _argument(node, 0, "file" if name == "open" else "name")
    if name not in SINKS:
        return None
    if SINKS[name] is None:
        func = node.func
        return func.value if isinstance(func, ast.Attribute) else None
    return _argument(node, *SINKS[name])


def _names(node) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Notebook:
    """The top-level assignments and the functions of a notebook, in the order of its cells."""

    def __init__(self, cells: list[str]):
        self.statements = []  # (cell, statement) at the top level
        self.functions = {}  # name -> FunctionDef
        for index, code in enumerate(cells):
            for statement in ast.parse(code).body:
                self.statements.append((index, statement))
                if isinstance(statement, ast.FunctionDef):
                    self.functions[statement.name] = statement

    def assignment(self, name: str, before: int):
        """The last top-level assignment to ``name`` among the first ``before`` statements."""
        for _, statement in reversed(self.statements[:before]):
            if isinstance(statement, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in statement.targets):
                return statement
            if isinstance(statement, (ast.For, ast.With)):
                targets = ([statement.target] if isinstance(statement, ast.For)
                           else [item.optional_vars for item in statement.items])
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return statement
        return None


def _setup(book: _Notebook, expression, before: int, known: set[str]) -> tuple[list[str], str]:
    """The assignments ``expression`` needs, in order, and a problem if a name has none."""
    lines, problem = [], ""
    for name in sorted(_names(expression) - known):
        if name in {"settings", "keep_earlier", "Path"}:  # given by the test
            continue
        found = book.assignment(name, before)
        if found is None:
            return lines, f"{name!r} is not assigned at the top level of a cell"
        if isinstance(found, ast.For):
            # A loop over paths: its first item stands for every item.
            value = ast.Subscript(found.iter, ast.Constant(0))
            found = ast.Assign([found.target], ast.fix_missing_locations(value), lineno=0)
        elif isinstance(found, ast.With):
            return lines, f"{name!r} comes from a with statement"
        index = book.statements.index(next(s for s in book.statements if s[1] is found))
        more, problem = _setup(book, found.value, index, known | {name})
        lines += [*more, ast.unparse(ast.Assign(found.targets, found.value, lineno=0))]
        if problem:
            break
    return lines, problem


def writes(notebook: Path) -> list[Write]:
    """Every write in ``notebook``'s code (see the module's docstring)."""
    book = _Notebook(code_cells(notebook))
    found = []

    def trace(cell, call_name, path, before, inside=None):
        if inside is not None and isinstance(path, ast.Name) and path.id in {
                a.arg for a in inside.args.args}:
            # A parameter of a function the notebook defines: follow its callers instead.
            position = [a.arg for a in inside.args.args].index(path.id)
            callers = [(i, s, node) for i, (c, s) in enumerate(book.statements)
                       for node in ast.walk(s) if isinstance(node, ast.Call)
                       and _called(node) == inside.name and s is not inside]
            for index, _, node in callers:
                argument = _argument(node, position, path.id)
                if argument is not None:
                    trace(book.statements[index][0], call_name, argument, index)
            if not callers:
                found.append(Write(notebook.name, cell, call_name, ast.unparse(path), (),
                                   f"{inside.name}() is never called"))
            return
        setup, problem = _setup(book, path, before, set())
        found.append(Write(notebook.name, cell, call_name, ast.unparse(path), tuple(setup),
                           problem))

    for index, (cell, statement) in enumerate(book.statements):
        function = statement if isinstance(statement, ast.FunctionDef) else None
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                path = _path_of(node)
                name = _called(node)
                if path is not None:
                    trace(cell, name, path, index, function)
                elif (name not in SINKS and name not in MODED and name not in NOT_WRITES
                      and LOOKS_LIKE_A_WRITE.search(name) and not _copies_in_memory(node)):
                    found.append(Write(notebook.name, cell, name, "?", (),
                                       f"{name}() may write: add it to SINKS or NOT_WRITES"))
    return found
