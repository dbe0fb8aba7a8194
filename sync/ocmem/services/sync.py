"""The locked sync runs the CLI calls: configuration, lock, client and state wired together."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

import httpx

from ocmem.formats import gestures
from ocmem.home.space import SyncConfig, load_sync_config
from ocmem.home.workspace import Transaction, Workspace
from ocmem.outcome import Outcome
from ocmem.services import gestureplans
from ocmem.services.context import context_report
from ocmem.silverbullet.client import SilverBullet
from ocmem.silverbullet.pull import Puller
from ocmem.silverbullet.push import Pusher
from ocmem.silverbullet.state import SyncState


@contextmanager
def _session(
    ws: Workspace,
    command: str,
    transport: httpx.BaseTransport | None,
    env: Mapping[str, str] | None,
) -> Iterator[tuple[SyncConfig, SilverBullet, SyncState, Transaction]]:
    config = load_sync_config(ws.settings, env)
    with (
        ws.transaction(command) as txn,
        SilverBullet(
            config, transport=transport, waiting=ws.waiting, monotonic=ws.clock.monotonic
        ) as client,
    ):
        yield config, client, SyncState.load(ws.paths, config.url), txn


def _switch_note(state: SyncState, outcome: Outcome) -> None:
    if state.switched_from is not None:
        outcome.lines.append(
            f"Instance changée : {state.switched_from} → {state.space} (l'état de la première "
            "est gardé dans .ocmem/sync-states/, repris si tu y reviens)"
        )


def pull(
    ws: Workspace,
    *,
    dry_run: bool = False,
    force_delete: bool = False,
    full: bool = False,
    accept_active: bool = False,
    replace_local: bool = False,
    transport: httpx.BaseTransport | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    with _session(ws, "pull", transport, env) as (config, client, state, txn):
        puller = Puller(ws, config, client, state, txn)
        outcome = puller.run(
            dry_run=dry_run,
            force_delete=force_delete,
            full=full,
            accept_active=accept_active,
            replace_local=replace_local,
        )
        _switch_note(state, outcome)
    if puller.changed:
        outcome.lines += [
            "",
            "Contexte chargé à chaque session :",
            context_report(ws.settings).render(),
        ]
    return outcome


def _gestures(ws: Workspace, config: SyncConfig) -> Callable[[str, str | None], gestures.Decorate]:
    """The review page's gestures for a pending page, computed against the pulled pages."""

    def for_page(page: str, home: str | None) -> gestures.Decorate:
        return gestureplans.Decorator(lambda: gestureplans.space_for(ws, config, page, home))

    return for_page


def push(
    ws: Workspace,
    *,
    dry_run: bool = False,
    transport: httpx.BaseTransport | None = None,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    with _session(ws, "push", transport, env) as (config, client, state, _):
        outcome = Pusher(ws, config, client, state, decorators=_gestures(ws, config)).run(
            dry_run=dry_run
        )
        _switch_note(state, outcome)
    if not outcome.lines:
        outcome.lines.append("Push : rien de nouveau")
    return outcome
