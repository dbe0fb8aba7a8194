"""The shape of the package (docs/architecture.md): wings stacked in one order, each importing only
its own and those below it; no import cycle; no reaching into another module's private names;
empty subpackage faces; no source file too long to read."""

from __future__ import annotations

import ast
import re
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
    "bridge",
    "setup",
    "trial",
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


def test_no_two_modules_share_a_file_name() -> None:
    """A file name says what the module holds: two ``memory.py`` in two wings say it of neither."""
    by_name: dict[str, list[str]] = {}
    for name, path in MODULES.items():
        if path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(path.name, []).append(name)
    assert {file: sorted(names) for file, names in by_name.items() if len(names) > 1} == {}


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


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_source_file_is_too_long_to_read() -> None:
    sources = [
        *PACKAGE.rglob("*.py"),
        *PACKAGE.rglob("*.lua"),
        *(REPO / "plugin").glob("**/*.ts"),
    ]
    long = {
        str(p.relative_to(REPO)): n
        for p in sources
        if "node_modules" not in p.parts and (n := _lines(p)) > MAX_LINES
    }
    assert long == {}


def test_the_review_page_lua_in_all_is_no_longer_than_one_file() -> None:
    """The page a human pastes (silverbullet/Library/ocmem.md) is its Lua blocks: read and
    reviewed as one, they are held to one file's length together."""
    lua = sorted(PACKAGE.rglob("*.lua"))
    assert len(lua) >= 2 and sum(_lines(p) for p in lua) <= MAX_LINES


_TS_IMPORT = re.compile(
    r"""^\s*(?:(?:import|export)\s[^"'`]*?\bfrom\s*|import\s*)["']([^"']+)["']""", re.M
)


def ts_imports(path: Path) -> set[str]:
    """What a TypeScript file of the plugin imports (types included), as written."""
    return set(_TS_IMPORT.findall(path.read_text(encoding="utf-8")))


def test_the_plugins_core_knows_its_host_only_through_its_seam() -> None:
    """plugin/ocmem/ (the core) imports no host package, not even a type: it reaches its host
    through plugin/ocmem/host.ts; plugin/ocmem.ts, the OpenCode 1 adapter, is the core's only
    user, and exports the V1 plugin function alone (docs/opencode.md, « OpenCode 2 »)."""
    core = sorted((REPO / "plugin" / "ocmem").glob("*.ts"))
    host_types = {
        p.name: sorted(i for i in ts_imports(p) if not i.startswith(("./", "node:", "bun:")))
        for p in core
    }
    assert {name: found for name, found in host_types.items() if found} == {}
    sources = [REPO / "plugin" / "ocmem.ts", *core]
    users = sorted(p.name for p in sources if "./ocmem/core.ts" in ts_imports(p))
    assert users == ["ocmem.ts"]
    adapter = (REPO / "plugin" / "ocmem.ts").read_text(encoding="utf-8")
    assert "@opencode-ai/plugin" in ts_imports(REPO / "plugin" / "ocmem.ts")
    # OpenCode calls every export as a plugin; an OpenCode 2 entry (a default `{ id, setup }`)
    # waits until an OpenCode 2 can be installed here and run by the e2e suite.
    assert re.findall(r"^export\b.*", adapter, re.M) == [
        "export const OcmemPlugin: Plugin = async ({ client, directory, worktree }) => {"
    ]


# The two doors to the disk (ocmem.home.statefiles's docstring): the Transaction for the home's
# files, the state writers for ocmem's own, and the primitives behind them (atomic writes, the
# writes journal, backups, the run lock, the action log). Elsewhere, only these write by
# themselves, and why.
PRIMITIVES = {"atomic", "announce", "statefiles", "backups", "runlock", "actionlog"}
WRITERS = {f"ocmem.home.{name}" for name in PRIMITIVES} | {"ocmem.home.workspace"}
WRITES_ON_THEIR_OWN = {
    "ocmem": "one line on standard error (descriptor 2) when a Ctrl-C ends the command line",
    "ocmem.home.journalindex": "SQLite writes its own database, a cache under .ocmem",
    "ocmem.home.journalvectors": "the sentence vectors, a cache under .ocmem: rows appended "
    "under SQLite's write lock, then recorded in its own database",
    "ocmem.silverbullet.history": "git writes its own repository under .ocmem",
    "ocmem.setup.harden": "as root: ownership and modes of the whole home, the sudoers rule in "
    "/etc (the OS's boundary, not the home's content)",
    "ocmem.setup.handover": "as root: the owners and modes of the whole home, handed to the "
    "hardened mode's owner and back",
    "ocmem.setup.uninstall": "outside the home: the archive folder (the memory's copy, then "
    ".ocmem/ moved into it whole, after the last run under its lock) and the systemd units the "
    "user made; the home's own files go through a Transaction",
} | {
    f"ocmem.trial.{name}": "ocmem essai's own sandbox, a temporary folder it made (the homes in "
    "it are written by the ocmem commands it runs)"
    for name in ("sandbox", "runner", "spectests", "standin", "opencodeserve", "schedulers")
}
FILE_METHODS = {"write_text", "write_bytes", "unlink", "rmdir", "mkdir", "chmod", "chown", "touch"}
FILE_METHODS |= {"symlink_to", "hardlink_to", "rename", "truncate"}
OS_WRITES = {"open", "replace", "rename", "renames", "remove", "unlink", "truncate", "mkdir"}
OS_WRITES |= {"makedirs", "rmdir", "removedirs", "chmod", "chown", "symlink", "link", "write"}
SHUTIL_READS = {"which", "disk_usage", "get_terminal_size"}
# The primitives that write behind the Transaction's back when imported elsewhere, and their modules.
DOOR_NAMES = {"atomic_write", "record_writes", "announce", "announce_append", "announce_removal"}
DOOR_MODULES = {"ocmem.home.atomic", "ocmem.home.announce"}


def disk_writes(path: Path) -> list[str]:
    """Where ``path`` writes to the disk itself (a file method, os, shutil, open for writing, or
    the primitives behind the Transaction's back)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in DOOR_MODULES:
            found += [f"imports {a.name}" for a in node.names if a.name in DOOR_NAMES]
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"line {node.lineno}"
        if isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner == "os" and func.attr in OS_WRITES:
                found.append(f"{where}: os.{func.attr}")
            elif owner == "shutil" and func.attr not in SHUTIL_READS:
                found.append(f"{where}: shutil.{func.attr}")
            elif owner not in ("os", "shutil") and func.attr in FILE_METHODS:
                found.append(f"{where}: .{func.attr}()")
            elif func.attr == "open" and _writing_mode(node, 0):
                found.append(f"{where}: .open() for writing")
        elif isinstance(func, ast.Name) and func.id == "open" and _writing_mode(node, 1):
            found.append(f"{where}: open() for writing")
    return found


def _writing_mode(call: ast.Call, position: int) -> bool:
    modes = [k.value for k in call.keywords if k.arg == "mode"]
    if len(call.args) > position:
        modes.append(call.args[position])
    return any(
        not isinstance(m, ast.Constant) or any(c in str(m.value) for c in "wax+") for m in modes
    )


def test_the_transaction_and_the_state_writers_are_the_only_doors_to_the_disk() -> None:
    wrong = {
        name: found
        for name, path in sorted(MODULES.items())
        if name not in WRITERS and name not in WRITES_ON_THEIR_OWN
        if (found := disk_writes(path))
    }
    assert wrong == {}


def test_the_door_check_sees_each_way_of_writing(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os, shutil\n"
        "from ocmem.home.atomic import atomic_write\n"
        "p.write_text('x')\np.unlink()\nos.replace(a, b)\nshutil.rmtree(d)\n"
        "open(f, 'a')\np.open('wb')\nopen(f)\np.read_text()\nshutil.which('git')\n"
    )
    assert len(disk_writes(sample)) == 7


# No link is followed below the home (ocmem.home.atomic): its ``open_file`` is the one way a
# module opens a file, for reading too, so a memory, journal, pending, state or token file that
# is a link is refused by every command alike. Elsewhere, only these open files themselves, and
# why (none of them reads one of those files).
OPENS_ON_THEIR_OWN = {
    "ocmem.home.atomic": "the door itself",
    "ocmem.bridge.mcpdiscovery": "OpenCode's own configuration, read as OpenCode reads it "
    "(a linked opencode.json is the user's set-up, not ocmem's file)",
    "ocmem.setup.opencodedir": "OpenCode's package files, read as OpenCode reads them",
    "ocmem.setup.handover": "as root, the home handed back through descriptors that never follow "
    "a link (O_PATH | O_NOFOLLOW, below a folder's descriptor): it reads no file",
    "ocmem.setup.oldmemory": "another memory system's files, wherever OpenCode finds them",
    "ocmem.silverbullet.library": "the package's own Lua (importlib.resources)",
    "ocmem.text.lexicon": "the package's own word counts (importlib.resources)",
} | {
    f"ocmem.trial.{name}": "ocmem essai's sandbox, read as the user or SilverBullet would"
    for name in ("mailbox", "opencodeserve", "sandbox", "schedulers", "spectests", "standin")
}
READ_METHODS = {"read_text", "read_bytes", "open"}


def file_opens(path: Path) -> list[str]:
    """Where ``path`` opens a file by itself (a path's read_text, read_bytes or open; os.open;
    open())."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"line {node.lineno}"
        if isinstance(func, ast.Attribute) and func.attr in READ_METHODS:
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner != "os" or func.attr == "open":
                found.append(f"{where}: .{func.attr}()")
        elif isinstance(func, ast.Name) and func.id == "open":
            found.append(f"{where}: open()")
    return found


def test_every_file_is_opened_through_the_no_link_door() -> None:
    wrong = {
        name: found
        for name, path in sorted(MODULES.items())
        if name not in OPENS_ON_THEIR_OWN
        if (found := file_opens(path))
    }
    assert wrong == {}


def test_the_open_check_sees_each_way_of_opening(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\np.read_text()\n(a / b).read_bytes()\np.open('rb')\nos.open(p, 0)\n"
        "open(f)\nos.fdopen(fd)\nhandle.read()\n"
    )
    assert len(file_opens(sample)) == 5
