"""What ``ocmem doctor`` (and ``ocmem init``) say of SilverBullet MCP servers in OpenCode's
configuration (issue 23, ``ocmem.bridge.mcpdiscovery`` finds them): each one holds a token for the
whole space, so the agent could write validated memory in SilverBullet and the next pull would
install it. The plugin refuses their writes outside ``Agents/Inbox/<home-id>/``, but only in the
OpenCode it runs in; the server itself keeps its full-space token. Also: the entry of ocmem's own
former MCP server, left by an older ocmem (``ocmem.setup.formermcp``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from ocmem.bridge import mcpdiscovery
from ocmem.home.settings import Settings
from ocmem.setup import formermcp
from ocmem.setup.setupchecks import ERROR, WARNING, Problem


def mcp_problems(
    settings: Settings, env: Mapping[str, str] | None = None, directory: Path | None = None
) -> Iterator[Problem]:
    """One error per SilverBullet MCP server OpenCode would start (a warning when disabled),
    naming it and where it is declared; a warning per configuration that could not be read.
    ``directory``: the project (default: the current directory)."""
    env = os.environ if env is None else env
    where = Path.cwd() if directory is None else directory
    servers, unreadable = mcpdiscovery.find(settings, env, where)
    inbox = mcpdiscovery.home_inbox(settings) or "Agents/Inbox/<id>/"
    for server in servers:
        files = ", ".join(server.sources)
        what = (
            f"le serveur MCP « {server.name} » ({files}) peut écrire dans SilverBullet "
            f"({', '.join(server.reasons)}) : l'agent pourrait y réécrire la mémoire validée, "
            "que le prochain pull installerait"
        )
        fix = (
            f"retire « mcp.{server.name} » de {files} (ou restreins son jeton à {inbox}) ; "
            "les outils space_* du plugin donnent à l'agent le même accès, borné par ocmem ; "
            f"le plugin ocmem refuse ses écritures hors de {inbox}, pas les autres clients de ce serveur"
        )
        if server.enabled:
            yield Problem(ERROR, what, fix)
        else:
            yield Problem(
                WARNING,
                f"le serveur MCP « {server.name} » ({files}) est désactivé mais peut écrire dans "
                f"SilverBullet ({', '.join(server.reasons)})",
                f"retire « mcp.{server.name} » de {files}",
            )
    yield from former_server_problems(settings, env)
    for why in unreadable:
        yield Problem(
            WARNING,
            f"configuration OpenCode non examinée pour les serveurs MCP : {why}",
            "corrige le fichier puis relance ocmem doctor",
        )


def former_server_problems(settings: Settings, env: Mapping[str, str]) -> Iterator[Problem]:
    """``mcp.ocmem`` left by ``ocmem mcp --installer``: OpenCode would start a command that no
    longer serves (ocmem.setup.formermcp)."""
    for found in formermcp.leftovers(settings, env):
        what = (
            f"« mcp.{mcpdiscovery.FORMER_SERVER} » ({found.where}) lance ocmem mcp, qui n'existe "
            "plus : l'agent atteint SilverBullet par les outils space_* du plugin"
        )
        if found.removable:
            yield Problem(
                WARNING,
                what,
                "ocmem init --mettre-a-jour (ou ocmem doctor --reparer) retire cette entrée",
                lambda txn: formermcp.remove(txn, settings.paths) or "rien à retirer",
            )
        else:
            yield Problem(
                WARNING,
                what,
                f"retire « {mcpdiscovery.FORMER_SERVER} » de « mcp » dans {found.where} "
                "(ocmem ne réécrit pas ce fichier)",
            )


def init_notes(settings: Settings, env: Mapping[str, str] | None = None) -> list[str]:
    """What ``ocmem init`` says of them: one note per problem, with its fix."""
    return [f"{p.level} : {p.what}\n  → {p.fix}" for p in mcp_problems(settings, env)]
