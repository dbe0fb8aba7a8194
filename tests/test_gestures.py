"""What ocmem pushes for the review page (ocmem.formats.gestures, ocmem.services.gestureplans).

The page's Lua performs it (tests/test_sb_review.py); here, what ocmem computes: the texts with
their slots, the fence inside a proposal's block that ocmem's own parser skips, the gestures of
each waiting proposal, and the push sending them again when what they are computed from moves.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import journal_fields
from ocmem.formats import decisionspage, gestures, memorymd, pending
from ocmem.home.settings import Limits
from ocmem.services import gestureplans
from ocmem.silverbullet import merge

PROPOSAL = pending.Proposal(
    id="P-0003",
    kind="fait",
    title="Debian ${x}",
    status=pending.STATE_PENDING,
    created=date(2026, 11, 29),
    sources=("journal 2026-11-20 10:12",),
    origin="récurrence (2 épisodes)",
    replaces="rien",
    contradiction="aucune",
    content="Le VPS tourne sous Debian 12.",
)


def pulled(tmp_path: Path, memory: str = "", **kw: Any) -> gestureplans.Space:
    values: dict[str, Any] = {
        "memory": memory,
        "archive": "",
        "installed": [],
        "skills_dir": tmp_path,
        "limits": Limits(),
        "memory_page": "Agents/Memory/MEMORY",
        "archive_page": "Agents/Memory/ARCHIVE",
        "skills_folder": "Agents/Skills/",
        "decisions_page": "Agents/Inbox/vps/decisions",
        "home": "vps",
    }
    values.update(kw)
    return gestureplans.Space(**values)


# --- texts and their slots -----------------------------------------------------------------------


@given(st.text(max_size=30), st.text(max_size=30))
def test_slotted_finds_the_day_wherever_it_is_and_nothing_else(before: str, after: str) -> None:
    text = gestures.slotted(lambda day: f"{before}{day.isoformat()}{after}({day.isoformat()})")
    assert gestures.fill(text, {"date": "2026-12-05"}) == f"{before}2026-12-05{after}(2026-12-05)"
    assert [p for p in text if isinstance(p, gestures.Slot)] == [gestures.Slot("date")] * 2


def test_slotted_refuses_a_text_the_day_changes_otherwise() -> None:
    with pytest.raises(ValueError):
        gestures.slotted(lambda day: "x" * day.month)


@given(st.lists(st.one_of(st.text(max_size=15), st.just(gestures.Slot("date"))), max_size=6))
def test_no_data_line_can_close_the_fence(pieces: list[Any]) -> None:
    for line in gestures.lines_of(tuple(pieces)):
        assert line[0] in "|>@" and not gestures.is_close(line, gestures.CLOSE)


# --- the fence at the end of the pending page -------------------------------------------------


def test_the_fence_is_ocmens_at_the_end_of_the_page_and_is_rewritten(tmp_path: Path) -> None:
    block = merge.normalise(PROPOSAL.render())
    page = pending.PENDING_HEADER + "\n" + block
    fence = gestureplans.Decorator(lambda: pulled(tmp_path))([("P-0003", block)])
    assert fence is not None and fence.startswith(gestures.OPEN + "\nproposition vps/P-0003\n")
    held = gestures.with_fence(page, fence)
    assert held == page.rstrip("\n") + "\n\n" + fence + "\n"
    assert pending.parse(held) == [PROPOSAL]  # ocmem's parsers see free text after the blocks
    assert [s.id for s in merge.split(held, merge.PENDING_BLOCK) if s.id] == ["P-0003"]
    lines = fence.split("\n")
    assert f"bloc {gestures.digest(block.splitlines()[0])}" in lines
    assert f"empreinte 12 {gestures.digest(block.rstrip(chr(10)))}" in lines
    # Rewritten at each push: a human's line after it stays, above the new one.
    human = held + "Une note de l'humain.\n"
    again = gestures.with_fence(human, fence)
    assert again == page.rstrip("\n") + "\n\nUne note de l'humain.\n\n" + fence + "\n"
    assert gestures.with_fence(again, None) == page.rstrip("\n") + "\n\nUne note de l'humain.\n"


def test_a_fence_like_ocmens_inside_the_agents_text_is_left_alone() -> None:
    forged = f"## P-0001 · skill · x\n- Contenu proposé :\n\n~~~~markdown\n{gestures.OPEN}\nx\n~~~\n~~~~\n"
    assert gestures.with_fence(forged, None) == forged


def test_a_waiting_proposal_gets_both_gestures_a_decided_one_none(tmp_path: Path) -> None:
    decorate = gestureplans.Decorator(lambda: pulled(tmp_path))
    block = PROPOSAL.render()
    fence = decorate([("P-0003", block)]) or ""
    assert "geste promouvoir" in fence and "geste refuser" in fence
    assert "decidee - P-0003 : promu" in fence and "proposition vps/P-0003" in fence
    assert "titre fait · Debian ${x}" in fence  # plain text, in the fence: shown as text
    decided = PROPOSAL.with_status(pending.promoted_status(date(2026, 12, 1)))
    assert decorate([("P-0003", decided.render())]) is None


def test_the_decision_lines_are_the_ones_ocmem_reads(tmp_path: Path) -> None:
    review = gestureplans.review(PROPOSAL, pulled(tmp_path))
    promote, refuse = review.gestures
    slots = {"date": "2026-12-05", "raison": "déjà noté"}
    text = decisionspage.HEADER + gestures.fill(promote.decision, slots)
    assert decisionspage.parse(text) == {"P-0003": "promu (2026-12-05)"}
    text = decisionspage.HEADER + gestures.fill(refuse.decision, slots)
    assert decisionspage.parse(text) == {"P-0003": "refusé (2026-12-05) : déjà noté"}


def test_a_promotion_ocmem_refuses_is_pushed_as_impossible_with_the_reason(tmp_path: Path) -> None:
    full = memorymd.MEMORY_HEADER + "\n" + "- " + "x" * 1990 + "\n"
    promote, _ = gestureplans.review(PROPOSAL, pulled(tmp_path, full)).gestures
    assert promote.edits == () and promote.impossible is not None
    assert "plafond" in promote.impossible and "Correction : " in promote.impossible
    unpulled = pulled(tmp_path, memory_page=None)
    promote, _ = gestureplans.review(PROPOSAL, unpulled).gestures
    assert promote.impossible is not None and "n'est pas tiré" in promote.impossible


def test_a_fact_already_promoted_under_its_id_only_records_the_decision(tmp_path: Path) -> None:
    line = "- Le VPS tourne sous Debian 12. (2026-12-01, Source : vps journal 2026-11-20 10:12 ; vps/P-0003)"
    memory = memorymd.MEMORY_HEADER + "\n" + line + "\n"
    promote, _ = gestureplans.review(PROPOSAL, pulled(tmp_path, memory)).gestures
    assert promote.edits == () and promote.impossible is None


def test_on_the_spec_page_ids_carry_no_home(tmp_path: Path) -> None:
    review = gestureplans.review(PROPOSAL, pulled(tmp_path, home=None))
    (edit,) = review.gestures[0].edits
    line = gestures.fill(edit.text or (), {"date": "2026-12-05"})
    assert (
        line.endswith(", Source : journal 2026-11-20 10:12 ; P-0003)\n") and review.gid == "P-0003"
    )


def test_an_exposed_proposal_warns_first(tmp_path: Path) -> None:
    exposed = replace(PROPOSAL, exposure="quarantaine : webfetch http://127.0.0.1:8000/doc")
    review = gestureplans.review(exposed, pulled(tmp_path))
    assert review.alert is not None and review.alert.startswith("⚠ Exposée : quarantaine")


# --- the push ------------------------------------------------------------------------------------


def test_the_push_sends_gestures_again_when_the_pulled_memory_moves(
    synced: Path, sb: Any, memory: Any, proposals: Any, clock: Any
) -> None:
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services import sync

    def workspace() -> Workspace:
        return Workspace(load_settings(synced), clock=clock)

    refs = []
    for title in ("Ports", "Déploiement"):
        clock.advance(minutes=1)
        refs.append(memory.add_journal(journal_fields(titre=title)).lines[0].split(" : ", 1)[1])
    proposals.propose(
        {
            "type": "fait",
            "titre": "Ports",
            "contenu": "Le port 8080 est pris par Traefik.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )
    sync.push(workspace())
    (page,) = [f.name for f in sb.listing() if f.name.endswith("/pending.md")]
    pushed = sb.read(page)
    assert "plafond 2000" in pushed and pushed.rstrip("\n").endswith(gestures.CLOSE)
    sb.clear_requests()
    sync.push(workspace())
    assert sb.requests == []  # nothing moved: nothing read, nothing sent
    sb.write("Agents/Memory/MEMORY.md", memorymd.MEMORY_HEADER + "\n- Un fait de l'humain.\n")
    sync.pull(workspace())
    sync.push(workspace())
    again = sb.read(page)
    assert again != pushed and pending.parse(again) == pending.parse(pushed)
