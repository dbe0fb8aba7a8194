"""The learning loop is an invariant (issue 22): the local AGENTS.md always carries ocmem's
section, ocmem's own skill is never removed by a pull, and `doctor` and the plugin say loudly
when the loop cannot run — whatever the human keeps in SilverBullet."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import CliResult, Clock
from ocmem.bridge.tools import prompt_context
from ocmem.home.settings import load_settings
from ocmem.home.shipped import has_section, shipped_section
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync

RULES = "# Règles\n\nRéponds en français.\n"


def pull(home: Path) -> Outcome:
    return sync.pull(Workspace(load_settings(home), clock=Clock()))


def warnings_at_session_start(home: Path) -> list[str]:
    return prompt_context(Workspace(load_settings(home), clock=Clock()))["warnings"]


def writable(path: Path) -> None:
    path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_rules_without_ocmems_section_are_pulled_with_it(synced: Path, sb: Any) -> None:
    sb.write("Agents/AGENTS.md", RULES)
    report = pull(synced)
    local = (synced / "AGENTS.md").read_text()
    assert local.startswith(RULES) and has_section(local)
    assert local.count("<!-- ocmem:begin -->") == 1
    assert "n'a pas la section « Mémoire et apprentissage »" in report.render()
    assert sb.read("Agents/AGENTS.md") == RULES  # SilverBullet is the human's: never written
    assert not warnings_at_session_start(synced)
    again = pull(synced)  # the composed copy is what the state knows: no refetch, no warning
    assert "n'a pas la section" not in again.render()
    assert (synced / "AGENTS.md").read_text() == local


def test_rules_with_the_section_are_pulled_as_they_are(synced: Path, sb: Any) -> None:
    page = RULES + "\n" + shipped_section() + "\n\nEt mes règles après.\n"
    sb.write("Agents/AGENTS.md", page)
    report = pull(synced)
    assert (synced / "AGENTS.md").read_text() == page
    assert "n'a pas la section" not in report.render()


def test_a_pull_never_removes_ocmems_own_skill(synced: Path, sb: Any) -> None:
    custom = "---\nname: retrospective\ndescription: Ma rétrospective. À utiliser après une tâche.\n---\n\n# R\n\nÉtapes.\n"
    sb.write("Agents/Skills/retrospective/SKILL.md", custom)
    sb.write("Agents/AGENTS.md", RULES)
    pull(synced)
    assert (synced / "skills/retrospective/SKILL.md").read_text() == custom
    sb.delete("Agents/Skills/retrospective/SKILL.md")
    report = pull(synced)
    assert (synced / "skills/retrospective/SKILL.md").read_text() == custom
    assert "le skill retrospective d'ocmem est gardé" in report.render()
    assert not warnings_at_session_start(synced)


def test_a_pull_puts_back_ocmems_skill_when_the_home_lost_it(synced: Path, sb: Any) -> None:
    sb.write("Agents/AGENTS.md", RULES)
    skill = synced / "skills/retrospective/SKILL.md"
    writable(skill.parent)
    skill.unlink()
    assert any("skill retrospective manque" in w for w in warnings_at_session_start(synced))
    report = pull(synced)
    assert skill.is_file() and "name: retrospective" in skill.read_text()
    assert "remis tel que livré" in report.render()


def test_doctor_and_the_session_start_say_when_the_section_is_gone(
    synced: Path, run_cli: Callable[..., CliResult]
) -> None:
    agents = synced / "AGENTS.md"
    writable(agents)
    agents.write_text(RULES)  # a hand edit, in sync mode
    warnings = warnings_at_session_start(synced)
    assert any("boucle d'apprentissage coupée" in w and "AGENTS.md" in w for w in warnings)
    result = run_cli("doctor")
    assert result.code == 1
    assert "AGENTS.md n'a pas la section « Mémoire et apprentissage »" in result.out
    assert "Agents/AGENTS.md" in result.out  # the fix names SilverBullet's page


def test_doctor_says_when_the_skill_is_gone_in_sync_mode(
    synced: Path, run_cli: Callable[..., CliResult]
) -> None:
    skill = synced / "skills/retrospective/SKILL.md"
    writable(skill.parent)
    skill.unlink()
    result = run_cli("doctor")
    assert result.code == 1 and "le skill retrospective n'est pas installé" in result.out
    assert os.path.exists(synced / "AGENTS.md")


def test_the_archive_the_review_page_writes_is_pulled(synced: Path, sb: Any) -> None:
    # Found by hand in the real web client: the archive's own header named skills/<nom>/…,
    # which the pull's active-content check took for HTML, so the archive never came down.
    from ocmem.formats.archive import ARCHIVE_HEADER
    from ocmem.text import inert

    assert inert.active_constructs(ARCHIVE_HEADER) == []
    page = ARCHIVE_HEADER + "\n## 2026-12-02 · fait remplacé · P-0001\n\n- Ancien : port 8080\n"
    sb.write("Agents/Memory/ARCHIVE.md", page)
    sb.write("Agents/AGENTS.md", RULES)
    report = pull(synced)
    assert "non installé" not in report.render(), report.render()
    assert (synced / "memory/ARCHIVE.md").read_text() == page
