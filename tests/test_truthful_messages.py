"""Messages that claim an action are held to what happened (issue 33): a push says it put blocks
back only when it did, and names them; a page another home holds is said to be held by that
home, under its own id, not under this one's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import HOME_ID, Clock, configure_sync, journal_fields
from ocmem.errors import Refused
from ocmem.home import identity
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.setup.install import Installer
from ocmem.silverbullet import merge

JOURNAL = f"Agents/Inbox/{HOME_ID}/journal.md"
PUT_BACK = "ocmem a remis dans la page"


def push(home: Path) -> Outcome:
    return sync.push(Workspace(load_settings(home), clock=Clock()))


def entry(memory: Memory, clock: Clock, title: str) -> str:
    clock.advance(minutes=1)
    line = memory.add_journal(journal_fields(titre=title)).lines[0]
    return line.removeprefix("Entrée ajoutée : journal ")


def without_block(text: str, block_id: str) -> str:
    """The page as a human leaves it after deleting block ``block_id``."""
    return "".join(s.text for s in merge.split(text, merge.JOURNAL_BLOCK) if s.id != block_id)


def test_a_conflict_report_claims_nothing_put_back_when_the_human_deleted_the_block(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    first = entry(memory, clock, "Un")
    push(synced)
    sb.clock.advance(1000)
    # The browser saw ocmem's write, the human deleted « Un » there; the server's version (with
    # « Un ») went to a conflict copy.
    copy = sb.fork_conflict(JOURNAL, without_block(sb.read(JOURNAL), first))
    entry(memory, clock, "Deux")
    report = push(synced)
    said = report.render()
    assert report.needs_human and copy in said
    assert f"## {first}" not in sb.read(JOURNAL)  # the human's deletion stands
    assert PUT_BACK not in said


def test_a_conflict_report_names_the_blocks_it_put_back(
    synced: Path, sb: Any, memory: Memory, clock: Clock
) -> None:
    sb.write(JOURNAL, "# Journal\n")
    first = entry(memory, clock, "Un")
    push(synced)
    sb.clock.advance(1000)
    # A browser saving from a read older than ocmem's write: « Un » was never seen, not deleted.
    sb.fork_conflict(JOURNAL, "# Journal\n\nmodif faite hors ligne\n")
    entry(memory, clock, "Deux")
    said = push(synced).render()
    assert f"## {first}" in sb.read(JOURNAL)
    assert f"{PUT_BACK} ce qu'une version plus ancienne avait effacé : {first}" in said


def new_home(path: Path, url: str, clock: Clock, home_id: str | None = None) -> Path:
    Installer(Workspace(load_settings(path), clock=clock), home_id=home_id).run()
    configure_sync(path, url)
    Memory(Workspace(load_settings(path), clock=clock)).add_journal(
        journal_fields(titre=f"Tâche de {path.name}")
    )
    return path


def test_a_second_home_on_the_spec_pages_is_told_which_home_holds_them(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    first = new_home(tmp_path / "a", sb.url, clock)
    second = new_home(tmp_path / "b", sb.url, clock)
    first_id, second_id = (identity.require(load_settings(h).paths).id for h in (first, second))
    assert first_id != second_id  # two default ids, one shared page
    push(first)
    with pytest.raises(Refused) as refused:
        push(second)
    said = refused.value.render()
    assert f"tenue par un autre dossier ocmem, « {first_id} »" in said
    assert f"celui-ci est « {second_id} »" in said and "même identifiant" not in said


def test_two_homes_under_one_id_are_told_they_share_it(
    tmp_path: Path, sb: Any, clock: Clock
) -> None:
    first = new_home(tmp_path / "a", sb.url, clock, home_id="vm")
    second = new_home(tmp_path / "b", sb.url, clock, home_id="vm")
    push(first)
    with pytest.raises(Refused) as refused:
        push(second)
    assert "même identifiant « vm »" in refused.value.render()
