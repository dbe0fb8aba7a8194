"""Recurring short-term notes: counted by distinct days, suggested, never proposed by ocmem itself."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import OcmemError, Refused
from ocmem.home.workspace import Workspace
from ocmem.services import recurrence
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.services.review import review

DAY = date(2026, 11, 29)
NOTE = "le VPS de prod redémarre chaque nuit à 3 h (cron de l'hébergeur)"


def written_on(days: list[int], text: str = NOTE) -> recurrence.NoteRecord:
    records: list[recurrence.NoteRecord] = []
    note = None
    for offset in days:
        records, note = recurrence.record(records, text, DAY + timedelta(days=offset))
    assert note is not None
    return note


@pytest.mark.parametrize(
    ("days", "recurring"),
    [
        ([0], False),
        ([0, 0, 0, 0], False),  # rewritten within one session: not recurrence
        ([0, 1], False),  # a task spanning two days
        ([0, 1, 1], False),
        ([0, 1, 2], True),
        ([0, 30, 60], True),
        ([0, 1, 200], False),  # forgotten after FORGET_AFTER_DAYS without being written
    ],
)
def test_a_note_recurs_when_written_on_three_distinct_days(
    days: list[int], recurring: bool
) -> None:
    assert written_on(days).recurring is recurring


def test_a_reworded_note_is_the_same_note_but_a_different_one_is_not() -> None:
    records, _ = recurrence.record([], NOTE, DAY)
    records, _ = recurrence.record(records, NOTE.upper(), DAY + timedelta(days=1))
    records, same = recurrence.record(
        records,
        "Le VPS de prod redémarre chaque nuit à 3 h (cron hébergeur)",
        DAY + timedelta(days=2),
    )
    assert same.recurring and len(records) == 1
    records, other = recurrence.record(records, "la base Postgres est en version 16", DAY)
    assert not other.recurring and len(records) == 2


def test_the_register_stays_bounded() -> None:
    records: list[recurrence.NoteRecord] = []
    for i in range(recurrence.MAX_RECORDS + 50):
        records, _ = recurrence.record(records, f"note numéro {i} sur le sujet {i * 7919}", DAY)
    assert len(records) == recurrence.MAX_RECORDS
    many = written_on(list(range(40)))
    assert len(many.days) == recurrence.KEPT_DAYS


def test_covered_by_a_proposal_or_a_fact() -> None:
    note = written_on([0, 1, 2])
    assert recurrence.covered_by(note, [], []) is None
    proposal = (
        "P-0002",
        "en attente",
        "Redémarrage nocturne : le VPS de prod redémarre chaque nuit à 3 h",
    )
    assert "P-0002" in (recurrence.covered_by(note, [proposal], []) or "")
    fact = "Le VPS de prod redémarre chaque nuit à 3 h (cron de l'hébergeur)."
    assert "MEMORY.md" in (recurrence.covered_by(note, [], [fact]) or "")


def add_on_days(memory: Memory, clock: Clock, count: int, text: str = NOTE) -> list[str]:
    lines: list[str] = []
    for _ in range(count):
        lines = memory.add_note(text).lines
        clock.advance(days=1)
    return lines


def test_the_third_day_suggests_a_proposal_in_the_tool_result(memory: Memory, clock: Clock) -> None:
    assert not any("récurrente" in line for line in add_on_days(memory, clock, 2))
    lines = add_on_days(memory, clock, 1)
    hint = [line for line in lines if "Note récurrente" in line]
    assert hint and "note_recurrente" in hint[0] and "3 jours différents" in hint[0]


def test_a_note_removed_then_added_again_still_counts(memory: Memory, clock: Clock) -> None:
    for _ in range(3):
        memory.add_note(NOTE)
        lines = memory.list_notes().lines
        assert any(NOTE[:20] in line for line in lines)
        memory.remove_note(1)
        clock.advance(days=1)
    lines = memory.add_note(NOTE).lines
    assert any("Note récurrente" in line for line in lines)


def test_a_recurring_note_becomes_a_proposal_only_through_propose(
    memory: Memory, proposals: Proposals, workspace: Workspace, clock: Clock
) -> None:
    add_on_days(memory, clock, 3)
    assert workspace.proposals() == []  # ocmem suggested, wrote nothing
    listed = review(workspace)
    assert [s.subject for s in listed.suggestions if s.kind == "note récurrente"] == [NOTE]
    outcome = proposals.propose(
        {
            "type": "fait",
            "titre": "Redémarrage nocturne du VPS",
            "contenu": "Le VPS de prod redémarre chaque nuit à 3 h (cron de l'hébergeur).",
            "contradiction": "aucune",
            "remplace": "rien",
            "note_recurrente": True,
        }
    )
    assert "P-0001" in outcome.lines[0]
    (proposal,) = workspace.proposals()
    assert proposal.origin == "note récurrente"
    assert proposal.sources == ("notes SHORT_TERM.md du 2026-11-29, 2026-11-30, 2026-12-01",)
    assert not [s for s in review(workspace).suggestions if s.kind == "note récurrente"]
    hint = memory.add_note(NOTE).lines
    assert any("déjà proposée : P-0001" in line for line in hint)


def test_a_note_written_twice_cannot_stand_in_for_episodes(
    memory: Memory, proposals: Proposals, workspace: Workspace, clock: Clock
) -> None:
    add_on_days(memory, clock, 2)
    draft = {
        "type": "fait",
        "titre": "Redémarrage nocturne",
        "contenu": NOTE,
        "contradiction": "aucune",
        "remplace": "rien",
        "note_recurrente": True,
    }
    with pytest.raises(Refused, match="écrite 2 jour"):
        proposals.propose(draft)
    add_on_days(memory, clock, 1)
    with pytest.raises(Refused, match="qu'un fait"):
        proposals.propose(draft | {"type": "skill", "name": "nuit", "description": "Une phrase."})
    with pytest.raises(Refused, match="aucune note"):
        proposals.propose(draft | {"contenu": "La base Postgres tourne en version 16."})
    assert workspace.proposals() == []


def test_a_recurring_note_completes_a_proposal_from_episodes(
    memory: Memory, proposals: Proposals, workspace: Workspace, clock: Clock
) -> None:
    refs = [
        memory.add_journal(
            journal_fields(titre=f"Nuit {i}", lecon="le VPS redémarre chaque nuit à 3 h")
        ).lines[0][len("Entrée ajoutée : ") :]
        for i in range(2)
    ]
    draft = {
        "type": "fait",
        "titre": "Redémarrage nocturne du VPS",
        "contenu": "Le VPS de prod redémarre chaque nuit à 3 h (cron de l'hébergeur).",
        "contradiction": "aucune",
        "remplace": "rien",
    }
    proposals.propose(draft | {"sources": refs})
    add_on_days(memory, clock, 3)
    proposals.propose(draft | {"note_recurrente": True})
    (proposal,) = workspace.proposals()
    assert proposal.origin == "récurrence (2 épisodes) ; note récurrente"
    assert proposal.sources[-1].startswith("notes SHORT_TERM.md du ") and len(proposal.sources) == 3


def test_a_corrupt_register_is_named_with_its_fix_and_nothing_is_written(
    memory: Memory, workspace: Workspace
) -> None:
    register = workspace.paths.note_recurrence
    register.parent.mkdir(parents=True, exist_ok=True)
    register.write_text(json.dumps({"notes": [{"text": "x", "days": ["hier"]}]}), encoding="utf-8")
    before = workspace.paths.short_term.read_bytes()
    with pytest.raises(OcmemError) as raised:
        memory.add_note(NOTE)
    assert "note-recurrence.json" in raised.value.render() and "supprime" in (
        raised.value.fix or ""
    )
    assert workspace.paths.short_term.read_bytes() == before


def test_the_register_is_private(memory: Memory, workspace: Workspace) -> None:
    memory.add_note(NOTE)
    assert Path(workspace.paths.note_recurrence).stat().st_mode & 0o077 == 0
