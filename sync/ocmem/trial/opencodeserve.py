"""One ``opencode serve`` for the whole essai: started once, its sessions driven over its HTTP
API (faster than an ``opencode run`` per session, which pays OpenCode's start-up each time).

The endpoints and their pitfalls are those of the e2e harness (tests/e2e/README.md): wait for
« listening on » before the first request, then ``/global/health``; a turn's ``session.idle``
comes after the reply, so a turn ends on a ``busy`` status followed by ``session.idle``;
``POST /instance/dispose`` answers at once while the plugin's ``dispose`` (its last push) still
runs, so it ends on ``server.instance.disposed``. A permission OpenCode asks for (nobody is at
the keyboard) is answered « reject », as a user saying no, and kept: the run tells the user
which test it came in (ocmem.trial.runner).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx


class OpenCodeFailed(Exception):
    """OpenCode did not do what a turn needs (start, answer, finish): the message says what."""


@dataclass(frozen=True)
class AskedPermission:
    """A permission OpenCode asked for (``permission.asked``), refused by the essai."""

    permission: str
    patterns: tuple[str, ...] = ()
    session: str = ""

    def said(self) -> str:
        shown = ", ".join(self.patterns[:3]) + (" …" if len(self.patterns) > 3 else "")
        return f"« {self.permission} »" + (f" ({shown})" if shown else "")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Events:
    """The ``GET /global/event`` stream, read by a thread: ``(type, properties)`` in order."""

    def __init__(self, url: str, on_event: Callable[[str, dict[str, Any]], None]) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        self._cond = threading.Condition()
        self._closed = False
        self._on_event = on_event
        self._client = httpx.Client(base_url=url, trust_env=False, timeout=httpx.Timeout(None))
        self._connected = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._connected.wait(15):
            raise OpenCodeFailed("OpenCode n'a pas ouvert son flux d'événements en 15 s")

    def _read(self) -> None:
        try:
            with self._client.stream("GET", "/global/event") as response:
                for line in response.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    try:
                        payload = json.loads(line[5:]).get("payload")
                    except (ValueError, AttributeError):
                        continue
                    if not isinstance(payload, dict) or payload.get("type") == "sync":
                        continue
                    kind = str(payload.get("type"))
                    properties = payload.get("properties") or {}
                    with self._cond:
                        self.seen.append((kind, properties))
                        self._cond.notify_all()
                    if kind == "server.connected":
                        self._connected.set()
                    self._on_event(kind, properties)
        except Exception:  # OpenCode went away: the end of the run
            pass
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._connected.set()

    def mark(self) -> int:
        with self._cond:
            return len(self.seen)

    def wait(self, since: int, timeout: float, match: Callable[[str, dict[str, Any]], bool]) -> int:
        """The index of the first event at or after ``since`` that ``match`` accepts."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for index in range(since, len(self.seen)):
                    if match(*self.seen[index]):
                        return index
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    raise OpenCodeFailed(f"OpenCode n'a pas fini en {timeout:.0f} s")
                self._cond.wait(min(left, 0.5))

    def close(self) -> None:
        self._client.close()


class Serve:
    """``opencode serve`` on a free loopback port, in ``project``, with ``env``."""

    def __init__(self, binary: Path, project: Path, env: Mapping[str, str], output: Path) -> None:
        self.project = project
        self.refused_permissions: list[AskedPermission] = []
        self.sessions: list[str] = []  # the sessions opened, in order
        self.process = subprocess.Popen(
            [str(binary), "serve", "--hostname", "127.0.0.1", "--port", str(_free_port())],
            cwd=project,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.url = self._wait_listening(output)
        self.client = httpx.Client(
            base_url=self.url,
            params={"directory": str(project)},
            trust_env=False,
            timeout=httpx.Timeout(120.0, connect=5.0),
        )
        deadline = time.monotonic() + 60
        while not self._healthy():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise OpenCodeFailed(f"OpenCode ne répond pas (voir {output})")
            time.sleep(0.1)
        self.events = Events(self.url, self._on_event)

    def _wait_listening(self, output: Path) -> str:
        found: list[str] = []
        ready = threading.Event()

        def pump() -> None:
            assert self.process.stdout is not None
            with open(output, "w", encoding="utf-8") as sink:
                for line in self.process.stdout:
                    sink.write(line)
                    sink.flush()
                    match = re.search(r"listening on (http://\S+)", line)
                    if match and not found:
                        found.append(match.group(1).rstrip("/"))
                        ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(60) or not found:
            self.stop()
            raise OpenCodeFailed(f"`opencode serve` n'a pas démarré en 60 s (voir {output})")
        return found[0]

    def _healthy(self) -> bool:
        try:
            return self.client.get("/global/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _on_event(self, kind: str, properties: dict[str, Any]) -> None:
        if kind != "permission.asked":
            return
        patterns = properties.get("patterns")
        self.refused_permissions.append(
            AskedPermission(
                str(properties.get("permission")),
                tuple(str(p) for p in patterns) if isinstance(patterns, list) else (),
                str(properties.get("sessionID") or ""),
            )
        )
        with contextlib.suppress(httpx.HTTPError):
            self.client.post(
                f"/session/{properties.get('sessionID')}/permissions/{properties.get('id')}",
                json={"response": "reject"},
            )

    def _ok(self, response: httpx.Response) -> httpx.Response:
        if response.status_code >= 400:
            raise OpenCodeFailed(
                f"OpenCode a répondu {response.status_code} à {response.request.method} "
                f"{response.request.url.path} : {response.text[:300]}"
            )
        return response

    def session(self) -> str:
        opened = str(self._ok(self.client.post("/session", json={})).json()["id"])
        self.sessions.append(opened)
        return opened

    def prompt(self, session: str, text: str, timeout: float = 90.0) -> None:
        """One user turn, until its ``session.idle`` (the plugin's end-of-turn work started)."""
        mark = self.events.mark()
        payload = {"parts": [{"type": "text", "text": text}]}
        self._ok(self.client.post(f"/session/{session}/message", json=payload, timeout=timeout))

        def busy(kind: str, props: dict[str, Any]) -> bool:
            status = props.get("status") or {}
            return (
                kind == "session.status"
                and props.get("sessionID") == session
                and status.get("type") == "busy"
            )

        start = self.events.wait(mark, timeout, busy)
        self.events.wait(
            start,
            timeout,
            lambda kind, props: kind == "session.idle" and props.get("sessionID") == session,
        )

    def dispose(self, timeout: float = 60.0) -> None:
        """Close the instance; returns once the plugin's ``dispose`` (its last push) is done."""
        mark = self.events.mark()
        self._ok(self.client.post("/instance/dispose"))
        self.events.wait(
            mark,
            timeout,
            lambda kind, props: (
                kind == "server.instance.disposed" and props.get("directory") == str(self.project)
            ),
        )

    def stop(self) -> None:
        with contextlib.suppress(AttributeError):
            self.events.close()
        with contextlib.suppress(AttributeError):
            self.client.close()
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
