"""A browser-like human writer for race tests, and which PUT removed which of its lines.

``BrowserLikeWriter`` edits one page over HTTP the way a SilverBullet tab saving a page
does (docs/silverbullet.md §11): GET the page, append one unique line, PUT the whole
page back, wait 20-50 ms, again.  It works against any server, fake or real, and logs
every cycle: what it read, the line it added, the PUT it sent.

To tell who removed a lost line, gather every PUT of the page as ``Put`` records, from
the fake's request log (``puts_from_log``, with ``record_bodies`` on) or, against a
real server, from the writer plus a ``PutRecorder`` transport in each other client,
then ask ``attribute_loss(lines_lost(final, writer.edits), puts)``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from urllib.parse import quote, unquote

import httpx

from support.sbserver import RecordedRequest

HUMAN_AGENT = "ocmem-test-human"
"""``User-Agent`` of the writer's requests, which names it in the fake's request log."""


@dataclass(frozen=True)
class Put:
    """One PUT of a page: who sent it, the whole body, when, and its status.

    ``started`` and ``finished`` are ``time.monotonic()`` values (for the fake's log:
    when the server had the request and when it answered); ``status`` is ``None`` when
    no answer came.  Between two PUTs the later ``finished`` normally decides the page.
    """

    who: str
    path: str
    body: bytes
    started: float
    finished: float
    status: int | None


@dataclass(frozen=True)
class HumanEdit:
    """One GET → append → PUT cycle of the writer."""

    line: str
    read_body: bytes
    read_length: int | None
    """``X-Content-Length`` of the GET; ``None`` when the page did not exist (404)."""
    read_last_modified: int | None
    put: Put

    @property
    def torn_read(self) -> bool:
        """Whether the body read disagreed with its own ``X-Content-Length``."""
        return self.read_length is not None and self.read_length != len(self.read_body)


@dataclass(frozen=True)
class Loss:
    """A line missing from the final page, with the PUTs around its disappearance.

    ``held_by`` is the last PUT (by ``finished``) whose body had the line, ``removed_by``
    the first successful PUT after it; ``removed_by`` is ``None`` when no PUT came after,
    so the page lost the line otherwise (overlapping PUTs interleaved, or a disk write).
    """

    line: str
    held_by: Put | None
    removed_by: Put | None

    def __str__(self) -> str:
        def describe(put: Put | None) -> str:
            return "nothing" if put is None else f"{put.who} PUT at {put.finished:.4f}"

        return f"{self.line!r} held by {describe(self.held_by)}, removed by {describe(self.removed_by)}"


class BrowserLikeWriter:
    """A thread doing GET → append a unique line → PUT on one page, every 20-50 ms.

    ``base_url`` is the space URL (``<url>/.fs`` is the API), ``token`` the Bearer token
    if the server wants one.  Each line is ``- human <tag> #<n>``, unique to this
    writer.  A 404 starts the page afresh; any other failed read skips the cycle.  Like
    the browser, it trusts whatever it reads: a torn read makes it write a torn page.  The
    writer stops after ``max_edits`` cycles, after ``max_seconds``, or on ``stop()``.
    ``seed`` fixes the tag and the pauses.  Use as a context manager, or
    ``start()``/``stop()``; ``stop()`` re-raises an error that killed the thread.
    """

    def __init__(
        self,
        base_url: str,
        path: str,
        *,
        token: str | None = None,
        interval_ms: tuple[float, float] = (20.0, 50.0),
        seed: int | None = None,
        user_agent: str = HUMAN_AGENT,
        max_edits: int | None = None,
        max_seconds: float = 120.0,
    ) -> None:
        self.path = path
        self.interval_ms = interval_ms
        self.user_agent = user_agent
        self.max_edits = max_edits
        self.max_seconds = max_seconds
        self._rng = random.Random(seed)
        self.tag = f"{self._rng.getrandbits(32):08x}"
        headers = {"X-Sync-Mode": "true", "User-Agent": user_agent}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(headers=headers, timeout=10.0, follow_redirects=False)
        self._url = base_url.rstrip("/") + "/.fs/" + quote(path, safe="/")
        self._lock = threading.Lock()
        self._edits: list[HumanEdit] = []
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="browser-like-writer", daemon=True)

    @property
    def edits(self) -> list[HumanEdit]:
        """Every completed cycle so far, oldest first."""
        with self._lock:
            return list(self._edits)

    @property
    def puts(self) -> list[Put]:
        """The writer's PUTs, oldest first."""
        return [edit.put for edit in self.edits]

    def start(self) -> BrowserLikeWriter:
        self._thread.start()
        return self

    def wait_edits(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``count`` cycles have completed; False on timeout."""
        deadline = time.monotonic() + timeout
        while len(self.edits) < count:
            if time.monotonic() > deadline or not self._thread.is_alive():
                return False
            time.sleep(0.005)
        return True

    def stop(self) -> None:
        """Stop after the cycle in progress, wait for the thread, close the client."""
        self._stop.set()
        self._thread.join(timeout=15)
        self._http.close()
        if self._error is not None:
            raise RuntimeError("the browser-like writer failed") from self._error

    def __enter__(self) -> BrowserLikeWriter:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        deadline = time.monotonic() + self.max_seconds
        try:
            number = 0
            while not self._stop.is_set() and time.monotonic() < deadline:
                if self.max_edits is not None and number >= self.max_edits:
                    return
                if self._cycle(number):
                    number += 1
                self._stop.wait(self._rng.uniform(*self.interval_ms) / 1000)
        except BaseException as exc:
            self._error = exc

    def _cycle(self, number: int) -> bool:
        try:
            read = self._http.get(self._url)
        except httpx.TransportError:
            return False  # a browser tries again on its next save
        if read.status_code == 404:
            body, length, last_modified = b"", None, None
        elif read.status_code == 200:
            body = read.content
            length = _int_header(read, "x-content-length")
            last_modified = _int_header(read, "x-last-modified")
        else:
            return False
        line = f"- human {self.tag} #{number:05d}"
        base = body if not body or body.endswith(b"\n") else body + b"\n"
        sent = base + line.encode() + b"\n"
        started = time.monotonic()
        try:
            status: int | None = self._http.put(self._url, content=sent).status_code
        except httpx.TransportError:
            status = None
        put = Put(self.user_agent, self.path, sent, started, time.monotonic(), status)
        with self._lock:
            self._edits.append(HumanEdit(line, body, length, last_modified, put))
        return True


class PutRecorder(httpx.BaseTransport):
    """An HTTP transport that records every PUT it sends as a ``Put`` named ``who``.

    Give one to each other client of the page (e.g. ``sync.push(settings,
    transport=PutRecorder("home-1"))``) when the server's own log is out of reach.
    """

    def __init__(self, who: str) -> None:
        self.who = who
        self.inner = httpx.HTTPTransport()
        self._lock = threading.Lock()
        self._puts: list[Put] = []

    @property
    def puts(self) -> list[Put]:
        with self._lock:
            return list(self._puts)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "PUT":
            return self.inner.handle_request(request)
        started = time.monotonic()
        status: int | None = None
        try:
            response = self.inner.handle_request(request)
            response.read()
            status = response.status_code
            return response
        finally:
            path = unquote(request.url.path.split("/.fs/", 1)[-1])
            put = Put(self.who, path, request.read(), started, time.monotonic(), status)
            with self._lock:
                self._puts.append(put)

    def close(self) -> None:
        self.inner.close()


def puts_from_log(requests: Iterable[RecordedRequest], path: str) -> list[Put]:
    """The answered PUTs of ``path`` in a fake's request log, named by ``User-Agent``.

    The log must have been kept with ``record_bodies`` on.
    """
    puts = []
    for request in requests:
        if request.method != "PUT" or request.fs_path != path:
            continue
        if request.body is None:
            raise ValueError("the request log has no bodies: start the fake with record_bodies")
        who = request.headers.get("user-agent", "?")
        puts.append(
            Put(who, path, request.body, request.received, request.answered, request.status)
        )
    return puts


def lines_lost(final_text: str | bytes, edits: Iterable[HumanEdit]) -> list[str]:
    """The writer's lines whose PUT succeeded and that ``final_text`` no longer holds.

    A line counts only whole: a line cut short, or glued to other bytes, is lost.
    """
    final = _lines(final_text)
    return [edit.line for edit in edits if edit.put.status == 200 and edit.line not in final]


def attribute_loss(lost: Iterable[str], puts: Sequence[Put]) -> list[Loss]:
    """Say, for each lost line, which successful PUT held it last and which one followed.

    ``puts`` are all the PUTs of the page, from every client; they are ordered by
    ``finished``.  Overlapping PUTs make that order approximate: check ``started`` too.
    """
    ordered = sorted((p for p in puts if p.status == 200), key=lambda p: p.finished)
    contents = [_lines(p.body) for p in ordered]
    losses = []
    for line in lost:
        holders = [i for i, lines in enumerate(contents) if line in lines]
        if not holders:
            losses.append(Loss(line, None, None))
            continue
        after = holders[-1] + 1
        removed_by = ordered[after] if after < len(ordered) else None
        losses.append(Loss(line, ordered[holders[-1]], removed_by))
    return losses


def _lines(text: str | bytes) -> set[str]:
    raw = text if isinstance(text, bytes) else text.encode()
    return set(raw.decode("utf-8", errors="replace").splitlines())


def _int_header(response: httpx.Response, name: str) -> int | None:
    value = response.headers.get(name)
    return int(value) if value is not None and value.lstrip("-").isdigit() else None
