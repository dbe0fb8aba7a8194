"""Stateful property test of push: agent writes, human edits and deletions, browser conflict forks,
races, crashes, torn reads and server faults, interleaved at random.

After every push that completes: no human line is lost, no agent entry is lost or doubled, a
block the human deleted never comes back, the local files lost nothing, and DELETE was never sent.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import settings
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
from ocmem import journal, pending
from ocmem.config import load_settings
from ocmem.install import Installer
from ocmem.memory import Memory
from ocmem.proposals import Proposals
from ocmem.sync import merge as blocks
from ocmem.sync import run as sync
from ocmem.sync.client import SilverBulletError
from ocmem.sync.push import PageKeepsChanging
from ocmem.workspace import Workspace
from support.faults import AfterEachResponse, Crash
from support.sbserver import FakeSilverBullet

JOURNAL = "Agents/Inbox/journal.md"
PENDING = "Agents/Inbox/pending.md"
EXAMPLES = int(os.environ.get("OCMEM_STATEFUL_EXAMPLES", "200" if os.environ.get("HYPOTHESIS_PROFILE") == "ci" else "25"))






@pytest.fixture(scope="module")
def server() -> Iterator[FakeSilverBullet]:
    with FakeSilverBullet(token=SB_TOKEN) as sb:
        yield sb


def test_push_loses_nothing_and_duplicates_nothing(server: FakeSilverBullet, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("stateful")

    class PushMachine(RuleBasedStateMachine):
        @initialize()
        def fresh(self) -> None:
            server.clear_faults()
            server.clock.unfreeze()
            for child in server.space.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
            server.clear_requests()
            self.home = Path(tempfile.mkdtemp(dir=root))
            self.clock = Clock()
            Installer(Workspace(load_settings(self.home), now=self.clock)).run()
            configure_sync(self.home, server.url)
            self.settings = load_settings(self.home)
            self.workspace = Workspace(self.settings, now=self.clock)
            self.memory = Memory(self.workspace)
            self.entries: list[str] = []  # journal entry ids written locally
            self.human_lines: dict[str, str] = {}  # line -> page it was written to
            self.human_deleted: set[str] = set()
            self.counter = 0
            self.transport: httpx.BaseTransport | None = None

        def _unique(self, what: str) -> str:
            self.counter += 1
            return f"{what} humaine n°{self.counter}"

        # --- the agent -------------------------------------------------------------------

        @rule()
        def agent_writes_an_entry(self) -> None:
            self.clock.advance(minutes=1)
            ref = self.memory.add_journal(journal_fields(titre=f"Tâche {len(self.entries)}")).lines[0]
            self.entries.append(ref.removeprefix("Entrée ajoutée : journal "))

        @precondition(lambda self: bool(self.entries))
        @rule(which=st.sampled_from(["ports", "sauvegardes"]))
        def agent_proposes_or_completes(self, which: str) -> None:
            Proposals(self.workspace).propose({
                "type": "fait", "titre": f"Vérifier les {which}", "contenu": f"Toujours vérifier les {which} avant.",
                "sources": [f"journal {self.entries[-1]}"], "contradiction": "aucune", "remplace": "rien", "retiens_ca": True,
            })

        # --- the human in SilverBullet -----------------------------------------------------

        def _page(self, page: str) -> str | None:
            return server.read(page) if server.exists(page) else None

        def _write(self, page: str, text: str) -> None:
            server.clock.advance(1)
            server.write(page, text)

        @rule(page=st.sampled_from([JOURNAL, PENDING]))
        def human_adds_a_line_at_the_end(self, page: str) -> None:
            text = self._page(page)
            if text is None:
                return
            line = self._unique("ligne")
            self._write(page, text.rstrip("\n") + f"\n\n{line}\n")
            self.human_lines[line] = page

        @rule(page=st.sampled_from([JOURNAL, PENDING]), data=st.data())
        def human_annotates_a_block(self, page: str, data: st.DataObject) -> None:
            text = self._page(page)
            pattern = blocks.JOURNAL_BLOCK if page == JOURNAL else blocks.PENDING_BLOCK
            segments = blocks.split(text or "", pattern)
            targets = [i for i, s in enumerate(segments) if s.id is not None]
            if text is None or not targets:
                return
            index = data.draw(st.sampled_from(targets))
            line = self._unique("annotation")
            header, _, rest = segments[index].text.partition("\n")
            segments[index] = blocks.Segment(segments[index].id, f"{header}\n{line}\n{rest}")
            self._write(page, "".join(s.text for s in segments))
            self.human_lines[line] = page

        @rule(data=st.data())
        def human_deletes_a_handled_entry(self, data: st.DataObject) -> None:
            text = self._page(JOURNAL)
            segments = blocks.split(text or "", blocks.JOURNAL_BLOCK)
            targets = [i for i, s in enumerate(segments) if s.id is not None and "~" not in s.id]
            if text is None or not targets:
                return
            index = data.draw(st.sampled_from(targets))
            removed = segments.pop(index)
            self.human_deleted.add(removed.id or "")
            for line in [line for line, page in self.human_lines.items() if page == JOURNAL and line in removed.text]:
                del self.human_lines[line]  # the human deleted their own annotation with the block
            self._write(JOURNAL, "".join(s.text for s in segments))

        @rule(data=st.data())
        def browser_forks_the_page(self, data: st.DataObject) -> None:
            """A stale browser edited an older copy: SilverBullet moves the server's version aside."""
            text = self._page(JOURNAL)
            segments = blocks.split(text or "", blocks.JOURNAL_BLOCK)
            if text is None or len(segments) < 2:
                return
            keep = data.draw(st.integers(1, len(segments) - 1))
            line = self._unique("modification hors ligne")
            browser = "".join(s.text for s in segments[:keep]).rstrip("\n") + f"\n\n{line}\n"
            server.clock.advance(1)
            if server.fork_conflict(JOURNAL, browser) is not None:
                self.human_lines[line] = JOURNAL

        @rule(merge_back=st.booleans())
        def human_resolves_forks(self, merge_back: bool) -> None:
            page = self._page(JOURNAL)
            if page is None:
                return
            for copy in self._copies():
                copied = server.read(copy)
                present = {i for i, _ in blocks.blocks_of(page, blocks.JOURNAL_BLOCK)}
                for segment in blocks.split(copied, blocks.JOURNAL_BLOCK):
                    if segment.id is None or segment.id in present:
                        continue
                    if merge_back:
                        page = page.rstrip("\n") + "\n\n" + segment.text
                        self.human_deleted.discard(segment.id)
                    else:
                        self.human_deleted.add(segment.id)
                        for line in [x for x, p in self.human_lines.items() if p == JOURNAL and x in segment.text and x not in page]:
                            del self.human_lines[line]
                for line in [x for x, p in self.human_lines.items() if p == JOURNAL and x in copied and x not in page]:
                    if merge_back:
                        page = page.rstrip("\n") + f"\n\n{line}\n"
                    else:
                        del self.human_lines[line]
                server.delete(copy)
            self._write(JOURNAL, page)

        def _copies(self) -> list[str]:
            return sorted(f.name for f in server.listing() if ".conflicted:" in f.name)

        # --- faults -------------------------------------------------------------------------

        @rule()
        def torn_read(self) -> None:
            if server.exists(JOURNAL):
                server.tear_next_read(JOURNAL)

        @rule(method=st.sampled_from(["GET", "PUT"]))
        def server_error(self, method: str) -> None:
            server.fail_next(503, method=method, path=JOURNAL)

        @rule(after_apply=st.booleans())
        def connection_reset_on_write(self, after_apply: bool) -> None:
            server.reset_next(method="PUT", path=JOURNAL, after_apply=after_apply)

        @rule()
        def same_millisecond_clock(self) -> None:
            server.clock.freeze()

        @rule()
        def clock_runs_again(self) -> None:
            server.clock.unfreeze()

        @rule()
        def race_a_human_write_after_our_read(self) -> None:
            fired: list[bool] = []
            line = self._unique("écriture concurrente")

            def after(request: httpx.Request) -> None:
                if fired or request.method != "GET" or "x-get-meta" in request.headers or not request.url.path.endswith("journal.md"):
                    return
                fired.append(True)
                text = self._page(JOURNAL)
                if text is not None:
                    self._write(JOURNAL, text.rstrip("\n") + f"\n\n{line}\n")
                    self.human_lines[line] = JOURNAL

            self.transport = AfterEachResponse(after)

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
                    raise Crash  # the intent is recorded, the PUT never leaves

            self.transport = AfterEachResponse(after)

        # --- the run ------------------------------------------------------------------------

        @rule()
        def push(self) -> None:
            transport, self.transport = self.transport, None
            try:
                sync.push(self.workspace, transport=transport)
            except (Crash, PageKeepsChanging, SilverBulletError):
                return  # the run failed cleanly; the next one must converge
            server.clear_faults()
            self._nothing_lost_or_doubled()

        @invariant()
        def never_a_delete(self) -> None:
            assert server.requests_matching("DELETE") == []

        @invariant()
        def local_files_lost_nothing(self) -> None:
            local = {b.when.strftime("%Y-%m-%d %H:%M") for b in journal.blocks((self.home / "memory/journal.md").read_text())}
            assert set(self.entries) <= local
            pending.parse((self.home / "memory/pending.md").read_text())

        def _nothing_lost_or_doubled(self) -> None:
            """Checked right after every push that completed."""
            copies = {c: server.read(c) for c in self._copies()}
            pages = {p: self._page(p) or "" for p in (JOURNAL, PENDING)}
            for line, page in self.human_lines.items():
                assert line in pages[page] or any(line in text for text in copies.values()), line
            ids_on_page = [i for i, _ in blocks.blocks_of(pages[JOURNAL], blocks.JOURNAL_BLOCK)]
            assert len(ids_on_page) == len(set(ids_on_page)), "an entry is on the page twice"
            in_copies = {i for text in copies.values() for i, _ in blocks.blocks_of(text, blocks.JOURNAL_BLOCK)}
            for entry_id in self.entries:
                if entry_id in self.human_deleted:
                    assert entry_id not in ids_on_page, f"{entry_id} deleted by the human came back"
                elif entry_id not in in_copies:
                    assert entry_id in ids_on_page, f"{entry_id} is lost"
            headers = [i for i, _ in blocks.blocks_of(pages[PENDING], blocks.PENDING_BLOCK) if "~" not in i]
            assert len(headers) == len(set(headers)), "a proposal is on the page twice"

    run_state_machine_as_test(
        PushMachine,
        settings=settings(max_examples=EXAMPLES, stateful_step_count=25, deadline=None, derandomize=os.environ.get("HYPOTHESIS_PROFILE") == "ci"),
    )


