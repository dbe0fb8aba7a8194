"""No test holds a date that only works this month.

A test either runs ocmem on its own clock (the ``clock`` fixture: conftest refuses any other
clock, in this process and in the processes it starts), or is marked ``real_clock`` and then
builds every date it writes or expects from the machine's clock: no date literal appears in it,
in the module-level values it reads nor in the module's helpers it calls. (CI also runs the suite
with the machine's clock moved to a year's end and to a leap day: ``.ci/run``.)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from conftest import MOVED_CLOCK_MARKS, runs_ocmem

TESTS = Path(__file__).resolve().parent
# 2026-11-29, 2026-11, "## 2026-" (a year that starts a date), 20261129, and (below) a
# datetime or date built from a literal year
DATE_TEXT = re.compile(
    r"(?<![0-9])(?:(?:19|20)[0-9]{2}-(?:(?:0[1-9]|1[0-2])(?:-[0-3][0-9])?)?"
    r"|(?:19|20)[0-9]{2}(?:0[1-9]|1[0-2])[0-3][0-9])(?![0-9])"
)
DATE_CALLS = {"datetime", "date"}
ON_THE_MACHINES_CLOCK = {*MOVED_CLOCK_MARKS, "e2e"}  # OpenCode, in every e2e test, runs on it


def _marks(decorators: list[ast.expr]) -> set[str]:
    found = set()
    for node in decorators:
        for part in ast.walk(node):
            if (
                isinstance(part, ast.Attribute)
                and isinstance(part.value, ast.Attribute)
                and isinstance(part.value.value, ast.Name)
                and part.value.attr == "mark"
            ):
                found.add(part.attr)
    return found


def _module_marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets
        ):
            value = node.value
            return _marks(list(value.elts) if isinstance(value, (ast.List, ast.Tuple)) else [value])
    return set()


def date_literals(node: ast.AST) -> list[str]:
    """Every date written as a literal under ``node``."""
    found = []
    for part in ast.walk(node):
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            found += DATE_TEXT.findall(part.value)
        elif (
            isinstance(part, ast.Call)
            and isinstance(part.func, (ast.Name, ast.Attribute))
            and (part.func.id if isinstance(part.func, ast.Name) else part.func.attr) in DATE_CALLS
            and part.args
            and isinstance(part.args[0], ast.Constant)
            and isinstance(part.args[0].value, int)
            and part.args[0].value >= 1900
        ):
            found.append(ast.unparse(part))
    return found


def _reach(tree: ast.Module, start: ast.AST) -> Iterator[ast.AST]:
    """``start``, and the module-level functions, classes and values it names, transitively."""
    top: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    top[target.id] = node
    seen: set[int] = set()
    todo: list[ast.AST] = [start]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [top[n.id] for n in ast.walk(current) if isinstance(n, ast.Name) and n.id in top]


def real_clock_tests() -> Iterator[tuple[str, list[str]]]:
    """Each test run on the machine's clock, with the date literals it reaches."""
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_wide = bool(ON_THE_MACHINES_CLOCK & _module_marks(tree))
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if not node.name.startswith("test_"):
                continue
            if not (module_wide or ON_THE_MACHINES_CLOCK & _marks(node.decorator_list)):
                continue
            literals = [d for part in _reach(tree, node) for d in date_literals(part)]
            yield f"{path.relative_to(TESTS)}::{node.name}", literals


def test_tests_on_the_machines_clock_hold_no_date_literal() -> None:
    found = {name: literals for name, literals in real_clock_tests() if literals}
    assert found == {}, "build these dates from the clock the test runs ocmem on"


def test_the_checks_see_what_they_claim() -> None:
    sample = ast.parse(
        'def f():\n    g("expire 2026-12-31", datetime(2027, 1, 1), "2026-11", "## 2025-", "v1.2")\n'
    )
    assert sorted(date_literals(sample)) == [
        "2025-",
        "2026-11",
        "2026-12-31",
        "datetime(2027, 1, 1)",
    ]
    assert date_literals(ast.parse("x = ('8080', 'P-2026', '12:00', 2026, '2026-13')")) == []
    assert list(real_clock_tests())  # the e2e suite at least
    assert runs_ocmem(["/venv/bin/python", "-m", "ocmem", "note", "x"])
    assert runs_ocmem(["/venv/bin/ocmem", "gate"])
    assert runs_ocmem(["/cache/opencode", "run", "x"])
    assert runs_ocmem(["node", "driver.mjs", "/tmp/ocmem-home/plugin/ocmem.ts"])
    assert not runs_ocmem(["node", "-e", "console.log(1)"])
    assert not runs_ocmem(["git", "init"])
