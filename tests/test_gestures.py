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
def test_no_data_line_can_close_the_fence_or_read_as_a_field(pieces: list[Any]) -> None:
    for line in gestures.lines_of(tuple(pieces)):
        assert line[0] in "|>@" and not gestures.is_close(line)
        assert not line.startswith("- ")


# --- the fence in a proposal's block --------------------------------------------------------------


def test_the_fence_sits_before_the_content_and_ocmems_parser_skips_it(tmp_path: Path) -> None:
    review = gestureplans.review(PROPOSAL, pulled(tmp_path))
    block = gestures.decorate(PROPOSAL.render(), review, pending.CONTENT_LABEL)
    lines = block.split("\n")
    assert lines.index(gestures.OPEN) < lines.index(f"- {pending.CONTENT_LABEL} :")
    assert pending.parse(block) == [PROPOSAL]
    assert gestures.strip(block) == PROPOSAL.render()
    assert [s.id for s in merge.split(block, merge.PENDING_BLOCK) if s.id] == ["P-0003"]
    # The digest covers the block without the fence, as the page computes it.
    before, _, after = PROPOSAL.render().partition(f"- {pending.CONTENT_LABEL} :")
    counted = f"{before.rstrip()}\n- {pending.CONTENT_LABEL} :{after.rstrip()}"
    assert f"empreinte 7 5 {gestures.digest(counted)}" in lines


def test_a_waiting_proposal_gets_both_gestures_a_decided_one_none(tmp_path: Path) -> None:
    decorate = gestureplans.Decorator(lambda: pulled(tmp_path))
    block = decorate(PROPOSAL.render())
    assert "geste promouvoir" in block and "geste refuser" in block
    assert "decidee - P-0003 : promu" in block and "proposition vps/P-0003" in block
    assert "titre fait · Debian ${x}" in block  # plain text, in the fence: shown as text
    decided = PROPOSAL.with_status(pending.promoted_status(date(2026, 12, 1)))
    assert decorate(decided.render()) == decided.render()


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
    assert "plafond 2000" in pushed
    sb.clear_requests()
    sync.push(workspace())
    assert sb.requests == []  # nothing moved: nothing read, nothing sent
    sb.write("Agents/Memory/MEMORY.md", memorymd.MEMORY_HEADER + "\n- Un fait de l'humain.\n")
    sync.pull(workspace())
    sync.push(workspace())
    again = sb.read(page)
    assert again != pushed and pending.parse(again) == pending.parse(pushed)
