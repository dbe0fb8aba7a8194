"""What a pull must not take away (ocmem.silverbullet.carryover), by tables: what a local file
alone holds against the space's version and the one the last pull installed; which files stay,
which proposals are reopened, and what the space winning does."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.formats import pending
from ocmem.home.shipped import shipped_section
from ocmem.silverbullet.carryover import Candidate, decide, lost

TODAY = date(2026, 12, 3)
HEAD = "# Mémoire\n\n"
PORT = "- Le port SSH est 2222. (2026-11-29, Source : journal 2026-11-29 10:00 ; P-0001)\n"
DEBIAN = "- Le VPS tourne sous Debian 12.\n"
SECTION = shipped_section() + "\n"


def proposal(pid: str = "P-0001", status: str = "promu (2026-11-29)") -> pending.Proposal:
    return pending.Proposal(
        id=pid,
        kind="fait",
        title="Port",
        status=status,
        created=date(2026, 11, 29),
        sources=("journal 2026-11-29 10:00",),
        origin="récurrence",
        replaces="rien",
        contradiction="aucune",
        content="Le port SSH est 2222.",
    )


LOST_CASES = [
    # (file, here, space, installed, expected shown items)
    ("memory/MEMORY.md", HEAD + DEBIAN + PORT, HEAD + DEBIAN, None, [PORT.strip()]),
    ("memory/MEMORY.md", HEAD + PORT, HEAD + PORT.replace("; P-0001", "; vps/P-0001"), None, []),
    ("memory/MEMORY.md", HEAD + PORT, HEAD + "- Le  port SSH est\t2222.\n", None, []),
    ("memory/MEMORY.md", HEAD + PORT, HEAD, HEAD + PORT, []),  # the human took it out there
    ("memory/MEMORY.md", HEAD + PORT, None, HEAD + PORT, []),  # removed there, as installed
    ("memory/MEMORY.md", HEAD + PORT, None, None, [PORT.strip()]),
    ("AGENTS.md", SECTION, "# Règles\n", None, []),  # only ocmem's section: nothing of theirs
    (
        "AGENTS.md",
        "Réponds en français.\n\n" + SECTION,
        "# Règles\n",
        None,
        ["Réponds en français."],
    ),
    ("AGENTS.md", "Réponds en français.\n", "Réponds en français.\n" + SECTION, None, []),
    ("skills/deploy/SKILL.md", b"ici", b"la-bas", None, ["skills/deploy/SKILL.md"]),
    ("skills/deploy/SKILL.md", b"ici", b"la-bas", b"ici", []),
    ("skills/retrospective/SKILL.md", b"ici", b"la-bas", None, []),  # ocmem's own skill
]


@pytest.mark.parametrize(("local", "here", "space", "installed", "expected"), LOST_CASES)
def test_what_a_local_file_alone_holds(
    local: str,
    here: str | bytes,
    space: str | bytes | None,
    installed: str | bytes | None,
    expected: list[str],
) -> None:
    def raw(value: str | bytes | None) -> bytes | None:
        return value.encode() if isinstance(value, str) else value

    found = lost(local, raw(here) or b"", raw(space), raw(installed), [proposal()])
    assert [item.shown for item in found] == expected


def test_an_archive_entry_kept_only_here_is_lost_by_the_space_s_version() -> None:
    entry = (
        "## 2026-12-01 · fait retiré · à la main\n- Ancien : Le port SSH est 2222.\n"
        "- Raison : VPS réinstallé\n"
    )
    found = lost("memory/ARCHIVE.md", ("# Archive\n\n" + entry).encode(), b"# Archive\n", None, [])
    assert [item.shown for item in found] == ["2026-12-01 · fait retiré · à la main"]


def candidate(space: str | None = HEAD + DEBIAN) -> Candidate:
    return Candidate(
        "Agents/Memory/MEMORY.md",
        "memory/MEMORY.md",
        (HEAD + PORT).encode(),
        space.encode() if space is not None else None,
        None,
    )


def document(*proposals: pending.Proposal) -> pending.Document:
    return pending.document("".join(p.render() + "\n" for p in proposals))


DECIDE_CASES = [
    # (status, carried before, held, state after, reopened)
    ("promu (2026-11-29)", [], True, pending.STATE_PENDING, True),
    ("en attente", [], True, pending.STATE_PENDING, False),
    ("promu (2026-11-30)", ["P-0001"], False, pending.STATE_PROMOTED, False),  # decided there
    ("refusé (2026-11-30) : plus vrai", ["P-0001"], False, pending.STATE_REFUSED, False),
]


@pytest.mark.parametrize(("status", "carried", "held", "after", "again"), DECIDE_CASES)
def test_a_file_stays_until_its_proposals_are_decided_in_silverbullet(
    status: str, carried: list[str], held: bool, after: str, again: bool
) -> None:
    done = decide(
        [candidate()],
        document(proposal(status=status)),
        carried,
        TODAY,
        replace_local=False,
        pending_page="Agents/Inbox/vps/pending.md",
    )
    assert (done.held == {"Agents/Memory/MEMORY.md"}) is held
    assert done.needs_human is held
    (after_proposal,) = done.document.proposals
    assert after_proposal.state == after
    assert ("validée ici le 2026-11-29" in after_proposal.status) is again
    assert "P-0001" in done.carried or not again


def test_a_line_no_proposal_carries_is_listed_to_copy_by_hand() -> None:
    done = decide(
        [candidate()], document(), [], TODAY, replace_local=False, pending_page="Agents/x.md"
    )
    assert done.held == {"Agents/Memory/MEMORY.md"}
    assert any("à recopier à la main dans Agents/Memory/MEMORY.md" in line for line in done.lines)


def test_when_the_space_wins_nothing_stays_and_reopened_proposals_are_let_go() -> None:
    reopened = proposal(status="en attente (reprise : validée ici le 2026-11-29, absente)")
    done = decide(
        [candidate()],
        document(reopened),
        ["P-0001"],
        TODAY,
        replace_local=True,
        pending_page="Agents/Inbox/vps/pending.md",
    )
    assert done.held == set() and not done.needs_human
    (after,) = done.document.proposals
    assert after.state == pending.STATE_REFUSED and "--remplacer-local" in after.status
    assert any(PORT.strip() in line for line in done.lines)


def test_in_a_copy_a_pull_installed_only_what_a_promotion_put_there_counts() -> None:
    here = (HEAD + DEBIAN + PORT + "- Écrit à la main dans la copie.\n").encode()
    installed = (HEAD + DEBIAN).encode()
    found = lost("memory/MEMORY.md", here, installed, installed, [proposal()], mirrored=True)
    assert [(item.shown, item.proposal) for item in found] == [(PORT.strip(), "P-0001")]
    skill = lost("skills/deploy/SKILL.md", b"ici", b"la-bas", b"avant", [], mirrored=True)
    assert skill == []  # a hand edit of the copy: replaced, with a backup, as it always was


FACTS = [f"Fait numéro {n}." for n in range(6)]
STATES = ["promu (2026-11-29)", "en attente", "refusé (2026-11-30) : non"]


@given(
    here=st.sets(st.sampled_from(range(6))),
    space=st.sets(st.sampled_from(range(6))),
    installed=st.one_of(st.none(), st.sets(st.sampled_from(range(6)))),
    states=st.lists(st.sampled_from(STATES), min_size=6, max_size=6),
    carried=st.sets(st.sampled_from(range(6))),
    replace_local=st.booleans(),
)
def test_a_fact_only_here_is_never_dropped_without_a_human_decision(
    here: set[int],
    space: set[int],
    installed: set[int] | None,
    states: list[str],
    carried: set[int],
    replace_local: bool,
) -> None:
    def page(facts: set[int]) -> bytes:
        return (
            HEAD
            + "".join(
                f"- {FACTS[n]} (2026-11-29, Source : x ; P-000{n + 1})\n" for n in sorted(facts)
            )
        ).encode()

    proposals = [replace(proposal(f"P-000{n + 1}", states[n]), content=FACTS[n]) for n in range(6)]
    ids = [f"P-000{n + 1}" for n in sorted(carried)]
    done = decide(
        [
            Candidate(
                "Agents/M.md",
                "memory/MEMORY.md",
                page(here),
                page(space),
                page(installed) if installed is not None else None,
            )
        ],
        document(*proposals),
        ids,
        TODAY,
        replace_local=replace_local,
        pending_page="Agents/Inbox/vps/pending.md",
    )
    only_here = here - space - (installed or set())
    if not only_here or replace_local:
        assert done.held == set()
        return
    undecided = [
        n
        for n in only_here
        if states[n].startswith("en attente")
        or (states[n].startswith("promu") and n not in carried)
    ]
    assert (done.held == {"Agents/M.md"}) is bool(undecided)
    after = {p.id: p for p in done.document.proposals}
    for n in undecided:  # each is now waiting for the human in SilverBullet
        assert after[f"P-000{n + 1}"].state == pending.STATE_PENDING
