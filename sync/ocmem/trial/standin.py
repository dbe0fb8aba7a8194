"""A SilverBullet stand-in for ``ocmem essai``: a space folder served over SilverBullet's
``/.fs`` HTTP API on the loopback (docs/silverbullet.md; the Rust server 2.10+).

What ocmem's client relies on, as the real server does it: the listing (``GET /.fs``: JSON
metadata, dot-paths and extension-less files left out, ``X-Space-Path``), reads with their
metadata headers (``X-Last-Modified``, ``X-Created``, ``X-Content-Length``, ``X-Permission``,
``Last-Modified``, gzip on request) and the metadata probe (``X-Get-Meta``), writes that create
folders and stamp the server's own millisecond (or the request's ``X-Last-Modified``), deletes,
Bearer authentication (401), paths outside the space (GET 404, PUT/DELETE 403), ``/.ping``,
``/.config`` and the HTML shell elsewhere. No ETag and no conditional write: there are none. The
developers' server, with fault injection and the Go flavour, is tests/support/sbserver.py; the
conformance suite (tests/test_sbserver_conformance.py, target « essai ») holds both to the same
rules over HTTP.

Every request is recorded (method, path, status): an essai proof counts the writes it saw.
"""

from __future__ import annotations

import email.utils
import gzip
import hmac
import json
import mimetypes
import os
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from ocmem.trial import loopback

NOT_FOUND = b"404 page not found\n"
SERVER_VERSION = "2.10.0"
OUTSIDE = b"Path not in space"
_TEXT = "text/plain; charset=utf-8"
_GZIP_FROM = 32  # bytes: a smaller body is never compressed
_I64 = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Seen:
    """A request as the stand-in answered it (``path``: the space path of a ``/.fs/`` one)."""

    method: str
    path: str | None
    status: int


def content_type(name: str) -> str:
    if name.lower().endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(name.rsplit("/", 1)[-1], strict=False)
    return guessed or "application/octet-stream"


def http_date(ms: int) -> str:
    return email.utils.formatdate(ms // 1000, usegmt=True)


class Standin:
    """The server over ``space`` (a folder). ``write``/``read`` act on the disk, as the human
    editing the space would; ``requests`` lists what came over HTTP."""

    def __init__(self, space: Path, token: str | None = None) -> None:
        self.space = space
        self.token = token
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- the human's side ------------------------------------------------------------------
    def write(self, path: str, text: str | bytes) -> None:
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        self._stamp(target, 0)

    def read(self, path: str) -> str:
        return self._inside(path).read_text(encoding="utf-8")

    def writes(self) -> list[Seen]:
        """The requests that asked to change the space (whatever their answer)."""
        with self._lock:
            return [r for r in self.requests if r.method in ("PUT", "DELETE")]

    def _authorized(self, headers: dict[str, str]) -> bool:
        given = headers.get("authorization", "").encode()
        return self.token is None or hmac.compare_digest(given, f"Bearer {self.token}".encode())

    # -- disk ------------------------------------------------------------------------------
    def _inside(self, path: str) -> Path:
        """``safe_path``: an absolute path or a ``..`` component is outside the space."""
        if path.startswith("/") or ".." in path.split("/"):
            raise PermissionError(path)
        return self.space / path

    def _stamp(self, target: Path, asked_ms: int) -> int:
        ms = asked_ms if asked_ms > 0 else time.time_ns() // 1_000_000
        os.utime(target, ns=(target.stat().st_atime_ns, ms * 1_000_000))
        return ms

    def _meta(self, name: str, target: Path) -> dict[str, str | int]:
        st = target.stat()
        modified = st.st_mtime_ns // 1_000_000
        return {
            "name": name,
            "created": modified,
            "lastModified": modified,
            "contentType": content_type(name),
            "size": st.st_size,
            "perm": "rw",
        }

    def listing(self) -> list[dict[str, str | int]]:
        found = []
        for folder, dirs, files in os.walk(self.space):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                if name.startswith(".") or name.rfind(".") <= 0:
                    continue
                target = Path(folder) / name
                found.append(self._meta(target.relative_to(self.space).as_posix(), target))
        return found

    # -- HTTP ------------------------------------------------------------------------------
    def answer(
        self, method: str, raw: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        route = raw.split("?", 1)[0]
        fs_route = route in ("/.fs", "/.fs/") or route.startswith("/.fs/")
        if (fs_route or route == "/.config") and not self._authorized(headers):
            sent = [("Location", "/.auth"), ("Content-Type", _TEXT)]
            if method not in ("GET", "HEAD", "PUT", "DELETE") and route.startswith("/.fs/"):
                sent.append(("Allow", "GET,HEAD,PUT,DELETE"))
            return 401, sent, b"Unauthorized"
        if route == "/.ping":
            return (
                200,
                [("X-Server-Version", SERVER_VERSION), ("X-Space-Path", str(self.space))],
                b"OK",
            )
        if route == "/.config":
            config = {"readOnly": False, "spaceFolderPath": str(self.space), "indexPage": "index"}
            return 200, [("Content-Type", "application/json")], json.dumps(config).encode()
        if not fs_route:
            return (
                200,
                [("Content-Type", "text/html")],
                b"<!DOCTYPE html><html><title>SilverBullet</title></html>",
            )
        if route in ("/.fs", "/.fs/"):
            if method not in ("GET", "HEAD"):
                return 405, [("Allow", "GET,HEAD")], b""
            listed = json.dumps(self.listing(), separators=(",", ":")).encode()
            return (
                200,
                [
                    ("Content-Type", "application/json"),
                    ("X-Space-Path", str(self.space)),
                    ("Cache-Control", "no-cache"),
                ],
                listed,
            )
        try:
            path = unquote(route[len("/.fs/") :], errors="strict")
        except UnicodeDecodeError:
            return 400, [("Content-Type", _TEXT)], b"Invalid URL: Invalid UTF-8 in `path`"
        if method not in ("GET", "HEAD", "PUT", "DELETE"):
            return 405, [("Allow", "GET,HEAD,PUT,DELETE")], b""
        try:
            target = self._inside(path)
        except PermissionError:
            return (404, [], NOT_FOUND) if method in ("GET", "HEAD") else (403, [], OUTSIDE)
        if method == "PUT":
            return self._put(path, target, headers, body)
        if method == "DELETE":
            if not target.is_file():
                return (404, [], NOT_FOUND) if not target.exists() else (500, [], b"Is a directory")
            target.unlink()
            return 200, [], b"OK"
        return self._get(path, target, headers)

    def _headers(self, meta: dict[str, str | int]) -> list[tuple[str, str]]:
        return [
            ("Content-Type", str(meta["contentType"])),
            ("X-Created", str(meta["created"])),
            ("X-Last-Modified", str(meta["lastModified"])),
            ("X-Content-Length", str(meta["size"])),
            ("X-Permission", str(meta["perm"])),
        ]

    def _get(
        self, path: str, target: Path, headers: dict[str, str]
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        if "x-get-meta" in headers:
            if not target.exists():
                return 404, [], NOT_FOUND
            return (
                200,
                [*self._headers(self._meta(path, target)), ("Cache-Control", "no-store")],
                b"",
            )
        if not target.is_file():
            return 404, [], NOT_FOUND
        meta = self._meta(path, target)
        stamp = http_date(int(meta["lastModified"]))
        if headers.get("if-modified-since") == stamp:
            return 304, [("Last-Modified", stamp)], b""
        sent = self._headers(meta)
        if "application/octet-stream" in headers.get("accept", ""):
            sent[0] = ("Content-Type", "application/octet-stream")
        extra = [
            ("X-Content-Type", str(meta["contentType"])),
            ("Cache-Control", "no-cache"),
            ("Last-Modified", stamp),
            ("Vary", "Accept"),
            ("Vary", "accept-encoding"),
        ]
        body = target.read_bytes()
        if "gzip" in headers.get("accept-encoding", "") and len(body) >= _GZIP_FROM:
            return 200, [*sent, *extra, ("Content-Encoding", "gzip")], gzip.compress(body)
        return 200, [*sent, *extra], body

    def _put(
        self, path: str, target: Path, headers: dict[str, str], body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)  # truncate and rewrite in place, as the real server does
        except OSError as exc:
            failed = f"Could not write file: {path}: {exc.strerror}"
            return 500, [("Content-Type", _TEXT)], failed.encode()
        asked = headers.get("x-last-modified", "").strip()
        self._stamp(target, int(asked) if _I64.fullmatch(asked) and int(asked) > 0 else 0)
        return 200, [*self._headers(self._meta(path, target)), ("Cache-Control", "no-store")], b"OK"

    def start(self) -> Standin:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, sent, data = standin.answer(self.command, self.path, headers, body)
                route = self.path.split("?", 1)[0]
                fs_path = (
                    unquote(route[5:], errors="replace") if route.startswith("/.fs/") else None
                )
                with standin._lock:
                    standin.requests.append(Seen(self.command, fs_path, status))
                self.send_response(status)
                for name, value in sent:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_HEAD = do_PUT = do_DELETE = do_POST = _handle

        self._server = loopback.serve(Handler)
        return self

    @property
    def url(self) -> str:
        assert self._server is not None, "Standin.start() d'abord"
        return loopback.url(self._server)

    def stop(self) -> None:
        if self._server is not None:
            loopback.stop(self._server)
            self._server = None

    def __enter__(self) -> Standin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
