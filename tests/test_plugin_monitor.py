"""The default mode's tamper monitor (plugin/ocmem.ts) against ocmem's own appends: each append
is announced as where it lands and the digest of what it adds, so several appends between two
looks are accepted, and bytes added by anyone else are put back (tests/support/plugin_driver.mjs)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import journal_fields
from ocmem.formats import journal
from support.plugin_runtime import drive

# Runs the gate (a child process), on the machine's clock.
pytestmark = pytest.mark.real_clock


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command, "description": "x"}}


def journal_add(session: str, **fields: str) -> dict[str, Any]:
    """One retrospective per session: each entry from its own session."""
    return {"session": session, "journal": journal_fields(**fields)}


def test_appends_ocmem_announced_are_kept_and_others_put_back(home: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = home / "memory/journal.md"
    steps: list[dict[str, Any]] = [
        {"session": "ses_a", **bash("echo début")},
        journal_add("ses_1", titre="Première"),  # two appends between two looks
        journal_add("ses_2", titre="Seconde"),
        {"session": "ses_a", "model_call": True},
        {
            "append": str(path),
            "text": f"\n## {datetime.now():%Y-%m-%d %H:%M} · Ajout de l'agent · #x\n",
        },
        {"session": "ses_a", "model_call": True},  # the sweep before the next model call
        journal_add("ses_3", titre="Troisième"),  # the monitor's kept file is ocmem's again
        {"session": "ses_a", **bash("echo fin")},
    ]
    answers = drive(home, project, steps, tmp_path)
    assert [a.splitlines()[0][:16] for a in answers] == ["Entrée ajoutée :"] * 3
    text = path.read_text()
    assert [b.title for b in journal.blocks(text)] == ["Première", "Seconde", "Troisième"]
    assert "Ajout de l'agent" not in text
    quarantined = list((home / ".ocmem/quarantine").rglob("journal.md"))
    assert any("Ajout de l'agent" in q.read_text() for q in quarantined)


def test_an_append_is_recognised_after_ocmem_trimmed_its_writes_journal(
    home: Path, tmp_path: Path
) -> None:
    """A trimmed writes journal is read again from its start, older appends first: the newest
    run of appends is matched on its own, not read as following them."""
    project = tmp_path / "project"
    project.mkdir()
    stale = {"file": "memory/journal.md", "append_at": 5, "size": 40, "sha256": "0" * 64}
    steps: list[dict[str, Any]] = [
        journal_add("ses_1", titre="Première"),
        {"session": "ses_a", "model_call": True},
        {"write": str(home / ".ocmem/writes.jsonl"), "text": json.dumps(stale) + "\n"},
        journal_add("ses_2", titre="Seconde"),
        {"session": "ses_a", "model_call": True},
    ]
    drive(home, project, steps, tmp_path)
    text = (home / "memory/journal.md").read_text()
    assert [b.title for b in journal.blocks(text)] == ["Première", "Seconde"]
    assert not (home / ".ocmem/quarantine").exists()


def test_the_notes_set_apart_are_watched_like_the_others(home: Path, tmp_path: Path) -> None:
    """memory/QUARANTINE.md, which ocmem creates at an exposed session's first note, is the
    home's like SHORT_TERM.md: the agent emptying it behind ocmem's back is put back."""
    project = tmp_path / "project"
    project.mkdir()
    path = home / "memory/QUARANTINE.md"
    steps: list[dict[str, Any]] = [
        {"session": "ses_a", "tool": "webfetch", "args": {"url": "http://127.0.0.1:1/doc"}},
        {"session": "ses_a", "note": "la prod est 10.0.0.5"},
        {"session": "ses_a", "model_call": True},
        {"write": str(path), "text": ""},
        {"session": "ses_a", "model_call": True},  # the sweep before the next model call
    ]
    answers = drive(home, project, steps, tmp_path)
    assert answers[0].startswith("Note mise à part en quarantaine"), answers
    assert "la prod est 10.0.0.5" in path.read_text()
    assert (home / "memory/SHORT_TERM.md").read_text() == ""
    assert any(q.read_text() == "" for q in (home / ".ocmem/quarantine").rglob("QUARANTINE.md"))
