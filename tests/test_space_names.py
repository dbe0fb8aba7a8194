"""Names that pass for ocmem's own pages (issue 33): ``space_write`` writes only under this home's
inbox, never one of the pages ocmem pushes there, the human's decisions page, or a conflict copy
of one of them — in any case, Unicode or percent-encoding spelling (a forged
``journal.conflicted:…`` beside ocmem's page made every later push exit 3)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import HOME_ID
from ocmem.bridge.spacetools import SpaceTools
from ocmem.errors import Refused
from ocmem.home.pagenames import mimicked_page, page_path
from ocmem.home.settings import load_settings
from ocmem.home.space import load_sync_config
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.silverbullet.client import SilverBullet

INBOX = f"Agents/Inbox/{HOME_ID}/"
RESERVED = [f"{INBOX}journal", f"{INBOX}pending", f"{INBOX}decisions"]

MIMICS = [
    f"{INBOX}journal",
    f"{INBOX}journal.conflicted:1754000012345",
    f"{INBOX}journal.conflicted:1754000012345.md",
    f"{INBOX}pending.conflicted:1",
    f"{INBOX}decisions.conflicted:99",
    f"{INBOX}Journal.Conflicted:1754000012345",
    f"{INBOX}JOURNAL",
    f"{INBOX}journal%2Econflicted%3A1754000012345",  # percent-encoded
    f"{INBOX}journal%252Econflicted%253A1",  # encoded twice
    f"{INBOX}ｊｏｕｒｎａｌ.conflicted:1",  # fullwidth
    f"{INBOX}j\u043eurnal.conflicted:1",  # Cyrillic о
    f"{INBOX}jour\u200bnal",  # a zero-width space
    f"{INBOX}pe\u0301nding",  # a combining accent
    f"{INBOX}journal.md.md",
    f"{INBOX}journal .conflicted:1",
    f"{INBOX}journal.conflicted：1",  # fullwidth colon
]
FINE = [
    f"{INBOX}notes/idee",
    f"{INBOX}journalisme",
    f"{INBOX}journal/2026-12",  # a page under a folder: SilverBullet shows it as a child
    f"{INBOX}pendule",
    f"{INBOX}mes décisions",
    f"{INBOX}журнал",
]


@pytest.mark.parametrize("raw", MIMICS)
def test_a_name_that_passes_for_an_ocmem_page_is_named(raw: str) -> None:
    page = page_path(raw)
    assert page is not None
    assert mimicked_page(page, RESERVED) is not None, page


@pytest.mark.parametrize("raw", FINE)
def test_other_names_in_the_inbox_are_free(raw: str) -> None:
    page = page_path(raw)
    assert page is not None
    assert mimicked_page(page, RESERVED) is None, page


def test_the_space_tools_refuse_a_forged_conflict_copy_and_pushes_stay_clean(
    synced: Path, sb: Any, workspace: Workspace, memory: Any
) -> None:
    from conftest import journal_fields

    memory.add_journal(journal_fields())
    assert not sync.push(workspace).needs_human
    config = load_sync_config(workspace.settings)
    with SilverBullet(config) as client:
        tools = SpaceTools(workspace, config, client)
        for raw in MIMICS:
            with pytest.raises(Refused, match="page d'ocmem"):
                tools.write(raw, "faux")
        assert tools.write(f"{INBOX}notes/idee", "vrai").page == f"{INBOX}notes/idee"
    assert [r.path for r in sb.requests if r.method == "PUT" and "notes" not in r.path] == [
        f"/.fs/{INBOX}journal.md"
    ]
    memory.add_journal(journal_fields(titre="Autre"))
    again: Outcome = sync.push(Workspace(load_settings(synced), clock=workspace.clock))
    assert not again.needs_human, again.render()
