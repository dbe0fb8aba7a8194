"""The default mode's tamper monitor (plugin/ocmem.ts) against ocmem's own appends: each append
is announced as where it lands and the digest of what it adds, so several appends between two
looks are accepted, and bytes added by anyone else are put back (tests/support/plugin_driver.mjs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import journal_fields
from ocmem import journal
from test_plugin_taint import bash, drive


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
        {"append": str(path), "text": "\n## 2026-11-30 10:00 · Ajout de l'agent · #x\n"},
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
