"""The four tools of ``ocmem mcp`` as text answers, over a lazily made client: what the MCP
server (``ocmem.bridge.mcpserve``, default mode) and the gate (``space`` requests relayed by the
plugin, hardened mode) both run. The policy is :mod:`ocmem.bridge.spacetools`; here, the
arguments are checked and each answer is put in words for the model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ocmem.bridge.spacetools import MAX_LISTED, SpaceTools
from ocmem.errors import InputError, OcmemError
from ocmem.home.pagenames import file_of
from ocmem.home.space import load_sync_config
from ocmem.home.workspace import Workspace
from ocmem.silverbullet.client import SilverBullet

if TYPE_CHECKING:
    import httpx

# The tools as OpenCode names them: `<server>_<tool>` (the plugin reads the same names: mcp.ts).
TOOLS = ("lire_page", "lister_pages", "chercher_pages", "ecrire_page")


class Space:
    """One client, made at the first call (a server with sync not yet configured starts all the
    same, and says what to do when it is used)."""

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

    def call(self, tool: str, args: Mapping[str, Any]) -> str:
        """The answer of ``tool`` to ``args``; an OcmemError (secrets replaced) when refused."""
        try:
            if tool == "lire_page":
                return self.read(_text(args, "page"))
            if tool == "lister_pages":
                return self.pages(_text(args, "prefixe", ""))
            if tool == "chercher_pages":
                return self.search(_text(args, "requete"))
            if tool == "ecrire_page":
                replace = args.get("remplacer", False)
                if not isinstance(replace, bool):
                    raise InputError("« remplacer » vaut true ou false", fix='"remplacer": true')
                return self.write(_text(args, "page"), _text(args, "contenu"), replace)
            raise InputError(f"outil inconnu : {tool!r:.60}", fix=f"outils : {', '.join(TOOLS)}")
        except OcmemError as exc:
            if self._tools is not None:
                exc.message = self._tools.redact(exc.message)
                exc.fix = self._tools.redact(exc.fix) if exc.fix else exc.fix
            raise

    def read(self, page: str) -> str:
        found = self.tools().read(page)
        note = (
            "page validée par l'utilisateur : la session n'est pas exposée"
            if found.validated
            else "contenu extérieur à la mémoire validée : la session est marquée exposée"
        )
        cut = " ; page coupée (trop longue)" if found.cut else ""
        return f"# {found.page} ({note}{cut})\n\n{found.text}"

    def pages(self, prefix: str) -> str:
        names = self.tools().pages(prefix)
        shown = names[:MAX_LISTED]
        more = f"\n… et {len(names) - len(shown)} autres" if len(names) > len(shown) else ""
        return ("\n".join(shown) + more) if shown else "aucune page"

    def search(self, query: str) -> str:
        found = self.tools().search(query)
        blocks = [
            "\n".join([f"## {h.page} (score {h.score})", *(f"  {line}" for line in h.lines)])
            for h in found.hits
        ] or ["rien de trouvé"]
        if found.past_bounds:
            blocks.append(
                f"({found.past_bounds} page(s) plus ancienne(s) non lue(s) : recherche bornée)"
            )
        if found.unread:
            blocks.append(
                f"({found.unread} page(s) illisible(s) pendant la recherche : en cours d'écriture ?)"
            )
        return "\n".join(blocks)

    def write(self, page: str, content: str, replace: bool) -> str:
        done = self.tools().write(page, content, replace=replace)
        how = "remplacée (ancienne version sauvegardée par ocmem)" if done.replaced else "écrite"
        return f"page {done.page} {how} ({done.chars} caractères, fichier {file_of(done.page)})"


def _text(args: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = args.get(key, default)
    if not isinstance(value, str):
        raise InputError(f"« {key} » doit être une chaîne", fix=f'"{key}": "…"')
    return value
