"""Client-side fault seams for sync tests: real HTTP, plus a hook after each response."""

from __future__ import annotations

from collections.abc import Callable

import httpx


class Crash(BaseException):
    """The process dies here (a BaseException: nothing in ocmem may catch it)."""


class AfterEachResponse(httpx.BaseTransport):
    """Real HTTP transport that calls ``after(request)`` once each response has arrived: the
    place to inject a concurrent human write right after a read, or a crash after a write."""

    def __init__(self, after: Callable[[httpx.Request], None]):
        # The test servers are plain http on loopback: no TLS context (building one costs
        # ~30 ms, more than a whole push against the fake).
        self.inner = httpx.HTTPTransport(verify=False)
        self.after = after

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        self.after(request)
        return response
