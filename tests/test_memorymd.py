"""Finding a fact line of MEMORY.md (ocmem.formats.memorymd): by what it says, as « Remplace »
names it, and by the proposal that wrote it, as an undo looks for it."""

from __future__ import annotations

import pytest

from ocmem.formats import memorymd

MEMORY = memorymd.MEMORY_HEADER + (
    "\n- Le port SSH du VPS est 2222. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0001)\n"
    "- Le port  HTTP est 8080.\n"
    "- Le VPS tourne sous Debian 12. (2026-11-22, Source : journal 2026-11-21 09:00 ; vps/P-0002)\n"
    "- Le port SSH du VPS est 2222. (2026-11-23, Source : à la main)\n"
)


@pytest.mark.parametrize(
    ("statement", "line"),
    [
        (
            "Le port SSH du VPS est 2222.",  # written twice by hand: the first line
            "Le port SSH du VPS est 2222. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0001)",
        ),
        ("Le port HTTP  est 8080.", "Le port  HTTP est 8080."),  # spaces folded
        ("Le port SSH", None),  # a part of a fact is not what it says
        ("Le port SSH du VPS est 2222. (2026-11-20", None),
        ("", None),
    ],
)
def test_the_line_stating_a_fact(statement: str, line: str | None) -> None:
    assert memorymd.line_stating(MEMORY, statement) == line


@pytest.mark.parametrize(
    ("proposal_id", "content", "home_id", "starts"),
    [
        ("P-0001", "autre chose", None, "Le port SSH du VPS est 2222. (2026-11-20"),
        ("P-0009", "Le port HTTP est 8080.", None, "Le port  HTTP"),  # by what it says
        ("P-0002", "autre chose", None, None),  # another home's P-0002
        ("P-0002", "autre chose", "vps", "Le VPS tourne"),
        ("P-0009", "autre chose", None, None),
    ],
)
def test_the_line_of_a_promoted_proposal(
    proposal_id: str, content: str, home_id: str | None, starts: str | None
) -> None:
    found = memorymd.line_of_proposal(MEMORY, proposal_id, content, home_id)
    assert (found is None) if starts is None else (found or "").startswith(starts)
    assert memorymd.holds(MEMORY, proposal_id, content, home_id) == (found is not None)
