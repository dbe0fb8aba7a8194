"""Proposals (memory/pending.md): propose, complete, merge, promote, refuse.

Split from the engine so that the hot commands (a journal entry, a note) never import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any, NamedTuple

from ocmem.errors import InputError, Refused
from ocmem.formats import journal, memorymd, pending, skills
from ocmem.formats.fill import Fill
from ocmem.guards import exposure
from ocmem.guards.textsafety import find_injection, find_personal_data, find_secrets
from ocmem.home.settings import Limits
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import recurrence
from ocmem.text import inert
from ocmem.text.similarity import Match, closest, fold, similarity

NO_CONTRADICTION = "aucune"
NOTHING_REPLACED = "rien"
_NONE_WORDS = {"aucune", "aucun", "none", "non", "no", "rien", "nothing", "neant", "-"}
MAX_FACT_CHARS = 300
MAX_TITLE = 100
MAX_LINE = 300  # contradiction, remplace
MAX_SKILL_CHARS = 6000
# Below 0.1 (one meaningful word shared out of more than ten) a fact or skill is not "close":
# listing it as a neighbour was noise (« similarité 0.04 »).
NEIGHBOUR_MINIMUM = 0.09
# An imported fact's own origin and source: it came from another memory system that `ocmem init`
# replaced, not from journal episodes; the human still decides, as for any proposal.
IMPORT_SOURCE = "ancienne mémoire"
IMPORT_CHECK = (
    "importé tel quel de l'ancienne mémoire : vérifie qu'il est encore vrai avant de le promouvoir"
)
IMPORT_TITLE = 80


class ImportedFact(NamedTuple):
    where: str  # the old memory's file, as messages show it (~/…, or relative to the home)
    line: int
    text: str


class FactImport(NamedTuple):
    document: pending.Document  # pending.md with the new proposals (not written yet)
    added: list[pending.Proposal]
    skipped: list[str]  # "<file> ligne N : why", never the line itself (it may hold a secret)


def import_source(where: str, line: int) -> str:
    return f"{IMPORT_SOURCE} {where}, ligne {line}"


def is_import_source(source: str) -> bool:
    return source.startswith(f"{IMPORT_SOURCE} ")


def _import_place(source: str) -> str:
    return source[len(IMPORT_SOURCE) + 1 :].rsplit(", ligne ", 1)[0]


class Proposals:
    """The pending.md operations of one workspace. ``agent``: a reader the agent runs in its
    shell; a quarantined proposal's text is masked in what it reads (ocmem.guards.exposure)."""

    def __init__(self, workspace: Workspace, *, agent: bool = False):
        self.ws = workspace
        self.paths = workspace.paths
        self.limits = workspace.limits
        self.agent = agent

    def _readable(self, proposal: pending.Proposal) -> pending.Proposal:
        if not (self.agent and exposure.quarantined(proposal.exposure)):
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
            sources = _sources(keep.sources, other.sources)
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
                origin=_origin(retiens, sources),
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

    def _neighbours(self, text: str) -> list[Match]:
        """MEMORY.md facts and skills closest to ``text``, for the contradiction check."""
        facts = [
            (f"MEMORY.md « {line} »", memorymd.fact_statement(line))
            for line in memorymd.fact_lines(self.ws.memory_text())
        ]
        known = [
            (f"skill {s.name} « {s.description} »", f"{s.name} {s.description or ''}")
            for s in self.ws.skills()
        ]
        return list(closest(text, [*facts, *known], limit=3, minimum=NEIGHBOUR_MINIMUM))

    def propose(self, data: Mapping[str, Any], taint: exposure.Taint | None = None) -> Outcome:
        """``taint``: the proposing session is exposed (ocmem.guards.exposure); the proposal then says
        so in its « Exposition » field, as does one that cites a quarantined journal entry."""
        draft = _Draft.from_mapping(data, self.limits)
        for name, value in draft.texts():
            self.ws.check(name, value)
        refs = draft.source_minutes()
        neighbours = self._neighbours(f"{draft.title} {draft.content}")
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
            mark = exposure.mark(exposure.QUARANTINE, f"cite {cited} (en quarantaine)")
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
            twin = _similar_proposal(draft, proposals, self.limits.duplicate_similarity)
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
        lines = [headline]
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
        if chosen.contradiction != NO_CONTRADICTION:
            lines.append(f"⚠ Contradiction signalée : {chosen.contradiction}")
        if chosen.check:
            lines.append(f"À vérifier : {chosen.check}")
        lines.append(self._pending_count_line(proposals))
        # A damaged block is kept as it is, next to the new proposal; the human must see it.
        return _with_damage(Outcome(lines), doc)

    def _recurring_note(self, draft: _Draft) -> str:
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

    def plan_import(self, facts: list[ImportedFact]) -> FactImport:
        """The proposals an old memory's facts become; nothing is written (``ocmem init`` writes
        pending.md in its own run). Each fact meets the guards of any proposal (secrets,
        personal data, injection markers, length, what MEMORY.md and pending.md already hold)
        and goes to the human. Its origin says where it comes from: an import has no journal
        episode, and none is made up for it. At most ``memory_chars`` characters of facts are
        proposed: MEMORY.md could not hold more."""
        today = self.ws.today()
        doc = self.ws.pending_document()
        statements = [
            memorymd.fact_statement(line) for line in memorymd.fact_lines(self.ws.memory_text())
        ]
        added: list[pending.Proposal] = []
        skipped: list[str] = []
        budget = self.limits.memory_chars
        for fact in facts:
            text = " ".join(inert.clean(fact.text).split())
            reason = self._import_refusal(text, statements, doc, budget)
            if reason:
                skipped.append(f"{fact.where} ligne {fact.line} : {reason}")
                continue
            budget -= len(text)
            title = (
                text
                if len(text) <= IMPORT_TITLE
                else text[: IMPORT_TITLE - 1].rsplit(" ", 1)[0] + "…"
            )
            draft = _Draft(
                kind="fait",
                title=title,
                content=text,
                sources=(import_source(fact.where, fact.line),),
                contradiction=NO_CONTRADICTION,
                replaces=NOTHING_REPLACED,
                retiens_ca=False,
                from_note=False,
                skill_name=None,
                description=None,
            )
            proposal = draft.to_proposal(
                pending.next_id(doc.ids()), today, self._neighbours(text), None
            )
            proposal = replace(proposal, check=proposal.check or IMPORT_CHECK)
            doc = doc.append(proposal)
            added.append(proposal)
        return FactImport(doc, added, skipped)

    def _import_refusal(
        self, text: str, statements: list[str], doc: pending.Document, budget: int
    ) -> str | None:
        problems = (
            find_secrets(text, self.ws.known_secrets)
            + find_personal_data(text)
            + find_injection(text)
        )
        if problems:
            return f"{problems[0].kind}, non importée"
        if len(text) > MAX_FACT_CHARS:
            return f"plus de {MAX_FACT_CHARS} caractères, non importée (un fait tient en une ligne)"
        if any(similarity(text, known) >= 0.8 for known in statements):
            return "déjà dans MEMORY.md"
        probe = _Draft("fait", text, text, (), None, None, False, False, None, None)
        twin = _similar_proposal(probe, doc.proposals, self.limits.duplicate_similarity)
        if twin is not None:
            return f"déjà proposé : {twin.id} « {twin.title} » ({twin.status})"
        if len(text) > budget:
            return (
                f"plafond atteint : les faits importés dépasseraient la taille de MEMORY.md "
                f"({self.limits.memory_chars} caractères), non importée"
            )
        return None

    def list_pending(self, show_all: bool = False) -> Outcome:
        doc = self.ws.pending_document()
        proposals = doc.proposals
        shown = [
            self._readable(p) for p in proposals if show_all or p.state == pending.STATE_PENDING
        ]
        lines = [
            f"{p.id} · {p.kind} · {p.title} — {p.status}"
            + (" ⚠ contradiction" if p.contradiction != NO_CONTRADICTION else "")
            + (f" ⚠ exposition : {p.exposure}" if p.exposure else "")
            for p in shown
        ]
        lines.append(self._pending_count_line(proposals))
        return _with_damage(Outcome(lines), doc)

    def show_pending(self, pid: str) -> Outcome:
        proposal = self._readable(self._get(self.ws.pending_document(), pid))
        lines = [proposal.render()]
        if proposal.exposure:
            lines.insert(0, f"⚠ Exposition : {proposal.exposure} — {EXPOSURE_HINT}")
        return Outcome(lines)

    def summary(self, pid: str) -> dict[str, str]:
        """What OpenCode's promotion prompt shows (``contract.ProposalSummary``)."""
        proposal = self._get(self.ws.pending_document(), pid)
        return {
            "id": proposal.id,
            "kind": proposal.kind,
            "title": proposal.title,
            "exposure": proposal.exposure or "",
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
                fix="`ocmem pending list --all` montre les identifiants",
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
                target, text, notes = self._promote_fact(proposal, today)
            else:
                target, text, notes = self._promote_skill(proposal, today)
            run.write(target, text)
            promoted = proposal.with_status(f"{pending.STATE_PROMOTED} ({today.isoformat()})")
            doc = doc.replace(promoted)
            proposals = doc.proposals
            run.write(self.paths.pending, doc.render())
        return Outcome(
            [
                f"{proposal.id} promue → {self.paths.rel(target)}",
                *notes,
                self._pending_count_line(proposals),
            ]
        )

    def _promote_fact(self, proposal: pending.Proposal, today: date) -> tuple[Path, str, list[str]]:
        memory_text = self.ws.memory_text()
        marker = f"; {proposal.id})"
        if any(line.endswith(marker) for line in memorymd.fact_lines(memory_text)):
            return self.paths.memory_md, memory_text, ["(fait déjà présent dans MEMORY.md)"]
        line = f"{inert.inline(proposal.content)} ({today.isoformat()}, Source : {' ; '.join(proposal.sources)} ; {proposal.id})"
        new_text = memorymd.with_fact(memory_text, line)
        fill = Fill(len(new_text), self.limits.memory_chars)
        if fill.over:
            raise Refused(
                f"MEMORY.md dépasserait son plafond : {fill} (rien n'a été écrit)",
                fix=(
                    "consolide MEMORY.md à la main (fusionne ou retire des faits dépassés), "
                    f"puis relance `ocmem pending accept {proposal.id}`"
                ),
            )
        notes = [f"MEMORY.md {fill}"]
        if proposal.replaces != NOTHING_REPLACED:
            notes.append(
                f"La proposition remplace : {proposal.replaces} — retire l'ancienne ligne de MEMORY.md à la main."
            )
        return self.paths.memory_md, new_text, notes

    def _promote_skill(
        self, proposal: pending.Proposal, today: date
    ) -> tuple[Path, str, list[str]]:
        name = proposal.skill_name or ""
        target = self.paths.skills_dir / name / "SKILL.md"
        existing = [s for s in self.ws.skills() if s.name != name]
        if not target.exists() and len(existing) >= self.limits.skills_max:
            raise Refused(
                f"{len(existing)} skills déjà installés (maximum {self.limits.skills_max})",
                fix="fusionne ou retire un skill avant d'en créer un nouveau",
            )
        if target.exists() and proposal.replaces == NOTHING_REPLACED:
            raise Refused(
                f"le skill {name} existe déjà et la proposition ne dit pas le remplacer",
                fix="refuse la proposition, ou modifie le skill à la main",
            )
        body = (
            f"{inert.draft(proposal.content)}\n\n"
            f"Source : {' ; '.join(proposal.sources)} (promu le {today.isoformat()}, {proposal.id})"
        )
        text = skills.render_skill(
            name,
            proposal.description or "",
            body,
            {
                "source": " ; ".join(proposal.sources),
                "promu": today.isoformat(),
                "proposition": proposal.id,
            },
        )
        _, problems = skills.check_skill_text(name, text, self.limits.skill_lines)
        if problems:
            raise Refused(
                f"le skill {name} ne respecterait pas les règles : " + " ; ".join(problems),
                fix="refuse la proposition et demande une version corrigée",
            )
        return (
            target,
            text,
            [f"skills/{name}/SKILL.md : {len(text.splitlines())}/{self.limits.skill_lines} lignes"],
        )

    def reject(self, pid: str, reason: str) -> Outcome:
        reason = reason.strip()
        if not reason or "\n" in reason or len(reason) > MAX_LINE:
            raise InputError(
                f"donne une raison sur une ligne ({MAX_LINE} caractères au plus)",
                fix='--reason "déjà couvert par …"',
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
            refused = proposal.with_status(
                f"{pending.STATE_REFUSED} ({today.isoformat()}) : {reason}"
            )
            doc = doc.replace(refused)
            proposals = doc.proposals
            run.write(self.paths.pending, doc.render())
        return Outcome([f"{proposal.id} refusée", self._pending_count_line(proposals)])


def _neighbour_lines(neighbours: Sequence[Match]) -> str:
    if not neighbours:
        return "Rien de proche dans MEMORY.md ni dans les skills."
    return "Éléments existants les plus proches :\n" + "\n".join(
        f"- {m.item} (similarité {m.score:.2f})" for m in neighbours
    )


def _is_none_word(text: str) -> bool:
    return fold(text).strip(" .") in _NONE_WORDS


@dataclass(frozen=True)
class _Draft:
    """A proposal as submitted, validated for shape (state-dependent checks come later)."""

    kind: str
    title: str
    content: str
    sources: tuple[str, ...]
    contradiction: str | None
    replaces: str | None
    retiens_ca: bool
    from_note: bool
    skill_name: str | None
    description: str | None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], limits: Limits) -> _Draft:
        if not isinstance(data, Mapping):
            raise InputError("la proposition doit être un objet JSON", fix=_PROPOSE_HINT)
        # null is how the plugin's tool schema says "not given" (its optional arguments)
        values = {
            fold(str(k)).strip().replace(" ", "_"): v for k, v in data.items() if v is not None
        }
        allowed = {
            "type",
            "titre",
            "contenu",
            "sources",
            "contradiction",
            "remplace",
            "retiens_ca",
            "note_recurrente",
            "name",
            "description",
        }
        unknown = sorted(set(values) - allowed)
        if unknown:
            raise InputError(f"clé(s) inconnue(s) : {', '.join(unknown)}", fix=_PROPOSE_HINT)
        kind = str(values.get("type", "")).strip().lower()
        if kind not in pending.KINDS:
            raise InputError(f"type {kind!r} inconnu", fix='"type": "fait" ou "skill"')
        title = _required_line(values, "titre", MAX_TITLE)
        content = values.get("contenu")
        if not isinstance(content, str) or not content.strip():
            raise InputError("« contenu » manquant ou vide", fix=_PROPOSE_HINT)
        content = content.replace("\r\n", "\n").strip()
        if len(content) > MAX_SKILL_CHARS:
            raise InputError(
                f"« contenu » fait {len(content)} caractères (maximum {MAX_SKILL_CHARS})",
                fix="un fait tient en une phrase, un skill en une page : garde l'essentiel",
            )
        sources = values.get("sources", [])
        if isinstance(sources, str):
            sources = [sources]
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise InputError(
                "« sources » doit être une liste de références",
                fix='["journal AAAA-MM-JJ HH:MM", …]',
            )
        minutes = sorted({journal.parse_ref(s) for s in sources})
        retiens = values.get("retiens_ca", False)
        if not isinstance(retiens, bool):
            raise InputError("« retiens_ca » doit valoir true ou false", fix=_PROPOSE_HINT)
        from_note = values.get("note_recurrente", False)
        if not isinstance(from_note, bool):
            raise InputError("« note_recurrente » doit valoir true ou false", fix=_PROPOSE_HINT)
        skill_name = description = None
        if kind == "fait":
            if "\n" in content or len(content) > MAX_FACT_CHARS:
                raise InputError(
                    f"un fait tient sur une ligne de {MAX_FACT_CHARS} caractères au plus",
                    fix="énonce le fait plus brièvement (une procédure détaillée est un skill)",
                )
        else:
            skill_name = str(values.get("name", "")).strip()
            problems = skills.name_problems(skill_name) + skills.description_problems(
                values.get("description")
            )
            if problems:
                raise InputError("skill invalide : " + " ; ".join(problems), fix=_PROPOSE_HINT)
            description = str(values["description"]).strip()
            if "\n" in description:
                raise InputError("la description tient sur une ligne", fix="au plus deux phrases")
        return cls(
            kind=kind,
            title=title,
            content=content,
            sources=tuple(journal.ref_of(m) for m in minutes),
            contradiction=_optional_line(values, "contradiction"),
            replaces=_optional_line(values, "remplace"),
            retiens_ca=retiens,
            from_note=from_note,
            skill_name=skill_name,
            description=description,
        )

    def texts(self) -> list[tuple[str, str]]:
        found = [("titre", self.title), ("contenu", self.content)]
        for name, value in (
            ("contradiction", self.contradiction),
            ("remplace", self.replaces),
            ("description", self.description),
        ):
            if value:
                found.append((name, value))
        return found

    def lesson(self) -> str:
        """What a cited entry must speak of: the title, and the fact or the skill's description
        (a skill's whole draft would share common words with any entry)."""
        return f"{self.title} {self.content if self.kind == 'fait' else self.description or ''}"

    def source_minutes(self) -> list[journal.Ref]:
        return [journal.parse_ref(s) for s in self.sources]

    def check_against(self, memory_text: str, existing: list[skills.Skill], limits: Limits) -> None:
        if self.kind == "fait":
            for line in memorymd.fact_lines(memory_text):
                if similarity(self.content, memorymd.fact_statement(line)) >= 0.8:
                    raise Refused(
                        f"ce fait est déjà dans MEMORY.md : « {line} »", fix="rien à proposer"
                    )
            return
        names = {s.name for s in existing}
        if self.skill_name in names and self.replaces == NOTHING_REPLACED:
            raise Refused(
                f"le skill {self.skill_name} existe déjà",
                fix='indique dans "remplace" ce que la proposition change dans ce skill',
            )
        if (
            self.skill_name not in names
            and len(names) >= limits.skills_max
            and self.replaces == NOTHING_REPLACED
        ):
            raise Refused(
                f"{len(names)} skills installés (maximum {limits.skills_max})",
                fix='propose plutôt de fusionner ou de retirer un skill existant ("remplace")',
            )
        draft_text = skills.render_skill(
            self.skill_name or "",
            self.description or "",
            self.content,
            {"source": "", "promu": "", "proposition": ""},
        )
        # Promotion adds a source line: keep two lines of margin for it.
        lines = len(draft_text.splitlines()) + 2
        if lines > limits.skill_lines:
            raise Refused(
                f"le skill ferait {lines} lignes une fois promu (maximum {limits.skill_lines}, "
                "dont 2 pour sa source)",
                fix=f"retire au moins {lines - limits.skill_lines} ligne(s) : garde l'essentiel "
                "dans SKILL.md, les détails iront dans des fichiers annexes",
            )

    def to_proposal(
        self, pid: str, today: date, neighbours: Sequence[Match], note: str | None
    ) -> pending.Proposal:
        contradiction = (
            NO_CONTRADICTION
            if _is_none_word(self.contradiction or "")
            else self.contradiction or ""
        )
        replaces = NOTHING_REPLACED if _is_none_word(self.replaces or "") else self.replaces or ""
        check = None
        if neighbours and neighbours[0].score >= 0.3 and contradiction == NO_CONTRADICTION:
            check = f"proche de {neighbours[0].item} (similarité {neighbours[0].score:.2f}) : vérifier qu'il n'y a pas de contradiction"
        return pending.Proposal(
            id=pid,
            kind=self.kind,
            title=self.title,
            status=pending.STATE_PENDING,
            created=today,
            sources=_sources(self.sources, (note,) if note else ()),
            origin=_origin(self.retiens_ca, _sources(self.sources, (note,) if note else ())),
            replaces=replaces,
            contradiction=contradiction,
            content=self.content,
            check=check,
            skill_name=self.skill_name,
            description=self.description,
        )


_PROPOSE_HINT = (
    'attendu : {"type": "fait|skill", "titre": "…", "contenu": "…", "sources": '
    '["journal AAAA-MM-JJ HH:MM", …], "contradiction": "aucune|…", "remplace": "rien|…", '
    '"retiens_ca": false, et pour un skill "name" et "description" (2 phrases au plus)}'
)


EXPOSURE_HINT = (
    "la session qui l'a écrite avait lu un contenu externe : vérifie le contenu toi-même "
    "avant de promouvoir"
)
LESSON_TERMS_SHARED = 2


def says_lesson(entry_text: str, lesson: str) -> bool:
    """Whether a journal entry speaks of ``lesson``: it shares two of the lesson's keywords
    (stemmed, accents and case folded, English glossary words as French), or half of them when
    the lesson has fewer than four. Cheap and explainable; a paraphrase with no common keyword is
    not evidence."""
    from ocmem.text import searchterms

    wanted = set(searchterms.terms(lesson))
    shared = wanted & set(searchterms.terms(entry_text))
    return len(shared) >= min(LESSON_TERMS_SHARED, (len(wanted) + 1) // 2)


def _sources(earlier: Sequence[str], added: Sequence[str]) -> tuple[str, ...]:
    """Journal references in time order, then the old-memory lines they were imported from,
    then the latest recurring-note source, if any."""
    every = [*earlier, *added]
    notes = [s for s in every if recurrence.is_note_source(s)]
    imports = list(dict.fromkeys(s for s in every if is_import_source(s)))
    episodes = sorted(
        {s for s in every if s not in notes and s not in imports}, key=journal.parse_ref
    )
    return (*episodes, *imports, *notes[-1:])


def _origin(retiens_ca: bool, sources: Sequence[str]) -> str:
    notes = sum(recurrence.is_note_source(s) for s in sources)
    places = list(dict.fromkeys(_import_place(s) for s in sources if is_import_source(s)))
    episodes = len(sources) - notes - sum(is_import_source(s) for s in sources)
    parts = []
    if retiens_ca:
        parts.append("demande explicite de l'utilisateur (« retiens ça »)")
    elif episodes >= 2 or not (notes or places):
        parts.append(f"récurrence ({episodes} épisodes)")
    if notes:
        parts.append("note récurrente")
    if places:
        parts.append(f"import de l'ancienne mémoire ({', '.join(places)})")
    return " ; ".join(parts)


def _required_line(values: Mapping[str, Any], key: str, max_chars: int) -> str:
    value = values.get(key)
    if (
        not isinstance(value, str)
        or not value.strip()
        or "\n" in value.strip()
        or len(value.strip()) > max_chars
    ):
        raise InputError(
            f"« {key} » doit être une ligne non vide de {max_chars} caractères au plus",
            fix=_PROPOSE_HINT,
        )
    return value.strip()


def _optional_line(values: Mapping[str, Any], key: str) -> str | None:
    value = values.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or "\n" in value.strip():
        raise InputError(f"« {key} » doit tenir sur une ligne", fix=_PROPOSE_HINT)
    if len(value.strip()) > MAX_LINE:
        raise InputError(
            f"« {key} » fait {len(value.strip())} caractères (maximum {MAX_LINE})",
            fix=f"résume « {key} » en une phrase",
        )
    return value.strip()


def _similar_proposal(
    draft: _Draft, proposals: list[pending.Proposal], threshold: float
) -> pending.Proposal | None:
    best: tuple[float, pending.Proposal] | None = None
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
        if score >= threshold and (best is None or score > best[0]):
            best = (score, proposal)
    return best[1] if best else None


def _complete(
    proposal: pending.Proposal, draft: _Draft, today: date, note: str | None
) -> pending.Proposal:
    sources = _sources(proposal.sources, draft.sources + ((note,) if note else ()))
    contradiction = proposal.contradiction
    new = draft.contradiction or ""
    if not _is_none_word(new) and fold(new) not in fold(contradiction):
        contradiction = new if contradiction == NO_CONTRADICTION else f"{contradiction} ; {new}"
    retiens = draft.retiens_ca or "retiens" in proposal.origin
    return replace(
        proposal,
        sources=sources,
        updated=today,
        origin=_origin(retiens, sources),
        contradiction=contradiction,
    )


def _with_damage(outcome: Outcome, doc: pending.Document) -> Outcome:
    """A reader's outcome, with pending.md's damaged blocks and their fix: a human must act."""
    damage = pending.damage_lines(doc)
    if damage:
        outcome.lines += damage
        outcome.ask_human()
    return outcome
