"""The human's decisions page: ``Agents/Inbox/<home>/decisions.md``, beside the home's pending page.

One writer per page (docs/sync.md): ocmem writes ``pending.md``; the human's gestures on its
proposals (the review page's *Promouvoir* / *Refuser*, or a line typed by hand) go to this page,
which ocmem reads at every pull and never writes (the push rules may not name it). A decision is
one line::

    - P-0003 : promu (2026-12-02)
    - P-0004 : refusé (2026-12-02) : déjà noté ailleurs

The review page writes the line ocmem computed for the gesture (``ocmem.formats.gestures``), with
the day of the click and, for a refusal, the reason the human typed, as typed: it is the human's
text, on the human's page. ocmem reads every line the same way, the page's or one typed by hand:
the status unescaped (``ocmem.text.inert.unescape``), only a line ending in a newline (a page read
while being written cannot give half a reason), only a decided state (promu, refusé, fusionné) or a
promotion taken back (« - P-0003 : annulé (date) ») counts, and for one id the last line wins (a
human corrects a decision by adding a line, until a pull has applied it: a proposal decided locally
is not decided again; « annulé » sets a promoted one waiting again: ocmem.silverbullet.decisions).
"""

from __future__ import annotations

import re

from ocmem.formats import pending
from ocmem.text import inert

PAGE_NAME = "decisions.md"  # beside pending.md; no push rule may name it (ocmem.home.space)
HEADER = (
    "# Décisions sur les propositions\n\n"
    "Écrite par la page de revue d'ocmem (Promouvoir, Refuser, Annuler) ou à la main, une ligne "
    "par décision : « - P-0001 : promu (date) », « - P-0002 : refusé (date) : raison », "
    "« - P-0001 : annulé (date) ». ocmem la lit à chaque pull et ne l'écrit jamais.\n"
)
_LINE = re.compile(r"- (P-[0-9]{4,}(?:~[A-Za-z0-9_-]+)?) : (.*?)[ \t]*\r?")
DECIDED = (pending.STATE_PROMOTED, pending.STATE_REFUSED, pending.STATE_MERGED)
# The human took a promotion back (``ocmem.services.unpromotion``): the proposal waits again.
# Not a state of pending.md's: the pull turns it into « en attente » (ocmem.silverbullet.decisions).
UNDONE = "annulé"


def line(pid: str, status: str) -> str:
    """The decisions page's line for one decision, as the review page writes it."""
    return f"- {pid} : {status}\n"


def page_beside(pending_page: str) -> str:
    """The decisions page next to a pending page (``…/pending.md`` → ``…/decisions.md``)."""
    folder, slash, _ = pending_page.rpartition("/")
    return f"{folder}{slash}{PAGE_NAME}"


def is_decisions_page(name: str) -> bool:
    return name.rpartition("/")[2] in (PAGE_NAME, PAGE_NAME.removesuffix(".md"))


def parse(text: str) -> dict[str, str]:
    """Proposal id → its decided status (unescaped), from a decisions page."""
    found: dict[str, str] = {}
    for line in text.split("\n")[:-1]:  # the last piece has no newline after it
        match = _LINE.fullmatch(line)
        if match is None:
            continue
        status = inert.unescape(match.group(2))
        if status.startswith((*DECIDED, UNDONE)):
            found[match.group(1)] = status
    return found
