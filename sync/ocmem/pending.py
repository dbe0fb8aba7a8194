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

Every value written by the agent (title, content, contradiction, what it replaces, the skill
description) is rendered by ``ocmem.inert``: inert in SilverBullet, and still inert once a human
copies the proposed content into MEMORY.md or a SKILL.md (a fact is escaped text, a skill draft
keeps only inert Markdown). ``Proposal`` holds the values as written; ``parse`` reads them back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

from ocmem import inert
from ocmem.errors import OcmemError

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

_SECTION = re.compile(r"^## (P-\d{4,}) · (fait|skill) · (.+?)[ \t]*$", re.MULTILINE)
_FIELD = re.compile(r"^- ([^:]+?) : ?(.*)$")
_FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")

_LABELS = {
    "status": "Statut",
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
_CONTENT_LABEL = "Contenu proposé"


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
        lines = [f"## {self.id} · {self.kind} · {inert.inline(self.title)}"]
        values: dict[str, str | None] = {
            "status": self.status,
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
            f"- {_LABELS[key]} : {inert.inline(value)}" for key, value in values.items() if value
        )
        lines += [f"- {_CONTENT_LABEL} :", "", self.rendered_content()]
        return "\n".join(lines) + "\n"

    def rendered_content(self) -> str:
        """The proposed content in its fence: what a human may copy out, inert anywhere."""
        if self.kind == "skill":
            return inert.fence(inert.draft(self.content), "markdown")
        return inert.fence(inert.lines(self.content, indent=""), "text")

    def with_status(self, status: str) -> Proposal:
        return replace(self, status=status)


class PendingFormatError(OcmemError):
    def __init__(self, detail: str):
        super().__init__(
            f"memory/pending.md est illisible : {detail}",
            fix=(
                "pending.md n'est écrit que par ocmem : restaure la dernière sauvegarde "
                "(dossier .ocmem/backups) ou corrige la section indiquée à la main"
            ),
        )


def parse(text: str) -> list[Proposal]:
    matches = list(_SECTION.finditer(text))
    proposals = []
    seen: set[str] = set()
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        proposal = _parse_section(match, text[match.end() : end])
        if proposal.id in seen:
            raise PendingFormatError(f"identifiant {proposal.id} en double")
        seen.add(proposal.id)
        proposals.append(proposal)
    return proposals


def _parse_section(header: re.Match[str], body: str) -> Proposal:
    pid, kind, title = header.groups()
    lines = body.split("\n")[1:]
    fields: dict[str, str] = {}
    labels = {label: key for key, label in _LABELS.items()}
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
        if label == _CONTENT_LABEL:
            break
        if label not in labels:
            raise PendingFormatError(f"{pid} : champ inconnu « {label} »")
        fields[labels[label]] = inert.unescape(value)
    else:
        raise PendingFormatError(f"{pid} : « {_CONTENT_LABEL} » manquant")
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
            content=content,
        )
    except KeyError as exc:
        raise PendingFormatError(f"{pid} : champ « {_LABELS[exc.args[0]]} » manquant") from exc
    except ValueError as exc:
        raise PendingFormatError(f"{pid} : date invalide ({exc})") from exc


def _fenced_content(pid: str, lines: list[str]) -> str:
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    opening = _FENCE.match(lines[i]) if i < len(lines) else None
    if not opening:
        raise PendingFormatError(f"{pid} : bloc « {_CONTENT_LABEL} » sans clôture de code")
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


def next_id(proposals: list[Proposal]) -> str:
    return f"P-{max((p.number for p in proposals), default=0) + 1:04d}"


def find(proposals: list[Proposal], pid: str) -> Proposal | None:
    wanted = pid.strip().upper()
    if wanted.isdigit():
        wanted = f"P-{int(wanted):04d}"
    return next((p for p in proposals if p.id == wanted), None)
