"""Pull and push runs: configuration, lock, client and state wired together (library entry points)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import httpx

from ocmem.config import Settings
from ocmem.context import context_report
from ocmem.fsio import run_lock
from ocmem.pull import Puller, PullReport
from ocmem.push import Pusher, PushReport
from ocmem.remote import SilverBullet
from ocmem.syncconfig import SyncConfig, load_sync_config
from ocmem.syncstate import SyncState

STATE_FILE = "sync-state.json"


@contextmanager
def _session(
    settings: Settings,
    wait_seconds: float,
    transport: httpx.BaseTransport | None,
    env: Mapping[str, str] | None,
) -> Iterator[tuple[SyncConfig, SilverBullet, SyncState]]:
    config = load_sync_config(settings, env)
    with (
        run_lock(settings.paths, wait_seconds),
        SilverBullet(config, transport=transport) as client,
    ):
        state = SyncState.load(settings.paths.state_dir / STATE_FILE, config.url)
        yield config, client, state


def pull(
    settings: Settings,
    *,
    wait_seconds: float = 0.0,
    dry_run: bool = False,
    force_delete: bool = False,
    full: bool = False,
    accept_active: bool = False,
    transport: httpx.BaseTransport | None = None,
    env: Mapping[str, str] | None = None,
) -> PullReport:
    with _session(settings, wait_seconds, transport, env) as (config, client, state):
        report = Puller(settings, config, client, state).run(
            dry_run=dry_run, force_delete=force_delete, full=full, accept_active=accept_active
        )
    if report.changed:
        report.lines += [
            "",
            "Contexte chargé à chaque session :",
            context_report(settings).render(),
        ]
    return report


def push(
    settings: Settings,
    *,
    wait_seconds: float = 0.0,
    dry_run: bool = False,
    transport: httpx.BaseTransport | None = None,
    env: Mapping[str, str] | None = None,
) -> PushReport:
    with _session(settings, wait_seconds, transport, env) as (config, client, state):
        report = Pusher(settings, config, client, state).run(dry_run=dry_run)
    if not report.lines:
        report.lines.append("Push : rien de nouveau")
    return report
