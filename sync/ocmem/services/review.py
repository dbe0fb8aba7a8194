"""``ocmem review``: the quarterly review, as suggestions only (nothing is changed or deleted).

- skills never or rarely used, from the plugin's record of ``skill`` tool calls and the journal,
  once the home has lived the whole window (a home made this week has no unused skill: too early);
- possible contradictions between MEMORY.md facts, and between facts and skills: statements
  about the same thing (shared words) that differ in negation or in their numbers; and, by the
  proposals' rule (ocmem.text.coherence), a fact or a waiting proposal whose sentence says the
  opposite of a step of an installed skill (a skill promoted after the proposal was written too);
- facts to revalidate: no source, an old source episode, or a later proposal that replaces them;
- facts that newer journal entries contradict (a changed value, a negation: ocmem.text.relations),
  with the entries; facts never spoken of in the journal since they were validated; proposals
  waiting longer than STALE_PENDING_DAYS;
- short-term notes written on 3 distinct days or more (ocmem.services.recurrence) that no proposal or fact
  carries yet: candidates for a proposal, which still goes through the agent and the human.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ocmem.formats import journal, memorymd, pending, skills
from ocmem.home import identity
from ocmem.home.atomic import read_text
from ocmem.home.workspace import Workspace
from ocmem.services import recurrence, supersession
from ocmem.text import inert, relations
from ocmem.text.similarity import fold, similarity

USAGE_WINDOW_DAYS = 90
RARELY = 2
OLD_SOURCE_DAYS = 180
TOPIC_OVERLAP = 0.3
_NEGATION = re.compile(
    r"\b(?:ne|n'|pas|jamais|plus|aucun|aucune|sans|not|never|no|without|don't|doesn't)\b"
)
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)*\b")
_DATED = re.compile(r"\((\d{4}-\d{2}-\d{2})[^()]*\)\s*$")
UNUSED = "skill peu utilisé"
# Each kind of suggestion, with its heading in the report.
KINDS = {
    UNUSED: "Skills peu utilisés",
    "contradiction possible": "Contradictions possibles",
    "fait à revalider": "Faits à revalider",
    "note récurrente": "Notes récurrentes",
    "fait contredit par le journal": "Faits que le journal contredit",
    "fait jamais évoqué": "Faits jamais évoqués depuis leur validation",
    "proposition qui attend": "Propositions qui attendent",
}
STALE_PENDING_DAYS = 14
UNSPOKEN_DAYS = 90
CONTRADICTIONS_SHOWN = 2


# Statements on one topic beyond this many are reported as one group, not pair by pair.
GROUP_DETAIL = 3
GROUP_SHOWN = 3


@dataclass(frozen=True)
class Suggestion:
    kind: str  # one of KINDS
    subject: str
    detail: str
    action: str


@dataclass(frozen=True)
class Review:
    suggestions: list[Suggestion]
    date: str
    damaged: list[str] = field(default_factory=list)  # pending.md's damaged blocks, with the fix
    # The home is younger than the usage window: why no skill is called unused.
    too_early: str | None = None

    def render(self) -> str:
        lines = [f"# Revue de la mémoire ({self.date})", ""]
        if self.damaged:
            lines += [*self.damaged, ""]
        for kind, heading in KINDS.items():
            found = [s for s in self.suggestions if s.kind == kind]
            lines.append(f"## {heading} ({len(found)})")
            told = [f"- {self.too_early}"] if kind == UNUSED and self.too_early else []
            lines += [*told, *(f"- {s.subject} : {s.detail}. {s.action}" for s in found)] or [
                "- rien à signaler"
            ]
            lines.append("")
        lines.append("Suggestions seulement : rien n'a été modifié ni supprimé.")
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps(
            {
                "date": self.date,
                "suggestions": [asdict(s) for s in self.suggestions],
                "pending_damaged": self.damaged,
                "skills_too_early": self.too_early,
            },
            ensure_ascii=False,
            indent=2,
        )


def _usage(usage_file: Path, since: datetime) -> Counter[str]:
    counts: Counter[str] = Counter()
    for line in read_text(usage_file).splitlines():
        try:
            record = json.loads(line)
            when = datetime.fromisoformat(str(record["ts"]).replace("Z", "+00:00")).replace(
                tzinfo=None
            )
        except (ValueError, KeyError, TypeError):
            continue
        if when >= since:
            counts[str(record.get("skill"))] += 1
    return counts


def _differs(a: str, b: str) -> str | None:
    """Why two statements on the same topic may disagree (None when nothing stands out)."""
    if bool(_NEGATION.search(fold(a))) != bool(_NEGATION.search(fold(b))):
        return "l'une est négative, l'autre non"
    numbers_a, numbers_b = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    if numbers_a and numbers_b and not numbers_a & numbers_b:
        return (
            f"valeurs différentes ({', '.join(sorted(numbers_a))} / {', '.join(sorted(numbers_b))})"
        )
    return None


def _contradictions(statements: list[tuple[str, str]]) -> list[Suggestion]:
    """Statements on one topic (shared words) that may disagree: pair by pair within a small
    group; a bigger group (33 near-identical facts) is one suggestion, not 528 pairs."""
    parent = list(range(len(statements)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    disagreements: list[tuple[int, int, str]] = []
    for i, (name_a, a) in enumerate(statements):
        for j in range(i + 1, len(statements)):
            name_b, b = statements[j]
            if name_a.startswith("skill") and name_b.startswith("skill"):
                continue
            if similarity(a, b) >= TOPIC_OVERLAP:
                parent[root(j)] = root(i)
                if why := _differs(a, b):
                    disagreements.append((i, j, why))
    groups: dict[int, list[int]] = {}
    for i in range(len(statements)):
        groups.setdefault(root(i), []).append(i)
    found: list[Suggestion] = []
    for members in groups.values():
        pairs = [d for d in disagreements if root(d[0]) == root(members[0])]
        if not pairs:
            continue
        if len(members) <= GROUP_DETAIL:
            found += [
                Suggestion(
                    "contradiction possible",
                    f"{statements[i][0]} / {statements[j][0]}",
                    why,
                    "Vérifier lequel est juste, corriger l'autre.",
                )
                for i, j, why in pairs
            ]
            continue
        names = [statements[i][0] for i in members]
        more = f" et {len(names) - GROUP_SHOWN} autres" if len(names) > GROUP_SHOWN else ""
        reasons = sorted({why.split(" (")[0] for _, _, why in pairs})
        found.append(
            Suggestion(
                "contradiction possible",
                f"{len(members)} énoncés sur le même sujet : {', '.join(names[:GROUP_SHOWN])}{more}",
                f"{len(pairs)} paire(s) divergent ({' ; '.join(reasons)})",
                "Garder ce qui est juste en un seul fait, retirer ou corriger les autres.",
            )
        )
    return found


def _against_skills(
    ws: Workspace,
    facts: list[str],
    installed: list[skills.Skill],
    proposals: list[pending.Proposal],
) -> list[Suggestion]:
    """Facts and waiting proposals one of whose sentences says the opposite of a sentence of an
    installed skill (ocmem.services.supersession.prose_conflicts)."""
    steps = supersession.held_prose("", supersession.skill_texts(installed), [])
    said = [(f"fait « {memorymd.fact_statement(f)} »", memorymd.fact_statement(f)) for f in facts]
    said += [
        (f"{p.id} « {p.title} »", f"{p.description or ''}\n{p.content}")
        for p in proposals
        if p.state == pending.STATE_PENDING
    ]
    return [
        Suggestion(
            "contradiction possible",
            subject,
            f"contredit {conflict.describe()}",
            "Vérifier lequel est juste, corriger l'autre (une proposition : avant de la promouvoir).",
        )
        for subject, text in said
        for conflict in supersession.prose_conflicts(text, steps, "l'un")
    ]


def _validated(fact: str) -> datetime | None:
    dated = _DATED.search(fact)
    if not dated:
        return None
    try:
        return datetime.fromisoformat(dated.group(1))
    except ValueError:
        return None


def _lessons(block: journal.Block) -> list[str]:
    """The lines of an entry that state something (what was done, the trap, the lesson)."""
    parsed = journal.parse_entry(block)
    if parsed is None:
        return []
    return [inert.unescape(t) for t in (parsed.fait, parsed.piege, parsed.lecon) if t]


def _freshness(
    facts: list[str], texts: list[str], proposals: list[pending.Proposal], today: datetime
) -> list[Suggestion]:
    """Facts newer entries contradict, facts no entry spoke of since their validation, and
    proposals the human has left waiting: suggestions, never changes."""
    found: list[Suggestion] = []
    entries = journal.journal_blocks(texts)
    said = [(b, relations.statement(line)) for b in entries for line in _lessons(b)]
    for fact in facts:
        since = _validated(fact)
        if since is None:
            continue
        known = relations.statement(memorymd.fact_statement(fact))
        later = [(b, st) for b, st in said if b.when.date() > since.date()]
        against = [
            (b, relation)
            for b, st in later
            if (relation := relations.relate_statements(st, known)).kind
            in (relations.REPLACES, relations.CONTRADICTS)
        ]
        if against:
            shown = " ; ".join(
                f"journal {b.ref} ({relation.reason})"
                for b, relation in against[:CONTRADICTIONS_SHOWN]
            )
            more = len(against) - CONTRADICTIONS_SHOWN
            found.append(
                Suggestion(
                    "fait contredit par le journal",
                    fact,
                    shown + (f" et {more} autre(s)" if more > 0 else ""),
                    "Toujours vrai ? L'agent proposera le fait à jour (il remplacera celui-ci) ; "
                    "sinon `ocmem retire fact`.",
                )
            )
            continue
        if since < today - timedelta(days=UNSPOKEN_DAYS) and not any(
            relations.relate_statements(st, known).kind != relations.UNRELATED for _, st in later
        ):
            found.append(
                Suggestion(
                    "fait jamais évoqué",
                    fact,
                    f"aucune entrée du journal n'en parle depuis sa validation ({since:%Y-%m-%d})",
                    "Toujours utile ? Le garder, ou `ocmem retire fact`.",
                )
            )
    for proposal in proposals:
        waited = (today.date() - proposal.created).days
        if proposal.state == pending.STATE_PENDING and waited > STALE_PENDING_DAYS:
            found.append(
                Suggestion(
                    "proposition qui attend",
                    f"{proposal.id} « {proposal.title} »",
                    f"en attente depuis {waited} jours",
                    "La promouvoir ou la refuser (« valide pending »).",
                )
            )
    return found


def review(ws: Workspace) -> Review:
    today = ws.now()
    found: list[Suggestion] = []

    installed = ws.skills()
    too_early = _too_early(identity.created(ws.paths), today)
    if too_early is None:
        found += _unused_skills(ws, installed, today)
    facts = memorymd.fact_lines(ws.memory_text())
    statements = [(f"fait « {f} »", memorymd.fact_statement(f)) for f in facts]
    statements += [(f"skill {s.name}", f"{s.description or ''}") for s in installed]
    document = ws.pending_document()
    proposals = document.proposals
    found += _contradictions(statements)
    found += _against_skills(ws, facts, installed, proposals)

    for fact in facts:
        dated = _DATED.search(fact)
        refs = re.findall(r"journal (\d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)?)", fact)
        if not dated and not refs:
            found.append(
                Suggestion(
                    "fait à revalider",
                    fact,
                    "sans date ni source",
                    "Ajouter sa source, ou le revalider.",
                )
            )
        elif refs and max(journal.parse_ref(r).when for r in refs) < today - timedelta(
            days=OLD_SOURCE_DAYS
        ):
            found.append(
                Suggestion(
                    "fait à revalider",
                    fact,
                    f"source la plus récente de plus de {OLD_SOURCE_DAYS} jours",
                    "Toujours vrai ?",
                )
            )
        pid = re.search(r"\b(P-\d{4,})\)\s*$", fact)
        if pid:
            for later in proposals:
                if (
                    later.id != pid.group(1)
                    and pid.group(1) in later.replaces
                    and later.state != pending.STATE_REFUSED
                ):
                    found.append(
                        Suggestion(
                            "fait à revalider",
                            fact,
                            f"{later.id} dit le remplacer ({later.status})",
                            "Mettre à jour MEMORY.md si la nouvelle proposition est promue.",
                        )
                    )
    found += _freshness(facts, ws.journal_texts(), proposals, today)
    carried = [(p.id, p.status, f"{p.title} {p.content}") for p in proposals]
    statements_only = [memorymd.fact_statement(f) for f in facts]
    for note in recurrence.recurring(recurrence.load(ws.paths)):
        if recurrence.covered_by(note, carried, statements_only) is None:
            found.append(
                Suggestion(
                    "note récurrente",
                    inert.unescape(note.text),
                    note.describe(),
                    "Un fait durable ? L'agent peut le proposer (« note_recurrente ») ; à valider.",
                )
            )
    return Review(found, today.strftime("%Y-%m-%d"), pending.damage_lines(document), too_early)


def _too_early(created: datetime | None, today: datetime) -> str | None:
    """Why usage cannot be judged yet: the home is younger than the usage window (a home with
    no identity, never initialised, is judged as before)."""
    if created is None or created <= today - timedelta(days=USAGE_WINDOW_DAYS):
        return None
    age = max(0, (today.date() - created.date()).days)
    return (
        f"dossier ocmem créé il y a {age} jour{'s' if age > 1 else ''} (le {created:%Y-%m-%d}) : "
        f"trop tôt pour juger de l'usage des skills, qui se compte sur {USAGE_WINDOW_DAYS} jours "
        f"(à partir du {created + timedelta(days=USAGE_WINDOW_DAYS):%Y-%m-%d})"
    )


def _unused_skills(
    ws: Workspace, installed: list[skills.Skill], today: datetime
) -> list[Suggestion]:
    since = today - timedelta(days=USAGE_WINDOW_DAYS)
    usage = _usage(ws.paths.skill_usage, since)
    recent = [b for text in ws.journal_texts() for b in journal.blocks(text) if b.when >= since]
    found = []
    for skill in installed:
        mentions = sum(skill.name in b.tags or f"skill {skill.name}" in b.text for b in recent)
        uses = usage[skill.name] + mentions
        if uses <= RARELY:
            detail = "jamais utilisé" if uses == 0 else f"utilisé {uses} fois"
            found.append(
                Suggestion(
                    UNUSED,
                    skill.name,
                    f"{detail} en {USAGE_WINDOW_DAYS} jours",
                    "Le garder, le fusionner ou le retirer ? (à décider par l'humain)",
                )
            )
    return found
