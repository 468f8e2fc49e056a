"""No test asserts how long something took.

A wall-clock limit in a test fails on a busy machine for reasons that have nothing to do with the
code; timings belong to the experiments' records and the benchmarks. This check reads every test
module and fails on an assertion that compares a duration measured with a clock
(``time.perf_counter``, ``time.time``, ``time.monotonic``, ``timeit.default_timer``, or a name
assigned from them) with a fixed number. A comparison of two measured times (the sum of a
timer's epochs against the time around them) or a polling loop's deadline is not a limit on
speed and passes.
"""

import ast
from pathlib import Path

import pytest
from conftest import ROOT

CLOCKS = {"perf_counter", "time", "monotonic", "default_timer", "perf_counter_ns", "monotonic_ns"}


def _is_clock_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CLOCKS and isinstance(node.func.value, ast.Name)
            and node.func.value.id in {"time", "timeit"})


def _timed(node: ast.AST, names: set[str]) -> bool:
    """Whether ``node`` reads a clock or a name that holds a clock's reading."""
    return any(_is_clock_call(n) or (isinstance(n, ast.Name) and n.id in names)
               for n in ast.walk(node))


def _has_number(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, (int, float))
               and not isinstance(n.value, bool) for n in ast.walk(node))


def wall_clock_assertions(source: str) -> list[int]:
    """Line numbers of assertions that hold a clock's measurement against a fixed number."""
    tree = ast.parse(source)
    names: set[str] = set()
    for _ in range(3):  # names assigned from names assigned from a clock
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _timed(node.value, names):
                    names |= {t.id for t in targets if isinstance(t, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            if not any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in compare.ops):
                continue
            sides = [compare.left, *compare.comparators]
            timed = [side for side in sides if _timed(side, names)]
            fixed = [side for side in sides if not _timed(side, names) and _has_number(side)]
            if timed and fixed:
                found.append(node.lineno)
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "tests").glob("*.py")), ids=lambda p: p.name)
def test_no_test_asserts_a_duration(path: Path):
    lines = wall_clock_assertions(path.read_text(encoding="utf-8"))
    assert not lines, (f"{path.name}, line(s) {lines}: an assertion on elapsed time. Check the "
                       "behaviour instead; record timings with the experiments.")


@pytest.mark.parametrize("source", [
    "import time\nstart = time.perf_counter()\nwork()\nelapsed = time.perf_counter() - start\n"
    "assert elapsed < 6",
    "import time\nt0 = time.time()\nwork()\nassert time.time() - t0 <= 60, 'too slow'",
    "import time\nstart = time.monotonic()\nwork()\nseconds = time.monotonic() - start\n"
    "minutes = seconds / 60\nassert ok and minutes < 2",
    "import timeit\nstart = timeit.default_timer()\nassert timeit.default_timer() - start < 1.5",
])
def test_the_check_finds_a_duration_limit(source):
    assert wall_clock_assertions(source)


@pytest.mark.parametrize("source", [
    "import time\nstart = time.perf_counter()\nrun()\nelapsed = time.perf_counter() - start\n"
    "assert sum(timer.epoch_seconds) <= elapsed",
    "import time\ndeadline = time.monotonic() + 30\nwhile not done():\n"
    "    assert time.monotonic() < deadline, 'no answer'",
    "assert len(records) < 6",
    "import time\nstart = time.perf_counter()\nassert record['epoch_seconds'][0] > 0",
])
def test_the_check_leaves_other_comparisons_alone(source):
    assert wall_clock_assertions(source) == []
