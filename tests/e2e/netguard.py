"""A loopback HTTP(S) proxy that refuses and records every connection attempt.

Point ``HTTP_PROXY``/``HTTPS_PROXY`` (and the lowercase forms) of the process under test at
``NetGuard.url`` with ``NO_PROXY=127.0.0.1,localhost``: any attempt to reach another host then
shows up in ``NetGuard.attempts`` and is refused at once with ``403`` (refusing fast matters:
a black-holed proxy makes OpenCode's startup npm install hang for minutes).

Both ``CONNECT host:port`` (HTTPS tunnels) and plain absolute-URI requests (``GET http://...``)
are recorded. Stdlib only.
"""

from __future__ import annotations

import socketserver
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["Attempt", "NetGuard"]


@dataclass(frozen=True)
class Attempt:
    method: str
    target: str  # as written on the request line
    host: str  # host[:port]
    time: float = field(default_factory=time.time)

    def __str__(self) -> str:
        return f"{self.method} {self.target}"


def _host_of(method: str, target: str, headers: dict[str, str]) -> str:
    if method == "CONNECT":
        return target
    if "://" in target:
        parts = urlsplit(target)
        return parts.netloc or target
    return headers.get("host", target)


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        self.connection.settimeout(10)
        try:
            line = self.rfile.readline(65537).decode("latin-1").strip()
        except OSError:  # includes TimeoutError
            line = ""
        if not line:
            self.server.guard._record(Attempt("?", "<no request line>", "?"))
            return
        parts = line.split()
        method = parts[0].upper() if parts else "?"
        target = parts[1] if len(parts) > 1 else ""
        headers: dict[str, str] = {}
        try:
            while True:
                h = self.rfile.readline(65537).decode("latin-1")
                if h in ("\r\n", "\n", ""):
                    break
                if ":" in h:
                    k, v = h.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
        except OSError:  # includes TimeoutError
            pass
        self.server.guard._record(Attempt(method, target, _host_of(method, target, headers)))
        body = b"ocmem e2e netguard: outbound network access refused\n"
        try:
            self.wfile.write(
                b"HTTP/1.1 403 Forbidden\r\n"
                b"Content-Type: text/plain\r\n"
                b"Connection: close\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            self.wfile.flush()
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    guard: NetGuard


class NetGuard:
    """Refusing, recording proxy on 127.0.0.1 (random port)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: list[Attempt] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> NetGuard:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.guard = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="netguard",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> NetGuard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "NetGuard not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _record(self, attempt: Attempt) -> None:
        with self._lock:
            self._attempts.append(attempt)

    @property
    def attempts(self) -> list[Attempt]:
        with self._lock:
            return list(self._attempts)

    @property
    def hosts(self) -> list[str]:
        """Distinct attempted hosts, in first-seen order."""
        seen: dict[str, None] = {}
        for a in self.attempts:
            seen.setdefault(a.host, None)
        return list(seen)

    def clear(self) -> None:
        with self._lock:
            self._attempts.clear()

    def assert_no_attempts(self) -> None:
        attempts = self.attempts
        if attempts:
            listing = "\n".join(f"  - {a}" for a in attempts)
            raise AssertionError(
                f"{len(attempts)} outbound connection attempt(s) went through the netguard proxy "
                f"(hosts: {', '.join(self.hosts)}):\n{listing}\n"
                "Something tried to leave the machine. Usual causes: startup npm install of "
                "plugin deps (seed node_modules), models.opencode.ai (OPENCODE_DISABLE_MODELS_FETCH), "
                "github.com ripgrep download (put rg on PATH)."
            )
