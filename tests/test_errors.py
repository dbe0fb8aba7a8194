"""The exception tree that ocmem.errors documents is the one the package defines, with the exit
code ocmem.execution gives each."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import ocmem.errors
from ocmem.errors import OcmemError
from ocmem.execution import exit_code

PACKAGE = Path(ocmem.errors.__file__).parent
LINE = re.compile(r"^(?P<indent>[ │├└─]*?)(?P<name>[A-Z]\w+)\s.*?(?:→ (?P<code>\d+))?$")


def documented() -> dict[str, tuple[str | None, int | None]]:
    """class name → (its parent in the docstring's tree, its exit code there)."""
    found: dict[str, tuple[str | None, int | None]] = {}
    stack: list[tuple[int, str]] = []
    doc = ocmem.errors.__doc__ or ""
    tree = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    for raw in tree.splitlines():
        line = raw[4:]
        match = LINE.match(line)
        assert match, raw
        depth = len(match.group("indent"))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        code = match.group("code")
        found[match.group("name")] = (stack[-1][1] if stack else None, int(code) if code else None)
        stack.append((depth, match.group("name")))
    return found


def defined() -> dict[str, type[OcmemError]]:
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] != "__main__":
            importlib.import_module(".".join(p for p in parts if p != "__init__"))
    found: dict[str, type[OcmemError]] = {}
    pending: list[type[OcmemError]] = [OcmemError]
    while pending:
        kind = pending.pop()
        found[kind.__name__] = kind
        pending += kind.__subclasses__()
    return found


def test_the_documented_tree_is_the_defined_one() -> None:
    tree, classes = documented(), defined()
    assert set(tree) == set(classes)
    for name, (parent, _) in tree.items():
        assert (classes[name].__bases__[0].__name__ if parent else None) == parent, name


def test_each_documented_exit_code_is_executions() -> None:
    classes = defined()
    for name, (_, code) in documented().items():
        if code is not None:
            error = classes[name].__new__(classes[name])  # isinstance is all exit_code reads
            assert exit_code(error) == code, name
