"""What ``ocmem doctor`` (and ``ocmem init``) say of SilverBullet MCP servers in OpenCode's
configuration (issue 23, ``ocmem.bridge.mcpdiscovery`` finds them): each one holds a token for the
whole space, so the agent could write validated memory in SilverBullet and the next pull would
install it. The plugin refuses their writes outside ``Agents/Inbox/<home-id>/``, but only in the
OpenCode it runs in; the server itself keeps its full-space token.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

from ocmem.bridge import mcpdiscovery
from ocmem.home.settings import Settings
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
            "`ocmem mcp --installer` donne à l'agent le même accès, borné par ocmem ; "
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
    yield from own_server_problems(settings, env)
    for why in unreadable:
        yield Problem(
            WARNING,
            f"configuration OpenCode non examinée pour les serveurs MCP : {why}",
            "corrige le fichier puis relance ocmem doctor",
        )


def own_server_problems(settings: Settings, env: Mapping[str, str]) -> Iterator[Problem]:
    """``ocmem mcp`` as the global configuration declares it: a command that is no longer this
    ocmem's (a moved virtualenv), or an SDK that is not installed, and OpenCode would start a
    server that fails."""
    sources, _ = mcpdiscovery.read_sources(env, settings.paths.home)
    merged, declared, _ = mcpdiscovery.merged_servers(sources)
    entry = merged.get(mcpdiscovery.OWN_SERVER)
    if not isinstance(entry, dict) or entry.get("enabled", True) is False:
        return
    command = entry.get("command")
    if (
        not isinstance(command, list)
        or command[-1:] != ["mcp"]
        or "ocmem" not in " ".join(map(str, command))
    ):
        return  # a server of the user's own under that name: not ocmem's to judge
    files = ", ".join(declared[mcpdiscovery.OWN_SERVER])
    if command != mcpdiscovery.own_command(settings.paths):
        yield Problem(
            WARNING,
            f"« mcp.ocmem » ({files}) ne lance pas cet ocmem-ci ({' '.join(map(str, command))})",
            f"ocmem --home {settings.paths.home} mcp --installer",
        )
    elif importlib.util.find_spec("mcp") is None:
        yield Problem(
            ERROR,
            f"« mcp.ocmem » ({files}) est déclaré, mais le SDK MCP n'est pas installé : OpenCode ne pourra pas le démarrer",
            "pip install 'ocmem[mcp]' dans l'environnement d'ocmem",
        )


def init_notes(settings: Settings, env: Mapping[str, str] | None = None) -> list[str]:
    """What ``ocmem init`` says of them: one note per problem, with its fix."""
    return [f"{p.level} : {p.what}\n  → {p.fix}" for p in mcp_problems(settings, env)]
