"""A minimal ``/.fs`` client and the servers it can be pointed at, for server tests.

``Target`` is a server under test: a ``FakeSilverBullet``, or the real SilverBullet
given by ``OCMEM_TEST_SILVERBULLET_URL`` (and ``OCMEM_TEST_SILVERBULLET_TOKEN`` if it
has auth), confined to a fresh scratch folder that is deleted afterwards.
"""

from __future__ import annotations

import os
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

import httpx
import pytest

from support.sbserver import FakeSilverBullet

REAL_URL_ENV = "OCMEM_TEST_SILVERBULLET_URL"
REAL_TOKEN_ENV = "OCMEM_TEST_SILVERBULLET_TOKEN"
_TLS = ssl.create_default_context()  # built once: httpx would load the CA store per client


class SBClient:
    """A minimal ``/.fs`` client, sending what ocmem sends (docs/silverbullet.md §2, §3, §9).

    It always sends ``X-Sync-Mode: true`` and the Bearer token unless told not to,
    never follows redirects, and percent-encodes paths with ``quote(path, safe="/")``.
    """

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.http = httpx.Client(timeout=10.0, follow_redirects=False, verify=_TLS)
        self.written: set[str] = set()

    def request(
        self,
        method: str,
        url_path: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        auth: bool = True,
        sync_mode: bool = True,
    ) -> httpx.Response:
        """Send ``method`` to ``<base_url><url_path>``; ``url_path`` is sent as given."""
        sent = {**self.request_headers(auth=auth, sync_mode=sync_mode), **(headers or {})}
        return self.http.request(method, self.base_url + url_path, headers=sent, content=content)

    def request_headers(self, *, auth: bool = True, sync_mode: bool = True) -> dict[str, str]:
        """The headers every request carries: ``X-Sync-Mode`` and the Bearer token."""
        sent: dict[str, str] = {}
        if sync_mode:
            sent["X-Sync-Mode"] = "true"
        if auth and self.token is not None:
            sent["Authorization"] = f"Bearer {self.token}"
        return sent

    @staticmethod
    def fs_url(path: str) -> str:
        return "/.fs/" + quote(path, safe="/")

    def listing(self, *, auth: bool = True, sync_mode: bool = True) -> httpx.Response:
        return self.request("GET", "/.fs", auth=auth, sync_mode=sync_mode)

    def names(self) -> dict[str, dict[str, object]]:
        """The listing as ``{name: entry}``."""
        response = self.listing()
        assert response.status_code == 200, response.text
        return {entry["name"]: entry for entry in response.json()}

    def get(self, path: str, headers: Mapping[str, str] | None = None) -> httpx.Response:
        return self.request("GET", self.fs_url(path), headers=headers)

    def meta(self, path: str) -> httpx.Response:
        return self.get(path, {"X-Get-Meta": "true"})

    def put(
        self, path: str, content: str | bytes, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        self.written.add(path)
        body = content.encode() if isinstance(content, str) else content
        return self.request("PUT", self.fs_url(path), headers=headers, content=body)

    def delete(self, path: str) -> httpx.Response:
        return self.request("DELETE", self.fs_url(path))

    def close(self) -> None:
        self.http.close()


@dataclass
class Target:
    """A server under test: the fake, or a real SilverBullet confined to ``scratch``."""

    client: SBClient
    fake: FakeSilverBullet | None
    scratch: str = field(default_factory=lambda: f"ocmem-conformance-{secrets.token_hex(4)}")

    def path(self, name: str) -> str:
        """A path inside this run's scratch folder."""
        return f"{self.scratch}/{name}"

    def cleanup(self) -> None:
        """DELETE what this run wrote (real server only; the fake's space is temporary)."""
        for path in sorted(self.client.written, reverse=True):
            if path.startswith(self.scratch + "/"):
                self.client.delete(path)


def real_target(token_required: bool) -> Target:
    url = os.environ.get(REAL_URL_ENV)
    if not url:
        pytest.skip(f"{REAL_URL_ENV} is not set: no real SilverBullet to check against")
    token = os.environ.get(REAL_TOKEN_ENV) or None
    if token_required and token is None:
        pytest.skip(f"{REAL_TOKEN_ENV} is not set: cannot check the real server's auth")
    return Target(SBClient(url, token), None)
