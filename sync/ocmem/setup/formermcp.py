"""``ocmem mcp`` is gone (issue 35): the agent reaches SilverBullet through the plugin's space
tools, by the gate. An ``mcp.ocmem`` entry that ``ocmem mcp --installer`` wrote in the home's
``opencode.json`` would have OpenCode start a command that now only says so and stops.

``ocmem init --mettre-a-jour`` and ``ocmem doctor --reparer`` remove that entry — and nothing
else: another server, or a server of the user's own under that name (another command), stays.
The installer only ever wrote the home's ``opencode.json``, and only when it was plain JSON; an
entry elsewhere (a file with comments, another configuration file) was pasted by a person, and
doctor names the file for the person to edit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ocmem.bridge import mcpdiscovery
from ocmem.home.atomic import read_text
from ocmem.home.paths import Paths
from ocmem.home.settings import Settings
from ocmem.home.workspace import Transaction


@dataclass(frozen=True)
class Leftover:
    """A configuration that declares ocmem's former server."""

    where: str  # the file (or OPENCODE_CONFIG_CONTENT)
    removable: bool  # the home's opencode.json in plain JSON: what the installer wrote


def leftovers(settings: Settings, env: Mapping[str, str]) -> list[Leftover]:
    """Every global configuration OpenCode reads that declares ``mcp.ocmem`` as ocmem's former
    server for this home (project files are the projects': the installer never wrote there)."""
    home = settings.paths.home
    sources, _ = mcpdiscovery.read_sources(env, home)
    found = []
    for source in sources:
        try:
            config = mcpdiscovery.parse_jsonc(source.text)
        except ValueError:
            continue  # doctor's MCP check says it cannot read it
        servers = config.get("mcp") if isinstance(config, dict) else None
        if not isinstance(servers, dict):
            continue
        entry = servers.get(mcpdiscovery.FORMER_SERVER)
        if mcpdiscovery.former_server(entry, home):
            found.append(Leftover(source.where, _removable(source.where, source.text, home)))
    return found


def _removable(where: str, text: str, home: Path) -> bool:
    if Path(where).resolve() != _home_config(home).resolve():
        return False
    try:
        json.loads(text)
    except ValueError:
        return False  # comments: the installer left such a file to the human
    return True


def _home_config(home: Path) -> Path:
    return home / "opencode.json"


def present(paths: Paths) -> bool:
    """Whether the home's opencode.json holds the entry ``remove`` takes out."""
    return _without_entry(paths) is not None


def _without_entry(paths: Paths) -> tuple[str, Any] | None:
    """The home's opencode.json as it is, and without the former server's entry (None when
    there is nothing ocmem may remove)."""
    path = _home_config(paths.home)
    if not path.is_file():
        return None
    text = read_text(path)
    try:
        data: Any = json.loads(text)
    except ValueError:
        return None
    servers = data.get("mcp") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not mcpdiscovery.former_server(
        servers.get(mcpdiscovery.FORMER_SERVER), paths.home
    ):
        return None
    del servers[mcpdiscovery.FORMER_SERVER]
    if not servers:
        del data["mcp"]
    return text, data


def remove(txn: Transaction, paths: Paths) -> str | None:
    """Remove the former server's entry from the home's opencode.json, read again under the
    run's lock (a backup first); what was done, None when there is nothing ocmem may remove."""
    found = _without_entry(paths)
    if found is None:
        return None
    text, data = found
    path = _home_config(paths.home)
    backup = txn.backups.save(path)
    txn.write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", old=text)
    return (
        f"entrée « mcp.{mcpdiscovery.FORMER_SERVER} » retirée de {path} : ocmem mcp n'existe "
        f"plus, l'agent atteint SilverBullet par les outils space_* du plugin (sauvegarde : {backup})"
    )
