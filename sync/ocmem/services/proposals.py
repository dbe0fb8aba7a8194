"""Proposals (memory/pending.md): propose, complete, merge, list, promote, refuse.

Split from the notes and the journal so that the hot commands (a journal entry, a note) never
import it. A proposal's shape is checked by ``ocmem.services.drafts``; what a promotion writes
into MEMORY.md or a SKILL.md, by ``ocmem.services.promotion``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from ocmem.errors import InputError, Refused
from ocmem.formats import archive, journal, marks, memorymd, pending, skills
from ocmem.guards import exposure
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import presence, promotion, recurrence, supersession
from ocmem.services.drafts import (
    MAX_LINE,
    NEIGHBOUR_MINIMUM,
    NO_CONTRADICTION,
    NOTHING_REPLACED,
    Draft,
    is_none_word,
    ordered_sources,
    origin_of,
    says_lesson,
)
from ocmem.text import inert
from ocmem.text.similarity import Match, closest, fold, similarity


class Proposals:
    """The pending.md operations of one workspace. ``agent``: a reader the agent runs in its
    shell; a quarantined proposal's text is masked in what it reads (ocmem.guards.exposure)."""

    def __init__(self, workspace: Workspace, *, agent: bool = False):
        self.ws = workspace
        self.paths = workspace.paths
        self.limits = workspace.limits
        self.agent = agent

    def _readable(self, proposal: pending.Proposal) -> pending.Proposal:
        if not (self.agent and marks.quarantined(proposal.exposure)):
            return proposal
        hidden = "(masqué : proposition en quarantaine ; l'humain la lit avec `ocmem pending show`)"
        return replace(
            proposal,
            title="(titre masqué : proposition en quarantaine)",
            content=hidden,
            contradiction=hidden
            if proposal.contradiction != NO_CONTRADICTION
            else NO_CONTRADICTION,
            replaces=hidden if proposal.replaces != NOTHING_REPLACED else NOTHING_REPLACED,
            description=hidden if proposal.description else None,
            check=None,
        )

    def pending_duplicates(self, threshold: float = 0.35) -> Outcome:
        """Pairs of waiting proposals that look like the same lesson (most similar first)."""
        if not 0 <= threshold <= 1:
            raise InputError(
                f"--seuil {threshold:g} : une similarité va de 0 à 1",
                fix="par ex. --seuil 0.35 (plus haut : moins de paires, plus sûres)",
            )
        doc = self.ws.pending_document()
        waiting = [p for p in doc.proposals if p.state == pending.STATE_PENDING]
        shown = {p.id: self._readable(p) for p in waiting}
        pairs = []
        for i, a in enumerate(waiting):
            for b in waiting[i + 1 :]:
                if a.kind != b.kind:
                    continue
                score = similarity(f"{a.title} {a.content}", f"{b.title} {b.content}")
                if score >= threshold:
                    pairs.append((score, a, b))
        lines = [
            f"{a.id} ~ {b.id} ({score:.2f}) : « {shown[a.id].title} » / « {shown[b.id].title} »"
            for score, a, b in sorted(pairs, key=lambda t: -t[0])
        ]
        lines.append(
            f"{len(pairs)} doublon(s) probable(s) ; `ocmem pending merge GARDÉE AUTRE` pour fusionner"
        )
        return _with_damage(Outcome(lines), doc)

    def merge_pending(self, keep_id: str, other_id: str) -> Outcome:
        """Fold ``other`` into ``keep`` (sources, contradictions); ``other`` stays, marked merged."""
        today = self.ws.today()
        with self.ws.transaction("pending merge") as run:
            doc = self.ws.pending_document()
            proposals = doc.proposals
            keep, other = self._get(doc, keep_id), self._get(doc, other_id)
            for proposal in (keep, other):
                if proposal.state != pending.STATE_PENDING:
                    raise Refused(
                        f"{proposal.id} n'est plus en attente ({proposal.status})",
                        fix="on ne fusionne que des propositions en attente",
                    )
            if keep.id == other.id or keep.kind != other.kind:
                raise InputError(
                    "fusion impossible : même proposition, ou types différents",
                    fix="fusionne deux propositions distinctes du même type",
                )
            sources = ordered_sources(keep.sources, other.sources)
            contradiction = keep.contradiction
            if other.contradiction != NO_CONTRADICTION and other.contradiction not in contradiction:
                contradiction = (
                    other.contradiction
                    if contradiction == NO_CONTRADICTION
                    else f"{contradiction} ; {other.contradiction}"
                )
            retiens = "retiens" in keep.origin or "retiens" in other.origin
            merged = replace(
                keep,
                sources=sources,
                updated=today,
                origin=origin_of(retiens, sources),
                contradiction=contradiction,
                exposure=keep.exposure or other.exposure,  # an exposure is never merged away
            )
            folded = other.with_status(
                f"{pending.STATE_MERGED} dans {keep.id} ({today.isoformat()})"
            )
            doc = doc.replace(merged).replace(folded)
            proposals = doc.proposals
            run.write(self.paths.pending, doc.render())
        return Outcome(
            [
                f"{other.id} fusionnée dans {keep.id} (sources : {' ; '.join(sources)})",
                self._pending_count_line(proposals),
            ]
        )

    def _pending_count_line(self, proposals: list[pending.Proposal]) -> str:
        count = sum(p.state == pending.STATE_PENDING for p in proposals)
        return f"{count} proposition{'s' if count > 1 else ''} en attente"

    def propose(self, data: Mapping[str, Any], taint: exposure.Taint | None = None) -> Outcome:
        """``taint``: the proposing session is exposed (ocmem.guards.exposure); the proposal then says
        so in its « Exposition » field, as does one that cites a quarantined journal entry."""
        draft = Draft.from_mapping(data, self.limits)
        for name, value in draft.texts():
            self.ws.check(name, value)
        refs = draft.source_minutes()
        neighbours = closest_items(self.ws, f"{draft.title} {draft.content}")
        if draft.contradiction is None or draft.replaces is None:
            raise Refused(
                "la proposition doit dire explicitement ce qu'elle contredit et ce qu'elle remplace",
                details=_neighbour_lines(neighbours),
                fix=(
                    'ajoute "contradiction": "aucune" ou ce qu\'elle contredit, et "remplace": '
                    '"rien" ou le fait/skill qu\'elle remplace ou modifie'
                ),
            )
        found = journal.find_entries(self.ws.journal_texts(), refs)
        missing = [journal.ref_of(r) for r in refs if r not in found]
        if missing:
            raise Refused(
                f"source(s) introuvable(s) dans le journal : {', '.join(missing)}",
                fix="cite des entrées existantes (`ocmem journal search` pour les retrouver)",
            )
        unrelated = [
            journal.ref_of(ref)
            for ref, block in found.items()
            if not says_lesson(block.text, draft.lesson())
        ]
        if unrelated:
            raise Refused(
                f"{', '.join(unrelated)} ne parle(nt) pas de cette leçon (trop peu de mots-clés en commun "
                f"avec « {draft.title} ») : une source doit montrer la leçon, pas seulement exister",
                fix="cite les entrées où la leçon apparaît (`ocmem journal search` avec ses mots-clés)",
            )
        note = self._recurring_note(draft) if draft.from_note else None
        held = sorted(
            (ref for ref, block in found.items() if journal.is_quarantined(block.text)),
        )
        counted = len(found) - len(held)
        if not draft.retiens_ca and note is None and counted < 2 and held:
            raise Refused(
                f"{len(held)} des entrées citées ({', '.join(journal.ref_of(r) for r in held)}) "
                "sont en quarantaine (écrites par une session exposée à un contenu externe) et ne "
                f"comptent pas : il reste {counted} épisode(s) sur les 2 exigés",
                fix="cite deux entrées hors quarantaine, ou attends que l'utilisateur dise « retiens ça »",
            )
        if not draft.retiens_ca and note is None and len(found) < 2:
            raise Refused(
                "une leçon vue une seule fois reste dans le journal : il faut 2 épisodes distincts "
                f"(cités : {len(found)}) ou une demande explicite de l'utilisateur (« retiens ça »)",
                fix="n'écris pas de proposition ; si la leçon revient, cite les deux entrées",
            )
        mark = taint.mark() if taint is not None else None
        if mark is None and held:
            cited = ", ".join(journal.ref_of(r) for r in held)
            mark = marks.mark(marks.QUARANTINE, f"cite {cited} (en quarantaine)")
        if not found and note is None:
            raise Refused(
                "même sur « retiens ça », une proposition cite l'entrée de journal qui la justifie",
                fix="consigne d'abord l'épisode (`ocmem journal add`), puis cite-le dans sources",
            )
        today = self.ws.today()
        with self.ws.transaction("propose") as run:
            doc = self.ws.pending_document()
            proposals = doc.proposals
            memory_text = self.ws.memory_text()
            existing_skills = self.ws.skills()
            draft.check_against(memory_text, existing_skills, self.limits)
            prose = supersession.held_prose(
                memory_text,
                supersession.skill_texts(existing_skills),
                proposals,
            )
            if draft.kind == "fait":
                draft, twin, judged_lines = self._judge(
                    draft, memory_text, existing_skills, proposals, prose
                )
                neighbours = []
            else:
                draft, judged_lines = _coherent(draft, prose)
                twin = similar_proposal(draft, proposals, self.limits.duplicate_similarity)
            if twin is not None and twin.state == pending.STATE_PROMOTED:
                raise Refused(
                    f"cette leçon a déjà été promue : {twin.id} « {twin.title} » ({twin.status})",
                    fix="rien à proposer ; si elle doit changer, propose une modification explicite",
                )
            if twin is not None and twin.state == pending.STATE_REFUSED and not draft.retiens_ca:
                raise Refused(
                    f"l'humain a refusé une proposition semblable : {twin.id} « {twin.title} » ({twin.status})",
                    fix="ne la repropose pas, sauf demande explicite de l'utilisateur",
                )
            lookalike = None
            if (
                twin is not None
                and twin.state == pending.STATE_PENDING
                and draft.kind == "skill"
                and twin.skill_name != draft.skill_name
            ):
                # another skill's name: a proposal of its own, which the human may merge
                twin, lookalike = None, twin
            if twin is not None and twin.state == pending.STATE_PENDING:
                chosen = _complete(twin, draft, today, note)
                if mark is not None and not twin.exposure:
                    chosen = replace(chosen, exposure=mark)
                if replace(chosen, updated=twin.updated) == twin:
                    headline = f"Proposition {twin.id} déjà en attente, rien de nouveau à y ajouter"
                else:
                    doc = doc.replace(chosen)
                    headline = (
                        f"Proposition {twin.id} complétée (sources : {' ; '.join(chosen.sources)})"
                    )
            else:
                chosen = draft.to_proposal(pending.next_id(doc.ids()), today, neighbours, note)
                chosen = replace(chosen, exposure=mark)
                doc = doc.append(chosen)
                headline = f"Proposition {chosen.id} ajoutée ({chosen.kind}) : {chosen.title}"
            proposals = doc.proposals
            run.write(self.paths.pending, doc.render())
        lines = [headline, *judged_lines]
        if chosen.exposure:
            lines.append(
                f"⚠ Exposition : {chosen.exposure} — l'humain le verra avant de décider "
                "(pending.md, SilverBullet, demande de promotion)"
            )
        if lookalike is not None:
            lines.append(
                f"⚠ ressemble à {lookalike.id} « {lookalike.title} » (skill {lookalike.skill_name}) : "
                f"si c'est la même procédure, `ocmem pending merge {lookalike.id} {chosen.id}`"
            )
        if neighbours:
            lines.append(_neighbour_lines(neighbours))
        seen = f"Contradiction (vue par ocmem) : {chosen.contradiction}"
        if chosen.contradiction != NO_CONTRADICTION and seen not in judged_lines:
            lines.append(f"⚠ Contradiction signalée : {chosen.contradiction}")
        if chosen.check:
            lines.append(f"À vérifier : {chosen.check}")
        lines.append(self._pending_count_line(proposals))
        # A damaged block is kept as it is, next to the new proposal; the human must see it.
        return _with_damage(Outcome(lines), doc)

    def _judge(
        self,
        draft: Draft,
        memory_text: str,
        installed: list[skills.Skill],
        proposals: list[pending.Proposal],
        prose: supersession.Prose,
    ) -> tuple[Draft, pending.Proposal | None, list[str]]:
        """A proposed fact against what ocmem holds (ocmem.services.supersession.judge)."""
        items = supersession.held_items(memory_text, installed, proposals, self.ws.archive_text())
        judged = supersession.judge(draft, items, prose)
        updated = replace(
            draft,
            replaces=judged.replaces,
            contradiction=judged.contradiction,
            check=judged.check,
        )
        return updated, judged.twin, judged.lines

    def _recurring_note(self, draft: Draft) -> str:
        """The source naming the recurring note this fact restates (ocmem.services.recurrence), or why
        it cannot stand in for journal episodes."""
        if draft.kind != "fait":
            raise Refused(
                "une note récurrente ne justifie qu'un fait ; une procédure (skill) s'appuie sur des épisodes du journal",
                fix='retire "note_recurrente" et cite au moins deux entrées du journal',
            )
        records = recurrence.load(self.paths)
        note = recurrence.find_close(records, draft.content)
        if note is None or not note.recurring:
            seen = (
                f"elle a été écrite {len(note.days)} jour(s) seulement"
                if note
                else "aucune note de SHORT_TERM.md ne lui ressemble"
            )
            raise Refused(
                f"pas une note récurrente : {seen} (il en faut {recurrence.RECURRING_DAYS} jours différents)",
                fix="garde-la en note ; ocmem signale lui-même une note devenue récurrente",
            )
        return recurrence.source_of(note)

    def list_pending(self, show_all: bool = False) -> Outcome:
        doc = self.ws.pending_document()
        proposals = doc.proposals
        shown = [
            self._readable(p) for p in proposals if show_all or p.state == pending.STATE_PENDING
        ]
        statuses = presence.shown_statuses(self.ws, shown)
        lines = [
            f"{p.id} · {p.kind} · {p.title} — {statuses.get(p.id, p.status)}"
            + (" ⚠ contradiction" if p.contradiction != NO_CONTRADICTION else "")
            + (f" ⚠ exposition : {p.exposure}" if p.exposure else "")
            for p in shown
        ]
        lines.append(self._pending_count_line(proposals))
        return _with_damage(Outcome(lines), doc)

    def show_pending(self, pid: str) -> Outcome:
        proposal = self._readable(self._get(self.ws.pending_document(), pid))
        status = presence.shown_statuses(self.ws, [proposal]).get(proposal.id, proposal.status)
        lines = [
            proposal.with_status(status).shown()
        ]  # as written: pending.md's escapes are for SilverBullet
        before = self.replaced(proposal)
        if before is not None:
            lines[:0] = [
                "Remplacement, côte à côte :",
                f"  avant (MEMORY.md) : {inert.unescape(before)}",
                f"  après ({proposal.id})  : {proposal.content}",
                "",
            ]
        if proposal.exposure:
            lines.insert(0, f"⚠ Exposition : {proposal.exposure} — {EXPOSURE_HINT}")
        return Outcome(lines)

    def replaced(self, proposal: pending.Proposal) -> str | None:
        """The MEMORY.md line a fact proposal replaces, as it stands now (None if none)."""
        statement = supersession.replaced_fact(proposal.replaces)
        if proposal.kind != "fait" or statement is None:
            return None
        return memorymd.line_stating(self.ws.memory_text(), statement)

    def summary(self, pid: str) -> dict[str, str]:
        """What OpenCode's promotion prompt shows (``contract.ProposalSummary``)."""
        proposal = self._get(self.ws.pending_document(), pid)
        return {
            "id": proposal.id,
            "kind": proposal.kind,
            "title": proposal.title,
            "exposure": proposal.exposure or "",
            "replaces": inert.unescape(self.replaced(proposal) or ""),
        }

    def _get(self, doc: pending.Document, pid: str) -> pending.Proposal:
        found = pending.find(doc.proposals, pid)
        damaged = [p for p in doc.problems if p.startswith(f"{pid} ")]
        if found is None and damaged:
            raise Refused(
                f"la proposition {pid} de memory/pending.md est abîmée : {damaged[0]}",
                fix=f"corrige le bloc {pid} de pending.md à la main (ou restaure-le depuis "
                ".ocmem/backups) ; `ocmem doctor` le montre",
            )
        if found is None:
            raise InputError(
                f"pas de proposition {pid}",
                fix="`ocmem pending list --toutes` montre les identifiants",
            )
        return found

    def accept(self, pid: str) -> Outcome:
        if self.ws.sync_mode:
            raise Refused(
                "avec SilverBullet, la promotion se fait dans SilverBullet : MEMORY.md et skills/ "
                "y sont tirés, une promotion locale serait écrasée au prochain pull",
                fix=(
                    "promeus-la dans SilverBullet (commande « ocmem: Promouvoir une proposition » "
                    "de la page Library/ocmem, voir docs/guide.md), puis lance `ocmem pull`"
                ),
            )
        today = self.ws.today()
        with self.ws.transaction("pending accept") as run:
            doc = self.ws.pending_document()
            proposal = self._get(doc, pid)
            if proposal.state == pending.STATE_PROMOTED:
                raise Refused(
                    f"{proposal.id} est déjà promue ({proposal.status})", fix="rien à faire"
                )
            if proposal.state == pending.STATE_REFUSED:
                raise Refused(
                    f"{proposal.id} a été refusée : {proposal.status}",
                    fix="si l'avis a changé, qu'une nouvelle proposition la reprenne "
                    "(avec « retiens ça »), puis promeus celle-là",
                )
            if proposal.state == pending.STATE_MERGED:
                raise Refused(
                    f"{proposal.id} a été fusionnée : {proposal.status}",
                    fix="promeus la proposition dans laquelle elle a été fusionnée",
                )
            if proposal.kind == "fait":
                target = self.paths.memory_md
                done = promotion.fact(self.ws.memory_text(), proposal, today, self.limits)
            else:
                target, done = promotion.skill(
                    self.paths.skills_dir, self.ws.skills(), proposal, today, self.limits
                )
            notes = done.notes
            promoted = proposal.with_status(pending.promoted_status(today))
            doc = doc.replace(promoted)
            proposals = doc.proposals
            with run.together():  # the fact and its « promu »: both land, or neither
                if done.archived is not None:
                    archived = archive.with_entry(self.ws.archive_text(), done.archived)
                    run.write(self.paths.archive_md, archived)
                run.write(target, done.text)
                run.write(self.paths.pending, doc.render())
        # What `ocmem pending annuler` without an id takes back (ocmem.services.unpromotion).
        self.ws.log("promotion", id=proposal.id, kind=proposal.kind, target=self.paths.rel(target))
        return Outcome(
            [
                f"{proposal.id} promue → {self.paths.rel(target)}",
                *notes,
                self._pending_count_line(proposals),
            ]
        )

    def reject(self, pid: str, reason: str) -> Outcome:
        reason = reason.strip()
        if not reason or "\n" in reason or len(reason) > MAX_LINE:
            raise InputError(
                f"donne une raison sur une ligne ({MAX_LINE} caractères au plus)",
                fix='--raison "déjà couvert par …"',
            )
        self.ws.check("raison", reason)
        today = self.ws.today()
        with self.ws.transaction("pending reject") as run:
            doc = self.ws.pending_document()
            proposal = self._get(doc, pid)
            if proposal.state != pending.STATE_PENDING:
                raise Refused(
                    f"{proposal.id} n'est plus en attente ({proposal.status})", fix="rien à faire"
                )
            refused = proposal.with_status(pending.refused_status(today, reason))
            doc = doc.replace(refused)
            proposals = doc.proposals
            run.write(self.paths.pending, doc.render())
        return Outcome([f"{proposal.id} refusée", self._pending_count_line(proposals)])


def closest_items(ws: Workspace, text: str) -> list[Match]:
    """MEMORY.md facts and skills closest to ``text``, for the contradiction check."""
    facts = [
        (f"MEMORY.md « {line} »", memorymd.fact_statement(line))
        for line in memorymd.fact_lines(ws.memory_text())
    ]
    known = [
        (f"skill {s.name} « {s.description} »", f"{s.name} {s.description or ''}")
        for s in ws.skills()
    ]
    return list(closest(text, [*facts, *known], limit=3, minimum=NEIGHBOUR_MINIMUM))


def _coherent(draft: Draft, prose: supersession.Prose) -> tuple[Draft, list[str]]:
    """A proposed skill's « Contradiction » with the held sentences its description or draft
    says the opposite of (the spec: « signale-la dans la proposition au lieu de choisir »)."""
    found = supersession.capped(
        [
            c.describe()
            for c in supersession.prose_conflicts(
                f"{draft.description or ''}\n{draft.content}", prose
            )
        ]
    )
    if not found:
        return draft, []
    contradiction = supersession.contradiction_field(found, draft.contradiction, [])
    return replace(draft, contradiction=contradiction), [
        f"Contradiction (vue par ocmem) : {' ; '.join(found)}"
    ]


def _neighbour_lines(neighbours: Sequence[Match]) -> str:
    if not neighbours:
        return "Rien de proche dans MEMORY.md ni dans les skills."
    return "Éléments existants les plus proches :\n" + "\n".join(
        f"- {m.item} (similarité {m.score:.2f})" for m in neighbours
    )


EXPOSURE_HINT = (
    "la session qui l'a écrite avait lu un contenu externe : vérifie le contenu toi-même "
    "avant de promouvoir"
)


_PREFERRED = {pending.STATE_PROMOTED: 2, pending.STATE_PENDING: 1}


def similar_proposal(
    draft: Draft, proposals: list[pending.Proposal], threshold: float
) -> pending.Proposal | None:
    """The proposal ``draft`` repeats, if any: the closest; among equally close ones (a skill's
    name), a promoted one, then a waiting one, before a refused one (as ``supersession.judge``)."""
    best: tuple[tuple[float, int], pending.Proposal] | None = None
    for proposal in proposals:
        if proposal.kind != draft.kind:
            continue
        if draft.kind == "skill" and proposal.skill_name == draft.skill_name:
            score = 1.0
        else:
            score = max(
                similarity(
                    f"{draft.title} {draft.content}", f"{proposal.title} {proposal.content}"
                ),
                similarity(draft.title, proposal.title),
            )
        rank = (score, _PREFERRED.get(proposal.state, 0))
        if score >= threshold and (best is None or rank > best[0]):
            best = (rank, proposal)
    return best[1] if best else None


def _complete(
    proposal: pending.Proposal, draft: Draft, today: date, note: str | None
) -> pending.Proposal:
    sources = ordered_sources(proposal.sources, draft.sources + ((note,) if note else ()))
    contradiction = proposal.contradiction
    new = draft.contradiction or ""
    if not is_none_word(new) and fold(new) not in fold(contradiction):
        contradiction = new if contradiction == NO_CONTRADICTION else f"{contradiction} ; {new}"
    retiens = draft.retiens_ca or "retiens" in proposal.origin
    return replace(
        proposal,
        sources=sources,
        updated=today,
        origin=origin_of(retiens, sources),
        contradiction=contradiction,
    )


def _with_damage(outcome: Outcome, doc: pending.Document) -> Outcome:
    """A reader's outcome, with pending.md's damaged blocks and their fix: a human must act."""
    damage = pending.damage_lines(doc)
    if damage:
        outcome.lines += damage
        outcome.ask_human()
    return outcome
