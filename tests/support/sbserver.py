"""A SilverBullet-faithful ``/.fs`` HTTP server for tests, in pure standard library.

``FakeSilverBullet`` serves a space folder on disk over real HTTP on 127.0.0.1 and
reproduces the Rust server (2.10+), as described in ``docs/silverbullet.md`` (cited as
"sb §N" below), which cites ``server/src/handlers/fs.rs``, ``router.rs``,
``server-common/src/space/{disk,embed,readonly}.rs`` and ``multi/dispatch.rs`` at upstream
commit 754e8525.  With ``flavor="go"`` it mimics the Go server (2.1-2.9) where a client
could notice.  With ``faults=RealServerFaults()`` it also behaves like the real server
under concurrent requests (sb §10): torn reads, interleaving PUTs, same-ms mtimes.

On top of that it offers what a real server cannot: a controllable millisecond clock,
fault hooks (latency, 5xx answers, connection resets, torn reads, a non-atomic write
paused half-way, a hook between a meta probe and the next PUT, a hook at each disk step
under ``faults``), the browser client's conflict fork, disk helpers that act as the
human, and a log of every request (with bodies if asked).

Known differences from the real server:

* ``created`` of a file the fake did not create itself (over HTTP or ``write()``) is
  its mtime where Python has no birth time (Linux), not the real birth time.
* Only gzip is offered (the real server also speaks brotli); no chunked responses.
* Auth is Bearer-only: ``token`` alone switches it on (the real server also needs
  ``SB_USER``), and cookie sessions and ``POST /.auth`` are not modelled (501).
* ``.gitignore``/``space_ignore`` support the common gitignore syntax (globs, ``**``,
  anchoring, trailing ``/``, ``!``), not every corner of the ``ignore`` crate.
* The real listing always ends with the embedded ``base_fs`` (``Library/Std/...``,
  ``perm: "ro"``); the fake lists only the ``bundled`` files it is given (none by default).
* Case-insensitive filesystems, ``/.events``, ``/.shell``, ``/.proxy``, ``/.runtime``,
  client-bundle assets and the index page seeded into a fresh space are not modelled.
"""

from __future__ import annotations

import contextlib
import email.utils
import gzip
import hmac
import io
import itertools
import json
import mimetypes
import os
import random
import re
import shutil
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Literal
from urllib.parse import unquote

SERVER_VERSION = "2.10.0"
"""Reported in ``X-Server-Version`` by ``/.ping``."""

NOT_FOUND_BODY = b"404 page not found\n"
"""Body of every 404 from ``/.fs`` (sb §8, ``handlers/mod.rs``)."""

BUNDLED_TIMESTAMP_MS = 1_785_196_800_000
"""Fixed ``created``/``lastModified`` of bundled read-only files (the build time, sb §4)."""

GZIP_MIN_SIZE = 32
"""tower-http's ``CompressionLayer`` leaves bodies shorter than this uncompressed."""

_HOLD_TIMEOUT_S = 30.0
_PAGE_SIZE = 4096
_OCTET_STREAM = "application/octet-stream"
_TEXT_PLAIN = "text/plain; charset=utf-8"
_MIME = mimetypes.MimeTypes()  # built-in table only: independent of /etc/mime.types
_I64 = re.compile(r"[+-]?[0-9]+")


class MsClock:
    """Millisecond clock that stamps the server's writes (sb §6, §10).

    It follows real time, optionally shifted by ``advance``, until ``set`` or
    ``freeze`` stops it; a stopped clock gives every write the same millisecond.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frozen: int | None = None
        self._offset = 0

    @staticmethod
    def _real() -> int:
        return time.time_ns() // 1_000_000

    @property
    def frozen(self) -> bool:
        """Whether the clock is stopped."""
        with self._lock:
            return self._frozen is not None

    def now(self) -> int:
        """Current time in ms since the epoch."""
        with self._lock:
            if self._frozen is not None:
                return self._frozen
            return self._real() + self._offset

    def set(self, ms: int) -> None:
        """Stop the clock at ``ms``."""
        with self._lock:
            self._frozen = ms

    def freeze(self) -> int:
        """Stop the clock where it stands and return that time."""
        with self._lock:
            if self._frozen is None:
                self._frozen = self._real() + self._offset
            return self._frozen

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` (stopped or running); return the new time."""
        with self._lock:
            if self._frozen is not None:
                self._frozen += ms
                return self._frozen
            self._offset += ms
            return self._real() + self._offset

    def unfreeze(self) -> None:
        """Let a stopped clock run again from the time it shows."""
        with self._lock:
            if self._frozen is not None:
                self._offset = self._frozen - self._real()
                self._frozen = None


@dataclass(frozen=True)
class FileMeta:
    """One file's metadata, as in the ``/.fs`` listing and the ``X-*`` headers (sb §4)."""

    name: str
    created: int
    last_modified: int
    content_type: str
    size: int
    perm: str

    def to_json(self) -> dict[str, str | int]:
        """The listing entry, with the server's camelCase keys."""
        return {
            "name": self.name,
            "created": self.created,
            "lastModified": self.last_modified,
            "contentType": self.content_type,
            "size": self.size,
            "perm": self.perm,
        }


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server saw it, recorded just before it answered.

    ``path`` is percent-decoded and has the URL prefix removed (``/.fs/Agents/x.md``,
    ``/.fs``, ``/.ping``); outside the prefix it is the whole decoded path.  ``fs_path``
    is the space-relative file path of a ``/.fs/<path>`` request, else ``None``.
    ``headers`` has lower-case names.  ``status`` is ``None`` when a fault hook dropped
    the connection instead of answering.
    """

    method: str
    path: str
    raw_path: str
    fs_path: str | None
    headers: Mapping[str, str]
    body_length: int
    status: int | None
    body: bytes | None = None
    """The request body, kept only while the server's ``record_bodies`` is on."""
    received: float = 0.0
    """``time.monotonic()`` once the request (body included) had arrived."""
    answered: float = 0.0
    """``time.monotonic()`` once the server had carried it out, just before answering."""


class WriteHold:
    """A PUT paused half-way through its non-atomic write (sb §6, §10).

    The server truncates the file, writes the first ``after_bytes`` bytes, then waits
    for ``release()`` (at most 30 s) before writing the rest.
    """

    def __init__(self, path: str, after_bytes: int) -> None:
        self.path = path
        self.after_bytes = after_bytes
        self._held = threading.Event()
        self._released = threading.Event()

    def wait_held(self, timeout: float = 5.0) -> bool:
        """Wait until a PUT is paused mid-write; False on timeout."""
        return self._held.wait(timeout)

    def release(self) -> None:
        """Let the paused PUT finish."""
        self._released.set()

    def _pause(self) -> None:
        self._held.set()
        self._released.wait(_HOLD_TIMEOUT_S)


@dataclass(frozen=True)
class DiskStep:
    """One step of the disk layer under ``RealServerFaults``, as passed to its ``on_step``.

    ``kind`` is ``"stat"`` (a full GET has taken the stat its headers come from and
    not read the body yet; ``size`` is the ``X-Content-Length`` to be sent), ``"read"``
    (it read one more page; ``size`` bytes so far), ``"truncated"`` (a PUT emptied the
    file and wrote nothing yet) or ``"written"`` (a PUT wrote one more piece; ``size``
    is the offset reached).
    """

    path: str
    kind: Literal["stat", "read", "truncated", "written"]
    size: int


@dataclass
class RealServerFaults:
    """The real server's disk behaviour under concurrent requests (sb §10).

    Pass one as ``FakeSilverBullet(faults=...)`` or assign ``sb.faults`` (``None``, the
    default, turns it off: every PUT then lands in one step).  With it:

    * A PUT truncates the file, which then stays empty for ``truncate_ms`` under its
      *previous* mtime (ext4 sets the new one only once the truncation has finished),
      then gets the new mtime, then the body in ``pieces`` pieces cut at random
      offsets, spread over ``write_ms``.  A concurrent GET or ``X-Get-Meta`` probe sees
      the size and mtime of that moment: an empty page that looks unchanged, more
      rarely a partial one.
    * A GET stats, then reads a page (4 KiB) at a time (``disk.rs`` ``read_file``): a
      write step landing in between makes ``X-Content-Length`` and
      ``X-Last-Modified`` describe another state than the body, which can be shorter
      or longer, or start as one version and go on as another.
    * Overlapping PUTs of one file each truncate and write from offset 0 of their own
      descriptor; a truncation and a writer's run of pieces exclude each other (the
      inode lock serializes ``ftruncate`` and ``write(2)`` on Linux).  The file can end
      as one writer's body followed by the tail of another's longer one, never with holes.
    * The server's own mtimes (after the truncation, after each piece, and ``write()``
      without ``mtime_ms``) are the clock rounded down to ``mtime_granularity_ms``, so
      edits in one bucket share a ``lastModified``.  ``X-Last-Modified`` sent with a
      PUT is applied exactly, after the last piece.

    The defaults are the figures measured on a real 2.10 server (§10).  For tests that
    hunt races, raise ``truncate_ms``/``write_ms``; for fast ones, lower them to 0.
    ``seed`` makes the cut offsets reproducible (the thread interleaving is not).
    ``on_step`` is called after each ``DiskStep``, in the request's thread, outside
    the disk lock: it may send requests to the server (a read, or after
    ``"truncated"`` a PUT of the same file to make two PUTs overlap).  After
    ``"written"`` the writer still holds the file, so a PUT of that file from the hook
    would wait for itself.
    """

    truncate_ms: float = 1.5
    write_ms: float = 0.0
    pieces: int = 1
    mtime_granularity_ms: int = 1
    seed: int | None = None
    on_step: Callable[[DiskStep], object] | None = None
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _rng_lock: threading.Lock = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if min(self.truncate_ms, self.write_ms) < 0:
            raise ValueError("truncate_ms and write_ms cannot be negative")
        if self.pieces < 1 or self.mtime_granularity_ms < 1:
            raise ValueError("pieces and mtime_granularity_ms must be at least 1")
        self._rng = random.Random(self.seed)
        self._rng_lock = threading.Lock()

    def stamp(self, ms: int) -> int:
        """The mtime the server's own write at clock time ``ms`` leaves."""
        return ms - ms % self.mtime_granularity_ms

    def cuts(self, size: int, extra: int | None = None) -> list[int]:
        """End offsets of the pieces of a ``size``-byte body; ``extra`` is also a cut."""
        with self._rng_lock:
            inner = self._rng.sample(range(1, size), min(self.pieces, size) - 1) if size > 1 else []
        points = {*inner, size}
        if extra is not None and 0 < extra < size:
            points.add(extra)
        return sorted(points) if size > 0 else []


@dataclass
class _Rule:
    """A counted fault rule; ``path`` is a space file path, or a route if it starts with /."""

    method: str | None
    path: str | None
    remaining: int
    status: int = 500
    body: bytes | None = None
    delay_ms: int = 0
    after_apply: bool = False

    def matches(self, req: _Request) -> bool:
        if self.method is not None and self.method.upper() != req.method:
            return False
        if self.path is None:
            return True
        if self.path.startswith("/"):
            return self.path == req.path
        return self.path == req.fs_path


@dataclass
class _ProbeHook:
    callback: Callable[[str], object]
    remaining: int
    require_probe: bool
    armed: bool


@dataclass
class _Request:
    method: str
    raw_path: str
    query: str
    route: str | None
    path: str
    fs_path: str | None
    headers: dict[str, str]
    body: bytes
    received: float = field(default_factory=time.monotonic)


@dataclass
class _Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    # A body of unknown length, sent chunked after ``body`` (the hostile ``endless_listing``).
    stream: Iterator[bytes] | None = None

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None


class _SpaceError(Exception):
    """A ``SpaceError`` of the real server, with its HTTP mapping (``handlers/mod.rs``)."""

    status = 500

    @property
    def body(self) -> bytes:
        return str(self).encode()


class _NotFound(_SpaceError):
    status = 404

    @property
    def body(self) -> bytes:
        return NOT_FOUND_BODY


class _PathOutsideRoot(_SpaceError):
    status = 403

    def __init__(self) -> None:
        super().__init__("Path not in space")


class _ReadOnly(_SpaceError):
    status = 403

    def __init__(self, message: str) -> None:
        super().__init__(f"Read-only: {message}")


class _WriteError(_SpaceError):
    def __init__(self, message: str) -> None:
        super().__init__(f"Could not write file: {message}")


class _IoError(_SpaceError):
    def __init__(self, message: str) -> None:
        super().__init__(f"IO error: {message}")


def _os_error_text(exc: OSError | ValueError) -> str:
    """Render an OS error the way Rust's ``io::Error`` displays it."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{exc.strerror} (os error {exc.errno})"
    return "file name contained an unexpected NUL byte"


def content_type_for(name: str) -> str:
    """MIME type from the extension; ``.md`` is ``text/markdown`` (``disk.rs`` lookup)."""
    base = name.rsplit("/", 1)[-1]
    if "." in base and base.rsplit(".", 1)[1].lower() == "md":
        return "text/markdown"
    guessed, _ = _MIME.guess_type(base, strict=False)
    return guessed or _OCTET_STREAM


def http_date(ms: int) -> str:
    """IMF-fixdate of a ms timestamp at second resolution (``handlers/mod.rs`` http_date)."""
    return email.utils.formatdate(ms // 1000, usegmt=True)


def _has_extension(name: str) -> bool:
    """Rust's ``Path::extension().is_some()``: a dot that is not the name's first char."""
    return name.rfind(".") > 0


def _parse_i64(value: str | None) -> int:
    """Parse a header as Rust's ``str::parse::<i64>()``; anything unparsable is 0."""
    if value is None or not _I64.fullmatch(value.strip()):
        return 0
    number = int(value.strip())
    return number if -(2**63) <= number < 2**63 else 0


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode("utf-8") if isinstance(content, str) else content


def _glob_to_regex(pattern: str) -> str:
    """Translate one gitignore glob (already anchored) into a regular expression."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            inner = pattern[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


class _IgnoreRules:
    """gitignore-style rules: ``SB_SPACE_IGNORE`` plus the space root's ``.gitignore`` (sb §4)."""

    def __init__(self, text: str) -> None:
        self._rules: list[tuple[re.Pattern[str], bool, bool]] = []
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated or line.startswith("\\"):
                line = line[1:]
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            line = line.lstrip("/") if "/" in line else "**/" + line
            self._rules.append((re.compile(_glob_to_regex(line)), negated, dir_only))

    def match(self, rel: str, is_dir: bool) -> bool | None:
        """True if ignored, False if re-included by ``!``, None if no rule matches."""
        result: bool | None = None
        for regex, negated, dir_only in self._rules:
            if dir_only and not is_dir:
                continue
            if regex.fullmatch(rel):
                result = not negated
        return result

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether ``rel`` or, failing a match on it, its nearest matched parent is ignored."""
        candidate, candidate_is_dir = rel, is_dir
        while True:
            verdict = self.match(candidate, candidate_is_dir)
            if verdict is not None:
                return verdict
            if "/" not in candidate:
                return False
            candidate, candidate_is_dir = candidate.rsplit("/", 1)[0], True


def _normalize_prefix(prefix: str) -> str:
    """``SB_URL_PREFIX`` normalization: ``wiki`` and ``/wiki/`` become ``/wiki``."""
    stripped = prefix.strip("/")
    return f"/{stripped}" if stripped else ""


def _accepts_gzip(accept_encoding: str) -> bool:
    for part in accept_encoding.split(","):
        token, *params = part.strip().split(";")
        if token.strip().lower() not in ("gzip", "x-gzip"):
            continue
        quality = 1.0
        for param in params:
            key, _, value = param.strip().partition("=")
            if key.strip() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            return True
    return False


def _encode_from(path: str) -> str:
    """Percent-encode a path for ``/.auth?from=`` like the bundle handler's FROM_SET."""
    unsafe = set(b' "#%<>?`{}')
    return "".join(
        f"%{b:02X}" if b < 0x20 or b >= 0x7F or b in unsafe else chr(b) for b in path.encode()
    )


def _meta_headers(meta: FileMeta, content_type: str | None = None) -> list[tuple[str, str]]:
    """``set_file_meta_headers`` (sb §5)."""
    return [
        ("Content-Type", content_type or meta.content_type),
        ("X-Created", str(meta.created)),
        ("X-Last-Modified", str(meta.last_modified)),
        ("X-Content-Length", str(meta.size)),
        ("X-Permission", meta.perm),
    ]


def _method_not_allowed(allow: str) -> _Response:
    return _Response(405, [("Allow", allow)])


_SHELL_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<base href="{prefix}/">
<title>SilverBullet</title>
</head>
<body>
<div id="sb-root"></div>
<script type="module" src="{prefix}/.client/client.js"></script>
</body>
</html>
"""

_AUTH_HTML = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Login to SilverBullet</title></head>
<body><form action="{prefix}/.auth" method="post">
<input name="username"><input name="password" type="password"><button>Login</button>
</form></body>
</html>
"""

_NO_SPACE_HTML = (
    b"<html><body><h1>No space here</h1><p>Manage spaces in the "
    b'<a href="/.spaces">spaces UI</a>.</p></body></html>'
)


class FakeSilverBullet:
    """SilverBullet ``/.fs`` server over a space folder on disk, for tests.

    Use as a context manager (or ``start()``/``close()``)::

        with FakeSilverBullet(token="secret") as sb:
            httpx.get(f"{sb.url}/.fs", headers={"Authorization": "Bearer secret"})

    Arguments:
        space: folder to serve; by default a fresh temporary folder, removed on close.
        token: Bearer token; ``None`` leaves the server open (sb §3).
        read_only: ``SB_READ_ONLY`` (sb §8); may be flipped while running.
        url_prefix: ``SB_URL_PREFIX`` such as ``/sb`` (sb §2).
        flavor: ``"rust"`` (2.10+, default) or ``"go"`` (2.1-2.9): the listing then
            307-redirects to ``/`` without ``X-Sync-Mode``, write failures are 500
            ``Write failed``, and there is no ``Last-Modified`` nor 304 (sb §2, §5, §8).
        space_ignore: ``SB_SPACE_IGNORE`` patterns, gitignore syntax (sb §4).
        bundled: read-only files of the embedded ``base_fs`` underlay (sb §2).
        space_folder_path: what ``X-Space-Path`` and ``/.config`` report; default the
            space folder's absolute path.
        index_page: ``SB_INDEX_PAGE``, reported by ``/.config``.
        clock: the ms clock stamping writes; default a new running ``MsClock``.
        faults: the real server's behaviour under concurrent requests (torn reads,
            interleaved PUTs, coarse mtimes); ``None`` (default) writes in one step.
        record_bodies: keep each request's body in the request log (``sb.record_bodies``).
    """

    def __init__(
        self,
        space: str | os.PathLike[str] | None = None,
        *,
        token: str | None = None,
        read_only: bool = False,
        url_prefix: str = "",
        flavor: Literal["rust", "go"] = "rust",
        space_ignore: str = "",
        bundled: Mapping[str, str | bytes] | None = None,
        space_folder_path: str | None = None,
        index_page: str = "index",
        clock: MsClock | None = None,
        faults: RealServerFaults | None = None,
        record_bodies: bool = False,
    ) -> None:
        if token == "":
            raise ValueError("token must be a non-empty string or None")
        if flavor not in ("rust", "go"):
            raise ValueError(f"unknown flavor {flavor!r}")
        self._owns_space = space is None
        base = Path(tempfile.mkdtemp(prefix="fake-sb-")) if space is None else Path(space)
        base.mkdir(parents=True, exist_ok=True)
        self.space: Path = base.resolve()
        self.token = token
        self.read_only = read_only
        self.url_prefix = _normalize_prefix(url_prefix)
        self.flavor: Literal["rust", "go"] = flavor
        self.space_ignore = space_ignore
        self.space_folder_path = space_folder_path or str(self.space)
        self.index_page = index_page
        self.clock = clock or MsClock()
        self.latency_ms = 0
        """Delay added to every request, in ms."""
        self.drip_bytes_per_second = 0.0
        """Hostile: send every response body at this rate (0: at once). A server that answers,
        byte after byte, never silent long enough for a per-read timeout to fire."""
        self.endless_listing = False
        """Hostile: the listing never ends: the real entries, then made-up skills forever
        (chunked, at ``drip_bytes_per_second`` if set)."""
        self.faults = faults
        """The fault model in force; may be swapped or cleared while running."""
        self.record_bodies = record_bodies
        """Whether the request log keeps bodies (e.g. to tell which PUT removed a line)."""
        # Under ``faults``: makes each disk step and its mtime stamp one event for readers.
        self._disk_lock = threading.Lock()
        self._write_locks: dict[Path, threading.Lock] = {}
        # PUTs waiting for a write in progress to finish, per file (``wait_for_blocked_write``).
        self._blocked_writes: dict[Path, int] = {}
        self._blocked_changed = threading.Condition()
        self._bundled = {name: _as_bytes(data) for name, data in (bundled or {}).items()}
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._errors: list[BaseException] = []
        self._fails: list[_Rule] = []
        self._delays: list[_Rule] = []
        self._resets: list[_Rule] = []
        self._tears: list[_Rule] = []
        self._holds: dict[str, WriteHold] = {}
        self._births: dict[tuple[int, int], int] = {}
        self._probe_hooks: dict[str, _ProbeHook] = {}
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeSilverBullet:
        """Start serving on 127.0.0.1 on a free port, in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("FakeSilverBullet is already running")
        self._httpd = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-silverbullet",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self, *, raise_errors: bool = True) -> None:
        """Stop serving, cut open connections, remove an owned temp space.

        Raises ``RuntimeError`` if a hook callback or the server itself failed while
        handling a request (the client saw a 500 then), unless ``raise_errors`` is False.
        """
        with self._lock:
            holds = list(self._holds.values())
            self._holds.clear()
            connections = list(self._connections)
        for hold in holds:
            hold.release()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._owns_space:
            shutil.rmtree(self.space, ignore_errors=True)
        if raise_errors and self._errors:
            raise RuntimeError("FakeSilverBullet failed while serving") from self._errors[0]

    def __enter__(self) -> FakeSilverBullet:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(raise_errors=exc_type is None)

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT``, without the URL prefix."""
        if self._httpd is None:
            raise RuntimeError("FakeSilverBullet is not running")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """Base URL of the space: the origin plus the URL prefix (``<url>/.fs``)."""
        return self.origin + self.url_prefix

    # ------------------------------------------------------------------ request log

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request answered (or dropped) so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_matching(
        self, method: str | None = None, prefix: str | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests with this method and whose decoded ``path`` starts with ``prefix``."""
        return [
            r
            for r in self.requests
            if (method is None or r.method == method.upper())
            and (prefix is None or r.path.startswith(prefix))
        ]

    def clear_requests(self) -> None:
        """Forget the recorded requests."""
        with self._lock:
            self._requests.clear()

    # ------------------------------------------------------------------ fault hooks

    def fail_next(
        self,
        status: int = 500,
        *,
        method: str | None = None,
        path: str | None = None,
        times: int = 1,
        body: str = "Injected failure",
    ) -> None:
        """Answer the next ``times`` matching requests with ``status`` without touching the space.

        ``path`` is a space file path (``Agents/x.md``) or, starting with ``/``, a
        decoded route (``/.fs`` for the listing); ``None`` matches every request.
        """
        rule = _Rule(method, path, times, status=status, body=body.encode())
        with self._lock:
            self._fails.append(rule)

    def delay_next(
        self, ms: int, *, method: str | None = None, path: str | None = None, times: int = 1
    ) -> None:
        """Delay the next ``times`` matching requests by ``ms`` (on top of ``latency_ms``)."""
        with self._lock:
            self._delays.append(_Rule(method, path, times, delay_ms=ms))

    def reset_next(
        self,
        *,
        method: str | None = None,
        path: str | None = None,
        after_apply: bool = False,
        times: int = 1,
    ) -> None:
        """Reset the connection (TCP RST, no response) on the next ``times`` matching requests.

        With ``after_apply`` the request is carried out first (a PUT is written), so
        the client cannot tell whether it took effect.
        """
        with self._lock:
            self._resets.append(_Rule(method, path, times, after_apply=after_apply))

    def tear_next_read(self, path: str, *, body: str | bytes | None = None, times: int = 1) -> None:
        """Make the next ``times`` full GETs of ``path`` torn (sb §5, §10).

        Headers still come from the file's stat taken before the read; the body
        served is ``body`` (e.g. a newer version) or, by default, the first half of
        the current content, so ``len(body) != X-Content-Length`` for a non-empty file.
        """
        rule = _Rule(None, path, times, body=None if body is None else _as_bytes(body))
        with self._lock:
            self._tears.append(rule)

    def wait_for_blocked_write(self, path: str, timeout: float = 10.0) -> bool:
        """Wait until a PUT of ``path`` is waiting for another write of it to finish (under
        ``faults``); False on timeout. What a test asserts while it waits is then about a PUT
        that has really arrived, not one that has not been sent yet."""
        target = self._safe_path(path)
        with self._blocked_changed:
            return self._blocked_changed.wait_for(
                lambda: self._blocked_writes.get(target, 0) > 0, timeout
            )

    def hold_next_write(self, path: str, *, after_bytes: int) -> WriteHold:
        """Pause the next PUT of ``path`` after truncating and writing ``after_bytes`` bytes.

        While held, the file on disk (and any GET) shows the partial content: the
        write is not atomic (sb §6).  Call ``release()`` on the returned handle.
        """
        hold = WriteHold(path, after_bytes)
        with self._lock:
            self._holds[path] = hold
        return hold

    def on_probe_before_put(
        self,
        path: str,
        callback: Callable[[str], object],
        *,
        times: int = 1,
        require_probe: bool = True,
    ) -> None:
        """Call ``callback(path)`` between a meta probe of ``path`` and the next PUT of it.

        A successful ``X-Get-Meta`` GET of ``path`` arms the hook; the next PUT of
        ``path`` runs the callback before writing.  This is the lost-update window of
        sb §6, e.g. ``lambda p: sb.write(p, human_text)``.  With ``require_probe=False``
        the callback runs before each of the next ``times`` PUTs of ``path``, probed or not.
        """
        hook = _ProbeHook(callback, times, require_probe, armed=not require_probe)
        with self._lock:
            self._probe_hooks[path] = hook

    def clear_faults(self) -> None:
        """Drop every pending fault rule, probe hook and write hold (holds are released)."""
        with self._lock:
            holds = list(self._holds.values())
            self._holds.clear()
            self._fails.clear()
            self._delays.clear()
            self._resets.clear()
            self._tears.clear()
            self._probe_hooks.clear()
        for hold in holds:
            hold.release()

    # ------------------------------------------------------------------ the human's side

    def write(self, path: str, content: str | bytes, *, mtime_ms: int | None = None) -> FileMeta:
        """Write a file straight to disk, as a human or another process would.

        The mtime is ``mtime_ms`` or the server clock (coarse under ``faults``); not
        recorded as a request.  Readers see it land in one step.
        """
        target = self._helper_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._disk_step():
            new = not target.exists()
            with open(target, "wb") as fh:
                if new:
                    self._note_birth(fh)
                fh.write(_as_bytes(content))
            self._stamp(target, self._server_mtime() if mtime_ms is None else mtime_ms)
        return self.meta(path)

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes on disk."""
        return self._helper_path(path).read_bytes()

    def read(self, path: str) -> str:
        """The file's text on disk (UTF-8)."""
        return self.read_bytes(path).decode("utf-8")

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file on disk."""
        return self._helper_path(path).is_file()

    def delete(self, path: str) -> None:
        """Delete a file from disk, as a human would (empty folders are left alone)."""
        target = self._helper_path(path)
        self._forget_birth(target)
        target.unlink()

    def meta(self, path: str) -> FileMeta:
        """What ``X-Get-Meta`` reports for a file on disk; ``FileNotFoundError`` if absent."""
        target = self._helper_path(path)
        with self._disk_step():
            return self._meta_from_stat(path, os.stat(target))

    def set_mtime(self, path: str, ms: int) -> FileMeta:
        """Set a file's mtime to ``ms``, as ``touch`` would."""
        self._stamp(self._helper_path(path), ms)
        return self.meta(path)

    def listing(self) -> list[FileMeta]:
        """What ``GET /.fs`` would list right now (sb §4)."""
        with self._disk_step():
            files = self._disk_list()
        names = {f.name for f in files}
        files.extend(
            meta
            for name in sorted(self._bundled)
            if name not in names and (meta := self._bundled_meta(name)) is not None
        )
        return files

    def fork_conflict(self, path: str, browser_content: str | bytes) -> str | None:
        """Resolve a sync conflict on ``path`` as SilverBullet's browser client does (sb §11).

        If the server's bytes equal ``browser_content`` nothing happens and ``None`` is
        returned.  Otherwise the server's current content is copied to
        ``<base>.conflicted:<lastModified>.<ext>`` (``<path>.conflicted:<ms>`` without an
        extension; ``lastModified`` is the server's before the fork), then
        ``browser_content`` is written over ``path``; both writes are stamped with the
        clock.  Returns the conflict copy's path.  Done on disk, not recorded.
        """
        browser = _as_bytes(browser_content)
        server_data = self.read_bytes(path)
        if server_data == browser:
            return None
        last_modified = self.meta(path).last_modified
        pieces = path.split(".")
        if len(pieces) == 1:
            conflict = f"{path}.conflicted:{last_modified}"
        else:
            conflict = f"{'.'.join(pieces[:-1])}.conflicted:{last_modified}.{pieces[-1]}"
        self.write(conflict, server_data)
        self.write(path, browser)
        return conflict

    # ------------------------------------------------------------------ space layer

    def _helper_path(self, path: str) -> Path:
        try:
            return self._safe_path(path)
        except _PathOutsideRoot:
            raise ValueError(f"path outside the space: {path!r}") from None

    def _safe_path(self, path: str) -> Path:
        """``DiskSpacePrimitives::safe_path``: reject absolute paths and ``..`` (sb §9)."""
        if path.startswith("/") or ".." in path.split("/"):
            raise _PathOutsideRoot()
        return self.space / path

    def _disk_step(self) -> contextlib.AbstractContextManager[object]:
        """Under ``faults``, the lock making one disk step and its mtime stamp atomic.

        Without it a reader could catch the kernel's own mtime between a write and
        the stamp from ``clock``; without ``faults`` every PUT is one step anyway.
        """
        return self._disk_lock if self.faults is not None else contextlib.nullcontext()

    def _server_mtime(self) -> int:
        """The mtime the server's own write leaves now: the clock, coarse under ``faults``."""
        faults = self.faults
        now = self.clock.now()
        return now if faults is None else faults.stamp(now)

    def _stamp(self, target: Path, ms: int) -> None:
        """Set the mtime to ``ms``, keeping the atime; errors are ignored like upstream."""
        try:
            atime_ns = os.stat(target).st_atime_ns
            os.utime(target, ns=(atime_ns, ms * 1_000_000))
        except (OSError, OverflowError, ValueError):
            pass

    def _note_birth(self, fh: io.BufferedWriter) -> None:
        """Remember the clock time at which the fake created this file (its ``created``)."""
        self._note_birth_fd(fh.fileno())

    def _note_birth_fd(self, fd: int) -> None:
        st = os.fstat(fd)
        with self._lock:
            self._births[(st.st_dev, st.st_ino)] = self.clock.now()

    def _forget_birth(self, target: Path) -> None:
        with contextlib.suppress(OSError):
            st = os.stat(target)
            with self._lock:
                self._births.pop((st.st_dev, st.st_ino), None)

    def _meta_from_stat(self, name: str, st: os.stat_result) -> FileMeta:
        """``file_info_to_meta``: ms timestamps; ``created`` is the birth time (sb §4).

        Python has no birth time on Linux, so the fake remembers when it created a
        file (by inode; it survives overwrites like a real birth time).  A file made
        by anything else reports ``st_birthtime`` where Python has it, else its mtime,
        as the real server does on filesystems without birth time.
        """
        last_modified = st.st_mtime_ns // 1_000_000
        with self._lock:
            created = self._births.get((st.st_dev, st.st_ino))
        if created is None:
            birth = getattr(st, "st_birthtime", None)
            created = int(birth * 1000) if birth is not None else last_modified
        return FileMeta(name, created, last_modified, content_type_for(name), st.st_size, "rw")

    def _bundled_meta(self, path: str) -> FileMeta | None:
        data = self._bundled.get(path)
        if data is None:
            return None
        return FileMeta(
            path,
            BUNDLED_TIMESTAMP_MS,
            BUNDLED_TIMESTAMP_MS,
            content_type_for(path),
            len(data),
            "ro",
        )

    def _disk_meta(self, path: str) -> FileMeta:
        target = self._safe_path(path)
        try:
            with self._disk_step():
                st = os.stat(target)
        except FileNotFoundError:
            raise _NotFound() from None
        except (OSError, ValueError) as exc:
            raise _IoError(_os_error_text(exc)) from None
        return self._meta_from_stat(path, st)

    def _space_meta(self, path: str) -> FileMeta:
        """Disk first, then the bundled underlay; any disk error falls through (sb §2)."""
        try:
            return self._disk_meta(path)
        except _SpaceError:
            bundled = self._bundled_meta(path)
            if bundled is None:
                raise _NotFound() from None
            return bundled

    def _disk_read(self, path: str) -> tuple[bytes, FileMeta]:
        """``read_file``: stat first, then read, so the headers may be older than the body."""
        meta = self._disk_meta(path)
        self._step_hook(DiskStep(path, "stat", meta.size))
        try:
            if self.faults is None:
                data = self._safe_path(path).read_bytes()
            else:
                data = self._read_by_pages(path)
        except FileNotFoundError:
            raise _NotFound() from None
        except (OSError, ValueError) as exc:
            raise _IoError(_os_error_text(exc)) from None
        tear = self._take_for_path(self._tears, path)
        if tear is not None:
            data = tear.body if tear.body is not None else data[: len(data) // 2]
        return data, meta

    def _read_by_pages(self, path: str) -> bytes:
        """``fs::read`` as concurrent writers see it: the kernel copies a page at a time,
        so a PUT landing between two pages leaves a body cut short, or one version's
        start followed by another's rest (measured: sb §10)."""
        pages: list[bytes] = []
        size = 0
        with open(self._safe_path(path), "rb", buffering=0) as fh:
            while True:
                with self._disk_lock:
                    page = fh.read(_PAGE_SIZE)
                if not page:
                    return b"".join(pages)
                pages.append(page)
                size += len(page)
                self._step_hook(DiskStep(path, "read", size))

    def _space_read(self, path: str) -> tuple[bytes, FileMeta]:
        """Disk read, falling through to the bundled underlay on any error (sb §2)."""
        try:
            return self._disk_read(path)
        except _SpaceError:
            bundled = self._bundled_meta(path)
            if bundled is None:
                raise _NotFound() from None
            return self._bundled[path], bundled

    def _bundled_only(self, path: str) -> bool:
        if path not in self._bundled:
            return False
        try:
            self._disk_meta(path)
        except _SpaceError:
            return True
        return False

    def _space_write(
        self, path: str, data: bytes, last_modified: int, hold: WriteHold | None
    ) -> FileMeta:
        """Fallthrough guard, read-only guard, then ``DiskSpacePrimitives::write_file`` (sb §6)."""
        if self._bundled_only(path):
            raise _ReadOnly(f"Cannot write file {path}: read-only")
        if self.read_only:
            raise _ReadOnly(f"Cannot write file {path}: read-only mode")
        target = self._safe_path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except (OSError, ValueError) as exc:
            raise _WriteError(f"{path}: {_os_error_text(exc)}") from None
        faults = self.faults
        if faults is not None:
            try:
                self._torn_write(path, target, data, faults, hold)
            except (OSError, ValueError) as exc:
                raise _WriteError(f"{path}: {_os_error_text(exc)}") from None
            if last_modified > 0:
                with self._disk_step():
                    self._stamp(target, last_modified)
            return self._disk_meta(path)
        try:
            # Truncate and rewrite in place, like Rust's fs::write: not atomic.
            new = not target.exists()
            with open(target, "wb") as fh:
                if new:
                    self._note_birth(fh)
                if hold is not None:
                    fh.write(data[: hold.after_bytes])
                    fh.flush()
                    self._stamp(target, self.clock.now())
                    hold._pause()
                    fh.write(data[hold.after_bytes :])
                else:
                    fh.write(data)
        except (OSError, ValueError) as exc:
            raise _WriteError(f"{path}: {_os_error_text(exc)}") from None
        self._stamp(target, last_modified if last_modified > 0 else self.clock.now())
        return self._disk_meta(path)

    def _torn_write(
        self,
        path: str,
        target: Path,
        data: bytes,
        faults: RealServerFaults,
        hold: WriteHold | None,
    ) -> None:
        """``fs::write`` as the real server's concurrent readers and writers see it.

        See ``RealServerFaults``.  A ``hold`` pauses at ``after_bytes``: before the
        empty phase ends for 0, else after that byte, holding the file as a
        ``write(2)`` in progress would.
        """
        with self._lock:
            file_lock = self._write_locks.setdefault(target, threading.Lock())
        with self._blocked_changed:
            self._blocked_writes[target] = self._blocked_writes.get(target, 0) + 1
            self._blocked_changed.notify_all()
        with file_lock, self._disk_step():
            with self._blocked_changed:
                self._blocked_writes[target] -= 1
            try:
                previous: int | None = os.stat(target).st_mtime_ns
            except FileNotFoundError:
                previous = None
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            if previous is None:
                self._note_birth_fd(fd)
                self._stamp(target, self._server_mtime())
            else:
                os.utime(target, ns=(os.stat(target).st_atime_ns, previous))
        try:
            self._step_hook(DiskStep(path, "truncated", 0))
            if hold is not None and (hold.after_bytes <= 0 or not data):
                hold._pause()
            time.sleep(faults.truncate_ms / 1000)
            with self._disk_step():
                self._stamp(target, self._server_mtime())
            cuts = faults.cuts(len(data), None if hold is None else hold.after_bytes)
            pause = faults.write_ms / 1000 / max(1, len(cuts) - 1)
            with file_lock:
                start = 0
                for end in cuts:
                    if start > 0:
                        time.sleep(pause)
                    with self._disk_step():
                        os.pwrite(fd, data[start:end], start)
                        self._stamp(target, self._server_mtime())
                    self._step_hook(DiskStep(path, "written", end))
                    if hold is not None and end == min(hold.after_bytes, len(data)):
                        hold._pause()
                    start = end
        finally:
            os.close(fd)

    def _step_hook(self, step: DiskStep) -> None:
        faults = self.faults
        if faults is None or faults.on_step is None:
            return
        try:
            faults.on_step(step)
        except Exception as exc:
            self._note_error(exc)

    def _space_delete(self, path: str) -> None:
        """Guards as for writes, then remove the file and its empty parents (sb §7)."""
        if self._bundled_only(path):
            raise _ReadOnly(f"Cannot delete file {path}: read-only")
        if self.read_only:
            raise _ReadOnly(f"Cannot delete file {path}: read-only mode")
        target = self._safe_path(path)
        self._forget_birth(target)
        try:
            os.remove(target)
        except FileNotFoundError:
            raise _NotFound() from None
        except (OSError, ValueError) as exc:
            raise _IoError(_os_error_text(exc)) from None
        parent = target.parent
        while parent != self.space and self.space in parent.parents:
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def _ignore_rules(self) -> _IgnoreRules:
        text = self.space_ignore
        gitignore = self.space / ".gitignore"
        if gitignore.is_file():
            text += "\n" + gitignore.read_text(encoding="utf-8", errors="replace")
        return _IgnoreRules(text)

    def _disk_list(self) -> list[FileMeta]:
        """``fetch_file_list`` (sb §4): recursive, symlinks followed, filtered, sorted."""
        rules = self._ignore_rules()
        files: list[FileMeta] = []
        seen: set[tuple[int, int]] = set()

        def walk(folder: str, rel_prefix: str) -> None:
            try:
                st = os.stat(folder)
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                return
            if (st.st_dev, st.st_ino) in seen:
                return
            seen.add((st.st_dev, st.st_ino))
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = rel_prefix + entry.name
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    continue
                if is_dir:
                    if not rules.match(rel, True):
                        walk(entry.path, rel + "/")
                    continue
                if not _has_extension(entry.name) or rules.ignored(rel, False):
                    continue
                try:
                    files.append(self._meta_from_stat(rel, entry.stat()))
                except OSError:
                    continue

        walk(str(self.space), "")
        return files

    # ------------------------------------------------------------------ HTTP layer

    def _take_matching(self, rules: list[_Rule], req: _Request) -> _Rule | None:
        """Consume one use of the first rule matching ``req``."""
        return self._consume(rules, lambda rule: rule.matches(req))

    def _take_for_path(self, rules: list[_Rule], path: str) -> _Rule | None:
        """Consume one use of the first rule for the space file ``path``."""
        return self._consume(rules, lambda rule: rule.path == path)

    def _consume(self, rules: list[_Rule], pick: Callable[[_Rule], bool]) -> _Rule | None:
        with self._lock:
            for rule in rules:
                if pick(rule):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        rules.remove(rule)
                    return rule
        return None

    def _record(self, req: _Request, status: int | None) -> None:
        entry = RecordedRequest(
            req.method,
            req.path,
            req.raw_path + (f"?{req.query}" if req.query else ""),
            req.fs_path,
            dict(req.headers),
            len(req.body),
            status,
            req.body if self.record_bodies else None,
            req.received,
            time.monotonic(),
        )
        with self._lock:
            self._requests.append(entry)

    def _note_error(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(exc)

    def _parse(self, method: str, target: str, headers: dict[str, str], body: bytes) -> _Request:
        raw_path, _, query = target.partition("?")
        route: str | None = raw_path
        if self.url_prefix:
            inside = raw_path.startswith(self.url_prefix + "/")
            route = raw_path[len(self.url_prefix) :] if inside else None
        path = unquote(route if route is not None else raw_path, errors="replace")
        fs_path: str | None = None
        if route is not None and route.startswith("/.fs/") and route != "/.fs/":
            try:
                fs_path = unquote(route[len("/.fs/") :], errors="strict")
            except UnicodeDecodeError:
                fs_path = None
        return _Request(method, raw_path, query, route, path, fs_path, headers, body)

    def _serve(self, req: _Request) -> _Response | None:
        """Answer one request, or return None to drop the connection."""
        delay = self.latency_ms
        slow = self._take_matching(self._delays, req)
        if slow is not None:
            delay += slow.delay_ms
        if delay > 0:
            time.sleep(delay / 1000)
        failure = self._take_matching(self._fails, req)
        if failure is not None:
            return _Response(failure.status, [("Content-Type", _TEXT_PLAIN)], failure.body or b"")
        reset = self._take_matching(self._resets, req)
        if reset is not None and not reset.after_apply:
            return None
        response = self._route(req)
        return None if reset is not None else response

    def _route(self, req: _Request) -> _Response:
        """``router.rs`` behind ``multi/dispatch.rs`` (sb §2, §3)."""
        route = req.route
        if route is None:
            return self._outside_prefix(req)
        if route in ("/.fs", "/.fs/", "/.config"):
            allow = "GET,HEAD"
        elif route.startswith("/.fs/"):
            allow = "GET,HEAD,PUT,DELETE"
        else:
            return self._open_route(req, route)
        if not self._authorized(req):
            # axum stamps ``Allow`` on a refused method even though auth answers first.
            return self._unauthorized(allow=None if req.method in allow.split(",") else allow)
        if req.method not in allow.split(","):
            return _method_not_allowed(allow)
        is_get = req.method in ("GET", "HEAD")
        if route == "/.config":
            return self._config()
        if route in ("/.fs", "/.fs/"):
            return self._gzip(req, self._list(req))
        if req.fs_path is None:
            invalid = _Response(
                400, [("Content-Type", _TEXT_PLAIN)], b"Invalid URL: Invalid UTF-8 in `path`"
            )
            return self._gzip(req, invalid) if is_get else invalid
        if is_get:
            return self._gzip(req, self._get(req, req.fs_path))
        if req.method == "PUT":
            return self._put(req, req.fs_path)
        return self._delete(req.fs_path)

    def _open_route(self, req: _Request, route: str) -> _Response:
        """Routes outside the auth layer: ``/.ping``, ``/.auth`` and the SPA fallback."""
        if route == "/.auth":
            return self._auth_page(req)
        if req.method not in ("GET", "HEAD"):
            return _method_not_allowed("GET,HEAD")
        return self._ping() if route == "/.ping" else self._spa_fallback(req)

    def _authorized(self, req: _Request) -> bool:
        if self.token is None:
            return True
        given = req.headers.get("authorization", "").encode()
        return hmac.compare_digest(given, f"Bearer {self.token}".encode())

    def _unauthorized(self, *, allow: str | None = None) -> _Response:
        """401 with ``Location: <prefix>/.auth`` and body ``Unauthorized`` (sb §3)."""
        headers = [("Content-Type", _TEXT_PLAIN), ("Location", f"{self.url_prefix}/.auth")]
        if allow is not None:
            headers.append(("Allow", allow))
        return _Response(401, headers, b"Unauthorized")

    def _outside_prefix(self, req: _Request) -> _Response:
        """``dispatch.rs`` for paths outside ``SB_URL_PREFIX``."""
        if req.raw_path == self.url_prefix:
            query = f"?{req.query}" if req.query else ""
            return _Response(307, [("Location", f"{self.url_prefix}/{query}")])
        if req.raw_path == "/":
            return _Response(307, [("Location", "/.spaces")])
        return _Response(404, [("Content-Type", "text/html")], _NO_SPACE_HTML)

    def _gzip(self, req: _Request, response: _Response) -> _Response:
        """tower-http ``CompressionLayer`` on ``/.fs`` GETs (sb §2).

        A compressible body (32 bytes or more, not an image) always gets
        ``Vary: accept-encoding``; it is gzipped only when the client accepts gzip.
        """
        content_type = response.header("Content-Type") or ""
        if (
            response.stream is not None
            or len(response.body) < GZIP_MIN_SIZE
            or (content_type.startswith("image/") and not content_type.startswith("image/svg"))
        ):
            return response
        headers = [*response.headers, ("Vary", "accept-encoding")]
        if not _accepts_gzip(req.headers.get("accept-encoding", "")):
            return _Response(response.status, headers, response.body)
        body = gzip.compress(response.body, mtime=0)
        return _Response(response.status, [*headers, ("Content-Encoding", "gzip")], body)

    def _list(self, req: _Request) -> _Response:
        """``GET /.fs`` (sb §4); the Go flavor wants ``X-Sync-Mode`` (sb §2)."""
        if self.flavor == "go" and not req.headers.get("x-sync-mode"):
            return _Response(
                307,
                [("Location", "/"), ("Content-Type", "text/html; charset=utf-8")],
                b'<a href="/">Temporary Redirect</a>.\n\n',
            )
        body = json.dumps([f.to_json() for f in self.listing()], separators=(",", ":"))
        headers = [
            ("Content-Type", "application/json"),
            ("X-Space-Path", self.space_folder_path),
            ("Cache-Control", "no-cache"),
        ]
        if self.endless_listing:
            return _Response(200, headers, body[:-1].encode(), stream=self._made_up_entries())
        return _Response(200, headers, body.encode())

    def _made_up_entries(self) -> Iterator[bytes]:
        start = 0
        while True:  # a thousand entries a chunk: as fast as a server gone wrong can send
            batch = []
            for number in range(start + 1, start + 1001):
                meta = FileMeta(f"Agents/Skills/s{number}/SKILL.md", 1, 1, "text/markdown", 9, "rw")
                batch.append(b"," + json.dumps(meta.to_json(), separators=(",", ":")).encode())
            start += 1000
            yield b"".join(batch)

    def _get(self, req: _Request, path: str) -> _Response:
        """``handle_fs_get``: meta probe, If-Modified-Since, full read (sb §5)."""
        if "x-get-meta" in req.headers:
            try:
                meta = self._space_meta(path)
            except _SpaceError as exc:
                return _Response(exc.status, [], exc.body)
            with self._lock:
                hook = self._probe_hooks.get(path)
                if hook is not None:
                    hook.armed = True
            return _Response(200, [*_meta_headers(meta), ("Cache-Control", "no-store")])
        rust = self.flavor == "rust"
        since = req.headers.get("if-modified-since")
        if since is not None and rust:
            try:
                stamp = http_date(self._space_meta(path).last_modified)
            except _SpaceError:
                stamp = ""
            if stamp and since == stamp:
                return _Response(304, [("Last-Modified", stamp), ("Vary", "Accept")])
        try:
            data, meta = self._space_read(path)
        except _SpaceError as exc:
            return _Response(exc.status, [], exc.body)
        served_type = None
        if _OCTET_STREAM in req.headers.get("accept", ""):
            served_type = _OCTET_STREAM
        headers = [
            *_meta_headers(meta, served_type),
            ("X-Content-Type", meta.content_type),
            ("Cache-Control", "no-cache"),
            ("Vary", "Accept"),
        ]
        if rust:
            headers.append(("Last-Modified", http_date(meta.last_modified)))
        return _Response(200, headers, data)

    def _put(self, req: _Request, path: str) -> _Response:
        """``handle_fs_put`` (sb §6): only ``X-Last-Modified`` of the request is used."""
        with self._lock:
            hook = self._probe_hooks.get(path)
            if hook is not None and not hook.armed:
                hook = None
            if hook is not None:
                hook.armed = not hook.require_probe
                hook.remaining -= 1
                if hook.remaining <= 0:
                    del self._probe_hooks[path]
            hold = self._holds.pop(path, None)
        if hook is not None:
            try:
                hook.callback(path)
            except Exception as exc:
                self._note_error(exc)
        try:
            meta = self._space_write(
                path, req.body, _parse_i64(req.headers.get("x-last-modified")), hold
            )
        except _SpaceError as exc:
            if self.flavor == "go":
                return _Response(500, [("Content-Type", _TEXT_PLAIN)], b"Write failed\n")
            return _Response(exc.status, [], exc.body)
        return _Response(200, [*_meta_headers(meta), ("Cache-Control", "no-store")], b"OK")

    def _delete(self, path: str) -> _Response:
        """``handle_fs_delete`` (sb §7)."""
        try:
            self._space_delete(path)
        except _SpaceError as exc:
            return _Response(exc.status, [], exc.body)
        return _Response(200, [], b"OK")

    def _config(self) -> _Response:
        """``/.config``: the boot config, the only place read-only mode shows (sb §12)."""
        config = {
            "spaceFolderPath": self.space_folder_path,
            "spaceName": "SilverBullet",
            "indexPage": self.index_page,
            "readOnly": self.read_only,
            "logPush": False,
            "enableClientEncryption": self.token is not None,
            "accountManaged": False,
            "shellBackend": "noop" if self.read_only else "local",
            "disableServiceWorker": False,
        }
        headers = [("Content-Type", "application/json"), ("Cache-Control", "no-cache")]
        return _Response(200, headers, json.dumps(config).encode())

    def _ping(self) -> _Response:
        """``/.ping``: open, ``OK`` plus version and space path (sb §12)."""
        headers = [
            ("Content-Type", _TEXT_PLAIN),
            ("Cache-Control", "no-cache"),
            ("X-Space-Path", self.space_folder_path),
            ("X-Server-Version", SERVER_VERSION),
        ]
        return _Response(200, headers, b"OK")

    def _auth_page(self, req: _Request) -> _Response:
        """``/.auth``: login page, or 403 when auth is off (sb §3); login is not modelled."""
        if req.method not in ("GET", "HEAD"):
            body = b"FakeSilverBullet does not model password login; use a Bearer token"
            return _Response(501, [("Content-Type", _TEXT_PLAIN)], body)
        if self.token is None:
            return _Response(403, [("Content-Type", _TEXT_PLAIN)], b"Authentication not enabled")
        page = _AUTH_HTML.format(prefix=self.url_prefix).encode()
        return _Response(200, [("Content-Type", "text/html")], page)

    def _spa_fallback(self, req: _Request) -> _Response:
        """Any other GET: the client's HTML shell with 200 (sb §2, ``bundle.rs``)."""
        rel = (req.route or "/").lstrip("/")
        if rel and not self._authorized(req):
            if rel.endswith(".md"):
                return _Response(401, [("Location", f"{self.url_prefix}/.auth")], b"Unauthorized")
            location = f"{self.url_prefix}/.auth?from=/{_encode_from(rel)}"
            return _Response(302, [("Location", location)])
        page = _SHELL_HTML.format(prefix=self.url_prefix).encode()
        return _Response(200, [("Content-Type", "text/html"), ("Cache-Control", "no-cache")], page)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeSilverBullet) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle plus the
        # client's delayed ACK stall every keep-alive response by ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.fake._lock:
            self.server.fake._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.fake._lock:
            self.server.fake._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: object) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        self._handle()

    do_HEAD = do_PUT = do_DELETE = do_POST = do_PATCH = do_OPTIONS = do_GET

    def _handle(self) -> None:
        fake = self.server.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        req = fake._parse(self.command, self.path, headers, self._read_body())
        try:
            response = fake._serve(req)
        except Exception as exc:
            fake._note_error(exc)
            body = f"FakeSilverBullet internal error: {exc!r}".encode()
            response = _Response(500, [("Content-Type", _TEXT_PLAIN)], body)
        if response is None:
            fake._record(req, None)
            self._reset()
            return
        fake._record(req, response.status)
        self._send(response, head_only=self.command == "HEAD")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, response: _Response, *, head_only: bool) -> None:
        self.send_response_only(response.status)
        self.send_header("Date", self.date_time_string())
        for name, value in response.headers:
            self.send_header(name, value)
        if response.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
        elif response.status != 304:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if head_only or response.status == 304:
            return
        if response.stream is None:
            self._write(response.body)
            return
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client hung up: the hostile server stops
            for piece in itertools.chain([response.body], response.stream):
                self._write(b"%x\r\n%b\r\n" % (len(piece), piece))

    def _write(self, data: bytes) -> None:
        """``data`` at once, or dripped at the server's ``drip_bytes_per_second``."""
        rate = self.server.fake.drip_bytes_per_second
        if rate <= 0:
            self.wfile.write(data)
            return
        step = max(1, int(rate / 10))
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client gave up waiting: so does the server
            for start in range(0, len(data), step):
                self.wfile.write(data[start : start + step])
                self.wfile.flush()
                time.sleep(step / rate)

    def _reset(self) -> None:
        """Abort the connection with a TCP RST and no response."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
