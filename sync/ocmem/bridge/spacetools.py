"""What the space tools (``space_read``, ``space_list``, ``space_search``, ``space_write``) let
the model do in the human's SilverBullet, and nothing more.

A SilverBullet MCP server of the usual kind holds a token for the whole space and writes any page:
through it the model writes validated memory (``Agents/Memory/MEMORY.md``, a skill), which the
next pull installs (docs/security.md). This is the safe way to the same space, run by the gate
for the plugin's tools (``ocmem.bridge.spaceanswers`` puts each answer in words):

- **read** any page, **list** pages and **search** them — with the rule, for the session's
  exposure (said with each answer; the plugin records it before the model reads it): reading a
  validated page (what the pull installs: ``Agents/Memory/``, ``Agents/Skills/``,
  ``Agents/AGENTS.md``) or a page the human lists in ``silverbullet.trusted_pages`` does not
  expose the session; any other read, a listing and a search do;
- **write** only a page strictly under this home's ``Agents/Inbox/<home-id>/``, never one of
  the pages ocmem pushes there nor the human's decisions page, nor a name that passes for one
  of them or for their conflict copies (``ocmem.home.pagenames.mimicked_page``: any case,
  Unicode or percent-encoding spelling), never an existing page unless
  asked to replace it (its previous version kept in the backups), the content rendered inert
  like the push's (``ocmem.text.inert.draft``) — and the client's ``InboxGuard`` refuses any
  other request before it leaves;
- the token stays in the gate: every answer has it (and every secret ocmem knows) replaced by
  ``***``.

Page names are normalised (``ocmem.home.pagenames.page_path``: percent-decoding until stable,
``\\`` as ``/``, ``.`` and ``..`` resolved, no leading ``/`` nor ``/.fs/``, an optional ``.md``),
then checked as a file name SilverBullet could hold.

The same reading and the same write rule judge a third-party SilverBullet MCP server's write
call before it runs (:func:`mcp_write_refusal`, the gate's ``mcp-write``): the plugin only
picks the call's page arguments (plugin/ocmem/mcp.ts); the verdict is this module's.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from ocmem.bridge import mcpdiscovery
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home import identity
from ocmem.home.backups import Backups
from ocmem.home.pagenames import (
    file_of,
    is_validated,
    mimicked_page,
    page_path,
    validated_pages,
)
from ocmem.home.settings import setting
from ocmem.home.space import SyncConfig, secret_values
from ocmem.home.workspace import Workspace
from ocmem.silverbullet.client import (
    Budget,
    BudgetSpent,
    PastDeadline,
    SilverBullet,
    TooLarge,
    TornRead,
    remote_name_problem,
)
from ocmem.text import inert

MAX_READ_CHARS = 60_000  # a page longer than this is cut (with a note): a prompt, not a dump
MAX_WRITE_CHARS = 20_000
MAX_LISTED = 500
# A search reads pages one by one (SilverBullet has no search over /.fs): bounded.
MAX_SEARCHED_PAGES = 400
MAX_SEARCHED_BYTES = 4_000_000
MAX_HITS = 10
SNIPPET_CHARS = 200
_WORD = re.compile(r"\w{2,}")


def _fold(text: str) -> str:
    """Lower case without accents: « Déployé » finds « deploye »."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def page_name(raw: str) -> str:
    """``raw`` as the space tools read a page name (``page_path``), checked as a file name
    SilverBullet could hold; InputError when it cannot be one."""
    page = page_path(raw)
    problem = "nom illisible" if page is None else remote_name_problem(file_of(page))
    if page is None or problem:
        raise InputError(
            f"{raw!r:.120} n'est pas un nom de page SilverBullet ({problem})",
            fix="donne le nom de la page tel que SilverBullet l'affiche, ex. Agents/Memory/MEMORY",
        )
    return page


def write_inbox(ws: Workspace) -> str:
    """``Agents/Inbox/<home-id>/``: where the model may write."""
    found = identity.read(ws.paths)
    if found is None:
        raise Refused(
            "ce dossier n'a pas encore d'identifiant ocmem : aucune page de SilverBullet ne lui est ouverte",
            fix="lance `ocmem init` (l'identifiant nomme la boîte de dépôt Agents/Inbox/<id>/)",
        )
    inbox = str(setting(ws.settings, "silverbullet", "inbox")).strip().strip("/")
    return f"{inbox}/{found.id}/"


def _write_rule(inbox: str) -> str:
    return (
        f"Dans SilverBullet, l'agent n'écrit que sous {inbox} (space_write) ; la mémoire validée "
        "(Agents/Memory/), les skills (Agents/Skills/) et Agents/AGENTS.md ne changent que par "
        "l'utilisateur : un fait ou une leçon passe par memory_note, memory_journal ou "
        "memory_propose."
    )


def write_problem(ws: Workspace, page: str) -> str | None:
    """Why the model may not write ``page`` (as :func:`page_name` reads it), then the rule;
    None when it may. Refused when the home has no id (nowhere is open)."""
    inbox = write_inbox(ws)
    if not page.startswith(inbox) or page == inbox.rstrip("/"):
        return f"{page} est hors de {inbox}. {_write_rule(inbox)}"
    mimicked = mimicked_page(page, mcpdiscovery.reserved_pages(ws.settings))
    if mimicked is not None:
        return (
            f"{page} se lit comme {mimicked}, une page d'ocmem (qu'il pousse lui-même, ou les "
            f"décisions de l'utilisateur), ou l'une de ses copies de conflit. {_write_rule(inbox)}"
        )
    return None


def mcp_write_refusal(ws: Workspace, server: str, tool: str, pages: list[str]) -> str:
    """Why a SilverBullet MCP server's write call may not run ("" when it may): it must name a
    page, and every page it names (``pages``: the plugin's pick of its arguments) must pass
    :func:`page_name` and :func:`write_problem`, as a page space_write writes."""
    what = f"l'outil {tool} du serveur MCP SilverBullet « {server} »"
    try:
        inbox = write_inbox(ws)
    except Refused as exc:
        return f"refusé : {what} écrirait dans SilverBullet, et {exc.message} ; {exc.fix}."
    if not pages:
        return (
            f"refusé : {what} écrit, mais ocmem ne trouve pas dans ses arguments la page qu'il "
            f"écrirait. {_write_rule(inbox)}"
        )
    for raw in pages:
        try:
            page = page_name(raw)
        except InputError as exc:
            return f"refusé : {what} : {exc.message}. {_write_rule(inbox)}"
        problem = write_problem(ws, page)
        if problem:
            return f"refusé : {what} vise {json.dumps(raw, ensure_ascii=False)[:200]} : {problem}"
    return ""


@dataclass(frozen=True)
class PageText:
    page: str
    text: str
    validated: bool  # a page the pull installs, or one the human trusts: the session stays clean
    cut: bool


@dataclass(frozen=True)
class Hit:
    page: str
    score: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Searched:
    hits: tuple[Hit, ...]
    past_bounds: int  # pages not read: beyond MAX_SEARCHED_PAGES or MAX_SEARCHED_BYTES
    unread: int  # pages that could not be read whole (a save in progress)
    late: int = 0  # pages not read: the tool's deadline passed (a slow space)


def _hit(page: str, text: str, terms: list[str]) -> Hit | None:
    """How well ``page`` matches ``terms`` (folded): one point per term on a line, three per
    term in its name; the first three matching lines as they read."""
    folded_page = _fold(page)
    score = 3 * sum(term in folded_page for term in terms)
    lines: list[str] = []
    for line in text.split("\n"):
        folded = _fold(line)
        matched = sum(term in folded for term in terms)
        if matched:
            score += matched
            if len(lines) < 3:
                lines.append(inert.clean(line.strip())[:SNIPPET_CHARS])
    return Hit(page, score, tuple(lines)) if score else None


@dataclass(frozen=True)
class Written:
    page: str
    replaced: bool
    chars: int


class SpaceTools:
    """The four operations, over one SilverBullet client (its transport injected)."""

    def __init__(self, ws: Workspace, config: SyncConfig, client: SilverBullet):
        self.ws = ws
        self.config = config
        self.client = client
        self.validated = validated_pages(ws.settings, config)
        self._secrets = tuple(sorted(secret_values(ws.settings), key=len, reverse=True))

    # --- what the model reads -----------------------------------------------------------

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def read(self, raw: str) -> PageText:
        page = page_name(raw)
        # the pull's bound for one page: more would be cut to MAX_READ_CHARS anyway
        found = self.client.read(file_of(page), max_bytes=self.config.pull_max_file_bytes)
        if found is None:
            raise InputError(
                f"la page {page} n'existe pas dans SilverBullet",
                fix="space_list donne les pages existantes",
            )
        text = found.body.decode("utf-8", errors="replace")
        cut = len(text) > MAX_READ_CHARS
        text = inert.clean(text[:MAX_READ_CHARS], keep_tabs=True)
        return PageText(page, self.redact(text), is_validated(page, self.validated), cut)

    def pages(self, prefix: str = "") -> list[str]:
        folder = page_path(prefix) if prefix.strip() else ""
        names = sorted(
            f.name[:-3]
            for f in self.client.list()
            if f.name.endswith(".md") and "\x00" not in f.name
        )
        return [n for n in names if not folder or n == folder or n.startswith(folder + "/")]

    def search(self, query: str, limit: int = MAX_HITS) -> Searched:
        """The pages holding the query's words, best first, and what was left unread: pages past
        the bounds (newest first), and pages that could not be read whole (being saved: a
        search is not refused for one page a human is editing)."""
        terms = sorted({_fold(w) for w in _WORD.findall(query)})
        if not terms:
            raise InputError(
                "la recherche ne contient aucun mot", fix="donne un ou plusieurs mots à chercher"
            )
        files = sorted(
            (f for f in self.client.list() if f.name.endswith(".md")),
            key=lambda f: -f.meta.last_modified,
        )
        hits: list[Hit] = []
        budget = MAX_SEARCHED_BYTES
        received = Budget(MAX_SEARCHED_BYTES)  # what the reads stream, whatever the listing says
        past_bounds = max(0, len(files) - MAX_SEARCHED_PAGES)
        unread = late = 0
        for number, remote in enumerate(files[:MAX_SEARCHED_PAGES]):
            if remote.meta.size > budget:
                past_bounds += 1
                continue
            budget -= remote.meta.size
            try:
                found = self.client.read(
                    remote.name, max_bytes=self.config.pull_max_file_bytes, budget=received
                )
            except TornRead:  # the server, the token, the network failing: the search fails
                unread += 1
                continue
            except PastDeadline:  # a slow space: what was read answers, the rest is counted
                late = min(len(files), MAX_SEARCHED_PAGES) - number
                break
            except BudgetSpent:  # the listing announced less than the pages sent
                past_bounds += min(len(files), MAX_SEARCHED_PAGES) - number
                break
            except TooLarge:
                past_bounds += 1
                continue
            if found is None:
                continue
            hit = _hit(remote.name[:-3], found.body.decode("utf-8", errors="replace"), terms)
            if hit is not None:
                hits.append(Hit(hit.page, hit.score, tuple(self.redact(x) for x in hit.lines)))
        hits.sort(key=lambda h: (-h.score, h.page))
        return Searched(tuple(hits[:limit]), past_bounds, unread, late)

    # --- what the model writes ----------------------------------------------------------

    def write(self, raw: str, content: str, *, replace: bool = False) -> Written:
        page = page_name(raw)
        problem = write_problem(self.ws, page)
        if problem:
            inbox = write_inbox(self.ws)
            raise Refused(f"refusé : {problem}", fix=f"écris sous {inbox}, ex. {inbox}notes/idee")
        if len(content) > MAX_WRITE_CHARS:
            raise InputError(
                f"contenu trop long ({len(content)} caractères, au plus {MAX_WRITE_CHARS})",
                fix="résume, ou écris plusieurs pages",
            )
        for secret in self._secrets:
            if secret in content:
                raise Refused(
                    "le contenu contient un secret qu'ocmem connaît (le jeton de SilverBullet)",
                    fix="retire-le du texte : un secret ne va jamais dans une page",
                )
        body = inert.draft(content).rstrip("\n") + "\n"
        if inert.active_constructs(body):  # draft() escapes them: a bug if one is left
            raise OcmemError(
                f"{page} : le rendu garde une construction active", fix="bogue à signaler"
            )
        name = file_of(page)
        previous = self.client.read(name)
        if previous is not None and not replace:
            raise Refused(
                f"la page {page} existe déjà (peut-être modifiée par l'utilisateur)",
                fix="choisis un autre nom, ou redemande avec remplacer=true (l'ancienne version est gardée dans les sauvegardes d'ocmem)",
            )
        if previous is not None:
            Backups(self.ws.paths, self.ws.clock).save_bytes(f"remote/{name}", previous.body)
        self.client.put(name, body.encode("utf-8"))
        return Written(page, previous is not None, len(body))
