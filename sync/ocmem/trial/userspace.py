"""``ocmem essai --espace``: the user's own SilverBullet space, read and never written.

Before the sandbox exists, ocmem's client reads the space the user configured (their
``ocmem.yaml`` or ``OCMEM_SILVERBULLET_*``, as ``ocmem pull`` would): its listing, then each page
their pull rules would install (AGENTS.md, MEMORY.md, the skills), within the pull's own
bounds. The copy goes into the stand-in, under the names a fresh home pulls from, and the tests
run on it: the user's rules, facts and skills, with their URL and token proven to work.

Read-only is enforced below the client, not promised: :class:`ReadOnly` is the client's
transport and refuses, before anything is sent, every request but GET and HEAD
(tests/test_essai.py sends it a PUT and a DELETE, and runs an essai against a server that
records every request).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from ocmem.errors import OcmemError
from ocmem.home.settings import load_settings
from ocmem.home.space import DEFAULT_PULL, load_sync_config, redacted
from ocmem.silverbullet.client import ForbiddenRequest, SilverBullet


class ReadOnly(httpx.BaseTransport):
    """Lets GET and HEAD through to ``inner``; refuses anything else before it is sent."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.refused: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method.upper() in ("GET", "HEAD"):
            return self.inner.handle_request(request)
        self.refused.append(f"{request.method} {request.url.path}")
        raise ForbiddenRequest(
            f"ocmem essai lit ton espace sans jamais l'écrire : {request.method} "
            f"{request.url.path} refusé avant envoi",
            fix="c'est un bogue d'ocmem essai, à signaler ; ton espace n'a pas été modifié",
        )

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class SpaceCopy:
    """The pages read from the user's space, under the names a fresh home pulls from."""

    url: str  # redacted
    pages: dict[str, bytes]
    requests: int  # how many requests were sent (all reads)
    left_out: tuple[str, ...] = ()  # pages past the pull's bounds, not copied


def default_remote(local: str) -> str | None:
    """The page a fresh home's pull (ocmem's default rules) installs at ``local``."""
    for remote, target in DEFAULT_PULL:
        if remote.endswith("/") and local.startswith(target):
            return remote + local[len(target) :]
        if local == target:
            return remote
    return None


def read_space(
    home: Path | None,
    env: Mapping[str, str],
    transport: httpx.BaseTransport | None = None,
) -> SpaceCopy:
    """The user's configured space, read through :class:`ReadOnly` (an unconfigured or
    unreachable space: the client's error, with its fix)."""
    settings = load_settings(home, env)
    config = load_sync_config(settings, env)
    guard = ReadOnly(transport or httpx.HTTPTransport(verify=config.url.startswith("https")))
    pages: dict[str, bytes] = {}
    left_out: list[str] = []
    total = 0
    with SilverBullet(config, transport=guard, attempts=1) as client:
        for remote in sorted(client.list(), key=lambda f: f.name):
            local = config.local_target(remote.name)
            name = default_remote(local) if local is not None else None
            if name is None:
                continue
            too_big = remote.meta.size > config.pull_max_file_bytes
            if too_big or total + remote.meta.size > config.pull_max_total_bytes:
                left_out.append(remote.name)
                continue
            read = client.read(remote.name, max_bytes=config.pull_max_file_bytes)
            if read is not None:
                pages[name] = read.body
                total += len(read.body)
        sent = client.requests_sent
    if guard.refused:  # the client caught a refusal it should have let through
        raise OcmemError(
            f"ocmem essai a tenté d'écrire dans ton espace ({guard.refused[0]}) : refusé avant envoi",
            fix="c'est un bogue d'ocmem essai, à signaler ; ton espace n'a pas été modifié",
        )
    return SpaceCopy(redacted(config.url), pages, sent, tuple(left_out))
