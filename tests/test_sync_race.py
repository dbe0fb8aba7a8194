"""A browser-like writer saves the journal page every 20–50 ms while ocmem adds entries and pushes,
ten rounds, then ocmem pushes once more: no human line may be deleted by an ocmem write, and
every entry must end on the page (issue 10's race test).

In CI against the test server's real-server fault model; by hand against a real SilverBullet with
``OCMEM_TEST_SILVERBULLET_URL`` (and ``…_TOKEN``), ``OCMEM_RACE_RUNS`` runs (default 5). Each run
prints its counts; every PUT is logged with its author and body, so each lost line is attributed
to the write that removed it.
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.errors import Busy
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.setup.install import Installer
from ocmem.silverbullet import merge
from support.human import (
    HUMAN_AGENT,
    BrowserLikeWriter,
    PutRecorder,
    attribute_loss,
    lines_lost,
    puts_from_log,
)
from support.sbserver import FakeSilverBullet, RealServerFaults

REAL_URL = os.environ.get("OCMEM_TEST_SILVERBULLET_URL", "").rstrip("/")
REAL_TOKEN = os.environ.get("OCMEM_TEST_SILVERBULLET_TOKEN") or None
RUNS = int(os.environ.get("OCMEM_RACE_RUNS", "5"))
# The writer's pause between two saves, in ms (a range): "20,50" is a tab saving non-stop.
INTERVAL = tuple(int(x) for x in os.environ.get("OCMEM_RACE_INTERVAL_MS", "20,50").split(","))
ROUNDS = 10


class Target:
    """Where the race runs: the fake (its log has every PUT) or a real server (ocmem's PUTs are
    recorded by its transport, the writer's by itself)."""

    def __init__(self, url: str, token: str | None, folder: str, fake: FakeSilverBullet | None):
        self.url, self.token, self.folder, self.fake = url, token, folder, fake

    def read(self, page: str) -> str:
        headers = {
            "X-Sync-Mode": "true",
            **({"Authorization": f"Bearer {self.token}"} if self.token else {}),
        }
        return httpx.get(f"{self.url}/.fs/{quote(page, safe='/')}", headers=headers).text


@pytest.fixture(params=["fake", "real"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    folder = f"ocmem-race-{secrets.token_hex(4)}"
    if request.param == "fake":
        with FakeSilverBullet(token=SB_TOKEN, faults=RealServerFaults(), record_bodies=True) as sb:
            yield Target(sb.url, SB_TOKEN, folder, sb)
        return
    if not REAL_URL:
        pytest.skip("OCMEM_TEST_SILVERBULLET_URL is not set: no real SilverBullet to race against")
    yield Target(REAL_URL, REAL_TOKEN, folder, None)
    headers = {
        "X-Sync-Mode": "true",
        **({"Authorization": f"Bearer {REAL_TOKEN}"} if REAL_TOKEN else {}),
    }
    with httpx.Client(base_url=REAL_URL, headers=headers) as raw:
        for item in raw.get("/.fs").json():
            if item["name"].startswith(folder + "/"):
                raw.delete("/.fs/" + quote(item["name"], safe="/"))


def one_run(target: Target, root: Path, run: int) -> dict[str, int]:
    clock = Clock()
    home = root / f"run{run}"
    Installer(Workspace(load_settings(home), clock=clock), home_id="race").run()
    inbox = f"{target.folder}/run{run}/"
    page = f"{inbox}race/journal.md"
    configure_sync(
        home,
        target.url,
        token=target.token,
        inbox=inbox,
        pull=[{"remote": f"{target.folder}/Skills/", "local": "skills/"}],
        push=[{"local": "memory/journal.md", "remote": f"{inbox}{{home}}/journal.md"}],
        quiet_seconds=0.3,
        patience_seconds=0.6,
    )
    memory = Memory(Workspace(load_settings(home), clock=clock))
    memory.add_journal(journal_fields(titre="Première"))
    sync.push(Workspace(load_settings(home), clock=Clock()))  # the page exists, with one entry
    recorder = PutRecorder("ocmem")
    entries: list[str] = []
    postponed = 0
    with BrowserLikeWriter(
        target.url, page, token=target.token, interval_ms=(INTERVAL[0], INTERVAL[1]), seed=run
    ) as writer:
        for n in range(ROUNDS):
            clock.advance(minutes=1)
            added = memory.add_journal(journal_fields(titre=f"Course {n:02d}")).lines[0]
            entries.append(added.removeprefix("Entrée ajoutée : journal "))
            try:
                sync.push(Workspace(load_settings(home), clock=Clock()), transport=recorder)
            except Busy:
                postponed += 1  # the page never stayed quiet: written after the writer stops
    final_push = sync.push(Workspace(load_settings(home), clock=Clock()), transport=recorder)
    final = target.read(page)
    if target.fake is not None:
        puts = puts_from_log(target.fake.requests, page)
    else:
        puts = [*writer.puts, *recorder.puts]
    lost = lines_lost(final, writer.edits)
    by_ocmem = [
        loss
        for loss in attribute_loss(lost, puts)
        if loss.removed_by is not None and loss.removed_by.who != HUMAN_AGENT
    ]
    on_page = {i for i, _ in merge.blocks_of(final, merge.JOURNAL_BLOCK)}
    windows = sorted(
        w
        for line in (home / ".ocmem/log.jsonl").read_text().splitlines()
        if '"action": "push"' in line
        for w in json.loads(line).get("windows_ms", [])
    )
    missing = [e for e in entries if e not in on_page]
    counts = {
        "human_edits": len([e for e in writer.edits if e.put.status == 200]),
        "torn_reads_by_writer": sum(e.torn_read for e in writer.edits),
        "ocmem_writes": len([p for p in recorder.puts if p.status == 200]),
        "pushes_postponed": postponed,
        "human_lines_lost": len(lost),
        "lost_by_an_ocmem_write": len(by_ocmem),
        "entries_missing_after_one_more_push": len(missing),
    }
    window = {  # probe sent → PUT sent: the most another write can slip in unseen
        "window_ms_median": round(statistics.median(windows), 2) if windows else None,
        "window_ms_max": round(max(windows), 2) if windows else None,
    }
    print(f"run {run}: {counts} {window} ; final push: {final_push.render().splitlines()[0]}")
    assert by_ocmem == [], [str(loss) for loss in by_ocmem]
    assert missing == [], missing
    return counts


def test_a_browser_saving_every_few_ms_loses_nothing_to_ocmem(
    target: Target, tmp_path: Path
) -> None:
    runs = RUNS if target.fake is None else 1
    totals: dict[str, int] = {}
    for run in range(runs):
        for key, value in one_run(target, tmp_path, run).items():
            totals[key] = totals.get(key, 0) + value
    print(f"totals over {runs} run(s): {totals}")
