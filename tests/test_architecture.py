"""The shape of the package: no import cycle, no reaching into another module's private names."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sync" / "ocmem"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path) -> dict[str, set[str]]:
    """Every ocmem module ``path`` imports (lazy and TYPE_CHECKING imports included), with the
    names it takes from each."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    found.setdefault(alias.name, set())
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                if child in MODULES:
                    found.setdefault(child, set())
                elif node.module in MODULES:
                    found.setdefault(node.module, set()).add(alias.name)
    return found


def test_no_import_cycle() -> None:
    graph = {name: set(imports(path)) - {name} for name, path in MODULES.items()}
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        if name in trail:
            raise AssertionError("import cycle: " + " → ".join([*trail[trail.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph.get(name, ())):
            visit(target, [*trail, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_no_module_takes_another_modules_private_names() -> None:
    wrong = []
    for name, path in MODULES.items():
        for target, taken in imports(path).items():
            wrong += [
                f"{name} imports {target}.{n}"
                for n in taken
                if n.startswith("_") and not n.startswith("__")
            ]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {
            (alias.asname or alias.name): f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names
            if f"{node.module}.{alias.name}" in MODULES
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                wrong.append(f"{name} uses {aliases[node.value.id]}.{node.attr}")
    assert wrong == []
