"""Stateful property test of the shared space: three ocmem homes, a human and a browser-like
client writing the same pages, a server that fails like the real one (a PUT truncates before it
writes; reads see what is on disk at that moment; mtimes come in coarse buckets), crashes, lost
answers and server errors, interleaved at random.

Invariants:
- no human line is ever deleted by an ocmem write (every PUT is logged with its author and body;
  a line that is gone is attributed to the write that removed it);
- after the homes converge (faults off, every home pulls and pushes, as ``ocmem sync`` does), every
  entry and proposal of every home is on its own page exactly once — except the blocks a human
  who saw them deleted;
- the human's decisions come back to the homes at pull; DELETE is never sent; local files lose
  nothing;
- the review page's gestures (*Promouvoir* / *Refuser*, run by ``ocmem.lua`` itself over the HTTP
  its glue uses: list the space, read a page, write it whole) write the decisions page, which
  ocmem never writes: no decision is lost (each is on the decisions page, in the home's local
  status after a pull, on ocmem's pending page after the next push, a promoted fact in
  MEMORY.md), and every entry and proposal is still on its page once.

``OCMEM_STATEFUL_EXAMPLES`` sets the number of examples (CI: 500; ``--slow`` style runs: more);
``OCMEM_MUTATION_CHECKS=1`` also runs the mutation checks below (each rule removed must fail it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lupa.lua54 as lupa
import pytest
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.errors import Busy, Refused
from ocmem.formats import decisionspage, journal, pending
from ocmem.home import space
from ocmem.home.settings import load_settings
from ocmem.home.space import PushRule
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.setup.install import Installer
from ocmem.silverbullet import decisions, library, merge, reads
from ocmem.silverbullet.client import SilverBulletError
from support.faults import AfterEachResponse, Crash
from support.human import HUMAN_AGENT, Put, attribute_loss, puts_from_log
from support.sbserver import DiskStep, FakeSilverBullet, RealServerFaults

HOMES = ("h1", "h2", "h3")
DEFAULT_PUSH_RULES = [PushRule(local, remote) for local, remote in space.DEFAULT_PUSH]
# A short run in every suite (CI's included, a new seed each time); the long one is the nightly
# profile's: `HYPOTHESIS_PROFILE=nightly .venv/bin/python -m pytest tests/test_sync_stateful.py`.
EXAMPLES = int(
    os.environ.get(
        "OCMEM_STATEFUL_EXAMPLES",
        "500" if os.environ.get("HYPOTHESIS_PROFILE") == "nightly" else "40",
    )
)
# A removed rule shows within this many examples (the torn read needs a save and a push to
# meet, which 40 examples do not always reach).
MUTATION_EXAMPLES = int(os.environ.get("OCMEM_MUTATION_EXAMPLES", "150"))
# Fast but faithful: the truncated state lasts longer than a request, so reads do see it.
FAULTS = RealServerFaults(truncate_ms=0.5, mtime_granularity_ms=4, seed=0)
TODAY = "2026-12-02"  # the date the review page's gestures write
MEMORY_PAGE = "Agents/Memory/MEMORY.md"


class GestureFailed(Exception):
    """A request of the review page's glue failed (a fault meant for ocmem): the gesture stops."""


def page_of(home_id: str, kind: str) -> str:
    """The page the home pushes its journal or proposals to, as its configuration says."""
    rules = {r.local: r for r in DEFAULT_PUSH_RULES}
    return rules[f"memory/{kind}.md"].page(home_id)


def pattern_of(page: str) -> Any:
    return merge.PENDING_BLOCK if page.endswith("pending.md") else merge.JOURNAL_BLOCK


@pytest.fixture(scope="module")
def server() -> Iterator[FakeSilverBullet]:
    with FakeSilverBullet(token=SB_TOKEN, record_bodies=True) as sb:
        yield sb


def run_machine(server: FakeSilverBullet, root: Path, examples: int) -> None:
    human = httpx.Client(
        base_url=server.url,
        headers={"Authorization": f"Bearer {SB_TOKEN}", "User-Agent": HUMAN_AGENT},
        timeout=10,
    )
    # The review page's logic, as SilverBullet runs it (its default pages: Agents/Inbox/…).
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)
    lua.execute(library.logic_source())
    review_page = lua.globals().ocmem

    def glue_list() -> Any:
        try:
            response = human.get("/.fs", headers={"X-Sync-Mode": "true"})
        except httpx.TransportError as exc:
            raise GestureFailed(str(exc)) from exc
        if response.status_code != 200:
            raise GestureFailed(f"listing: HTTP {response.status_code}")
        names = [f["name"][:-3] for f in response.json() if f["name"].endswith(".md")]
        return lua.table_from(names)

    def glue_read(name: str) -> str | None:
        try:
            response = human.get("/.fs/" + name + ".md", headers={"X-Sync-Mode": "true"})
        except httpx.TransportError as exc:
            raise GestureFailed(str(exc)) from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise GestureFailed(f"{name}: HTTP {response.status_code}")
        return response.text

    def glue_write(name: str, text: str) -> None:
        server.clock.advance(1)
        try:
            response = human.put("/.fs/" + name + ".md", content=text.encode())
        except httpx.TransportError as exc:
            raise GestureFailed(str(exc)) from exc  # landed or not: the page will tell
        if response.status_code != 200:
            raise GestureFailed(f"{name}: HTTP {response.status_code}")

    store = lua.table_from({"list": glue_list, "read": glue_read, "write": glue_write})

    class SharedSpace(RuleBasedStateMachine):
        @initialize()
        def fresh(self) -> None:
            server.faults = None
            server.clear_faults()
            server.clock.unfreeze()
            for child in server.space.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            server.clear_requests()
            server.faults = FAULTS
            self.clock = Clock()
            self.homes: dict[str, Path] = {}
            for home_id in HOMES:
                path = Path(tempfile.mkdtemp(dir=root))
                Installer(Workspace(load_settings(path), clock=self.clock), home_id=home_id).run()
                configure_sync(path, server.url, quiet_seconds=0.002, patience_seconds=2)
                self.homes[home_id] = path
            self.entries: dict[str, list[str]] = {h: [] for h in HOMES}
            self.proposals: dict[str, list[str]] = {h: [] for h in HOMES}
            self.deleted: set[tuple[str, str]] = set()  # (page, block id) a human removed
            self.decided: dict[tuple[str, str], str] = {}  # (home, pid) → status
            self.on_decisions_page: set[tuple[str, str]] = set()  # decided by the review page
            # Promoted into MEMORY.md by a gesture stopped before its decision's line (a fault):
            # the pull finds it there (promoted by copy), the review page marks it if asked again.
            self.unmarked: set[tuple[str, str]] = set()
            self.human_lines: dict[str, str] = {}  # line → page
            self.snapshots: dict[str, str] = {}  # an older version of each page, for the browser
            self.counter = 0
            self.transport: httpx.BaseTransport | None = None

        def _workspace(self, home_id: str) -> Workspace:
            return Workspace(load_settings(self.homes[home_id]), clock=self.clock, sync_mode=True)

        def _unique(self, what: str) -> str:
            self.counter += 1
            return f"{what} humaine n°{self.counter}"

        # --- the agents ------------------------------------------------------------------

        @rule(home_id=st.sampled_from(HOMES))
        def agent_writes_an_entry(self, home_id: str) -> None:
            self.clock.advance(seconds=20)  # homes write in the same minutes
            memory = Memory(self._workspace(home_id))
            ref = memory.add_journal(journal_fields(titre=f"Tâche {home_id}")).lines[0]
            self.entries[home_id].append(ref.removeprefix("Entrée ajoutée : journal "))

        @precondition(lambda self: any(self.entries.values()))
        @rule(home_id=st.sampled_from(HOMES), topic=st.sampled_from(["ports", "sauvegardes"]))
        def agent_proposes(self, home_id: str, topic: str) -> None:
            if not self.entries[home_id]:
                return
            proposal = {
                "type": "fait",
                "titre": f"Vérifier les {topic}",
                "contenu": f"Toujours vérifier les {topic} avant ({home_id}).",
                "sources": [f"journal {self.entries[home_id][-1]}"],
                "contradiction": "aucune",
                "remplace": "rien",
                "retiens_ca": True,
            }
            try:
                done = Proposals(self._workspace(home_id)).propose(proposal)
            except Exception as exc:  # a decided lesson is refused: that is the rule
                # (and so is a fact already in MEMORY.md, or close to one, once promoted there)
                assert "promue" in str(exc) or "refusé" in str(exc) or "MEMORY.md" in str(exc), exc
                return
            pid = done.lines[0].split()[1]
            if pid not in self.proposals[home_id]:
                self.proposals[home_id].append(pid)

        @rule(home_id=st.sampled_from(HOMES))
        def push(self, home_id: str) -> None:
            transport, self.transport = self.transport, None
            # Refused: a write the server refused (403); all of them failed cleanly, and the
            # next run must converge.
            with contextlib.suppress(Crash, Busy, Refused, SilverBulletError):
                sync.push(self._workspace(home_id), transport=transport)
            server.clear_faults()

        @rule(home_id=st.sampled_from(HOMES))
        def pull(self, home_id: str) -> None:
            with contextlib.suppress(Busy, SilverBulletError):
                sync.pull(self._workspace(home_id))

        # --- the human and the browser, over HTTP --------------------------------------

        def _get(self, page: str) -> str | None:
            try:
                response = human.get(f"/.fs/{page}")
            except httpx.TransportError:
                return None
            return response.text if response.status_code == 200 else None

        def _put(self, page: str, text: str) -> bool:
            server.clock.advance(1)
            try:
                return human.put(f"/.fs/{page}", content=text.encode()).status_code == 200
            except httpx.TransportError:
                # The answer was lost (a fault meant for ocmem): the save may have landed.
                return self._careful_read(page) == text

        def _careful_read(self, page: str) -> str | None:
            """What a person sees: never a torn page."""
            return server.read(page) if server.exists(page) else None

        @rule(home_id=st.sampled_from(HOMES), kind=st.sampled_from(["journal", "pending"]))
        def browser_appends_a_line(self, home_id: str, kind: str) -> None:
            """GET → append → PUT, like a tab saving: from whatever the GET returned."""
            page = page_of(home_id, kind)
            text = self._get(page)
            if text is None:
                return
            self.snapshots.setdefault(page, text)
            line = self._unique("ligne")
            if self._put(page, text.rstrip("\n") + f"\n\n{line}\n"):
                self.human_lines[line] = page

        @rule(home_id=st.sampled_from(HOMES), data=st.data())
        def human_deletes_a_block(self, home_id: str, data: st.DataObject) -> None:
            page = page_of(home_id, data.draw(st.sampled_from(["journal", "pending"])))
            text = self._careful_read(page)
            segments = merge.split(text or "", pattern_of(page))
            targets = [i for i, s in enumerate(segments) if s.id is not None and "~" not in s.id]
            if text is None or not targets:
                return
            removed = segments.pop(data.draw(st.sampled_from(targets)))
            for line in [x for x, p in self.human_lines.items() if p == page and x in removed.text]:
                del self.human_lines[line]  # their own annotation went with the block
            if self._put(page, "".join(s.text for s in segments)):
                self.deleted.add((page, removed.id or ""))

        @rule(home_id=st.sampled_from(HOMES), data=st.data(), promote=st.booleans())
        def human_decides(self, home_id: str, data: st.DataObject, promote: bool) -> None:
            page = page_of(home_id, "pending")
            text = self._careful_read(page)
            if text is None:
                return
            waiting = [
                p
                for p in pending.parse(text)
                if p.state == pending.STATE_PENDING and (home_id, p.id) not in self.decided
            ]
            if not waiting:
                return
            chosen = data.draw(st.sampled_from(waiting))
            status = "promu (2026-12-01)" if promote else "refusé (2026-12-01) : pas utile"
            start = text.index(f"## {chosen.id} · ")
            at = text.index("- Statut : en attente", start)
            edited = text[:at] + f"- Statut : {status}" + text[at + len("- Statut : en attente") :]
            if self._put(page, edited):
                self.decided[(home_id, chosen.id)] = status

        def _waiting_on_the_review_page(self, home_id: str) -> list[str] | None:
            try:
                shown = list(review_page.review(store).entries.values())
            except (lupa.LuaError, GestureFailed):
                return None
            ids = [str(p.gid).removeprefix(f"{home_id}/") for p in shown]
            return sorted(
                pid for pid in ids if "/" not in pid and (home_id, pid) not in self.decided
            )

        @rule(
            home_id=st.sampled_from(HOMES),
            topic=st.sampled_from(["ports", "sauvegardes"]),
            data=st.data(),
            promote=st.booleans(),
        )
        def review_page_decides(
            self, home_id: str, topic: str, data: st.DataObject, promote: bool
        ) -> None:
            """*Promouvoir* / *Refuser* on the review page: ``ocmem.lua`` reads the space and
            writes the decision to the home's decisions page (and a promoted fact to MEMORY.md),
            never to ocmem's pending page. When the page shows nothing of the home's to decide,
            its session proposes first and its cron pushes, so that every example decides."""
            waiting = self._waiting_on_the_review_page(home_id)
            if waiting == []:
                if not self.entries[home_id]:
                    self.agent_writes_an_entry(home_id)
                self.agent_proposes(home_id, topic)
                self.push(home_id)
                waiting = self._waiting_on_the_review_page(home_id)
            if not waiting:
                event("review page: nothing waiting")
                return
            pid = data.draw(st.sampled_from(waiting))
            gid = decisions.global_id(home_id, pid)
            promote = promote or (home_id, pid) in self.unmarked  # the human finishes the gesture
            if promote:
                status = f"{pending.STATE_PROMOTED} ({TODAY})"
            else:
                status = f"{pending.STATE_REFUSED} ({TODAY}) : pas utile"
            try:
                if promote:
                    done = bool(review_page.promote(store, gid, TODAY).ok)
                else:
                    done = bool(review_page.refuse(store, gid, "pas utile", TODAY).ok)
            except (lupa.LuaError, GestureFailed):
                done = False  # stopped by a failed request: the decisions page tells what landed
            page = decisionspage.page_beside(page_of(home_id, "pending"))
            noted = decisionspage.parse(self._careful_read(page) or "").get(pid)
            if noted is not None:
                assert noted == status, (pid, noted, status)
                self.decided[(home_id, pid)] = status
                self.on_decisions_page.add((home_id, pid))
                event(f"review page: {'promoted' if promote else 'refused'}")
            else:
                event("review page: gesture stopped or refused, nothing noted")
                assert not done, f"the review page said {gid} decided, its page does not"
                if promote and gid in (self._careful_read(MEMORY_PAGE) or ""):
                    self.unmarked.add((home_id, pid))

        @rule(home_id=st.sampled_from(HOMES))
        def browser_resolves_a_conflict(self, home_id: str) -> None:
            """A stale tab saves its older copy: the server's version goes to a conflict copy."""
            page = page_of(home_id, "journal")
            old, current = self.snapshots.get(page), self._careful_read(page)
            if old is None or current is None or old == current:
                return
            line = self._unique("modification hors ligne")
            copy = page.removesuffix(".md") + f".conflicted:{server.clock.now()}.md"
            if self._put(copy, current) and self._put(page, old.rstrip("\n") + f"\n\n{line}\n"):
                self.human_lines[line] = page
            self.snapshots.pop(page)

        # --- races and faults ------------------------------------------------------------

        def _slow_save(self, page: str, line: str) -> threading.Thread | None:
            """Start a save of ``page`` that leaves it truncated (empty, previous mtime) for a
            while, as a slow disk would; return once the page is in that state."""
            text = self._careful_read(page)
            if text is None:
                return None
            truncated = threading.Event()

            def slow(step: DiskStep) -> None:
                if step.kind == "truncated" and step.path == page:
                    truncated.set()

            server.faults = RealServerFaults(truncate_ms=30, on_step=slow, seed=0)
            saving = threading.Thread(target=self._put, args=(page, text + f"\n{line}\n"))
            saving.start()
            # A save that a fault queued for ocmem refused (or cut) never truncates the page:
            # stop waiting as soon as it has ended.
            for _ in range(1000):  # at most 5 s
                if truncated.wait(0.005) or not saving.is_alive():
                    break
            self.human_lines[line] = page
            return saving

        @rule(home_id=st.sampled_from(HOMES), kind=st.sampled_from(["journal", "pending"]))
        def a_browser_saves_while_ocmem_pushes(self, home_id: str, kind: str) -> None:
            self.agent_writes_an_entry(home_id)  # so that the push has something to write
            saving = self._slow_save(page_of(home_id, kind), self._unique("sauvegarde lente"))
            if saving is None:
                return
            # Refused: a refused write queued by `refused_write` (cleanly failed, as in `push`).
            with contextlib.suppress(Busy, Refused, SilverBulletError):
                sync.push(self._workspace(home_id))
            saving.join()
            server.faults = FAULTS

        @rule(home_id=st.sampled_from(HOMES))
        def a_browser_saves_while_ocmem_pulls(self, home_id: str) -> None:
            """Pull reads the pending page for the human's decisions during a save."""
            saving = self._slow_save(page_of(home_id, "pending"), self._unique("sauvegarde lente"))
            if saving is None:
                return
            with contextlib.suppress(Busy, SilverBulletError):
                sync.pull(self._workspace(home_id))
            saving.join()
            server.faults = FAULTS

        @rule()
        def crash_right_after_a_write(self) -> None:
            def after(request: httpx.Request) -> None:
                if request.method == "PUT":
                    raise Crash

            self.transport = AfterEachResponse(after)

        @rule()
        def crash_just_before_a_write(self) -> None:
            def after(request: httpx.Request) -> None:
                if request.method == "GET" and "x-get-meta" in request.headers:
                    raise Crash

            self.transport = AfterEachResponse(after)

        @rule(after_apply=st.booleans())
        def the_answer_to_a_write_is_lost(self, after_apply: bool) -> None:
            server.reset_next(method="PUT", after_apply=after_apply)

        @rule(method=st.sampled_from(["GET", "PUT"]))
        def server_error(self, method: str) -> None:
            server.fail_next(503, method=method)

        @rule()
        def refused_write(self) -> None:
            server.fail_next(403, method="PUT", body="Read-only")

        # --- invariants ------------------------------------------------------------------

        @invariant()
        def never_a_delete(self) -> None:
            assert server.requests_matching("DELETE") == []

        @invariant()
        def ocmem_never_writes_a_decisions_page(self) -> None:
            assert not [
                r.path
                for r in server.requests_matching("PUT")
                if decisionspage.is_decisions_page(r.path)
                and r.headers.get("user-agent") != HUMAN_AGENT
            ]

        @invariant()
        def local_files_lost_nothing(self) -> None:
            for home_id, path in self.homes.items():
                text = (path / "memory/journal.md").read_text()
                local = {b.key.stamp for b in journal.blocks(text)}
                assert set(self.entries[home_id]) <= local

        def teardown(self) -> None:
            """Converge as cron does (``ocmem sync``: pull, then push), then check that nothing
            was lost, doubled, or deleted by ocmem. The pull's listing is what shows the push a
            page written since its last write (an older version saved over it)."""
            server.faults = None
            server.clear_faults()
            for _ in range(2):
                for home_id in HOMES:
                    sync.pull(self._workspace(home_id))
                    sync.push(self._workspace(home_id))
            self._no_human_line_deleted_by_ocmem()
            for home_id in HOMES:
                self._every_block_once(home_id)
                sync.pull(self._workspace(home_id))
                self._decisions_came_back(home_id)
            # The statuses pulled go to ocmem's own pages (the homes the human decided for).
            decided = {h for h, _ in [*self.decided, *self.unmarked]}
            for home_id in sorted(decided):
                sync.push(self._workspace(home_id))
            if decided:
                self._no_human_line_deleted_by_ocmem()
            for home_id in sorted(decided):
                self._every_block_once(home_id)
                self._no_decision_lost(home_id)

        def _no_human_line_deleted_by_ocmem(self) -> None:
            pages = {p for p in self.human_lines.values()}
            for page in pages:
                final = self._careful_read(page) or ""
                lost = [x for x, p in self.human_lines.items() if p == page and x not in final]
                puts = puts_from_log(server.requests, page)
                for loss in attribute_loss(lost, puts):
                    remover = loss.removed_by
                    if remover is not None and remover.who != HUMAN_AGENT:
                        assert _overlapped(remover, puts), f"ocmem deleted a human line: {loss}"

        def _every_block_once(self, home_id: str) -> None:
            """Each block of the home is on its page once, recognised by its content (an id is
            not enough: another home may use the same one)."""
            mark = {"journal": f"Tâche {home_id}", "pending": f"({home_id})"}
            for kind, ids in (
                ("journal", self.entries[home_id]),
                ("pending", self.proposals[home_id]),
            ):
                page = page_of(home_id, kind)
                text = self._careful_read(page) or ""
                blocks = merge.blocks_of(text, pattern_of(page))
                for block_id in ids:
                    if (page, block_id) in self.deleted:
                        continue
                    ours = [
                        i
                        for i, body in blocks
                        if i.split("~agent")[0] == block_id and mark[kind] in body
                    ]
                    assert ours, f"{block_id} of {home_id} is not on {page}"
                    assert len([i for i in ours if "~" not in i]) <= 1, f"{block_id} twice"

        def _decisions_came_back(self, home_id: str) -> None:
            """After the homes converged and pulled, the home's statuses are the page's: the
            human's decisions came back, and nothing was decided from a torn read."""
            name = page_of(home_id, "pending")
            page = self._careful_read(name) or ""
            noted = decisionspage.parse(self._careful_read(decisionspage.page_beside(name)) or "")
            memory = self._careful_read(MEMORY_PAGE) or ""
            local = {p.id: p.status for p in self._workspace(home_id).proposals()}
            for shown in pending.parse(page):
                if "~" in shown.id:
                    continue  # the agent's copy beside a block both sides changed
                expected = shown.status
                if shown.state == pending.STATE_PENDING and shown.id in noted:
                    expected = noted[shown.id]  # decided on the decisions page, not pushed yet
                elif (
                    shown.state == pending.STATE_PENDING
                    and decisions.global_id(home_id, shown.id) in memory
                    and local.get(shown.id, "").startswith(pending.STATE_PROMOTED)
                ):
                    continue  # promoted in MEMORY.md, the decision's line not written: by copy
                assert local.get(shown.id) == expected, (home_id, shown.id, local.get(shown.id))
            for pid, status in local.items():
                if decisions.DELETED_REASON in status:
                    assert (name, pid) in self.deleted, f"{pid} taken for deleted, never was"

        def _no_decision_lost(self, home_id: str) -> None:
            """Every decision the human made is the home's local status, on ocmem's pending page
            (the block, or the agent's copy beside a block the human also edited), on the
            decisions page when the review page made it, and a promoted fact is in MEMORY.md."""
            name = page_of(home_id, "pending")
            shown: dict[str, list[str]] = {}
            for p in pending.parse(self._careful_read(name) or ""):
                shown.setdefault(p.id.split("~agent")[0], []).append(p.status)
            noted = decisionspage.parse(self._careful_read(decisionspage.page_beside(name)) or "")
            memory = self._careful_read(MEMORY_PAGE) or ""
            local = {p.id: p.status for p in self._workspace(home_id).proposals()}
            for home, pid in self.unmarked:
                if home == home_id and (name, pid) not in self.deleted:
                    assert local.get(pid, "").startswith(pending.STATE_PROMOTED), (pid, local)
                    assert decisions.global_id(home, pid) in memory, (home, pid)
            for (home, pid), status in self.decided.items():
                if home != home_id:
                    continue
                by_review_page = (home, pid) in self.on_decisions_page
                if not by_review_page and (name, pid) in self.deleted:
                    continue  # a status line the human deleted with its block, maybe unpulled
                if (home, pid) in self.unmarked:
                    # promoted by copy first (another date), or marked by the review page
                    assert local.get(pid, "").startswith(pending.STATE_PROMOTED), (pid, local)
                    continue
                assert local.get(pid) == status, (home, pid, local.get(pid), status)
                if pid in shown:
                    assert status in shown[pid], (home, pid, shown[pid], status)
                if by_review_page:
                    assert noted.get(pid) == status, (home, pid, noted.get(pid), status)
                    if status.startswith(pending.STATE_PROMOTED):
                        assert decisions.global_id(home, pid) in memory, (home, pid)

    run_state_machine_as_test(
        SharedSpace,
        settings=settings(
            max_examples=examples,
            stateful_step_count=20,
            deadline=None,
        ),
    )
    human.close()


def _overlapped(ours: Put, puts: list[Put]) -> bool:
    """A browser started saving while our PUT was under way (so it read our truncated page):
    the two interleave on disk, and the loss is the browser's. (The other way round — ocmem
    writing over a save in progress — is exactly what ocmem must never do.)"""
    return any(p.who == HUMAN_AGENT and ours.started < p.started < ours.finished for p in puts)


def test_the_shared_space_loses_nothing(
    server: FakeSilverBullet,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # An empty page is confirmed over a span longer than the test's slow saves (30 ms).
    monkeypatch.setattr(reads, "EMPTY_CONFIRM_SECONDS", 0.1)
    # Crashes here are exceptions, not power cuts (tests/test_atomic.py covers those): syncing
    # every state save to disk would only make the run ten times slower.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    run_machine(server, tmp_path_factory.mktemp("shared"), EXAMPLES)


def _without_confirmation(
    clock: Any,
    client: Any,
    name: str,
    suspicious: Any,
    quiet: float,
    deadline: float,
    on_timeout: Any,
) -> tuple[Any, str | None, float]:
    """The stable-read rule removed: the first read is believed, torn or not."""
    read = client.read(name)
    return read, reads.text_of(name, read), clock.monotonic()


def _taking_any_block_with_our_id(
    remote: str | None, local: Any, base: Any, pattern: Any, preamble: str
) -> merge.MergeResult:
    """The identity rule removed: a block under one of our ids is taken for ours."""
    theirs = {i: merge.digest(t) for i, t in merge.blocks_of(remote or "", pattern)}
    return _real_merge(remote, local, {**theirs, **base}, pattern, preamble)


_real_merge = merge.merge
MUTATIONS: dict[str, list[tuple[object, str, object]]] = {
    "stable-read": [(reads, "trusted_read", _without_confirmation)],
    "identity": [
        (merge, "merge", _taking_any_block_with_our_id),
        (
            space,
            "DEFAULT_PUSH",
            tuple((loc, r.replace("{home}/", "")) for loc, r in space.DEFAULT_PUSH),
        ),
    ],
}


@pytest.mark.skipif(
    not os.environ.get("OCMEM_MUTATION_CHECKS"),
    reason="slow (minutes: Hypothesis shrinks what it finds); set OCMEM_MUTATION_CHECKS=1",
)
@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_the_machine_finds_a_broken_rule(
    server: FakeSilverBullet,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    mutation: str,
) -> None:
    """Mutation check: with a rule removed, the stateful test must fail."""
    monkeypatch.setattr(reads, "EMPTY_CONFIRM_SECONDS", 0.1)
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    for module, name, value in MUTATIONS[mutation]:
        monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(
        sys.modules[__name__],
        "DEFAULT_PUSH_RULES",
        [PushRule(loc, r) for loc, r in space.DEFAULT_PUSH],
    )
    # Hypothesis raises one AssertionError, or an ExceptionGroup of them when it finds several.
    with pytest.raises(Exception) as failed:
        run_machine(server, tmp_path_factory.mktemp(mutation), MUTATION_EXAMPLES)
    found = [failed.value, *getattr(failed.value, "exceptions", ())]
    assert any(isinstance(e, AssertionError) for e in found), failed.value
