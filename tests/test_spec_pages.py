"""The pages are where the user looks (issue 26): a home made with the default id writes the
spec's `Agents/Inbox/journal.md` and `pending.md`; a page already there is adopted and said; a
second home is refused until it takes an id (a folder) of its own; a home on its own folder never
passes the spec's page over in silence."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, configure_sync, journal_fields
from ocmem.errors import Refused
from ocmem.home import identity
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.status import status
from ocmem.setup.doctor import diagnose
from ocmem.setup.install import Installer

SPEC_JOURNAL = "Agents/Inbox/journal.md"
SPEC_PENDING = "Agents/Inbox/pending.md"


def new_home(path: Path, url: str, clock: Clock, home_id: str | None = None) -> Path:
    report = Installer(Workspace(load_settings(path), clock=clock), home_id=home_id).run()
    assert report.status.name == "OK", report.render()
    configure_sync(path, url)
    return path


def journal(path: Path, clock: Clock, title: str) -> None:
    Memory(Workspace(load_settings(path), clock=clock)).add_journal(journal_fields(titre=title))


def push(path: Path) -> Outcome:
    return sync.push(Workspace(load_settings(path), clock=Clock()))


def test_one_home_with_default_settings_writes_the_specs_pages(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    home = new_home(tmp_path / "h", sb.url, clock)
    assert identity.require(load_settings(home).paths).shared_pages
    journal(home, clock, "Déploiement")
    report = push(home)
    assert not report.needs_human
    assert "Déploiement" in sb.read(SPEC_JOURNAL)
    home_id = identity.require(load_settings(home).paths).id
    assert not sb.exists(f"Agents/Inbox/{home_id}/journal.md")
    said = status(Workspace(load_settings(home), clock=clock, sync_mode=True)).render()
    assert f"pages de ce dossier : {SPEC_JOURNAL}, {SPEC_PENDING}" in said


def test_a_spec_page_already_there_is_adopted_and_nothing_in_it_is_lost(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    before = "# Journal\n\nMes notes d'avant ocmem.\n\n- une liste à moi\n"
    sb.write(SPEC_JOURNAL, before)
    home = new_home(tmp_path / "h", sb.url, clock)
    journal(home, clock, "Déploiement")
    report = push(home).render()
    assert f"{SPEC_JOURNAL} existait déjà sans ocmem" in report
    page = sb.read(SPEC_JOURNAL)
    assert page.startswith(before.rstrip("\n")) and "Déploiement" in page
    assert "existait déjà" not in push(home).render()  # said once


def test_two_homes_each_find_their_own_pages(tmp_path: Path, sb: Any, clock: Clock) -> None:
    first = new_home(tmp_path / "a", sb.url, clock)
    second = new_home(tmp_path / "b", sb.url, clock)
    journal(first, clock, "Tâche A")
    journal(second, clock, "Tâche B")
    push(first)
    with pytest.raises(Refused, match="tenue par un autre dossier ocmem") as refused:
        push(second)
    suggested = refused.value.render().split("--id-dossier ")[1].split("`")[0]
    Installer(Workspace(load_settings(second), clock=clock), home_id=suggested).run()
    assert not push(second).needs_human
    assert "Tâche A" in sb.read(SPEC_JOURNAL) and "Tâche B" not in sb.read(SPEC_JOURNAL)
    assert "Tâche B" in sb.read(f"Agents/Inbox/{suggested}/journal.md")


def test_a_home_on_its_own_folder_says_the_spec_page_is_there(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    sb.write(SPEC_JOURNAL, "# Journal\n\nÀ l'humain.\n")
    home = new_home(tmp_path / "h", sb.url, clock, home_id="vps-prod")
    journal(home, clock, "Déploiement")
    report = push(home).render()
    assert f"ℹ {SPEC_JOURNAL} existe (la page de la spécification)" in report
    assert sb.read(SPEC_JOURNAL) == "# Journal\n\nÀ l'humain.\n"
    env = {**os.environ, "OPENCODE_CONFIG_DIR": str(home)}
    said = diagnose(Workspace(load_settings(home), clock=clock), env=env).render()
    assert f"{SPEC_JOURNAL} existe (la page de la spécification) mais ce dossier écrit" in said
