"""The shape of the package (docs/architecture.md): wings stacked in one order, each importing only
its own and those below it; no import cycle; no reaching into another module's private names;
empty subpackage faces; no source file too long to read."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "sync" / "ocmem"
# Lowest first. The base (ocmem's own top-level modules: errors, outcome, clock, execution) is
# under every wing; __main__ is the command line's.
WINGS = (
    "base",
    "text",
    "formats",
    "guards",
    "home",
    "silverbullet",
    "services",
    "plugin",
    "setup",
    "cli",
)
MAX_LINES = 600


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def wing(module: str) -> str:
    parts = module.split(".")
    if module == "ocmem.__main__":
        return "cli"
    return parts[1] if len(parts) > 2 and parts[1] in WINGS else "base"


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


def test_every_module_is_in_a_wing_and_every_wing_has_modules() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(WINGS) - {"base"}
    assert {wing(m) for m in MODULES} == set(WINGS)


def test_no_import_runs_up_between_wings() -> None:
    wrong = [
        f"{name} ({wing(name)}) imports {target} ({wing(target)})"
        for name, path in sorted(MODULES.items())
        for target in imports(path)
        if target != "ocmem" and WINGS.index(wing(target)) > WINGS.index(wing(name))
    ]
    assert wrong == []


def test_no_import_cycle() -> None:
    graph = {name: set(imports(path)) - {name, "ocmem"} for name, path in MODULES.items()}
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


def test_subpackage_faces_are_empty() -> None:
    """A wing's __init__ imports nothing: every command pays for each module it loads."""
    faces = {
        p.parent.name: p.read_text() for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE
    }
    assert {name: text for name, text in faces.items() if text.strip()} == {}


def test_no_source_file_is_too_long_to_read() -> None:
    sources = [*PACKAGE.rglob("*.py"), *(REPO / "plugin").glob("**/*.ts")]
    long = {
        str(p.relative_to(REPO)): n
        for p in sources
        if "node_modules" not in p.parts
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
