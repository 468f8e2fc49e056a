"""Catch-up cells: a learner who is behind runs the complete version of a cell they skipped.

``catch_up("05-031", "cpu_run")`` runs nothing when the kernel has every name later cells need (so
the learner's own results stay); otherwise it runs the complete notebook's cell, so a catch-up
never differs from the lesson. What the kernel lacks (after a restart, everything) is rebuilt first
from the complete cells, never the learner's own, which stop at the first blank left.
"""

import ast
import builtins
import inspect
import json
import linecache
import sys
from pathlib import Path

from gpulesson.classroom.finished_runs import NAMES as FINISHED_NAMES
from gpulesson.classroom.finished_runs import reload_runs
from gpulesson.errors import LessonError

BLANK = "____"
LESSON_ROOT = Path(__file__).resolve().parents[2]
COMPLETE_DIR = "notebooks"
RECOVER = "python -m gpulesson.classroom.workcopy --complete"
# Names IPython gives every kernel: no cell defines them.
KERNEL_NAMES = frozenset({"display", "get_ipython", "In", "Out", "exit", "quit"})
FINISHED = frozenset(FINISHED_NAMES)  # reloaded from the learner's files (finished_runs)


class CatchUpError(LessonError):
    """A catch-up cell cannot run the complete cell (the message says what to do)."""


class BlanksLeftError(LessonError):
    """An exercise's code still holds a blank (____)."""


# --- the names a cell defines and uses ---------------------------------------------------------

def _targets(node: ast.AST) -> list[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``); ``x[i]`` and ``x.y`` none."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    if isinstance(node, ast.Tuple | ast.List):
        return [name for element in node.elts for name in _targets(element)]
    return []


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    return [alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"]


def _bound_in(statements: list[ast.stmt], conditional: bool = True,
              imports: bool = True) -> list[str]:
    """The names the statements bind in their own scope, in order, not inside functions and
    classes; not ``conditional``: only those a loop, ``if``, ``with`` or ``try`` leaves out."""
    names = []
    for statement in statements:
        compound = isinstance(statement, COMPOUND)
        for node in _walk_scope(statement):
            if compound and not conditional:  # what (x := ...) binds, wherever it is
                names += [node.target.id] if isinstance(node, ast.NamedExpr) else []
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.append(node.name)
            elif isinstance(node, ast.Import | ast.ImportFrom) and imports:
                names += _imported(node)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.append(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                names.append(node.name)
    return list(dict.fromkeys(names))


def _free(node: ast.AST) -> set[str]:
    """The names ``node`` reads from the scope around it (the cell's, for a top-level
    statement): names read, less those a function, lambda or comprehension inside binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        params = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                  *filter(None, [args.vararg, args.kwarg])]}
        outside = set().union(*map(_free, [*args.defaults, *filter(None, args.kw_defaults)]))
        if isinstance(node, ast.Lambda):
            return outside | (_free(node.body) - params)
        outside |= set().union(*map(_free, node.decorator_list))
        declared = {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}
        local = (params | set(_bound_in(node.body))) - declared
        inside = set().union(set(), *map(_free, node.body))
        return outside | (inside - local)
    if isinstance(node, ast.ClassDef):
        outside = set().union(set(), *map(_free, [*node.bases, *node.decorator_list,
                                                  *(k.value for k in node.keywords)]))
        # The class's body reads names as the cell does, in order; its methods do not see it.
        return outside | _read_in_order(node.body)
    if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
        local = {n for gen in node.generators for n in _targets(gen.target)}
        parts = ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        parts += [part for gen in node.generators for part in (gen.iter, *gen.ifs)]
        first = _free(node.generators[0].iter)  # evaluated outside the comprehension
        return first | (set().union(*map(_free, parts)) - local)
    if isinstance(node, ast.Name):
        return set() if isinstance(node.ctx, ast.Store) else {node.id}
    if isinstance(node, ast.AugAssign):  # x += 1 reads x first
        return set(_targets(node.target)) | _free(node.value) | (
            set() if isinstance(node.target, ast.Name) else _free(node.target))
    return set().union(set(), *map(_free, ast.iter_child_nodes(node)))


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
          ast.SetComp, ast.GeneratorExp, ast.DictComp)
COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try)


def _walk_scope(node: ast.AST):
    """``ast.walk`` that yields functions, lambdas, classes and comprehensions but not their insides."""
    yield node
    if not isinstance(node, SCOPES):
        for child in ast.iter_child_nodes(node):
            yield from _walk_scope(child)


def _read_in_order(statements: list[ast.stmt]) -> set[str]:
    """The names the statements read before they bind them themselves."""
    bound, read = set(), set()
    for node in statements:
        if isinstance(node, COMPOUND):
            heads = [getattr(node, "test", None), getattr(node, "iter", None),
                     *(item.context_expr for item in getattr(node, "items", []))]
            read |= set().union(set(), *map(_free, filter(None, heads))) - bound
            bound |= set(_targets(node.target)) if isinstance(node, ast.For | ast.AsyncFor) else set()
            bound |= {n for item in getattr(node, "items", []) if item.optional_vars
                      for n in _targets(item.optional_vars)}
            blocks = [node.body, getattr(node, "orelse", []), getattr(node, "finalbody", []),
                      *(h.body for h in getattr(node, "handlers", []))]
            bound |= {h.name for h in getattr(node, "handlers", []) if h.name}
            for block in blocks:
                read |= _read_in_order(block) - bound
            for block in blocks:
                bound |= set(_bound_in(block))
            continue
        read |= _free(node) - bound
        bound |= set(_bound_in([node]))
    return read


def defined_names(source: str, conditional: bool = True, imports: bool = True) -> list[str]:
    """The names a cell's code binds at its top level, in order."""
    return _bound_in(ast.parse(source).body, conditional, imports)


def used_names(source: str) -> set[str]:
    """The names a cell's code takes from earlier cells: read before the cell binds them,
    builtins and IPython's own names left out (``del x`` reads ``x`` too)."""
    return _read_in_order(ast.parse(source).body) - set(dir(builtins)) - KERNEL_NAMES


def needed_later(sources: list[str]) -> list[list[str]]:
    """For each cell's code, in order: the names it defines that a later cell takes from it (the
    last cell before that defines the name)."""
    defined = [defined_names(source) for source in sources]
    needed = [[] for _ in sources]
    for j, source in enumerate(sources):
        for name in used_names(source):
            last = next((i for i in range(j - 1, -1, -1) if name in defined[i]), None)
            if last is not None and name not in needed[last]:
                needed[last].append(name)
    return [[name for name in names if name in needed[i]] for i, names in enumerate(defined)]


# --- blanks ---------------------------------------------------------------------------------

def _codes(obj):
    """The code objects of a function, or of a class's methods, and the code inside them."""
    if inspect.isclass(obj):
        for member in vars(obj).values():  # functions, static and class methods, properties
            function = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
            if inspect.isfunction(function):
                yield from _codes(function)
        return
    code = getattr(obj, "__code__", None) if inspect.isfunction(obj) else None
    stack = [code] if code is not None else []
    while stack:
        code = stack.pop()
        yield code
        stack += [c for c in code.co_consts if inspect.iscode(c)]


def holds_blanks(obj) -> bool:
    """Whether a function or class still holds a blank ``____`` (as a name or an attribute)."""
    return any(BLANK in code.co_names or BLANK in code.co_varnames for code in _codes(obj))


def check_filled(*objects) -> None:
    """Stop at once, naming the lines, if a function or class still holds a blank ``____`` (Python
    finds it only when the function runs, many cells later)."""
    for obj in objects:
        if holds_blanks(obj):
            name = getattr(obj, "__name__", repr(obj))
            try:
                lines = [line.strip() for line in inspect.getsourcelines(obj)[0] if BLANK in line]
            except (OSError, TypeError):
                lines = []
            where = (" in these lines:\n    " + "\n    ".join(lines) + "\n") if lines else ". "
            raise BlanksLeftError(
                f"{name} still holds blanks ({BLANK}){where}Fill in each blank and run the cell "
                "again. Or run the catch-up cell under it: it defines the complete "
                f"{name} for you.")


# --- running the complete cell ---------------------------------------------------------------

def complete_cells(cell_id: str, root: Path | None = None) -> tuple[Path, list[tuple[str, str]]]:
    """(complete notebook, its code cells as ``(id, code)`` in order) of the episode of the
    cell ``cell_id`` (``"05-031"``), which must be one of them."""
    root = Path(root or LESSON_ROOT)
    episode = cell_id.split("-")[0]
    for path in sorted((root / COMPLETE_DIR).glob(f"{episode}-*.ipynb")):
        cells = [(cell.get("id"), "".join(cell["source"]))
                 for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
                 if cell["cell_type"] == "code"]
        if any(found == cell_id for found, _ in cells):
            return path, cells
    raise CatchUpError(
        f"The lesson's complete notebooks in {root / COMPLETE_DIR} have no code cell {cell_id!r}. "
        f"Your notebook may be older than the lesson. In a terminal (File > New > Terminal), run "
        f"'{RECOVER}' and go on in the complete notebook it puts beside yours.")


def _parts(source: str) -> tuple[list[str], set[str], set[str]]:
    """(names defined, names used from earlier cells, names deleted) of a cell's code."""
    try:
        tree = ast.parse(source)
    except SyntaxError:  # an IPython magic: nothing this module can follow
        return [], set(), set()
    deleted = {target.id for node in tree.body if isinstance(node, ast.Delete)
               for target in node.targets if isinstance(target, ast.Name)}
    return _bound_in(tree.body), used_names(source), deleted


def _lacks(namespace: dict, name: str) -> bool:
    return name not in namespace or holds_blanks(namespace[name])


def _wanted_names(cells: list[tuple[str, str]], index: int) -> set[str]:
    """The names the cell ``index`` and the cells after it take from earlier cells."""
    wanted, made = set(), set()
    for defined, used, _ in map(_parts, (source for _, source in cells[index:])):
        wanted |= used - made
        made |= set(defined)
    return wanted


def rebuild_plan(cells: list[tuple[str, str]], index: int, namespace: dict) -> list[int]:
    """The complete cells above ``cells[index]`` that define what it and later cells lack, in order."""
    parts = [_parts(source) for _, source in cells]

    def definer(name: str, before: int) -> int | None:
        for i in range(before - 1, -1, -1):
            if name in parts[i][2]:
                return None  # deleted on the way: no later cell takes it from there
            if name in parts[i][0]:
                return i
        return None

    wanted = _wanted_names(cells, index)
    plan, todo = set(), [(name, index) for name in wanted if _lacks(namespace, name)]
    while todo:
        name, before = todo.pop()
        i = definer(name, before)
        if i is not None and i not in plan:
            plan.add(i)
            todo += [(used, i) for used in parts[i][1] if _lacks(namespace, used)]
    return sorted(plan)


def _run(source: str, filename: str, namespace: dict, show: bool = True) -> None:
    """Run a cell's code as IPython would, the value of a last expression displayed if ``show``."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
        if value is not None and show:
            try:
                from IPython.display import display
            except ImportError:  # outside IPython
                print(repr(value))
            else:
                display(value)


def _listed(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def catch_up(cell_id: str, *names: str, namespace: dict | None = None,
             root: Path | None = None) -> None:
    """Run the complete cell ``cell_id`` if the kernel lacks one of ``names`` (or holds a blank); say so."""
    namespace = sys._getframe(1).f_globals if namespace is None else namespace  # the cell's
    path, cells = complete_cells(cell_id, root)
    index = [found for found, _ in cells].index(cell_id)
    source = cells[index][1]
    # Episode 5's finished runs come back from the learner's files, not from training again.
    reloaded = bool(FINISHED & (_wanted_names(cells, index) | set(names))) and reload_runs(namespace)
    plan = rebuild_plan(cells, index, namespace)
    behind = [name for name in names if _lacks(namespace, name)]
    if names and not behind and not plan:
        if not reloaded:
            print(f"Nothing to do: you have {_listed(names)} already. Your own results stay "
                  "as they are.")
        return
    defines = defined_names(source)
    if not set(names) <= set(defines):
        raise CatchUpError(
            f"This catch-up cell asks for {_listed(names)}, but the cell {cell_id!r} of "
            f"{path.name} defines {_listed(defines) if defines else 'nothing'}. Your notebook "
            f"may be older than the lesson: in a terminal (File > New > Terminal), run '{RECOVER}' "
            "and go on in the complete notebook it puts beside yours.")
    if plan:
        lacking = sorted({name for i in plan for name in _parts(cells[i][1])[0]
                          if _lacks(namespace, name)} & _wanted_names(cells, index))
        print(f"The kernel lacks {_listed(lacking) if lacking else 'what earlier cells made'} "
              f"(after a restart, for example): running the complete cells "
              f"{_listed(cells[i][0] for i in plan)} of {path.name} first.")
        for i in plan:
            _run(cells[i][1], f"<complete cell {cells[i][0]}>", namespace, show=False)
        behind = [name for name in names if _lacks(namespace, name)]
        if names and not behind:
            print(f"Done: the kernel has what the cells from here on need, and {_listed(names)}.")
            return
    print(f"Catching up: running the complete cell (cell {cell_id} of {path.name}) for "
          f"{_listed(behind or names or defines or ['its output'])}.")
    # The learner's own names that the complete cell sets again (loop variables left out).
    always = defined_names(source, conditional=False)
    replaced = [name for name in always if name in namespace and name not in behind
                and not inspect.ismodule(namespace[name])]
    if replaced:
        print(f"It also sets {_listed(replaced)} again, as the complete cell does.")
    _run(source, f"<complete cell {cell_id}>", namespace)
    if behind or names:
        print(f"Done: the kernel has the complete cell's {_listed(behind or names)} now.")

