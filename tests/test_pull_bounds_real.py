"""The bounds of a pull and the switch from local to SilverBullet, against a real SilverBullet when
one is given (skipped otherwise; see tests/test_sync_real.py): a 10 MB page, 5 000 skills, a
fact validated locally before the first pull. The hostile servers (a byte a second, a listing
that never ends) exist only as the test server's modes (tests/test_pull_bounds.py)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from conftest import Clock, configure_sync
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from test_pull_bounds import big_memory
from test_supersession import episodes, fact
from test_sync_real import TOKEN, URL, scratch

pytestmark = [
    pytest.mark.real_silverbullet,
    pytest.mark.skipif(
        not URL, reason="OCMEM_TEST_SILVERBULLET_URL is not set: no real SilverBullet to sync with"
    ),
]
__all__ = ["scratch"]  # the fixture, shared


def configure(home: Path, folder: str) -> None:
    configure_sync(
        home,
        URL,
        token=TOKEN,
        inbox=f"{folder}/Inbox/",
        pull=[
            {"remote": f"{folder}/Skills/", "local": "skills/"},
            {"remote": f"{folder}/Memory/MEMORY.md", "local": "memory/MEMORY.md"},
        ],
        push=[{"local": "memory/pending.md", "remote": f"{folder}/Inbox/pending.md"}],
    )


def test_a_10_mb_page_of_a_real_server_is_not_installed(
    home: Path, scratch: tuple[str, httpx.Client]
) -> None:
    folder, raw = scratch
    raw.put(
        f"/.fs/{folder}/Memory/MEMORY.md", content=big_memory(10 << 20).encode()
    ).raise_for_status()
    configure(home, folder)
    before = (home / "memory/MEMORY.md").read_bytes()
    started = time.monotonic()
    report = sync.pull(Workspace(load_settings(home), clock=Clock()))
    print(f"10 MB page: {time.monotonic() - started:.2f} s")
    assert report.needs_human and "non tiré : 10,0 Mio" in report.render()
    assert (home / "memory/MEMORY.md").read_bytes() == before


def test_5000_skills_of_a_real_server_stop_at_the_listing(
    home: Path, scratch: tuple[str, httpx.Client]
) -> None:
    folder, raw = scratch
    for number in range(5000):
        raw.put(
            f"/.fs/{folder}/Skills/s{number}/SKILL.md",
            content=f"---\nname: s{number}\ndescription: S. Pour s.\n---\n# s\n".encode(),
        ).raise_for_status()
    configure(home, folder)
    started = time.monotonic()
    report = sync.pull(Workspace(load_settings(home), clock=Clock()))
    print(f"5000 skills: {time.monotonic() - started:.2f} s")
    assert report.needs_human and ": 5000 skills, au-delà de 50" in report.render()
    assert not (home / "skills/s1").exists()


def test_the_first_pull_from_a_real_server_keeps_a_fact_validated_here(
    home: Path,
    scratch: tuple[str, httpx.Client],
    memory: Memory,
    clock: Clock,
    proposals: Proposals,
) -> None:
    folder, raw = scratch
    refs = episodes(memory, clock, "le port SSH du VPS est 2222")
    proposals.propose(fact(refs, "Le port SSH du VPS est 2222."))
    proposals.accept("P-0001")
    before = (home / "memory/MEMORY.md").read_bytes()
    raw.put(f"/.fs/{folder}/Memory/MEMORY.md", content=b"# M\n\n- Debian 12.\n").raise_for_status()
    configure(home, folder)
    report = sync.pull(Workspace(load_settings(home), clock=clock))
    assert report.needs_human and "gardé tel quel" in report.render()
    assert (home / "memory/MEMORY.md").read_bytes() == before
    sync.push(Workspace(load_settings(home), clock=clock))
    assert "reprise : validée ici" in raw.get(f"/.fs/{folder}/Inbox/pending.md").text
