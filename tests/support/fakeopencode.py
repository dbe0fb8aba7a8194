"""An ``opencode`` that asks a permission at every turn (tests/test_essai.py): ``--version`` says
1.18.33; ``serve`` answers the endpoints ``ocmem essai`` drives (ocmem.trial.opencodeserve) and,
at each user message, asks for ``external_directory`` on ``PATTERN``, waits for the answer, then
ends the turn without calling the model. Each answer is appended to ``réponses.log`` beside this
file (the test runs a copy in its own folder): ``SESSION PERMISSION-ID RESPONSE``.

usage: fakeopencode.py --version | serve --hostname H --port P
"""

from __future__ import annotations

import itertools
import json
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

VERSION = "1.18.33"
PATTERN = "/ailleurs/*"
ANSWERS = Path(__file__).resolve().parent / "réponses.log"


class Bus:
    """The event stream's subscribers, each a queue of SSE payloads."""

    def __init__(self) -> None:
        self.subscribers: list[queue.Queue[str]] = []
        self.lock = threading.Lock()

    def emit(self, kind: str, properties: dict[str, object]) -> None:
        line = json.dumps({"payload": {"type": kind, "properties": properties}})
        with self.lock:
            for subscriber in self.subscribers:
                subscriber.put(line)


def serve(port: int) -> None:
    bus = Bus()
    numbers = itertools.count(1)
    answered: dict[str, threading.Event] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            return

        def _json(self, value: object) -> None:
            body = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            route = urlsplit(self.path).path
            if route == "/global/health":
                self._json({"healthy": True, "version": VERSION})
                return
            events: queue.Queue[str] = queue.Queue()
            with bus.lock:
                bus.subscribers.append(events)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b'data: {"payload": {"type": "server.connected"}}\n\n')
            self.wfile.flush()
            while True:
                self.wfile.write(f"data: {events.get()}\n\n".encode())
                self.wfile.flush()

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            route = parts.path.strip("/").split("/")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if route == ["session"]:
                self._json({"id": f"ses_{next(numbers)}"})
            elif route[0] == "session" and route[2] == "message":
                self._turn(route[1])
            elif route[0] == "session" and route[2] == "permissions":
                with ANSWERS.open("a", encoding="utf-8") as log:
                    log.write(f"{route[1]} {route[3]} {json.loads(body)['response']}\n")
                answered[route[3]].set()
                self._json(True)
            elif route == ["instance", "dispose"]:
                self._json(True)
                directory = parse_qs(parts.query).get("directory", [""])[0]
                bus.emit("server.instance.disposed", {"directory": directory})

        def _turn(self, session: str) -> None:
            asked = f"per_{next(numbers)}"
            answered[asked] = threading.Event()
            bus.emit("session.status", {"sessionID": session, "status": {"type": "busy"}})
            bus.emit(
                "permission.asked",
                {
                    "id": asked,
                    "sessionID": session,
                    "permission": "external_directory",
                    "patterns": [PATTERN],
                },
            )
            answered[asked].wait(30)
            bus.emit("session.idle", {"sessionID": session})
            self._json({})

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(f"opencode server listening on http://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:] == ["--version"]:
        print(VERSION)
    elif sys.argv[1:2] == ["serve"]:
        serve(int(sys.argv[sys.argv.index("--port") + 1]))
    else:
        sys.exit(f"fakeopencode : {sys.argv[1:]} non pris en charge")
