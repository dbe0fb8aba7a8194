"""The spec's « Livrable » (issue 22): `ocmem init` ends with what it created, how to undo each
part, and what is left for the user to do — each item checked again by `ocmem doctor`, and gone
from the list the day it is done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import CliResult, configure_sync


def todo_of(output: str) -> str:
    return output.split("Ce qu'il te reste à faire", 1)[1] if "reste à faire" in output else ""


def test_init_says_what_it_made_how_to_undo_it_and_what_is_left(
    tmp_path: Path, run_cli: Any, crontab: Path
) -> None:
    home = tmp_path / "h"
    result: CliResult = run_cli("--home", str(home), "init")
    assert result.code == 0, result.err
    out = result.out
    assert "créé memory/MEMORY.md" in out and "Pour annuler :" in out
    assert f"rm {home / 'memory/MEMORY.md'}" in out
    left = todo_of(out)
    assert "relier SilverBullet" in left
    assert "--tache curation --tache review" in left  # without SilverBullet: the routines only
    assert "harden --agent" in left and "useradd" in left
    assert "`ocmem essai` lance les 13 tests de la spécification" in out.splitlines()[-1]
    # The same list in doctor, re-checked.
    assert "relier SilverBullet" in todo_of(run_cli("--home", str(home), "doctor").out)


def test_each_item_leaves_the_list_once_done(
    tmp_path: Path, run_cli: Any, crontab: Path, sb: Any
) -> None:
    home = tmp_path / "h"
    run_cli("--home", str(home), "init")
    configure_sync(home, sb.url, token=None)
    left = todo_of(run_cli("--home", str(home), "doctor").out)
    assert "relier SilverBullet" not in left
    assert "le jeton SilverBullet" in left and "install -m 600" in left
    assert "Agents/AGENTS.md" in left and "Library/ocmem" in left
    configure_sync(home, sb.url)  # the token file, mode 600
    left = todo_of(run_cli("--home", str(home), "doctor").out)
    assert "le jeton SilverBullet" not in left
    assert "tâches régulières" in left
    assert run_cli("--home", str(home), "cron", "install").code == 0
    left = todo_of(run_cli("--home", str(home), "doctor").out)
    assert "tâches régulières" not in left
    assert "mode durci" in left


def test_the_silverbullet_pages_leave_the_list_once_written(
    tmp_path: Path, run_cli: Any, sb: Any
) -> None:
    from ocmem.home.shipped import shipped_section
    from ocmem.silverbullet.library import library_page

    home = tmp_path / "h"
    run_cli("--home", str(home), "init")
    configure_sync(home, sb.url)
    left = todo_of(run_cli("--home", str(home), "doctor").out)
    assert "Agents/AGENTS.md avec la section" in left and "Library/ocmem" in left
    sb.write("Agents/AGENTS.md", "# Règles\n\n" + shipped_section() + "\n")
    left = todo_of(run_cli("--home", str(home), "doctor").out)
    assert "Agents/AGENTS.md avec la section" not in left and "Library/ocmem" in left
    sb.write("Library/ocmem.md", library_page())
    assert "dans SilverBullet" not in todo_of(run_cli("--home", str(home), "doctor").out)
