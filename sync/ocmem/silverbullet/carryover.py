"""Nothing validated here is lost to a pull (issue 33): what a local file holds that the space's
version does not, and that no earlier pull installed — a fact promoted locally before
SilverBullet was set up (the path ``ocmem init`` suggests: local first, SilverBullet later), a
skill, the human's own lines of AGENTS.md, an archive entry — keeps its file from being replaced
or removed until the human has decided (docs/sync.md, « Switching from local to SilverBullet »).

Pure: the pull (``ocmem.silverbullet.pull``) reads the three versions of a file and acts.
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from ocmem.formats import archive, memorymd, pending
from ocmem.home import shipped

_SKILL_PROPOSAL = re.compile(r"^proposition:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
REOPENED = "reprise : validée ici le {when}, absente de SilverBullet"
DROPPED = "la version de SilverBullet a été gardée (ocmem pull --remplacer-local)"


class Item(NamedTuple):
    """One validated thing a local file holds that the space's version would lose."""

    shown: str  # as the human reads it: the fact's line, a file, a line, an archive heading
    proposal: str | None  # the local proposal it came from, when there is one


def _decode(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")


def _own_lines(text: str) -> list[str]:
    """AGENTS.md's lines outside ocmem's section: the human's rules."""
    return [line.strip() for line in shipped.SECTION.sub("", text).splitlines() if line.strip()]


def _entry_key(entry: archive.Entry) -> tuple[object, ...]:
    return (entry.when, entry.kind, entry.action, entry.about, " ".join(entry.old.split()))


def lost(
    local_rel: str,
    here: bytes,
    space: bytes | None,
    installed: bytes | None,
    proposals: list[pending.Proposal],
    *,
    mirrored: bool = False,
) -> list[Item]:
    """What ``here`` (the local file) holds that neither ``space`` (the space's version, None
    when the space removed it) nor ``installed`` (what the last pull installed, None if none)
    holds. Empty when the file may be replaced (or removed) without losing anything.

    A file a pull already installed (``mirrored``) is the space's copy: what a promotion made
    here put into it counts (a proposal carries it), a hand edit of the copy does not (it is
    replaced, with a backup, as it always was); before the first pull, all of it counts."""
    if here in (space, installed) or shipped.own_skill_of(local_rel) is not None:
        return []
    found = _lost(local_rel, here, space, installed, proposals)
    return [item for item in found if item.proposal] if mirrored else found


def _lost(
    local_rel: str,
    here: bytes,
    space: bytes | None,
    installed: bytes | None,
    proposals: list[pending.Proposal],
) -> list[Item]:
    text, theirs = _decode(here), [_decode(space), _decode(installed)]
    if local_rel == "memory/MEMORY.md":
        known = {memorymd.statement_key(line) for t in theirs for line in memorymd.fact_lines(t)}
        return [
            Item(f"- {line}", _fact_proposal(line, proposals))
            for line in memorymd.fact_lines(text)
            if memorymd.statement_key(line) not in known
        ]
    if local_rel == "AGENTS.md":
        known_lines = {line for t in theirs for line in _own_lines(t)}
        return [Item(line, None) for line in _own_lines(text) if line not in known_lines]
    if local_rel == "memory/ARCHIVE.md":
        known_entries = {_entry_key(e) for t in theirs for e in archive.entries(t)}
        return [
            Item(f"{e.when} · {e.kind} {e.action} · {e.about}", None)
            for e in archive.entries(text)
            if _entry_key(e) not in known_entries
        ]
    # A skill's file: this version of it, whole.
    return [Item(local_rel, _skill_proposal(local_rel, text, proposals))]


def _fact_proposal(line: str, proposals: list[pending.Proposal]) -> str | None:
    """The local proposal a fact line came from: the one its trace names (a local promotion
    names no home), else the one saying the same."""
    named = memorymd.proposal_of(line)
    facts = [p for p in proposals if p.kind == "fait"]
    key = memorymd.statement_key(line)
    return next((p.id for p in facts if p.id == named), None) or next(
        (p.id for p in facts if memorymd.statement_key(p.content) == key), None
    )


def _skill_proposal(local_rel: str, text: str, proposals: list[pending.Proposal]) -> str | None:
    """The proposal a local promotion wrote into a SKILL.md's front matter."""
    if not local_rel.endswith("/SKILL.md"):
        return None
    named = _SKILL_PROPOSAL.search(text)
    name = local_rel.split("/")[1]
    return next(
        (
            p.id
            for p in proposals
            if p.kind == "skill"
            and p.skill_name == name
            and (named is None or named.group(1).strip().rsplit("/", 1)[-1] == p.id)
        ),
        None,
    )


def reopened(proposal: pending.Proposal, today: date) -> pending.Proposal:
    """A proposal validated here, to validate again in SilverBullet: pending, saying why."""
    found = _DATE.search(proposal.status)
    when = found.group(0) if found else today.isoformat()
    return proposal.with_status(f"{pending.STATE_PENDING} ({REOPENED.format(when=when)})")


def dropped(proposal: pending.Proposal, today: date) -> pending.Proposal:
    """A reopened proposal the human let go: refused, saying how."""
    return proposal.with_status(f"{pending.STATE_REFUSED} ({today.isoformat()}) : {DROPPED}")


class Candidate(NamedTuple):
    """A local file the pull would replace (``space``: the version read) or remove (None)."""

    remote: str
    local: str
    here: bytes
    space: bytes | None
    installed: bytes | None  # what the last pull installed there (None: none, or unknown)
    mirrored: bool = False  # a pull installed this file before (it is the space's copy)


class Decision(NamedTuple):
    held: set[str]  # remote names whose local file stays as it is
    document: pending.Document  # pending.md with the proposals reopened or let go
    carried: list[str]  # the proposals ever reopened for this space
    lines: list[str]  # what the pull says
    needs_human: bool


_SHOWN = 8  # items listed per file; the rest counted


def decide(
    candidates: list[Candidate],
    document: pending.Document,
    carried: list[str],
    today: date,
    *,
    replace_local: bool,
    pending_page: str | None,
) -> Decision:
    """Which local files stay, and the gesture that carries what they hold over: a proposal
    validated here is reopened (« en attente ») so that the human validates it in SilverBullet
    with one gesture (the review page's *Promouvoir*, or a line in the decisions page) — pushed
    like any proposal; once it is decided there, promoted (the space then holds it) or refused,
    the file is replaced. What no proposal carries is listed, to copy by hand. With
    ``replace_local`` the space's version wins: nothing is held, reopened proposals are refused."""
    held: set[str] = set()
    carried = list(carried)
    lines: list[str] = []
    needs_human = False
    for candidate in candidates:
        items = lost(
            candidate.local,
            candidate.here,
            candidate.space,
            candidate.installed,
            document.proposals,
            mirrored=candidate.mirrored,
        )
        by_id = {p.id: p for p in document.proposals}
        if replace_local:
            if items:
                lines += _replaced(candidate, items)
            for pid in {i.proposal for i in items if i.proposal in carried}:
                if pid is not None and by_id[pid].state == pending.STATE_PENDING:
                    document = document.replace(dropped(by_id[pid], today))
            continue
        waiting: list[str] = []
        again: list[str] = []
        by_hand: list[Item] = []
        for item in items:
            found = by_id.get(item.proposal or "")
            if found is None or pending_page is None:
                by_hand.append(item)
            elif found.state == pending.STATE_PENDING:
                waiting.append(found.id)
            elif found.state == pending.STATE_PROMOTED and found.id not in carried:
                document = document.replace(reopened(found, today))
                carried.append(found.id)
                again.append(found.id)
            # else decided in SilverBullet since it was reopened (or refused before): let go
        if not (waiting or again or by_hand):
            continue
        held.add(candidate.remote)
        needs_human = True
        lines += _held(candidate, items)
        if again:
            lines.append(
                f"  → reproposé ici, à valider dans SilverBullet : {', '.join(sorted(set(again)))} "
                f"(envoyé dans {pending_page} au prochain `ocmem push`)"
            )
        if waiting:
            lines.append(
                f"  → en attente de ta décision dans SilverBullet : {', '.join(sorted(set(waiting)))}"
            )
        if again or waiting:
            lines.append(
                "  Promeus (ou refuse) dans la page de revue (Library/ocmem) ; une fois décidé "
                f"là-bas, le pull suivant installe {candidate.remote}"
            )
        if by_hand:
            lines.append(
                f"  → à recopier à la main dans {candidate.remote} dans SilverBullet : "
                f"{len(by_hand)} élément(s) ci-dessus sans proposition"
            )
        lines.append(
            "  Pour prendre la version de SilverBullet et laisser ces éléments : `ocmem pull "
            "--remplacer-local` (la copie locale reste dans .ocmem/backups/)"
        )
    return Decision(held, document, carried, lines, needs_human)


def _listed(items: list[Item]) -> list[str]:
    shown = [f"      {item.shown}" for item in items[:_SHOWN]]
    if len(items) > _SHOWN:
        shown.append(f"      … et {len(items) - _SHOWN} autre(s)")
    return shown


def _held(candidate: Candidate, items: list[Item]) -> list[str]:
    what = (
        f"pas remplacé par {candidate.remote}"
        if candidate.space is not None
        else f"pas supprimé bien que {candidate.remote} ait disparu de SilverBullet"
    )
    head = (
        f"⚠ {candidate.local} gardé tel quel, {what} : {len(items)} élément(s) validé(s) ici "
        "n'y sont pas :"
    )
    return [head, *_listed(items)]


def _replaced(candidate: Candidate, items: list[Item]) -> list[str]:
    what = "remplacé par" if candidate.space is not None else "supprimé comme"
    return [
        f"⚠ {candidate.local} {what} {candidate.remote} (--remplacer-local) : "
        f"{len(items)} élément(s) validé(s) ici n'y sont plus (copie locale dans les "
        "sauvegardes ci-dessous) :",
        *_listed(items),
    ]
