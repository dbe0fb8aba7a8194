"""memory/MEMORY.md: validated facts, one ``- `` line each, changed only by a human promotion."""

from __future__ import annotations

import re

from ocmem.text import inert

# "(2026-11-29, Source : journal … ; P-0003)": the provenance ocmem appends when promoting.
_PROVENANCE = re.compile(r"\s*\(\d{4}-\d{2}-\d{2}[^()]*\)\s*$")
# The proposal a promotion names at the end of that provenance: « ; P-0001) » when ocmem
# promoted it, « ; vps-prod/P-0001) » when the review page did (the home's id before it).
_PROPOSAL = re.compile(r";\s*(?:([a-z0-9][a-z0-9-]*)/)?(P-\d{4,})\)\s*$")

FACT_PREFIX = "- "  # a fact is a list item
MEMORY_HEADER = "# Mémoire\n\nFaits stables validés par l'humain (2000 caractères au plus).\n"


def fact_lines(text: str) -> list[str]:
    """The fact lines (list items) of MEMORY.md, without the leading ``- ``."""
    return [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]


def fact_statement(line: str) -> str:
    """A fact line without its trailing date/source parenthesis (what the fact says)."""
    return _PROVENANCE.sub("", line)


def line_stating(text: str, statement: str) -> str | None:
    """The fact line of MEMORY.md ``text`` that says ``statement`` (spaces folded), as
    « Remplace : MEMORY.md « … » » names it; the first when a hand edit wrote it twice."""
    wanted = " ".join(statement.split())
    return next(
        (line for line in fact_lines(text) if " ".join(fact_statement(line).split()) == wanted),
        None,
    )


def with_fact(text: str, line: str) -> str:
    base = text if text.strip() else MEMORY_HEADER
    body = base.rstrip("\n")
    separator = "\n" if body.splitlines()[-1].startswith("- ") else "\n\n"
    return body + separator + f"- {line}\n"


def replaced_fact(text: str, old_line: str, new_line: str) -> str:
    """MEMORY.md with the fact line ``old_line`` (as ``fact_lines`` gives it) now ``new_line``,
    in its place; every other byte as it was."""
    lines = text.split("\n")
    lines[_index(lines, old_line)] = f"- {new_line}"
    return "\n".join(lines)


def without_fact(text: str, old_line: str) -> str:
    """MEMORY.md without the fact line ``old_line``; every other byte as it was."""
    lines = text.split("\n")
    del lines[_index(lines, old_line)]
    return "\n".join(lines)


def _index(lines: list[str], fact_line: str) -> int:
    """Where the fact line ``fact_line`` (as ``fact_lines`` gives it) is among ``lines``."""
    return next(
        i for i, line in enumerate(lines) if line.startswith("- ") and line[2:].strip() == fact_line
    )


def statement_key(text: str) -> str:
    """What a fact says, as two copies of it are compared: its trace dropped, the escapes that
    keep it inert in SilverBullet undone, spaces folded."""
    return " ".join(inert.readable(fact_statement(text)).split())


def proposal_of(line: str, home_id: str | None = None) -> str | None:
    """The proposal a fact line's trace names (``P-0001``), when it names one of this home's
    (no home before it, or ``home_id``)."""
    found = _PROPOSAL.search(line)
    if found is None or found.group(1) not in (None, home_id):
        return None
    return found.group(2)


def holds(text: str, proposal_id: str, content: str, home_id: str | None = None) -> bool:
    """Whether MEMORY.md ``text`` holds the fact of proposal ``proposal_id``."""
    return line_of_proposal(text, proposal_id, content, home_id) is not None


def line_of_proposal(
    text: str, proposal_id: str, content: str, home_id: str | None = None
) -> str | None:
    """The first fact line of MEMORY.md ``text`` that holds the fact of proposal
    ``proposal_id``: a line naming it (``proposal_of``), or a line saying its ``content``."""
    key = statement_key(content)
    return next(
        (
            line
            for line in fact_lines(text)
            if proposal_of(line, home_id) == proposal_id or statement_key(line) == key
        ),
        None,
    )
