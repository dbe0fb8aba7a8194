"""memory/pending.md: proposals waiting for the human (format, parsing, similarity).

Each proposal is one section with a stable id, so it can be completed, promoted, refused or
merged with a human's edits one by one::

    ## P-0003 · fait · Le VPS tourne sous Debian 12
    - Statut : en attente
    - Date : 2026-11-29
    - Sources : journal 2026-11-20 10:12 ; journal 2026-11-29 14:32
    - Origine : récurrence (2 épisodes)
    - Remplace : rien
    - Contradiction : aucune
    - Contenu proposé :

    ~~~text
    Le VPS tourne sous Debian 12.
    ~~~

A proposal made by an exposed session (``ocmem.guards.exposure``), or citing a quarantined journal
entry, says so right after its status, where the human reads it first (here, in the pushed
``Agents/Inbox/<home>/pending.md``, on the review page, in OpenCode's promotion prompt)::

    - Exposition : quarantaine : webfetch http://127.0.0.1:8000/doc

Every value written by the agent (title, content, contradiction, what it replaces, the skill
description) is rendered by ``ocmem.text.inert``: inert in SilverBullet, and still inert once a human
copies the proposed content into MEMORY.md or a SKILL.md (a fact is escaped text, its technical
tokens in code spans; a skill draft keeps only inert Markdown). ``Proposal`` holds the values as
written; ``parse`` reads them back, and ``Proposal.shown`` is what a terminal shows of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import date
from typing import NamedTuple

from ocmem.errors import OcmemError, Refused
from ocmem.formats import memorymd
from ocmem.text import inert

PENDING_HEADER = (
    "# Propositions en attente\n\n"
    "Propositions de l'agent, à valider par l'humain (« valide pending ») : un fait va dans "
    "MEMORY.md, une procédure devient un skill.\n"
)

STATE_PENDING = "en attente"
STATE_PROMOTED = "promu"
STATE_REFUSED = "refusé"
STATE_MERGED = "fusionné"
STATES = (STATE_PENDING, STATE_PROMOTED, STATE_REFUSED, STATE_MERGED)
KINDS = ("fait", "skill")

_FIELD = re.compile(r"^- ([^:]+?) : ?(.*)$")
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")

LABELS = {
    "status": "Statut",
    "exposure": "Exposition",
    "created": "Date",
    "updated": "Mis à jour",
    "sources": "Sources",
    "origin": "Origine",
    "replaces": "Remplace",
    "contradiction": "Contradiction",
    "check": "À vérifier",
    "skill_name": "Skill",
    "description": "Description",
}
CONTENT_LABEL = "Contenu proposé"
SEPARATOR = " · "  # between a header's id, kind and title


@dataclass(frozen=True)
class Proposal:
    id: str
    kind: str
    title: str
    status: str
    created: date
    sources: tuple[str, ...]
    origin: str
    replaces: str
    contradiction: str
    content: str
    updated: date | None = None
    check: str | None = None
    skill_name: str | None = None
    description: str | None = None
    exposure: str | None = None  # an exposed session's mark (ocmem.guards.exposure)

    @property
    def state(self) -> str:
        for state in (STATE_PROMOTED, STATE_REFUSED, STATE_MERGED):
            if self.status.startswith(state):
                return state
        return STATE_PENDING

    @property
    def number(self) -> int:
        return int(self.id.split("-")[1])

    def render(self) -> str:
        return self._layout(inert.inline, self.rendered_content())

    def shown(self) -> str:
        """The block as a person reads it outside SilverBullet (``ocmem pending show``): the
        layout of pending.md, every value as written (no escape, no token span), the content
        fenced as it is."""

        def plain(value: str) -> str:
            return inert.clean(value).strip()

        content = inert.clean(self.content, keep_tabs=True)
        return self._layout(
            plain, inert.fence(content, "markdown" if self.kind == "skill" else "text")
        )

    def _layout(self, value_of: Callable[[str], str], content: str) -> str:
        lines = [f"## {SEPARATOR.join((self.id, self.kind, value_of(self.title)))}"]
        values: dict[str, str | None] = {
            "status": self.status,
            "exposure": self.exposure,
            "created": self.created.isoformat(),
            "updated": self.updated.isoformat() if self.updated else None,
            "sources": " ; ".join(self.sources),
            "origin": self.origin,
            "replaces": self.replaces,
            "contradiction": self.contradiction,
            "check": self.check,
            "skill_name": self.skill_name,
            "description": self.description,
        }
        lines.extend(
            f"- {LABELS[key]} : {value_of(value)}" for key, value in values.items() if value
        )
        lines += [f"- {CONTENT_LABEL} :", "", content]
        return "\n".join(lines) + "\n"

    def rendered_content(self) -> str:
        """The proposed content in its fence: what a human may copy out, inert anywhere."""
        if self.kind == "skill":
            return inert.fence(inert.draft(self.content), "markdown")
        return inert.fence(inert.lines(self.content, indent=""), "text")

    def with_status(self, status: str) -> Proposal:
        return replace(self, status=status)


def left_memory(
    proposal: Proposal, memory_text: str, skill_names: set[str], home_id: str | None
) -> str | None:
    """Where a promoted proposal's fact or skill should be and no longer is (« MEMORY.md »,
    « skills/ »), None when it is there (or the proposal is not promoted): a status line
    never says « promu » of what validated memory no longer holds."""
    if proposal.state != STATE_PROMOTED:
        return None
    if proposal.kind == "fait":
        held = memorymd.holds(memory_text, proposal.id, proposal.content, home_id)
        return None if held else "MEMORY.md"
    if proposal.skill_name is None or proposal.skill_name in skill_names:
        return None
    return f"skills/{proposal.skill_name}"


def shown_status(proposal: Proposal, left: str | None, since: str | None = None) -> str:
    """The status as ocmem shows it: with where the promoted item is missing from, and since
    which pull when one installed validated memory without it."""
    if left is None:
        return proposal.status
    return f"{proposal.status}, absent de {left}" + (f" depuis le pull du {since}" if since else "")


def promoted_status(today: date) -> str:
    return f"{STATE_PROMOTED} ({today.isoformat()})"


def refused_status(today: date, reason: str) -> str:
    return f"{STATE_REFUSED} ({today.isoformat()}) : {reason}"


class PendingFormatError(OcmemError):
    def __init__(self, detail: str):
        super().__init__(
            f"memory/pending.md est illisible : {detail}",
            fix=(
                "pending.md n'est écrit que par ocmem : restaure la dernière sauvegarde "
                "(dossier .ocmem/backups) ou corrige la section indiquée à la main"
            ),
        )


class Span(NamedTuple):
    """One stretch of pending.md: a proposal's block, or text that belongs to no block (a
    person's notes, a preamble, a damaged block), kept byte for byte."""

    text: str
    proposal: Proposal | None = None
    problem: str | None = None  # why a block-like stretch is kept as text


class Document:
    """pending.md as written: ocmem rewrites the proposals it changes and nothing else."""

    def __init__(self, spans: list[Span]):
        self.spans = spans

    @property
    def proposals(self) -> list[Proposal]:
        return [s.proposal for s in self.spans if s.proposal is not None]

    @property
    def problems(self) -> list[str]:
        return [s.problem for s in self.spans if s.problem]

    def lines(self) -> list[tuple[int, Span]]:
        """Each span with the number of its first line in the file."""
        numbered, line = [], 1
        for span in self.spans:
            numbered.append((line, span))
            line += span.text.count("\n")
        return numbered

    def duplicate_ids(self) -> dict[str, list[int]]:
        """Ids that head more than one block, with the line of each such header."""
        heads: dict[str, list[int]] = {}
        for line, span in self.lines():
            for offset, pid in _header_ids(span):
                heads.setdefault(pid, []).append(line + offset)
        return {pid: found for pid, found in heads.items() if len(found) > 1}

    def ids(self) -> set[str]:
        """Every id in use, also by damaged blocks (a new proposal never takes one)."""
        taken = {p.id for p in self.proposals}
        for span in self.spans:
            taken.update(_ANY_ID.findall(span.text) if span.proposal is None else ())
        return taken

    def render(self) -> str:
        """The file: every span as it was read, but the proposals ocmem replaced."""
        return "".join(s.text for s in self.spans)

    def replace(self, proposal: Proposal) -> Document:
        return Document(
            [
                Span(_with_newline_of(s.text, proposal.render()), proposal)
                if s.proposal is not None and s.proposal.id == proposal.id
                else s
                for s in self.spans
            ]
        )

    def adopt(self, proposal: Proposal, text: str) -> Document:
        """``proposal``'s block, written exactly as ``text`` (the human's own version of it)."""
        return Document(
            [
                Span(_with_newline_of(s.text, text), proposal)
                if s.proposal is not None and s.proposal.id == proposal.id
                else s
                for s in self.spans
            ]
        )

    def append(self, proposal: Proposal) -> Document:
        spans = list(self.spans) or [Span(PENDING_HEADER)]
        text = "".join(s.text for s in spans)
        if not text.endswith("\n\n"):
            spans.append(Span("\n" if text.endswith("\n") else "\n\n"))
        return Document([*spans, Span(proposal.render(), proposal)])


def _with_newline_of(old: str, new: str) -> str:
    """``new`` ending the way ``old`` did (a block at the very end may lack its last newline)."""
    return new if old.endswith("\n") else new.removesuffix("\n")


_HEADER_LINE = re.compile(rf"^## (P-\d{{4,}}){SEPARATOR}({'|'.join(KINDS)}){SEPARATOR}(.+?)[ \t]*$")
_HEADER_LIKE = re.compile(r"^## P-\d{4,}\b")
_ANY_ID = re.compile(r"^## (P-\d{4,})\b", re.MULTILINE)


def block_ends(lines: list[str], start: int) -> int:
    """Index of the first line after the block whose header is ``lines[start]``: after its
    content fence (so a header-like line inside the proposed content is never a header), else
    at the next header-like line."""
    i = start + 1
    while i < len(lines) and not _HEADER_LIKE.match(lines[i]):
        if lines[i].rstrip() == f"- {CONTENT_LABEL} :":
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            opening = _FENCE.match(lines[j]) if j < len(lines) else None
            if opening:
                fence = opening.group(1)
                for k in range(j + 1, len(lines)):
                    stripped = lines[k].strip()
                    if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                        return k + 1
            return len(lines)  # an unclosed fence holds the rest, as a renderer would show it
        i += 1
    return i


DAMAGE_FIX = (
    "corrige ce bloc de memory/pending.md à la main, ou restaure-le depuis .ocmem/backups "
    "(`ocmem doctor` le montre)"
)


def damage_lines(doc: Document) -> list[str]:
    """What a reader of pending.md shows about its damaged blocks: each problem and its line,
    then the fix. Such a block is skipped by every count and list."""
    damaged = [(line, span.problem) for line, span in doc.lines() if span.problem]
    if not damaged:
        return []
    return [
        f"⚠ memory/pending.md ligne {line} : {problem} (bloc ignoré)" for line, problem in damaged
    ] + [f"Correction : {DAMAGE_FIX}"]


def refuse_duplicate_ids(doc: Document) -> None:
    """Refused when an id heads two blocks (which one would a promotion take?): every command
    that writes pending.md asks this first, before anything is written."""
    twins = doc.duplicate_ids()
    if twins:
        named = " ; ".join(
            f"{pid} aux lignes {', '.join(str(line) for line in lines)}"
            for pid, lines in sorted(twins.items())
        )
        raise Refused(
            f"memory/pending.md : identifiant en double ({named}) : ocmem n'écrit pas "
            "pending.md tant qu'une proposition a deux blocs (lequel serait-elle ?)",
            fix=f"donne au second bloc un identifiant libre ({next_id(doc.ids())}) ou supprime "
            "le doublon dans memory/pending.md, puis relance",
        )


def _header_ids(span: Span) -> list[tuple[int, str]]:
    """(line offset, id) of each proposal header in ``span`` (a damaged span may hold one)."""
    if span.proposal is not None:
        return [(0, span.proposal.id)]
    return [
        (span.text.count("\n", 0, match.start()), match.group(1))
        for match in _ANY_ID.finditer(span.text)
    ]


def document(text: str) -> Document:
    """Split pending.md into proposals and free text. Nothing raises: a block that does not
    parse is kept as text, with its problem (``doctor`` and ``pending list`` show it)."""
    lines = text.splitlines(keepends=True)
    spans: list[Span] = []
    free: list[str] = []
    seen: set[str] = set()

    def flush(problem: str | None = None) -> None:
        if free:
            spans.append(Span("".join(free), None, problem))
            free.clear()

    i = 0
    bare = [line.rstrip("\r\n") for line in lines]
    while i < len(lines):
        if not _HEADER_LIKE.match(bare[i]):
            free.append(lines[i])
            i += 1
            continue
        end = block_ends(bare, i)
        try:
            proposal = _parse_block(bare[i:end])
            if proposal.id in seen:
                raise PendingFormatError(f"identifiant {proposal.id} en double")
        except PendingFormatError as exc:
            flush()
            free.extend(lines[i:end])
            flush(exc.message.removeprefix("memory/pending.md est illisible : "))
        else:
            flush()
            seen.add(proposal.id)
            spans.append(Span("".join(lines[i:end]), proposal))
        i = end
    flush()
    return Document(spans)


def parse(text: str) -> list[Proposal]:
    return document(text).proposals


def _parse_block(chunk: list[str]) -> Proposal:
    header = _HEADER_LINE.match(chunk[0])
    if not header:
        raise PendingFormatError(f"en-tête incomplet {chunk[0][:60]!r}")
    return _parse_section(header, "\n".join(chunk))


def _parse_section(header: re.Match[str], body: str) -> Proposal:
    pid, kind, title = header.groups()
    lines = body.split("\n")[1:]
    fields: dict[str, str] = {}
    labels = {label: key for key, label in LABELS.items()}
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        match = _FIELD.match(line)
        if not match:
            raise PendingFormatError(f"{pid} : ligne inattendue {line[:60]!r}")
        label, value = match.group(1).strip(), match.group(2).strip()
        if label == CONTENT_LABEL:
            break
        if label not in labels:
            raise PendingFormatError(f"{pid} : champ inconnu « {label} »")
        fields[labels[label]] = inert.unescape(value)
    else:
        raise PendingFormatError(f"{pid} : « {CONTENT_LABEL} » manquant")
    fenced = _fenced_content(pid, lines[i:])
    content = inert.undraft(fenced) if kind == "skill" else inert.unlines(fenced)
    try:
        created = date.fromisoformat(fields["created"])
        updated = date.fromisoformat(fields["updated"]) if fields.get("updated") else None
        return Proposal(
            id=pid,
            kind=kind,
            title=inert.unescape(title),
            status=fields["status"],
            created=created,
            updated=updated,
            sources=tuple(s.strip() for s in fields["sources"].split(";") if s.strip()),
            origin=fields["origin"],
            replaces=fields["replaces"],
            contradiction=fields["contradiction"],
            check=fields.get("check"),
            skill_name=fields.get("skill_name"),
            description=fields.get("description"),
            exposure=fields.get("exposure"),
            content=content,
        )
    except KeyError as exc:
        raise PendingFormatError(f"{pid} : champ « {LABELS[exc.args[0]]} » manquant") from exc
    except ValueError as exc:
        raise PendingFormatError(f"{pid} : date invalide ({exc})") from exc


def _fenced_content(pid: str, lines: list[str]) -> str:
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    opening = _FENCE.match(lines[i]) if i < len(lines) else None
    if not opening:
        raise PendingFormatError(f"{pid} : bloc « {CONTENT_LABEL} » sans clôture de code")
    fence = opening.group(1)
    for j in range(i + 1, len(lines)):
        stripped = lines[j].strip()
        if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
            return "\n".join(lines[i + 1 : j])
    raise PendingFormatError(f"{pid} : bloc de code non refermé")


def rerender(text: str) -> str | None:
    """One proposal's block as ocmem writes it today (None if it is not a proposal)."""
    try:
        found = parse(text)
    except PendingFormatError:
        return None
    return found[0].render() if len(found) == 1 else None


def render(proposals: list[Proposal]) -> str:
    return PENDING_HEADER + "".join("\n" + p.render() for p in proposals)


def next_id(taken: set[str]) -> str:
    """The id after every id in use (``Document.ids``: damaged blocks included)."""
    return f"P-{max((int(t.split('-')[1]) for t in taken), default=0) + 1:04d}"


def find(proposals: list[Proposal], pid: str) -> Proposal | None:
    wanted = pid.strip().upper()
    if wanted.isdigit():
        wanted = f"P-{int(wanted):04d}"
    return next((p for p in proposals if p.id == wanted), None)
