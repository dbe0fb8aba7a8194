"""``ocmem mcp``: the SilverBullet space for the model, over MCP on stdio (the official MCP
Python SDK, the optional ``ocmem[mcp]`` extra). The policy is :mod:`ocmem.bridge.spacetools`,
the answers :mod:`ocmem.bridge.spaceanswers`; this module names the four tools, describes them to
the model, and turns ocmem's refusals into tool errors the model reads.

Where the answers come from:

- **through the plugin** when OpenCode started this server with ``OCMEM_SPACE_SOCKET`` (the
  plugin's relay, ``plugin/ocmem/spacerelay.ts``): each call goes to the plugin, which records
  the exposure and asks the gate. In the hardened mode this is the only way: the gate runs as
  the home's owner and holds the token, which this process (the agent's user) cannot read;
- **directly** otherwise (default mode, or run by hand): this process reads the token itself.
  In the hardened mode it refuses instead, saying why.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ocmem.bridge.spaceanswers import Space
from ocmem.errors import OcmemError, Refused
from ocmem.home.workspace import Workspace

if TYPE_CHECKING:
    from mcp.server import MCPServer

SERVER_NAME = "ocmem"
RELAY_ENV = "OCMEM_SPACE_SOCKET"
RELAY_TIMEOUT_SECONDS = 90.0
INSTRUCTIONS = (
    "L'espace SilverBullet de l'utilisateur, par ocmem. Lecture de toute page ; écriture "
    "seulement sous Agents/Inbox/<id-du-dossier>/ (jamais la mémoire validée ni les skills : "
    "un fait ou une leçon passe par memory_note, memory_journal ou memory_propose). Lire une "
    "page hors de la mémoire validée, lister ou chercher marque la session comme exposée."
)

Backend = Callable[[str, Mapping[str, Any]], str]


def relayed(path: str, timeout: float = RELAY_TIMEOUT_SECONDS) -> Backend:
    """Each call as one JSON line to the plugin's relay, its answer one JSON line back."""

    def call(tool: str, args: Mapping[str, Any]) -> str:
        request = json.dumps({"tool": tool, "args": dict(args)}, ensure_ascii=False) + "\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(timeout)
                conn.connect(path)
                conn.sendall(request.encode("utf-8"))
                received = b""
                while not received.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    received += chunk
            answer = json.loads(received)
        except (OSError, ValueError) as exc:
            raise OcmemError(
                f"le relais du plugin ocmem ne répond pas ({exc})",
                fix="redémarre OpenCode ; ocmem doctor dit si le plugin est chargé",
            ) from None
        if not isinstance(answer, dict) or not isinstance(answer.get("out"), str):
            raise OcmemError("réponse illisible du relais du plugin ocmem", fix="bogue à signaler")
        if answer.get("code") != 0:
            raise OcmemError(str(answer.get("err") or answer.get("out")).strip())
        return str(answer["out"])

    return call


def backend(
    workspace: Callable[[], Workspace], env: Mapping[str, str]
) -> tuple[Backend, Space | None]:
    """Where the answers come from (see the module's docstring)."""
    path = env.get(RELAY_ENV, "")
    if path:
        return relayed(path), None
    ws = workspace()
    if ws.paths.hardened_file.exists():
        raise Refused(
            "en mode durci, ocmem mcp ne lit pas le jeton : il passe par le plugin ocmem, "
            "et n'a pas été lancé par un OpenCode qui l'a chargé",
            fix="laisse OpenCode le démarrer (ocmem mcp --installer) ; à la main, lance-le comme le propriétaire du dossier",
        )
    space = Space(lambda: ws, None)
    return space.call, space


def build(call: Backend) -> MCPServer[object]:
    """The MCP server: the four tools, answered by ``call``."""
    from mcp.server import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations

    def answer(tool: str, **args: Any) -> str:
        try:
            return call(tool, args)
        except OcmemError as exc:
            said = exc.message + (f" — {exc.fix}" if exc.fix else "")
            raise ToolError(f"ocmem : {said}") from None

    # Warnings only on stderr (OpenCode keeps it): not a line per HTTP request to the space.
    server: MCPServer[object] = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(name="lire_page", annotations=reading)
    def lire_page(page: str) -> str:
        """Lit une page de SilverBullet (nom tel que SilverBullet l'affiche, ex.
        Agents/Memory/MEMORY). Une page hors de la mémoire validée expose la session."""
        return answer("lire_page", page=page)

    @server.tool(name="lister_pages", annotations=reading)
    def lister_pages(prefixe: str = "") -> str:
        """Liste les pages de SilverBullet, toutes ou celles d'un dossier (ex. Agents/Inbox).
        Expose la session (les noms sont écrits par d'autres)."""
        return answer("lister_pages", prefixe=prefixe)

    @server.tool(name="chercher_pages", annotations=reading)
    def chercher_pages(requete: str) -> str:
        """Cherche des mots dans les pages de SilverBullet (les 10 pages qui en ont le plus,
        avec leurs lignes). Expose la session."""
        return answer("chercher_pages", requete=requete)

    @server.tool(
        name="ecrire_page",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def ecrire_page(page: str, contenu: str, remplacer: bool = False) -> str:
        """Écrit une page sous Agents/Inbox/<id-du-dossier>/ (seul dossier ouvert à l'agent ;
        ni la mémoire validée, ni les skills, ni les pages qu'ocmem pousse). Le texte est rendu
        inerte (ni HTML ni Lua). Une page existante n'est remplacée qu'avec remplacer=true."""
        return answer("ecrire_page", page=page, contenu=contenu, remplacer=remplacer)

    return server


def serve(workspace: Callable[[], Workspace], env: Mapping[str, str] | None = None) -> None:
    """Run the stdio server until OpenCode closes its input."""
    if importlib.util.find_spec("mcp") is None:
        raise Refused(
            "ocmem mcp a besoin du SDK MCP, qui n'est pas installé",
            fix="pip install 'ocmem[mcp]' (dans le même environnement qu'ocmem)",
        )
    call, space = backend(workspace, os.environ if env is None else env)
    try:
        build(call).run("stdio")
    finally:
        if space is not None:
            space.close()
