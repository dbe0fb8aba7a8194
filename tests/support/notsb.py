"""Some other web server where SilverBullet was expected (a URL's typo hit an nginx): HTML for
every GET, every PUT accepted and dropped. Used by the tests of a wrong URL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class NotSilverBullet(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>Bienvenue sur nginx</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_PUT(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def not_silverbullet() -> Iterator[str]:
    """The URL of such a server on loopback, while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotSilverBullet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
