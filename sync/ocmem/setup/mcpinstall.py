"""``ocmem mcp --installer`` / ``--retirer``: ocmem's MCP server in OpenCode's configuration, by
one gesture. The entry goes into the home's ``opencode.json`` (the global OpenCode config dir),
under ``mcp.ocmem``; the file is rewritten only when it is plain JSON (a file with comments is
left to the human, with the lines to paste), with a backup, under the run lock."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from ocmem.bridge import mcpdiscovery
from ocmem.bridge.spaceanswers import TOOLS
from ocmem.errors import InputError, Refused
from ocmem.home.atomic import read_text
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome


def entry(ws: Workspace) -> dict[str, Any]:
    command = mcpdiscovery.own_command(ws.paths)
    if not command:
        raise Refused(
            "ce dossier n'est pas encore installé : ocmem ne sait pas comment OpenCode le lance",
            fix=f"lance d'abord `ocmem --home {ws.paths.home} init`",
        )
    return {"type": "local", "command": command, "enabled": True}


def _config(ws: Workspace) -> tuple[Path, dict[str, Any], str | None]:
    """The home's opencode.json, its content, and its text (None when absent). Refuses, before
    anything is written, a file ocmem could not rewrite without losing something."""
    home = ws.paths.home
    path = home / "opencode.json"
    text = read_text(path) if path.exists() else None
    if text is None:
        for other in (home / "opencode.jsonc", home / "config.json"):
            if other.exists():
                raise Refused(
                    f"la configuration d'OpenCode est dans {other} (ocmem n'écrit que opencode.json)",
                    fix=f"ajoute-y à la main, dans « mcp » : {json.dumps({mcpdiscovery.OWN_SERVER: entry(ws)}, ensure_ascii=False)}",
                )
        return path, {}, None
    try:
        data = json.loads(text)
    except ValueError:
        try:
            mcpdiscovery.parse_jsonc(text)
        except ValueError as exc:
            raise InputError(
                f"{path} n'est pas du JSON valide ({exc})", fix="corrige-le puis relance"
            ) from exc
        raise Refused(
            f"{path} a des commentaires, qu'ocmem perdrait en le réécrivant",
            fix=f"ajoute-y à la main, dans « mcp » : {json.dumps({mcpdiscovery.OWN_SERVER: entry(ws)}, ensure_ascii=False)}",
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("mcp", {}), dict):
        raise InputError(
            f"{path} : « mcp » doit être un objet", fix="corrige le fichier puis relance"
        )
    return path, data, text


def install(ws: Workspace) -> Outcome:
    if importlib.util.find_spec("mcp") is None:
        raise Refused(
            "le SDK MCP n'est pas installé dans l'environnement d'ocmem",
            fix="pip install 'ocmem[mcp]' (dans le même environnement), puis relance",
        )
    wanted = entry(ws)
    path, data, text = _config(ws)
    servers: dict[str, Any] = dict(data.get("mcp") or {})
    outcome = Outcome()
    if servers.get(mcpdiscovery.OWN_SERVER) == wanted:
        outcome.lines.append(f"ocmem mcp est déjà dans {path}")
        return outcome
    servers[mcpdiscovery.OWN_SERVER] = wanted
    data = {**data, "mcp": servers}
    data.setdefault("$schema", "https://opencode.ai/config.json")
    with ws.transaction("mcp --installer") as txn:
        txn.write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", old=text)
    outcome.lines += [
        f"ocmem mcp ajouté à {path} (serveur « {mcpdiscovery.OWN_SERVER} », outils "
        f"{', '.join(f'{mcpdiscovery.OWN_SERVER}_{t}' for t in TOOLS)})",
        "  l'agent lit l'espace SilverBullet et n'écrit que sous sa boîte de dépôt ; "
        "OpenCode le démarre à sa prochaine session",
        f"  pour le retirer : ocmem --home {ws.paths.home} mcp --retirer",
    ]
    servers_found, _ = mcpdiscovery.find(ws.settings)
    for server in servers_found:
        outcome.lines.append(
            f"  ⚠ le serveur MCP « {server.name} » ({', '.join(server.sources)}) écrit partout "
            "dans SilverBullet : retire-le, ocmem mcp le remplace"
        )
    return outcome


def uninstall(ws: Workspace) -> Outcome:
    path, data, text = _config(ws)
    servers: dict[str, Any] = dict(data.get("mcp") or {})
    outcome = Outcome()
    if mcpdiscovery.OWN_SERVER not in servers:
        outcome.lines.append(f"ocmem mcp n'est pas dans {path} : rien à retirer")
        return outcome
    del servers[mcpdiscovery.OWN_SERVER]
    rest = {k: v for k, v in data.items() if k != "mcp"}
    if servers:
        rest["mcp"] = servers
    with ws.transaction("mcp --retirer") as txn:
        txn.write(path, json.dumps(rest, indent=2, ensure_ascii=False) + "\n", old=text)
    outcome.lines.append(f"ocmem mcp retiré de {path} (ancienne version dans les sauvegardes)")
    return outcome
