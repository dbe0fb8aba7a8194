"""The fake's real-server fault model (``RealServerFaults``), and the browser-like writer.

Hook-driven tests pin each behaviour of docs/silverbullet.md §10 on the fake: a read
torn empty or partial under the previous ``X-Last-Modified`` with a probe that agrees,
headers from another state than the body, overlapping PUTs that interleave, coarse
mtimes.  The tests taking ``race_target`` hammer a server with concurrent requests and
print what they saw (run with ``-s``); they run on the fake with its default fault
model and, when ``OCMEM_TEST_SILVERBULLET_URL`` is set, on that real SilverBullet,
where they assert only what must always hold and report rates.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from support.human import (
    HUMAN_AGENT,
    BrowserLikeWriter,
    Put,
    PutRecorder,
    attribute_loss,
    lines_lost,
    puts_from_log,
)
from support.sbclient import SBClient, Target, real_target
from support.sbserver import DiskStep, FakeSilverBullet, RealServerFaults

T0 = 1_780_000_000_000  # a multiple of 4 and 8: the start of a granularity bucket
PAGE_A = b"".join(b"line a%04d " % i + b"a" * 52 + b"\n" for i in range(160))  # 10 240 bytes
PAGE_B = b"".join(b"line b%04d " % i + b"b" * 52 + b"\n" for i in range(150))  # 9 600 bytes


def _report(what: str, target: Target, **figures: object) -> None:
    kind = "fake" if target.fake is not None else "real"
    print(f"\n[{kind}] {what}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.real_silverbullet)])
def race_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The fake with its default ``RealServerFaults``, or the real server."""
    if request.param == "real":
        target = real_target(token_required=False)
        try:
            yield target
        finally:
            target.cleanup()
            target.client.close()
        return
    with FakeSilverBullet(faults=RealServerFaults(), record_bodies=True) as sb:
        client = SBClient(sb.url, None)
        yield Target(client, sb)
        client.close()


@dataclass
class Hooked:
    """A fake whose ``on_step`` hook runs ``action`` once, at the first matching step."""

    sb: FakeSilverBullet
    client: SBClient
    action: Callable[[DiskStep], object] | None = None
    when: Callable[[DiskStep], bool] = lambda step: False
    steps: list[DiskStep] = field(default_factory=list)

    def on_step(self, step: DiskStep) -> None:
        self.steps.append(step)
        action = self.action
        if action is not None and self.when(step):
            self.action = None
            action(step)

    def arm(self, when: Callable[[DiskStep], bool], action: Callable[[DiskStep], object]) -> None:
        self.when, self.action = when, action


@pytest.fixture
def hooked() -> Iterator[Hooked]:
    """A fake with fast faults (1 ms writes in 3 seeded pieces) and a step hook."""
    with FakeSilverBullet(record_bodies=True) as sb:
        client = SBClient(sb.url, None)
        state = Hooked(sb, client)
        sb.faults = RealServerFaults(write_ms=1, pieces=3, seed=7, on_step=state.on_step)
        yield state
        client.close()


def _headers(response: httpx.Response) -> tuple[int, int]:
    return int(response.headers["x-last-modified"]), int(response.headers["x-content-length"])


def _bytes_of_the_pages(body: bytes) -> bool:
    """Whether each byte of ``body`` is the byte at its offset in PAGE_A or in PAGE_B."""
    return all(
        (i < len(PAGE_A) and byte == PAGE_A[i]) or (i < len(PAGE_B) and byte == PAGE_B[i])
        for i, byte in enumerate(body)
    )


# --------------------------------------------------------------------------- torn reads


def test_read_during_a_put_sees_an_empty_page_with_the_previous_mtime(hooked: Hooked) -> None:
    """Right after the truncation, a GET answers 200, an empty body,
    ``X-Content-Length: 0`` and the previous ``X-Last-Modified``; the probe agrees."""
    sb, client = hooked.sb, hooked.client
    sb.clock.set(T0)
    previous = sb.write("journal.md", "human lines\n" * 20)
    sb.clock.set(T0 + 50)
    seen: list[httpx.Response] = []
    other = SBClient(sb.url, None)
    hooked.arm(
        lambda step: step.kind == "truncated",
        lambda step: seen.extend([other.get("journal.md"), other.meta("journal.md")]),
    )
    assert client.put("journal.md", "ocmem's page\n").status_code == 200
    read, probe = seen
    assert (read.status_code, read.content) == (200, b"")
    assert _headers(read) == (previous.last_modified, 0)
    assert _headers(probe) == _headers(read)
    final = client.get("journal.md")
    assert (final.text, _headers(final)[0]) == ("ocmem's page\n", T0 + 50)
    other.close()


def test_read_during_a_put_sees_a_partial_page(hooked: Hooked) -> None:
    """After the first piece, a GET gets that prefix, its length in ``X-Content-Length``."""
    sb, client = hooked.sb, hooked.client
    sb.write("journal.md", "old\n")
    seen: list[httpx.Response] = []
    hooked.arm(
        lambda step: step.kind == "written", lambda step: seen.append(client.get("journal.md"))
    )
    assert client.put("journal.md", PAGE_A).status_code == 200
    (partial,) = seen
    written = [step.size for step in hooked.steps if step.kind == "written"]
    assert len(written) == 3 and written[-1] == len(PAGE_A)
    assert partial.content == PAGE_A[: written[0]]
    assert int(partial.headers["x-content-length"]) == written[0]


def test_headers_and_body_can_come_from_different_states(hooked: Hooked) -> None:
    """The GET stats before it reads: the body can be shorter or longer than
    ``X-Content-Length`` says, under the mtime of the state that was stat'ed."""
    sb, client = hooked.sb, hooked.client
    sb.clock.set(T0)
    before = sb.write("p.md", PAGE_B)
    sb.clock.set(T0 + 10)
    other = SBClient(sb.url, None)

    def start_a_put_and_hold(after_bytes: int) -> tuple[threading.Thread, Callable[[], None]]:
        hold = sb.hold_next_write("p.md", after_bytes=after_bytes)
        writer = threading.Thread(target=lambda: other.put("p.md", PAGE_A))
        writer.start()
        assert hold.wait_held()
        return writer, hold.release

    # Stat of the old page, then the read lands mid-PUT: the body is cut short.
    pending: list[tuple[threading.Thread, Callable[[], None]]] = []
    hooked.arm(
        lambda step: step.kind == "stat", lambda step: pending.append(start_a_put_and_hold(100))
    )
    shorter = client.get("p.md")
    assert shorter.content == PAGE_A[:100]
    assert _headers(shorter) == (before.last_modified, len(PAGE_B))
    writer, release = pending.pop()
    release()
    writer.join(5)

    # Stat mid-PUT (empty), then the write completes before the read: the body is longer.
    writer, release = start_a_put_and_hold(0)

    def finish(step: DiskStep) -> None:
        sb.clock.set(T0 + 20)
        release()
        writer.join(5)

    hooked.arm(lambda step: step.kind == "stat", finish)
    longer = client.get("p.md")
    assert longer.content == PAGE_A
    assert _headers(longer) == (T0 + 10, 0)
    assert _headers(client.meta("p.md")) == (T0 + 20, len(PAGE_A))
    other.close()


def test_a_read_can_mix_two_versions(hooked: Hooked) -> None:
    """The body is read a page at a time: a PUT landing after the first page gives that
    page of the old version followed by the rest of the new one."""
    sb, client = hooked.sb, hooked.client
    sb.write("p.md", PAGE_A)
    other = SBClient(sb.url, None)
    hooked.arm(lambda step: step.kind == "read", lambda step: other.put("p.md", PAGE_B))
    mixed = client.get("p.md")
    assert mixed.content == PAGE_A[:4096] + PAGE_B[4096:]
    assert int(mixed.headers["x-content-length"]) == len(PAGE_A)
    other.close()


# --------------------------------------------------------------------------- overlapping PUTs


def test_overlapping_puts_interleave(hooked: Hooked) -> None:
    """Both PUTs truncate, then the longer body is written and the shorter one over its
    start: the page is the shorter body followed by the tail of the longer one."""
    sb, client = hooked.sb, hooked.client
    sb.write("journal.md", "human\n")
    other = SBClient(sb.url, None)
    answers: list[httpx.Response] = []
    later: list[tuple[threading.Thread, Callable[[], None]]] = []

    def second_put_truncates_too(step: DiskStep) -> None:
        hold = sb.hold_next_write("journal.md", after_bytes=0)
        writer = threading.Thread(target=lambda: answers.append(other.put("journal.md", PAGE_B)))
        writer.start()
        assert hold.wait_held()  # truncated, nothing written yet
        later.append((writer, hold.release))

    hooked.arm(lambda step: step.kind == "truncated", second_put_truncates_too)
    first = client.put("journal.md", PAGE_A)
    writer, release = later.pop()
    assert sb.read_bytes("journal.md") == PAGE_A
    release()
    writer.join(5)
    assert sb.read_bytes("journal.md") == PAGE_B + PAGE_A[len(PAGE_B) :]
    # Each PUT answers 200 with the stat taken after its own write: the shorter one
    # reports a size that is not its body's.
    assert (first.status_code, first.headers["x-content-length"]) == (200, str(len(PAGE_A)))
    (second,) = answers
    assert (second.status_code, second.headers["x-content-length"]) == (200, str(len(PAGE_A)))
    other.close()


def test_a_truncation_waits_for_a_write_in_progress(hooked: Hooked) -> None:
    """A PUT arriving while another is writing truncates only after that write: the
    page is then its own body, never one with a hole."""
    sb, client = hooked.sb, hooked.client
    hold = sb.hold_next_write("j.md", after_bytes=10)
    other = SBClient(sb.url, None)
    first = threading.Thread(target=lambda: other.put("j.md", PAGE_A))
    first.start()
    assert hold.wait_held()
    second = threading.Thread(target=lambda: client.put("j.md", b"short\n"))
    second.start()
    assert sb.wait_for_blocked_write("j.md")  # the second PUT has arrived, and waits
    assert sb.read_bytes("j.md") == PAGE_A[:10]  # it has not truncated the file under way
    hold.release()
    first.join(5)
    second.join(5)
    assert sb.read_bytes("j.md") == b"short\n"
    other.close()


# --------------------------------------------------------------------------- mtimes


def test_mtimes_are_coarse(hooked: Hooked) -> None:
    """Server-stamped mtimes fall on ``mtime_granularity_ms`` buckets, so edits in one
    bucket share a ``lastModified``; a client's ``X-Last-Modified`` is kept exactly."""
    sb, client = hooked.sb, hooked.client
    sb.faults = RealServerFaults(truncate_ms=0, mtime_granularity_ms=4)
    sb.clock.set(T0 + 1)
    first = client.put("a.md", "one")
    sb.clock.advance(2)
    second = client.put("a.md", "two!")
    assert _headers(first) == (T0, 3)
    assert _headers(second) == (T0, 4)
    assert sb.write("b.md", "human").last_modified == T0
    sb.clock.advance(1)
    assert _headers(client.put("a.md", "three"))[0] == T0 + 4
    exact = client.put("a.md", "x", {"X-Last-Modified": str(T0 + 7)})
    assert _headers(exact)[0] == T0 + 7


def test_pieces_follow_the_seed_and_take_their_time() -> None:
    """The cut offsets repeat with the seed; a PUT lasts ``truncate_ms + write_ms``."""

    def cuts(seed: int) -> list[int]:
        steps: list[DiskStep] = []
        faults = RealServerFaults(
            truncate_ms=30, write_ms=30, pieces=4, seed=seed, on_step=steps.append
        )
        with FakeSilverBullet(faults=faults) as sb:
            client = SBClient(sb.url, None)
            started = time.monotonic()
            client.put("a.md", PAGE_A)
            assert time.monotonic() - started >= 0.06
            client.close()
        assert [s.kind for s in steps] == ["truncated"] + ["written"] * 4
        return [s.size for s in steps[1:]]

    first = cuts(1)
    assert first == cuts(1) != cuts(2)
    assert first == sorted(first) and first[-1] == len(PAGE_A)


def test_request_log_keeps_bodies_and_times_when_asked(hooked: Hooked) -> None:
    """``record_bodies`` keeps each body; ``received`` and ``answered`` bracket the work."""
    sb, client = hooked.sb, hooked.client
    client.put("a.md", "kept")
    (put,) = sb.requests_matching("PUT")
    assert put.body == b"kept"
    assert put.received <= put.answered
    sb.record_bodies = False
    client.put("a.md", "not kept")
    assert sb.requests_matching("PUT")[-1].body is None


# --------------------------------------------------------------------------- under load


def test_reads_during_a_put_loop(race_target: Target) -> None:
    """Reads racing a PUT loop of a 10 KB page: every byte read is the byte at that
    offset of a page written, and reads are often torn; reports how often torn (empty,
    partial, mixing two pages, headers disagreeing with the body), whether the probe
    agreed, and how often an empty read kept an older mtime."""
    client, path = race_target.client, race_target.path("loop.md")
    assert client.put(path, PAGE_A).status_code == 200
    stop = threading.Event()
    written: list[tuple[float, int]] = []  # (answered, X-Last-Modified) of each PUT
    writer_client = SBClient(client.base_url, client.token)

    def put_loop() -> None:
        for i in range(5_000):
            if stop.is_set():
                return
            response = writer_client.put(path, PAGE_B if i % 2 else PAGE_A)
            written.append((time.monotonic(), int(response.headers["x-last-modified"])))

    writer = threading.Thread(target=put_loop)
    writer.start()
    counts = dict.fromkeys(
        ["reads", "torn", "empty", "partial", "mixed", "mismatch", "probe_agrees"], 0
    )
    empty_with_older_mtime = 0
    try:
        for _ in range(300):
            sent = time.monotonic()
            read = client.get(path)
            probe = client.meta(path)
            assert read.status_code == 200
            body = read.content
            mixed = not (PAGE_A.startswith(body) or PAGE_B.startswith(body))
            assert not mixed or _bytes_of_the_pages(body)
            counts["reads"] += 1
            counts["mixed"] += mixed
            mtime, length = _headers(read)
            torn = body not in (PAGE_A, PAGE_B) or length != len(body)
            counts["torn"] += torn
            counts["empty"] += body == b""
            counts["partial"] += not mixed and body not in (b"", PAGE_A, PAGE_B)
            counts["mismatch"] += length != len(body)
            if torn:
                counts["probe_agrees"] += _headers(probe) == (mtime, length)
            if body == b"":
                empty_with_older_mtime += any(
                    done < sent and stamp == mtime for done, stamp in written
                )
    finally:
        stop.set()
        writer.join(30)
        writer_client.close()
    _report(
        "reads during a PUT loop",
        race_target,
        puts=len(written),
        **counts,
        empty_with_older_mtime=empty_with_older_mtime,
    )
    if race_target.fake is not None:
        assert counts["torn"] > 0


def test_reads_while_a_browser_like_writer_saves(race_target: Target) -> None:
    """Reads racing a writer that saves every 20-50 ms, as in the field report: reports
    how often a read was torn, how often it was empty under the mtime of the last
    complete read, and how often the probe right after agreed with it."""
    client, path = race_target.client, race_target.path("browser.md")
    client.written.add(path)
    assert client.put(path, PAGE_A).status_code == 200
    counts = dict.fromkeys(["reads", "torn", "empty_previous_mtime", "probe_agrees"], 0)
    last_complete = 0
    with BrowserLikeWriter(client.base_url, path, token=client.token) as writer:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            read = client.get(path)
            mtime, length = _headers(read)
            counts["reads"] += 1
            if read.content and length == len(read.content):
                last_complete = mtime
                continue
            counts["torn"] += 1
            counts["empty_previous_mtime"] += not read.content and mtime == last_complete
            counts["probe_agrees"] += _headers(client.meta(path)) == (mtime, length)
    _report(
        "reads while a browser-like writer saves", race_target, writes=len(writer.edits), **counts
    )
    if race_target.fake is not None:
        assert counts["torn"] > 0


def test_overlapping_puts_interleave_or_one_wins(race_target: Target) -> None:
    """Two PUTs of one page released together: the page is one body, or the shorter
    body followed by the tail of the longer; reports how often each."""
    client, path = race_target.client, race_target.path("overlap.md")
    client.written.add(path)
    clients = [SBClient(client.base_url, client.token) for _ in range(2)]
    outcomes = dict.fromkeys(["a", "b", "interleaved"], 0)
    barrier = threading.Barrier(2)

    def put(index: int) -> None:
        barrier.wait()
        clients[index].put(path, (PAGE_A, PAGE_B)[index])

    try:
        for _ in range(100):
            threads = [threading.Thread(target=put, args=(i,)) for i in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
            final = client.get(path).content
            outcome = {PAGE_A: "a", PAGE_B: "b", PAGE_B + PAGE_A[len(PAGE_B) :]: "interleaved"}
            assert final in outcome
            outcomes[outcome[final]] += 1
    finally:
        for each in clients:
            each.close()
    _report("overlapping PUTs", race_target, **outcomes)


def test_mtime_granularity(race_target: Target) -> None:
    """Back-to-back PUTs: reports the smallest step between distinct ``lastModified``
    values and how often two successive writes share one."""
    client, path = race_target.client, race_target.path("clock.md")
    stamps = [_headers(client.put(path, f"{i}\n"))[0] for i in range(200)]
    steps = [b - a for a, b in itertools.pairwise(stamps)]
    positive = sorted(step for step in steps if step > 0)
    assert positive, "200 PUTs in one millisecond"
    _report(
        "mtime granularity",
        race_target,
        same_as_previous=sum(step == 0 for step in steps),
        of=len(steps),
        smallest_step_ms=positive[0],
        median_step_ms=positive[len(positive) // 2],
        backwards=sum(step < 0 for step in steps),
    )


# --------------------------------------------------------------------------- the writer


def test_writer_appends_unique_lines(race_target: Target) -> None:
    """Alone, the writer's lines all stay on the page, each once, in order."""
    client, path = race_target.client, race_target.path("human.md")
    client.written.add(path)
    with BrowserLikeWriter(
        client.base_url, path, token=client.token, max_edits=8, interval_ms=(1, 3)
    ) as writer:
        assert writer.wait_edits(8)
    edits = writer.edits
    assert [e.put.status for e in edits] == [200] * 8
    assert edits[0].read_length is None  # 404: the page did not exist yet
    final = client.get(path).text
    assert final.splitlines() == [e.line for e in edits]
    assert lines_lost(final, edits) == []
    if race_target.fake is not None:
        logged = puts_from_log(race_target.fake.requests, path)
        assert [(p.who, p.body) for p in logged] == [(HUMAN_AGENT, e.put.body) for e in edits]


def test_attribution_names_the_put_that_removed_a_line(hooked: Hooked) -> None:
    """A stale write from another client removes the writer's later lines: each lost
    line is pinned on that PUT, after the writer's PUT that held it last."""
    sb, client = hooked.sb, hooked.client
    sb.write("journal.md", "# Journal\n")
    stale = client.get("journal.md").content  # another client reads early...
    with BrowserLikeWriter(sb.url, "journal.md", max_edits=3, interval_ms=(1, 2), seed=3) as writer:
        assert writer.wait_edits(3)
    client.put("journal.md", stale + b"ocmem block\n", {"User-Agent": "ocmem"})  # ...writes late
    lost = lines_lost(sb.read("journal.md"), writer.edits)
    assert lost == [e.line for e in writer.edits]
    losses = attribute_loss(lost, puts_from_log(sb.requests, "journal.md"))
    last_human_put = writer.puts[-1]
    for loss in losses:
        assert loss.held_by is not None and loss.held_by.body == last_human_put.body
        assert loss.removed_by is not None and loss.removed_by.who == "ocmem"
    assert "removed by ocmem PUT" in str(losses[0])


def test_attribution_without_a_later_put() -> None:
    """A line no later PUT removed (the page was torn or written on disk) says so."""
    held = Put("human", "p.md", b"- a\n- b\n", 0.0, 1.0, 200)
    failed = Put("ocmem", "p.md", b"", 1.5, 2.0, 500)
    (loss,) = attribute_loss(["- b"], [failed, held])
    assert (loss.held_by, loss.removed_by) == (held, None)
    (never,) = attribute_loss(["- c"], [held])
    assert (never.held_by, never.removed_by) == (None, None)


def test_two_writers_race(race_target: Target) -> None:
    """Two browser-like writers on one page at 20-50 ms, one seen through a
    ``PutRecorder``: reports how many lines were lost and which PUTs removed them.
    On the fake, the server's log and the two client-side logs hold the same PUTs."""
    client, path = race_target.client, race_target.path("race.md")
    client.written.add(path)
    assert client.put(path, "# Race\n").status_code == 200
    recorder = PutRecorder("other")
    other = httpx.Client(transport=recorder, headers=client.request_headers())
    url = client.base_url + SBClient.fs_url(path)
    with BrowserLikeWriter(client.base_url, path, token=client.token, max_edits=40) as human:
        for i in range(40):
            page = other.get(url).content
            other.put(url, content=page + f"- other #{i}\n".encode())
            time.sleep(0.02)
        assert human.wait_edits(40, timeout=30)
    other.close()
    final = client.get(path).content
    lost = lines_lost(final, human.edits)
    losses = attribute_loss(lost, [*human.puts, *recorder.puts])
    by = [loss.removed_by.who if loss.removed_by else "none" for loss in losses]
    _report(
        "two writers",
        race_target,
        human_lines=len(human.edits),
        lost=len(lost),
        removed_by_other=by.count("other"),
        removed_by_human=by.count(HUMAN_AGENT),
        unexplained=by.count("none"),
        human_torn_reads=sum(e.torn_read for e in human.edits),
    )
    if race_target.fake is not None:
        logged = sorted((p.who, p.body) for p in puts_from_log(race_target.fake.requests, path))
        assert logged == sorted(
            [("python-httpx/" + httpx.__version__, b"# Race\n")]
            + [(HUMAN_AGENT, p.body) for p in human.puts]
            + [("python-httpx/" + httpx.__version__, p.body) for p in recorder.puts]
        )
