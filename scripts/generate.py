#!/usr/bin/env python3
"""Every file (or part of a file) of this repository that is generated from ocmem's code, made
in one place: `scripts/generate.py` rewrites those that are stale, `scripts/generate.py --check`
lists them and fails (CI runs it; tests/test_generated.py too).

- README.md's command table, from the command line (ocmem.cli.docs);
- docs/guide.md's table of ocmem.yaml's keys, from the settings loader (ocmem.home.settings);
- plugin/ocmem/contract.ts, from ocmem.bridge.contract;
- the constants block of sync/ocmem/silverbullet/ocmem.lua: the pages it looks in, the fence of
  the gestures ocmem pushes, the decisions page's header, the retirements' templates;
- silverbullet/Library/ocmem.md, the SilverBullet page, from its Lua sources;
- memory/*.md, this repository's top level being a fresh home, from ocmem's templates.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]


class Generated(NamedTuple):
    path: str  # relative to the repository
    make: Callable[[str], str]  # the file's current text → what it should be


def _readme(text: str) -> str:
    from ocmem.cli import docs

    return docs.with_table(text)


def _guide(text: str) -> str:
    from ocmem.cli import docs

    return docs.with_settings(text)


def _contract(_: str) -> str:
    from ocmem.bridge import contract

    return contract.typescript()


def _lua(text: str) -> str:
    from ocmem.silverbullet import library

    return library.with_lua_constants(text)


def _library(_: str) -> str:
    from ocmem.silverbullet import library

    return library.library_page()


def _template(name: str) -> Callable[[str], str]:
    def make(_: str) -> str:
        from ocmem.home.paths import Paths
        from ocmem.home.workspace import memory_templates

        paths = Paths(REPO)
        return memory_templates(paths)[paths.memory_dir / name]

    return make


GENERATED = (
    Generated("README.md", _readme),
    Generated("docs/guide.md", _guide),
    Generated("plugin/ocmem/contract.ts", _contract),
    Generated("sync/ocmem/silverbullet/ocmem.lua", _lua),  # before the page that holds it
    Generated("silverbullet/Library/ocmem.md", _library),
    *(
        Generated(f"memory/{n}", _template(n))
        for n in ("MEMORY.md", "SHORT_TERM.md", "journal.md", "pending.md")
    ),
)


def stale(write: bool) -> list[Path]:
    """The generated files that differ from what the code makes, rewritten when ``write`` (in
    order: a later file may be made from an earlier one)."""
    found = []
    for item in GENERATED:
        path = REPO / item.path
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        expected = item.make(current)
        if expected != current:
            found.append(path)
            if write:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(expected, encoding="utf-8")
    return found


def main(argv: list[str]) -> int:
    if argv not in ([], ["--check"]):
        sys.stderr.write("usage: scripts/generate.py [--check]\n")
        return 2
    check = argv == ["--check"]
    for path in stale(write=not check):
        relative = path.relative_to(REPO)
        if check:
            sys.stderr.write(f"out of date: {relative} (run scripts/generate.py)\n")
        else:
            sys.stdout.write(f"written: {relative}\n")
    return 1 if check and stale(write=False) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
