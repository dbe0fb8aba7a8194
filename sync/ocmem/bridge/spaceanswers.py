"""The space tools' answers (``space_read``, ``space_list``, ``space_search``, ``space_write``,
declared in :mod:`ocmem.formats.operations`), as the gate gives them to the plugin: the text the
model reads, and what the call brings into the session. The policy is
:mod:`ocmem.bridge.spacetools`; here, the arguments are checked against their declaration, each
answer is put in words for the model, and the exposure rule is applied:

- reading a validated page (what the pull installs, or a page the human lists in
  ``silverbullet.trusted_pages``) brings nothing from outside: the session stays clean;
- any other read, a listing and a search expose it (another page's text, page names, search
  results are anyone's);
- a write brings nothing into the session (its answer is ocmem's own words).

The plugin records the exposure before the model reads the text (``plugin/ocmem/core.ts``).

A call reads the space within ``TOOL_DEADLINE_SECONDS`` (``silverbullet.pull_deadline_seconds``
when that is shorter), every request and every byte: the plugin waits 90 s for an answer and the
gate has four workers for all of the plugin's calls, so a space sending a byte a second must not
hold one past that wait (a few such calls would hold the memory tools). A search past it
answers with what it read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ocmem.bridge.contract import Exposure, SpaceAnswer
from ocmem.bridge.spacetools import MAX_LISTED, SpaceTools
from ocmem.errors import InputError, OcmemError
from ocmem.formats import operations
from ocmem.guards.exposure import SPACE_CONTENT
from ocmem.home.pagenames import file_of
from ocmem.home.space import load_sync_config
from ocmem.home.workspace import Workspace
from ocmem.silverbullet.client import SilverBullet

if TYPE_CHECKING:
    import httpx

MAX_SOURCE_CHARS = 300  # an exposure's source, as the plugin bounds its own
TOOL_DEADLINE_SECONDS = 30.0  # well under the plugin's 90 s wait for the gate (core.ts)


class Space:
    """One client, made at the first call (with sync not yet configured, a call says what to
    do)."""

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

    def answer(self, tool: str, args: Mapping[str, Any]) -> SpaceAnswer:
        """The answer of ``tool`` to ``args``; an OcmemError (secrets replaced) when refused."""
        try:
            operation = operations.SPACE_BY_TOOL.get(tool)
            if operation is None:
                known = ", ".join(operations.SPACE_BY_TOOL)
                raise InputError(f"outil inconnu : {tool!r:.60}", fix=f"outils : {known}")
            given = operations.check_args(operation, args)
            self._start()
            if operation is operations.SPACE_READ:
                return self.read(given["page"])
            if operation is operations.SPACE_LIST:
                return self.pages(given.get("prefix", ""))
            if operation is operations.SPACE_SEARCH:
                return self.search(given["query"])
            return self.write(given["page"], given["content"], given.get("replace", False))
        except OcmemError as exc:
            if self._tools is not None:
                exc.message = self._tools.redact(exc.message)
                exc.fix = self._tools.redact(exc.fix) if exc.fix else exc.fix
            raise

    def _start(self) -> None:
        """The call's deadline, from now."""
        tools = self.tools()
        seconds = min(TOOL_DEADLINE_SECONDS, tools.config.pull_deadline_seconds)
        tools.client.set_deadline(
            seconds,
            fix="vérifie que SilverBullet répond normalement (ouvre-le dans un navigateur), "
            f"puis réessaie : un outil de l'espace attend {seconds:g} s au plus",
        )

    def read(self, page: str) -> SpaceAnswer:
        found = self.tools().read(page)
        note = (
            "page validée par l'utilisateur : la session n'est pas exposée"
            if found.validated
            else "contenu extérieur à la mémoire validée : la session est marquée exposée"
        )
        cut = " ; page coupée (trop longue)" if found.cut else ""
        text = f"# {found.page} ({note}{cut})\n\n{found.text}"
        return self._answer(text, [] if found.validated else [f"space_read {found.page}"])

    def pages(self, prefix: str) -> SpaceAnswer:
        names = self.tools().pages(prefix)
        shown = names[:MAX_LISTED]
        more = f"\n… et {len(names) - len(shown)} autres" if len(names) > len(shown) else ""
        text = ("\n".join(shown) + more) if shown else "aucune page"
        return self._answer(text, [f"space_list {prefix}".rstrip()])

    def search(self, query: str) -> SpaceAnswer:
        found = self.tools().search(query)
        blocks = [
            "\n".join([f"## {h.page} (score {h.score})", *(f"  {line}" for line in h.lines)])
            for h in found.hits
        ] or ["rien de trouvé"]
        if found.past_bounds:
            blocks.append(
                f"({found.past_bounds} page(s) plus ancienne(s) non lue(s) : recherche bornée)"
            )
        if found.late:
            blocks.append(
                f"({found.late} page(s) non lue(s) : SilverBullet répond trop lentement, "
                "recherche arrêtée au délai de l'outil)"
            )
        if found.unread:
            blocks.append(
                f"({found.unread} page(s) illisible(s) pendant la recherche : en cours d'écriture ?)"
            )
        return self._answer("\n".join(blocks), [f"space_search {query}"])

    def write(self, page: str, content: str, replace: bool) -> SpaceAnswer:
        done = self.tools().write(page, content, replace=replace)
        how = "remplacée (ancienne version sauvegardée par ocmem)" if done.replaced else "écrite"
        return self._answer(
            f"page {done.page} {how} ({done.chars} caractères, fichier {file_of(done.page)})", []
        )

    def _answer(self, text: str, sources: list[str]) -> SpaceAnswer:
        """The answer, with the exposure each source names (secrets replaced there too)."""
        redact = self.tools().redact
        exposures: list[Exposure] = [
            {"kind": SPACE_CONTENT, "source": redact(source)[:MAX_SOURCE_CHARS]}
            for source in sources
        ]
        return {"text": text, "exposures": exposures}
