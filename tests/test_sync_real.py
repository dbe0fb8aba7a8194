"""ocmem pull and push against a real SilverBullet, when one is given (skipped otherwise).

OCMEM_TEST_SILVERBULLET_URL (and OCMEM_TEST_SILVERBULLET_TOKEN if it has auth). Everything
happens under a fresh ``ocmem-e2e-<hex>/`` folder, which the test removes afterwards with its
own raw client (ocmem itself never sends DELETE).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from conftest import Clock, configure_sync, journal_fields
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory

URL = os.environ.get("OCMEM_TEST_SILVERBULLET_URL", "").rstrip("/")
TOKEN = os.environ.get("OCMEM_TEST_SILVERBULLET_TOKEN") or None

pytestmark = [
    pytest.mark.real_silverbullet,
    pytest.mark.skipif(
        not URL, reason="OCMEM_TEST_SILVERBULLET_URL is not set: no real SilverBullet to sync with"
    ),
]


@pytest.fixture
def scratch() -> Iterator[tuple[str, httpx.Client]]:
    folder = f"ocmem-e2e-{secrets.token_hex(4)}"
    headers = {"X-Sync-Mode": "true", **({"Authorization": f"Bearer {TOKEN}"} if TOKEN else {})}
    with httpx.Client(base_url=URL, headers=headers) as raw:
        yield folder, raw
        for item in raw.get("/.fs").json():
            if item["name"].startswith(folder + "/"):
                raw.delete("/.fs/" + quote(item["name"], safe="/"))


def test_pull_and_push_against_a_real_server(
    home: Path, clock: Clock, scratch: tuple[str, httpx.Client]
) -> None:
    folder, raw = scratch
    raw.put(
        f"/.fs/{folder}/Skills/deploy/SKILL.md",
        content=b"---\nname: deploy\ndescription: Deploie.\n---\n# x\n",
    ).raise_for_status()
    raw.put(
        f"/.fs/{folder}/Inbox/journal.md", content=b"# Journal\n\nNote humaine.\n"
    ).raise_for_status()
    configure_sync(
        home,
        URL,
        token=TOKEN,
        inbox=f"{folder}/Inbox/",
        pull=[{"remote": f"{folder}/Skills/", "local": "skills/"}],
        push=[{"local": "memory/journal.md", "remote": f"{folder}/Inbox/journal.md"}],
    )
    settings = load_settings(home)
    sync.pull(Workspace(settings, clock=Clock()))
    assert (home / "skills/deploy/SKILL.md").read_text().startswith("---\nname: deploy")
    Memory(Workspace(settings, clock=clock)).add_journal(
        journal_fields(lecon="affiche ${test} tel quel")
    )
    sync.push(Workspace(settings, clock=Clock()))
    page = raw.get(f"/.fs/{folder}/Inbox/journal.md").text
    assert page.startswith("# Journal\n\nNote humaine.\n\nEnvoi ocmem n° 1 (")
    assert "\n\n## 2026-11-29 10:00 · Déployer le service X" in page
    assert "affiche \\$\\{test\\} tel quel" in page  # inert: SilverBullet shows it, never runs it
    assert (
        "Pull : 0 fichier(s) mis à jour" in sync.pull(Workspace(settings, clock=Clock())).render()
    )
