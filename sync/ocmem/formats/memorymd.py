"""memory/MEMORY.md: validated facts, one ``- `` line each, changed only by a human promotion."""

from __future__ import annotations

import re

# "(2026-11-29, Source : journal … ; P-0003)": the provenance ocmem appends when promoting.
_PROVENANCE = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}[^()]*\)\s*$")

MEMORY_HEADER = "# Mémoire\n\nFaits stables validés par l'humain (2000 caractères au plus).\n"


def fact_lines(text: str) -> list[str]:
    """The fact lines (list items) of MEMORY.md, without the leading ``- ``."""
    return [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]


def fact_statement(line: str) -> str:
    """A fact line without its trailing date/source parenthesis (what the fact says)."""
    return _PROVENANCE.sub("", line)


def with_fact(text: str, line: str) -> str:
    base = text if text.strip() else MEMORY_HEADER
    body = base.rstrip("\n")
    separator = "\n" if body.splitlines()[-1].startswith("- ") else "\n\n"
    return body + separator + f"- {line}\n"


def replaced_fact(text: str, old_line: str, new_line: str) -> str:
    """MEMORY.md with the fact line ``old_line`` (as ``fact_lines`` gives it) now ``new_line``,
    in its place; every other byte as it was."""
    lines = text.split("\n")
    index = next(
        i for i, line in enumerate(lines) if line.startswith("- ") and line[2:].strip() == old_line
    )
    lines[index] = f"- {new_line}"
    return "\n".join(lines)


def without_fact(text: str, old_line: str) -> str:
    """MEMORY.md without the fact line ``old_line``; every other byte as it was."""
    lines = text.split("\n")
    index = next(
        i for i, line in enumerate(lines) if line.startswith("- ") and line[2:].strip() == old_line
    )
    del lines[index]
    return "\n".join(lines)
