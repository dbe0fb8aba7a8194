"""A browser-like writer saves the journal page every 20–50 ms while ocmem adds entries and pushes,
ten rounds, then ocmem pushes once more: no human line may be deleted by an ocmem write, and
every entry must end on the page (issue 10's race test). Then the review page's gestures
(*Promouvoir* / *Refuser*, through ``ocmem.lua`` and the HTTP its glue uses), steady and bursty,
while ocmem pulls and pushes its journal and proposals: no decision lost, every entry and
proposal once, and ocmem never writes the decisions page (issue 24: one writer per page).

In CI against the test server's real-server fault model; by hand against a real SilverBullet with
``OCMEM_TEST_SILVERBULLET_URL`` (and ``…_TOKEN``), ``OCMEM_RACE_RUNS`` runs (default 5;
``OCMEM_GESTURE_RUNS``, default 10, for each pace of gestures). Each run
prints its counts; every PUT is logged with its author and body, so each lost line is attributed
to the write that removed it.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import statistics
import threading
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import lupa.lua54 as lupa
import pytest

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.errors import Busy
from ocmem.formats import decisionspage, pending
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.setup.install import Installer
from ocmem.silverbullet import library, merge
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


# --- the review page's gestures race the pushes (issue 24) ------------------------------------

GESTURE_RUNS = int(os.environ.get("OCMEM_GESTURE_RUNS", "10"))
# Steady: one gesture every 20–80 ms. Bursty: 3 gestures 20 ms apart, then a 250–700 ms pause.
GESTURE_PACES = {"steady": ((20, 80), 1, (0, 0)), "bursty": ((20, 20), 3, (250, 700))}


class GestureWriter:
    """A thread playing the review page: *Promouvoir* / *Refuser* on the proposals waiting, one at
    a time, through ``ocmem.lua`` itself and the HTTP the page's glue uses (list the space, read a
    page, write it whole). Every decision the Lua reports done is kept in ``decided``."""

    def __init__(self, target: Target, pages: dict[str, str], pace: str, seed: int) -> None:
        self.lua = lupa.LuaRuntime(unpack_returned_tuples=True)
        self.lua.execute(library.logic_source())
        self.oc = self.lua.globals().ocmem
        for key, value in pages.items():
            self.oc.pages[key] = value
        headers = {
            "X-Sync-Mode": "true",
            "User-Agent": HUMAN_AGENT,
            **({"Authorization": f"Bearer {target.token}"} if target.token else {}),
        }
        self.http = httpx.Client(base_url=target.url, headers=headers, timeout=10.0)
        self.pace = GESTURE_PACES[pace]
        self.rng = random.Random(seed)
        self.decided: dict[str, str] = {}  # proposal id → the status the Lua wrote
        self.refusals = 0  # gestures the Lua refused (a page read mid-write…): nothing written
        self.writes: list[str] = []
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="gestures", daemon=True)

    def _list(self) -> Any:
        names = [f["name"][:-3] for f in self.http.get("/.fs").json() if f["name"].endswith(".md")]
        return self.lua.table_from(names)

    def _read(self, name: str) -> str | None:
        response = self.http.get("/.fs/" + quote(name + ".md", safe="/"))
        return None if response.status_code == 404 else response.text

    def _write(self, name: str, text: str) -> None:
        self.writes.append(name)
        self.http.put(
            "/.fs/" + quote(name + ".md", safe="/"), content=text.encode()
        ).raise_for_status()

    def _gesture(self, n: int) -> None:
        store = self.lua.table_from({"list": self._list, "read": self._read, "write": self._write})
        waiting = list(self.oc.review(store).entries.values())
        if not waiting:
            return
        p = waiting[0]
        today = "2026-12-02"
        if n % 3 == 0:
            result = self.oc.promote(store, p.gid, today)
            status = f"promu ({today})"
        else:
            result = self.oc.refuse(store, p.gid, f"refus {n}", today)
            status = f"refusé ({today}) : refus {n}"
        if result.ok:
            self.decided[str(p.gid).rpartition("/")[2]] = status
        else:
            self.refusals += 1

    def _run(self) -> None:
        (low, high), burst, (pause_low, pause_high) = self.pace
        n = 0
        try:
            while not self._stop.is_set():
                for _ in range(burst):
                    self._gesture(n)
                    n += 1
                    self._stop.wait(self.rng.uniform(low, high) / 1000)
                if pause_high:
                    self._stop.wait(self.rng.uniform(pause_low, pause_high) / 1000)
        except BaseException as exc:  # re-raised by stop()
            self._error = exc

    def __enter__(self) -> GestureWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.http.close()
        if self._error is not None and exc[0] is None:
            raise self._error


def _proposal(n: int) -> Any:
    return pending.Proposal(
        id=f"P-{n:04d}",
        kind="fait",
        content=f"Le service {n} écoute sur le port {8000 + n}.",
        title=f"Port {n}",
        status=pending.STATE_PENDING,
        created=date(2026, 12, 1),
        sources=("journal 2026-12-01 10:00",),
        origin="récurrence (2 épisodes)",
        replaces="rien",
        contradiction="aucune",
    )


def gesture_run(target: Target, root: Path, pace: str, run: int) -> dict[str, int]:
    clock = Clock()
    home = root / f"{pace}{run}"
    Installer(Workspace(load_settings(home), clock=clock), home_id="race").run()
    inbox = f"{target.folder}/{pace}{run}/"
    journal_page, pending_page = f"{inbox}race/journal.md", f"{inbox}race/pending.md"
    decisions_page = decisionspage.page_beside(pending_page)
    memory_page = f"{target.folder}/memory-{pace}{run}/MEMORY"  # where promotions write
    configure_sync(
        home,
        target.url,
        token=target.token,
        inbox=inbox,
        pull=[
            {"remote": f"{target.folder}/Skills/", "local": "skills/"},
            {"remote": f"{memory_page}.md", "local": "memory/MEMORY.md"},
            {
                "remote": f"{target.folder}/memory-{pace}{run}/ARCHIVE.md",
                "local": "memory/ARCHIVE.md",
            },
        ],
        push=[
            {"local": "memory/journal.md", "remote": f"{inbox}{{home}}/journal.md"},
            {"local": "memory/pending.md", "remote": f"{inbox}{{home}}/pending.md"},
        ],
        quiet_seconds=0.3,
        patience_seconds=0.6,
    )
    local_pending = home / "memory/pending.md"
    local_pending.write_text(pending.render([_proposal(1), _proposal(2)]))
    memory = Memory(Workspace(load_settings(home), clock=clock))
    memory.add_journal(journal_fields(titre="Première"))
    sync.push(Workspace(load_settings(home), clock=Clock()))
    recorder = PutRecorder("ocmem")
    entries: list[str] = []
    busy = 0
    pages = {"inbox": inbox}
    with GestureWriter(target, pages, pace, seed=run) as gestures:
        for n in range(ROUNDS):
            clock.advance(minutes=1)
            added = memory.add_journal(journal_fields(titre=f"Course {n:02d}")).lines[0]
            entries.append(added.removeprefix("Entrée ajoutée : journal "))
            local_pending.write_text(local_pending.read_text() + "\n" + _proposal(n + 3).render())
            for step in (sync.pull, sync.push):  # what `ocmem sync` does
                try:
                    step(Workspace(load_settings(home), clock=Clock()), transport=recorder)
                except Busy:
                    busy += 1
    sync.pull(Workspace(load_settings(home), clock=Clock()), transport=recorder)
    sync.push(Workspace(load_settings(home), clock=Clock()), transport=recorder)
    journal, remote_pending = target.read(journal_page), target.read(pending_page)
    remote_decisions = decisionspage.parse(target.read(decisions_page))
    local = {p.id: p.status for p in pending.parse(local_pending.read_text())}
    remote = {p.id: p.status for p in pending.parse(remote_pending)}
    proposal_ids = [i for i, _ in merge.blocks_of(remote_pending, merge.PENDING_BLOCK)]
    on_page = [i for i, _ in merge.blocks_of(journal, merge.JOURNAL_BLOCK)]

    def kept(status: str, seen: str | None) -> bool:
        # A pull between the page's MEMORY.md write and its decision finds the fact there and
        # marks it promoted by copy (ocmem.silverbullet.decisions), dated that pull's day.
        return seen == status or (status.startswith("promu (") and str(seen).startswith("promu ("))

    lost_decisions = [
        pid
        for pid, status in gestures.decided.items()
        if remote_decisions.get(pid) != status
        or not (kept(status, local.get(pid)) and kept(status, remote.get(pid)))
    ]
    ocmem_paths = {p.path for p in recorder.puts}
    counts = {
        "gestures_done": len(gestures.decided),
        "gestures_refused_by_the_page": gestures.refusals,
        "gesture_writes": len(gestures.writes),
        "ocmem_writes": len([p for p in recorder.puts if p.status == 200]),
        "runs_postponed": busy,
        "decisions_lost": len(lost_decisions),
        "entries_missing": len([e for e in entries if e not in on_page]),
        "entries_doubled": len(on_page) - len(set(on_page)),
        "proposals_missing": len({f"P-{n:04d}" for n in range(1, ROUNDS + 3)} - set(proposal_ids)),
        "proposals_doubled": len(proposal_ids) - len(set(proposal_ids)),
    }
    print(f"{pace} run {run}: {counts}")
    assert decisions_page not in ocmem_paths, "ocmem wrote the human's decisions page"
    assert set(gestures.writes) <= {decisions_page.removesuffix(".md"), memory_page}
    assert lost_decisions == [], [
        (p, gestures.decided[p], local.get(p), remote.get(p), remote_decisions.get(p))
        for p in lost_decisions
    ]
    assert counts["entries_missing"] == counts["entries_doubled"] == 0, (entries, on_page)
    assert counts["proposals_missing"] == counts["proposals_doubled"] == 0, proposal_ids
    assert "~agent" not in remote_pending
    return counts


@pytest.mark.parametrize("pace", list(GESTURE_PACES))
def test_the_review_pages_gestures_lose_nothing_to_ocmem(
    target: Target, tmp_path: Path, pace: str
) -> None:
    runs = GESTURE_RUNS if target.fake is None else 1
    totals: dict[str, int] = {}
    for run in range(runs):
        for key, value in gesture_run(target, tmp_path, pace, run).items():
            totals[key] = totals.get(key, 0) + value
    print(f"{pace}: totals over {runs} run(s): {totals}")
