"""The push's quiet rule (issue 24): a push waits ``quiet_seconds`` for a page being edited, but
not for a page that shows exactly what its own last write left (nobody wrote since): it probes
and writes at once. Sleeps are counted on the injected clock, never on the machine's.

The rule compares the server's stamps with the server's stamps (``X-Last-Modified`` recorded from
the read that verified our write) and the page's bytes with ours: never our clock with the
server's.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SB_TOKEN, Clock, configure_sync, journal_fields
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.setup.install import Installer
from ocmem.silverbullet import merge
from support.human import HUMAN_AGENT
from support.sbserver import FakeSilverBullet

QUIET = 0.3


class CountingClock(Clock):
    """The tests' clock, whose monotonic time moves only when ocmem sleeps: every sleep is
    recorded, none is slept."""

    def __init__(self) -> None:
        super().__init__()
        self.mono = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.mono += seconds


class Home:
    """One ocmem home pushing its journal to ``server``, on a :class:`CountingClock`."""

    _ids = itertools.count(1)

    def __init__(self, root: Path, server: FakeSilverBullet) -> None:
        self.clock = CountingClock()
        self.id = f"quiet-{next(self._ids)}"
        self.path = Path(tempfile.mkdtemp(dir=root))
        Installer(Workspace(load_settings(self.path), clock=self.clock), home_id=self.id).run()
        configure_sync(self.path, server.url, quiet_seconds=QUIET, patience_seconds=5)
        self.page = f"Agents/Inbox/{self.id}/journal.md"
        self.server = server
        self.entries: list[str] = []

    def workspace(self) -> Workspace:
        return Workspace(load_settings(self.path), clock=self.clock)

    def entry(self) -> None:
        self.clock.advance(minutes=1)
        added = Memory(self.workspace()).add_journal(journal_fields(titre="Tâche"))
        self.entries.append(added.lines[0].removeprefix("Entrée ajoutée : journal "))

    def push(self) -> int:
        """Add an entry and push it; the number of times the push slept."""
        self.entry()
        before = len(self.clock.sleeps)
        sync.push(self.workspace())
        return len(self.clock.sleeps) - before

    def logged_waits(self) -> list[float]:
        log = (self.path / ".ocmem/log.jsonl").read_text().splitlines()
        last = [json.loads(x) for x in log if '"action": "push"' in x][-1]
        waits: list[float] = last["quiet_waits_ms"]
        return waits


def human_put(server: FakeSilverBullet, page: str, text: str) -> None:
    """A save from the browser, over HTTP, a millisecond later on the server's clock."""
    server.clock.advance(1)
    response = httpx.put(
        f"{server.url}/.fs/{page}",
        content=text.encode(),
        headers={"Authorization": f"Bearer {SB_TOKEN}", "User-Agent": HUMAN_AGENT},
    )
    response.raise_for_status()


@pytest.fixture(scope="module")
def server() -> Iterator[FakeSilverBullet]:
    with FakeSilverBullet(token=SB_TOKEN) as sb:
        yield sb


@pytest.fixture
def home(server: FakeSilverBullet, tmp_path: Path) -> Home:
    server.clock.unfreeze()
    return Home(tmp_path, server)


# --- the table --------------------------------------------------------------------------------


def nothing(home: Home) -> None:
    """Nobody touched the page since our write."""


def human_appends_a_line(home: Home) -> None:
    text = home.server.read(home.page)
    human_put(home.server, home.page, text + "\nligne de l'humain\n")


def human_saves_the_same_bytes(home: Home) -> None:
    """A browser saving our version: the bytes are ours, the server's stamp is not."""
    human_put(home.server, home.page, home.server.read(home.page))


def same_millisecond_same_size_edit(home: Home) -> None:
    """The server's clock stopped at our write's millisecond: only the bytes tell."""
    text, before = home.server.read(home.page), home.server.meta(home.page)
    edited = text.replace("Tâche", "Tache", 1).replace("\n\n", "\n \n", 1)  # as many bytes
    home.server.write(home.page, edited)
    after = home.server.meta(home.page)
    assert (after.last_modified, after.size) == (before.last_modified, before.size)


def state_from_before_the_rule(home: Home) -> None:
    """A state written before the rule existed: no record of our last write."""
    path = home.path / ".ocmem/sync-state.json"
    state = json.loads(path.read_text())
    for page in state["pushed"].values():
        for key in ("written_last_modified", "written_size", "written_sha256"):
            page.pop(key, None)
    os.chmod(path, 0o600)
    path.write_text(json.dumps(state))


CASES = [
    # what happened to the page between two pushes → sleeps of the second push
    (nothing, 0),
    (human_appends_a_line, 1),
    (human_saves_the_same_bytes, 1),
    (same_millisecond_same_size_edit, 1),
    (state_from_before_the_rule, 1),
]


@pytest.mark.parametrize(("between", "sleeps"), CASES, ids=[c[0].__name__ for c in CASES])
def test_a_push_waits_only_when_someone_else_may_be_writing(
    home: Home, server: FakeSilverBullet, between: Any, sleeps: int
) -> None:
    server.write(home.page, "# Journal\n\nNote de l'humain.\n")
    assert home.push() == 1  # a page ocmem never wrote: the human may be at work
    assert home.logged_waits() == [QUIET * 1000]
    if between is same_millisecond_same_size_edit:
        server.clock.freeze()
        server.write(home.page, server.read(home.page))  # stamp the page at the stopped ms
        home.push()  # our write lands at that same millisecond
    between(home)
    assert home.push() == sleeps
    assert home.logged_waits() == [QUIET * 1000 if sleeps else 0.0]
    final = server.read(home.page)
    assert "Note de l'humain." in final
    if between is human_appends_a_line:
        assert "ligne de l'humain" in final
    assert home.push() == 0  # our write again, untouched: at once
    on_page = [i for i, _ in merge.blocks_of(server.read(home.page), merge.JOURNAL_BLOCK)]
    assert sorted(on_page) == sorted(home.entries)


def test_a_lost_answer_to_our_write_still_knows_the_page_as_ours(
    home: Home, server: FakeSilverBullet
) -> None:
    home.push()
    server.reset_next(method="PUT", after_apply=True)  # the write landed, its answer did not
    home.push()
    assert home.push() == 0  # the verifying read saw our bytes under the server's stamp
    on_page = [i for i, _ in merge.blocks_of(server.read(home.page), merge.JOURNAL_BLOCK)]
    assert sorted(on_page) == sorted(home.entries)


def test_a_page_written_during_the_push_is_still_waited_for_and_kept(
    home: Home, server: FakeSilverBullet
) -> None:
    """Untouched at the read, written right after it: the probe sees the change, the push
    starts over from a fresh read — which is no longer ours, so it waits."""
    home.push()
    home.entry()
    fired: list[bool] = []

    def writes_after_read(request: httpx.Request) -> None:
        if request.method == "GET" and "x-get-meta" not in request.headers and not fired:
            fired.append(True)
            human_appends_a_line(home)

    from support.faults import AfterEachResponse

    before = len(home.clock.sleeps)
    sync.push(home.workspace(), transport=AfterEachResponse(writes_after_read))
    assert len(home.clock.sleeps) - before == 1
    assert "ligne de l'humain" in server.read(home.page)


# --- the property -------------------------------------------------------------------------------

# What may happen to the page between two pushes ("push": the home pushes again).
GESTURES: dict[str, Callable[[Home], None]] = {
    "human_appends_a_line": human_appends_a_line,
    "human_saves_the_same_bytes": human_saves_the_same_bytes,
}


@settings(
    max_examples=60 if os.environ.get("HYPOTHESIS_PROFILE") in ("ci", "nightly") else 20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(st.sampled_from(sorted([*GESTURES, "push"])), min_size=1, max_size=8))
def test_a_push_sleeps_exactly_when_the_page_is_not_as_its_last_write_left_it(
    server: FakeSilverBullet, tmp_path: Path, steps: list[str]
) -> None:
    server.clock.unfreeze()
    home = Home(tmp_path, server)
    server.write(home.page, "# Journal\n")
    ours = False  # the page is exactly what the home's last write left
    lines = 0
    for step in [*steps, "push"]:
        if step == "push":
            assert home.push() == (0 if ours else 1), steps
            ours = True
        else:
            GESTURES[step](home)
            lines += step == "human_appends_a_line"
            ours = False
    final = server.read(home.page)
    assert final.count("ligne de l'humain") == lines
    on_page = [i for i, _ in merge.blocks_of(final, merge.JOURNAL_BLOCK)]
    assert sorted(on_page) == sorted(home.entries)
