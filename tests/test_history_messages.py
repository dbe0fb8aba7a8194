"""``ocmem history`` says what is true: a path outside the home, a file the pull never writes, a
pulled file no pull changed yet, a version that does not exist — each with its fix, never
« git log a échoué » nor a claim about pulls that did not happen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync

Run = Callable[..., CliResult]


@pytest.fixture
def pulled(synced: Path, sb: Any, clock: Any) -> Path:
    """A home whose history holds one pull (MEMORY.md and AGENTS.md)."""
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n")
    sync.pull(Workspace(load_settings(synced), clock=clock))
    return synced


def test_a_path_outside_the_home_is_named_so(run_cli: Run, pulled: Path) -> None:
    result = run_cli("history", "/etc/passwd")
    assert result.code == 2, result
    assert "/etc/passwd est hors du dossier ocmem" in result.err
    assert "git" not in result.err.lower()
    assert "Correction : " in result.err and "memory/MEMORY.md" in result.err


def test_a_file_the_pull_never_writes_is_named_so(run_cli: Run, pulled: Path) -> None:
    for name in ("memory/NOPE.md", "memory/journal.md"):
        result = run_cli("history", name)
        assert result.code == 2, result
        assert f"{name} n'est pas un fichier tiré de SilverBullet" in result.err
        assert "aucun pull" not in result.err
        assert ".ocmem/backups" in result.err  # where its previous local versions are


def test_a_pulled_file_no_pull_changed_says_so(run_cli: Run, pulled: Path) -> None:
    result = run_cli("history", "skills/rien/SKILL.md")
    assert result.code == 0
    assert "aucune version de skills/rien/SKILL.md : aucun pull ne l'a encore changé" in result.out


def test_an_absolute_path_in_the_home_is_read_as_its_pulled_file(
    run_cli: Run, pulled: Path
) -> None:
    result = run_cli("history", str(pulled / "memory/MEMORY.md"))
    assert result.code == 0, result.err
    assert "memory/MEMORY.md" in result.out and "pull " in result.out


def test_a_version_that_does_not_exist_is_named_so(run_cli: Run, pulled: Path) -> None:
    result = run_cli("history", "memory/MEMORY.md", "--voir", "abc1234")
    assert result.code == 2
    assert "pas de version abc1234" in result.err
    unknown = run_cli("history", "/etc/passwd", "--voir", "HEAD")
    assert "hors du dossier ocmem" in unknown.err


def test_without_any_pull_the_history_says_no_pull_changed_anything(
    run_cli: Run, home: Path
) -> None:
    result = run_cli("history")
    assert result.code == 0
    assert "aucune version enregistrée : aucun pull n'a encore rien changé" in result.out
