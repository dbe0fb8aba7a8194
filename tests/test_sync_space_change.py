"""A home whose SilverBullet URL changes (issue 22): a typo corrected, the loopback spelled
another way, another instance. One wrong push never binds the home; each space keeps its state."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import HOME_ID, SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.errors import OcmemError
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.silverbullet.state import space_key
from support.notsb import not_silverbullet
from support.sbserver import FakeSilverBullet


@pytest.fixture
def other_server() -> Iterator[str]:
    with not_silverbullet() as url:
        yield url


def push(home: Path) -> Outcome:
    return sync.push(Workspace(load_settings(home), clock=Clock()))


def journal(home: Path, clock: Clock, title: str) -> None:
    Memory(Workspace(load_settings(home), clock=clock)).add_journal(journal_fields(titre=title))


def test_a_push_to_a_wrong_url_does_not_bind_the_home(
    home: Path, sb: Any, clock: Clock, other_server: str
) -> None:
    journal(home, clock, "Déploiement")
    configure_sync(home, other_server)
    with contextlib.suppress(OcmemError):  # refused or failed: correcting the URL is enough
        push(home)
    configure_sync(home, sb.url)
    report = push(home)
    assert not report.needs_human
    assert "Déploiement" in sb.read(f"Agents/Inbox/{HOME_ID}/journal.md")
    state = json.loads((home / ".ocmem/sync-state.json").read_text())
    assert space_key(state["space"]) == space_key(sb.url)


def test_localhost_and_127_0_0_1_are_one_space(home: Path, sb: Any, clock: Clock) -> None:
    journal(home, clock, "Déploiement")
    configure_sync(home, sb.url)
    push(home)
    configure_sync(home, sb.url.replace("127.0.0.1", "localhost") + "/")
    report = push(home)
    assert report.render() == "Push : rien de nouveau"
    assert sb.read(f"Agents/Inbox/{HOME_ID}/journal.md").count("Déploiement") == 1


def test_each_space_keeps_its_state_and_gets_it_back(home: Path, sb: Any, clock: Clock) -> None:
    journal(home, clock, "Déploiement")
    configure_sync(home, sb.url)
    push(home)
    with FakeSilverBullet(token=SB_TOKEN) as second:
        configure_sync(home, second.url.replace("127.0.0.1", "localhost"))
        report = push(home)
        assert "Instance changée" in report.render()
        assert "Déploiement" in second.read(f"Agents/Inbox/{HOME_ID}/journal.md")
    configure_sync(home, sb.url)
    clock.advance(minutes=2)
    journal(home, clock, "Sauvegarde")
    report = push(home)
    assert "Instance changée" in report.render()
    page = sb.read(f"Agents/Inbox/{HOME_ID}/journal.md")
    # The first space's state came back: its blocks are ours, nothing doubled or copied aside.
    assert page.count("Déploiement") == 1 and "Sauvegarde" in page and "~agent-" not in page
    assert not report.needs_human


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://127.0.0.1:3000", "http://localhost:3000/"),
        ("http://[::1]:3000", "HTTP://LOCALHOST:3000"),
        ("https://notes.example.com:443/", "https://notes.example.com"),
        ("http://notes.example.com:80/sb/", "http://notes.example.com/sb"),
    ],
)
def test_space_names_that_are_one_space(one: str, other: str) -> None:
    assert space_key(one) == space_key(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("http://127.0.0.1:3000", "http://127.0.0.1:3001"),
        ("http://notes.example.com", "https://notes.example.com"),
        ("http://notes.example.com/a", "http://notes.example.com/b"),
    ],
)
def test_space_names_that_are_two_spaces(one: str, other: str) -> None:
    assert space_key(one) != space_key(other)
