"""``ocmem mcp``: the SilverBullet space for the model, over MCP on stdio (the official MCP
Python SDK, the optional ``ocmem[mcp]`` extra). The policy is :mod:`ocmem.plugin.spacetools`;
this module only names the four tools, describes them to the model, and turns ocmem's errors
into tool errors the model reads (message and fix, secrets replaced by ``***``)."""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ocmem.errors import OcmemError
from ocmem.home.pagenames import file_of
from ocmem.home.space import load_sync_config
from ocmem.home.workspace import Workspace
from ocmem.plugin.spacetools import MAX_LISTED, SpaceTools
from ocmem.silverbullet.client import SilverBullet

if TYPE_CHECKING:
    import httpx
    from mcp.server import MCPServer

SERVER_NAME = "ocmem"
# The tools as OpenCode names them: `<server>_<tool>` (the plugin reads this list: ocmem.ts).
TOOLS = ("lire_page", "lister_pages", "chercher_pages", "ecrire_page")
INSTRUCTIONS = (
    "L'espace SilverBullet de l'utilisateur, par ocmem. Lecture de toute page ; écriture "
    "seulement sous Agents/Inbox/<id-du-dossier>/ (jamais la mémoire validée ni les skills : "
    "un fait ou une leçon passe par memory_note, memory_journal ou memory_propose). Lire une "
    "page hors de la mémoire validée, lister ou chercher marque la session comme exposée."
)


class MissingSdk(OcmemError):
    pass


class Space:
    """The tools' state: one client, made at the first call (a server with sync not yet
    configured starts all the same, and says what to do when it is used)."""

    def __init__(self, workspace: Callable[[], Workspace], transport: httpx.BaseTransport | None):
        self._workspace = workspace
        self._transport = transport
        self._tools: SpaceTools | None = None
        self._client: SilverBullet | None = None

    def tools(self) -> SpaceTools:
        if self._tools is None:
            ws = self._workspace()
            config = load_sync_config(ws.settings)
            self._client = SilverBullet(config, transport=self._transport, attempts=2)
            self._tools = SpaceTools(ws, config, self._client)
        return self._tools

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    @contextlib.contextmanager
    def answering(self) -> Iterator[None]:
        """ocmem's refusals and errors as the tool error the model reads."""
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            yield
        except OcmemError as exc:
            said = exc.message + (f" — {exc.fix}" if exc.fix else "")
            if self._tools is not None:
                said = self._tools.redact(said)
            raise ToolError(f"ocmem : {said}") from None

    def read(self, page: str) -> str:
        with self.answering():
            found = self.tools().read(page)
        note = (
            "page validée par l'utilisateur : la session n'est pas exposée"
            if found.validated
            else "contenu extérieur à la mémoire validée : la session est marquée exposée"
        )
        cut = " ; page coupée (trop longue)" if found.cut else ""
        return f"# {found.page} ({note}{cut})\n\n{found.text}"

    def pages(self, prefix: str) -> str:
        with self.answering():
            names = self.tools().pages(prefix)
        shown = names[:MAX_LISTED]
        more = f"\n… et {len(names) - len(shown)} autres" if len(names) > len(shown) else ""
        return ("\n".join(shown) + more) if shown else "aucune page"

    def search(self, query: str) -> str:
        with self.answering():
            hits = self.tools().search(query)
        if not hits:
            return "rien de trouvé"
        blocks = [
            "\n".join([f"## {h.page} (score {h.score})", *(f"  {line}" for line in h.lines)])
            for h in hits
        ]
        return "\n".join(blocks)

    def write(self, page: str, content: str, replace: bool) -> str:
        with self.answering():
            done = self.tools().write(page, content, replace=replace)
        how = "remplacée (ancienne version sauvegardée par ocmem)" if done.replaced else "écrite"
        return f"page {done.page} {how} ({done.chars} caractères, fichier {file_of(done.page)})"


def build(space: Space) -> MCPServer[object]:
    """The MCP server: the four tools over ``space``."""
    from mcp.server import MCPServer
    from mcp_types import ToolAnnotations

    server: MCPServer[object] = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(name="lire_page", annotations=reading)
    def lire_page(page: str) -> str:
        """Lit une page de SilverBullet (nom tel que SilverBullet l'affiche, ex.
        Agents/Memory/MEMORY). Une page hors de la mémoire validée expose la session."""
        return space.read(page)

    @server.tool(name="lister_pages", annotations=reading)
    def lister_pages(prefixe: str = "") -> str:
        """Liste les pages de SilverBullet, toutes ou celles d'un dossier (ex. Agents/Inbox).
        Expose la session (les noms sont écrits par d'autres)."""
        return space.pages(prefixe)

    @server.tool(name="chercher_pages", annotations=reading)
    def chercher_pages(requete: str) -> str:
        """Cherche des mots dans les pages de SilverBullet (les 10 pages qui en ont le plus,
        avec leurs lignes). Expose la session."""
        return space.search(requete)

    @server.tool(
        name="ecrire_page",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    def ecrire_page(page: str, contenu: str, remplacer: bool = False) -> str:
        """Écrit une page sous Agents/Inbox/<id-du-dossier>/ (seul dossier ouvert à l'agent ;
        ni la mémoire validée, ni les skills, ni les pages qu'ocmem pousse). Le texte est rendu
        inerte (ni HTML ni Lua). Une page existante n'est remplacée qu'avec remplacer=true."""
        return space.write(page, contenu, remplacer)

    return server


def serve(workspace: Callable[[], Workspace], transport: httpx.BaseTransport | None = None) -> None:
    """Run the stdio server until OpenCode closes its input."""
    if importlib.util.find_spec("mcp") is None:
        raise MissingSdk(
            "ocmem mcp a besoin du SDK MCP, qui n'est pas installé",
            fix="pip install 'ocmem[mcp]' (dans le même environnement qu'ocmem)",
        )
    space = Space(workspace, transport)
    try:
        build(space).run("stdio")
    finally:
        space.close()
