"""The human's decisions on this home's proposals, read back from SilverBullet at every pull.

The human decides in SilverBullet (docs/guide.md §2): uses the review page's commands, which
add a line to the home's decisions page ``Agents/Inbox/<home>/decisions.md`` (a page ocmem never
writes: ``ocmem.formats.decisionspage``), or types such a line by hand, or edits the « Statut »
line of a proposal in ``Agents/Inbox/<home>/pending.md`` (how the review page decided before the
decisions page: such lines are still read), or promotes by copying a fact into MEMORY.md / a
draft into a skill, or deletes the proposal. :func:`reconcile` (pure) turns what the pulled
pages, MEMORY.md and skills show into local statuses, so ``pending list``, ``status`` and
``propose`` see the truth, and into push bases, so the next push leaves the human's block as the
human wrote it (no agent copy, nothing re-sent).
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from ocmem.formats import decisionspage, pending, skills
from ocmem.home.atomic import read_text
from ocmem.silverbullet import merge
from ocmem.silverbullet.state import PushedPage
from ocmem.text import inert

_STATUS = re.compile(r"^- Statut : ?(.*)$", re.MULTILINE)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_PROPOSITION = re.compile(r"^\s*proposition:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)
DELETED_REASON = "proposition supprimée dans SilverBullet"


class Reconciled(NamedTuple):
    document: pending.Document
    bases: dict[str, str]  # block id → the digest push should now take as its base
    lines: list[str]  # what changed, for the report


def global_id(home_id: str, pid: str) -> str:
    """A proposal's id across homes, as promotions write it (``vps-prod/P-0003``)."""
    return f"{home_id}/{pid}"


def _promoted_by_copy(
    proposal: pending.Proposal, home_id: str, memory_text: str, installed: list[str]
) -> bool:
    """Whether the human promoted it by hand: its id or its very text in MEMORY.md, or a skill
    that names it (or carries its name)."""
    gid = global_id(home_id, proposal.id)
    if proposal.kind == "fait":
        return gid in memory_text or inert.inline(proposal.content) in memory_text
    for text in installed:
        named = _PROPOSITION.search(text)
        if named and named.group(1).strip() == gid:
            return True
    return proposal.skill_name is not None and any(
        re.search(rf"^name:\s*['\"]?{re.escape(proposal.skill_name)}['\"]?\s*$", t, re.M)
        for t in installed
    )


def reconcile(
    document: pending.Document,
    page_text: str | None,
    pushed: PushedPage,
    memory_text: str,
    skill_texts: list[str],
    home_id: str,
    today: date,
    decided: dict[str, str] | None = None,
) -> Reconciled:
    """The local proposals after the human's decisions. ``page_text`` is a trusted read of this
    home's pending page (None: not read); ``decided`` is its decisions page, parsed (id →
    status)."""
    decided = decided or {}
    remote = (
        {s.id: s.text for s in merge.split(page_text, merge.PENDING_BLOCK) if s.id}
        if page_text is not None
        else {}
    )
    bases: dict[str, str] = {}
    lines: list[str] = []
    for proposal in document.proposals:
        pid = proposal.id
        pushed_digest = pushed.blocks.get(pid)
        block = remote.get(pid)
        undone = decided.get(pid, "").startswith(decisionspage.UNDONE)
        if undone:
            document, proposal, said = _undone(document, proposal, decided[pid], skill_texts)
            lines += said
        if page_text is not None and pushed_digest and block is None:
            if proposal.state == pending.STATE_PENDING and pid in decided and not undone:
                document = document.replace(proposal.with_status(decided[pid]))
                lines.append(_decided_line(pid, decided[pid]))
            elif proposal.state == pending.STATE_PENDING and pid not in pushed.conflicts:
                refused = proposal.with_status(pending.refused_status(today, DELETED_REASON))
                document = document.replace(refused)
                lines.append(f"{pid} supprimée dans SilverBullet : marquée refusée")
            continue
        if block is not None and pushed_digest and merge.digest(block) != pushed_digest:
            document, line = _adopt(document, proposal, block, bases)
            if line:
                lines.append(line)
            proposal = next(p for p in document.proposals if p.id == pid)
        if proposal.state == pending.STATE_PENDING and pid in decided and not undone:
            proposal = proposal.with_status(decided[pid])
            document = document.replace(proposal)
            lines.append(_decided_line(pid, decided[pid]))
        if undone and _promoted_by_copy(proposal, home_id, memory_text, skill_texts):
            left = (
                "son fait est encore dans MEMORY.md"
                if proposal.kind == "fait"
                else f"son skill est encore dans skills/{proposal.skill_name}"
            )
            lines.append(f"⚠ {pid} : promotion annulée, mais {left} : retire-le dans SilverBullet")
        elif proposal.state == pending.STATE_PENDING and _promoted_by_copy(
            proposal, home_id, memory_text, skill_texts
        ):
            promoted = proposal.with_status(pending.promoted_status(today))
            document = document.replace(promoted)
            lines.append(f"{pid} promue (trouvée dans MEMORY.md ou un skill)")
    return Reconciled(document, bases, lines)


def _undone(
    document: pending.Document, proposal: pending.Proposal, status: str, skill_texts: list[str]
) -> tuple[pending.Document, pending.Proposal, list[str]]:
    """« annulé » on the decisions page: a promotion it is not older than waits again."""
    if proposal.state != pending.STATE_PROMOTED:
        return document, proposal, []
    undone_on, promoted_on = _DAY.search(status), _DAY.search(proposal.status)
    if undone_on and promoted_on and undone_on.group(0) < promoted_on.group(0):
        return document, proposal, []  # promoted again here since (sync was off then)
    waiting = proposal.with_status(pending.STATE_PENDING)
    line = f"{proposal.id} : promotion annulée dans SilverBullet ({status}) : de nouveau en attente"
    return document.replace(waiting), waiting, [line]


def _decided_line(pid: str, status: str) -> str:
    if status.startswith(pending.STATE_REFUSED):
        return f"{pid} refusée dans SilverBullet : {status}"
    return f"{pid} : {status} (décidé dans SilverBullet)"


def _adopt(
    document: pending.Document,
    proposal: pending.Proposal,
    block: str,
    bases: dict[str, str],
) -> tuple[pending.Document, str | None]:
    """The human changed this block in SilverBullet: their version becomes the local one."""
    found = pending.document(block).proposals
    if len(found) == 1 and found[0].id == proposal.id:
        theirs = found[0]
        document = document.adopt(theirs, block)
        bases[proposal.id] = merge.digest(block)
    else:
        # Not readable as a whole proposal (lines added inside it…): its status line still is.
        status = _STATUS.search(block)
        theirs = proposal.with_status(status.group(1).strip()) if status else proposal
        document = document.replace(theirs)
        rendered = next(s.text for s in document.spans if s.proposal is theirs)
        bases[proposal.id] = merge.digest(rendered)
    if theirs.status == proposal.status:
        return document, (f"{proposal.id} modifiée dans SilverBullet : version de l'humain gardée")
    if theirs.state == pending.STATE_REFUSED:
        return document, f"{proposal.id} refusée dans SilverBullet : {theirs.status}"
    return document, f"{proposal.id} : {theirs.status} (décidé dans SilverBullet)"


def skill_texts(installed: list[skills.Skill]) -> list[str]:
    return [read_text(s.path, errors="replace") for s in installed]
