"""Undoing a promotion (``ocmem pending annuler [ID]``): the human's gesture, never the agent's.

What the promotion wrote comes back out, as a whole (``Transaction.together``): a fact's line
leaves MEMORY.md — or, when the promotion replaced a fact, the old line takes its place again and
its archive entry leaves memory/ARCHIVE.md —; a promoted skill's SKILL.md goes — or the version
it replaced comes back from the archive —; the proposal is « en attente » again. ocmem rebuilds,
from the proposal, the exact text the promotion wrote (``promotion.fact_line``,
``promotion.skill_text``) and undoes only that: a fact or a skill changed by hand since, or no
longer there, is refused and nothing changes. A proposal already waiting has nothing to undo, so
a second run changes nothing.

Without an id, the last promotion is undone: the newest « promotion » or « promotion annulée »
line of the action log says which (``.ocmem/log.jsonl``); when that is an undo, there is nothing
more to do (undoing twice never reaches an older promotion). Without the log, the promotion dates
of pending.md decide, and two on the same day are not guessed between.

With SilverBullet, validated memory is pulled from the space: a local undo would be put back by
the next pull. The gesture is then the human's in the space: the review page's « Annuler »,
computed from this module's reversals (``ocmem.services.gestureplans.undo``), or by hand (the
line to take out, the one to put back, the decision « annulé » the pull reads:
``ocmem.silverbullet.decisions``), which the refusal spells out.
"""

from __future__ import annotations

import re
from datetime import date
from typing import NamedTuple

from ocmem.errors import InputError, OcmemError, Refused
from ocmem.formats import archive, decisionspage, memorymd, pending
from ocmem.home.actionlog import last_event
from ocmem.home.atomic import read_text
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import promotion, supersession
from ocmem.text import inert

PROMOTED_EVENT = "promotion"  # logged by Proposals.accept
UNDONE_EVENT = "promotion annulée"
_PROMOTED_ON = re.compile(rf"^{pending.STATE_PROMOTED} \((\d{{4}}-\d{{2}}-\d{{2}})\)")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_SKILL_DAY = re.compile(r"^promu: ['\"]?(\d{4}-\d{2}-\d{2})", re.MULTILINE)


class Reversal(NamedTuple):
    """What undoing one promotion writes (pure: computed from the files' texts)."""

    target: str  # the file's text after the undo; "" when it goes
    archive: str | None  # ARCHIVE.md after (None: unchanged; "": it goes)
    said: list[str]
    line: str | None = None  # a fact: the line the promotion wrote (as ``fact_lines`` gives it)
    replaced: archive.Entry | None = None  # the archive entry of what it replaced
    restored: bool = False  # a fact: the replaced one put back in MEMORY.md


def promoted_on(proposal: pending.Proposal) -> date | None:
    """The day a proposal was promoted, from its status (« promu (2026-12-01) »)."""
    found = _PROMOTED_ON.match(proposal.status)
    return date.fromisoformat(found.group(1)) if found else None


def _is_promoted_line(line: str, proposal: pending.Proposal) -> bool:
    """Whether ``line`` is the very line a promotion of ``proposal`` wrote, on any day."""
    # Rendered again on each day the line holds: a fact that itself names a date (even
    # 2000-01-01) cannot shift where the promotion's day is looked for.
    for found in _DAY.finditer(line):
        try:
            day = date.fromisoformat(found.group(0))
        except ValueError:
            continue
        if line == promotion.fact_line(proposal, day):
            return True
    return False


def reverse_fact(memory_text: str, archive_text: str, proposal: pending.Proposal) -> Reversal:
    """MEMORY.md (and ARCHIVE.md) without what promoting ``proposal`` wrote; Refused when its
    line was changed by hand or is gone."""
    lines = memorymd.fact_lines(memory_text)
    line = next((fact for fact in lines if _is_promoted_line(fact, proposal)), None)
    key = memorymd.statement_key(proposal.content)
    if line is None:
        touched = memorymd.line_of_proposal(memory_text, proposal.id, proposal.content)
        if touched is not None:
            # The line as ocmem wrote it, when the status says on which day (never another day's)
            day = promoted_on(proposal)
            written = f"(« {promotion.fact_line(proposal, day)} »)" if day else "(avec sa date)"
            raise Refused(
                f"le fait promu par {proposal.id} a été modifié à la main depuis : « {touched} » "
                "(ocmem ne retire que la ligne qu'il a écrite) ; rien n'a été modifié",
                fix=(
                    "si ce fait doit partir : `ocmem retire fact "
                    f'"{memorymd.fact_statement(touched)}" --raison "…"` ; pour annuler la '
                    f"promotion, remets la ligne telle qu'ocmem l'avait écrite {written}, "
                    f"puis relance `ocmem pending annuler {proposal.id}`"
                ),
            )
        raise Refused(
            f"le fait promu par {proposal.id} n'est plus dans MEMORY.md "
            f"(« {inert.readable(inert.inline(proposal.content))} ») : rien à retirer ; rien "
            "n'a été modifié",
            fix=(
                "s'il a été retiré (`ocmem retire fact`), il est dans memory/ARCHIVE.md ; pour "
                "annuler la promotion, remets sa ligne dans MEMORY.md (ses versions "
                "précédentes sont dans .ocmem/backups/), puis relance "
                f"`ocmem pending annuler {proposal.id}`"
            ),
        )
    replaced = next(
        (
            entry
            for entry in archive.entries(archive_text)
            if (entry.kind, entry.action, entry.about)
            == (archive.FACT, archive.REPLACED, proposal.id)
            and memorymd.statement_key(entry.new) == key
        ),
        None,
    )
    said = [f"fait retiré de MEMORY.md : « {line} »"]
    if replaced is None:
        text = memorymd.without_fact(memory_text, line)
        tight = text.rstrip("\n") + "\n"  # the blank line the promotion put before its first fact
        if memorymd.with_fact(tight, line) == memory_text:
            text = tight
        return Reversal(text, None, said, line)
    old_key = memorymd.statement_key(replaced.old)
    restored = not any(memorymd.statement_key(fact) == old_key for fact in lines)
    if restored:
        text = memorymd.replaced_fact(memory_text, line, replaced.old)
        said.append(f"ancien fait remis à sa place dans MEMORY.md : « {replaced.old} »")
    else:
        text = memorymd.without_fact(memory_text, line)
        said.append(f"l'ancien fait « {replaced.old} » est déjà dans MEMORY.md : pas de doublon")
    said.append("son entrée retirée de memory/ARCHIVE.md")
    left = archive.without_entry(archive_text, replaced)
    return Reversal(text, left, said, line, replaced, restored)


def reverse_skill(
    skill_md: str | None, others: list[str], archive_text: str, proposal: pending.Proposal
) -> Reversal:
    """The skill folder without what promoting ``proposal`` wrote (``skill_md``: its SKILL.md
    now, None when absent; ``others``: the folder's other files)."""
    name = proposal.skill_name or ""
    where = f"skills/{name}/SKILL.md"
    days = [day for day in (promoted_on(proposal),) if day is not None]
    days += [date.fromisoformat(d) for d in _SKILL_DAY.findall(skill_md or "")]
    if skill_md is None or not any(skill_md == promotion.skill_text(proposal, d) for d in days):
        named = skill_md is not None and f"proposition: {proposal.id}" in skill_md
        if named:
            raise Refused(
                f"{where}, promu par {proposal.id}, a été modifié à la main depuis (ocmem ne "
                "retire que le texte qu'il a écrit) ; rien n'a été modifié",
                fix=(
                    f'si ce skill doit partir : `ocmem retire skill {name} --raison "…"` ; '
                    "pour annuler la promotion, remets le texte qu'ocmem avait écrit (une copie "
                    f"est dans .ocmem/backups/), puis relance `ocmem pending annuler {proposal.id}`"
                ),
            )
        raise Refused(
            f"le skill promu par {proposal.id} n'est plus là ({where}) : rien à retirer ; "
            "rien n'a été modifié",
            fix=(
                "s'il a été retiré (`ocmem retire skill`), il est dans memory/ARCHIVE.md ; pour "
                f"annuler la promotion, remets-le, puis relance `ocmem pending annuler {proposal.id}`"
            ),
        )
    replaced = next(
        (
            entry
            for entry in archive.entries(archive_text)
            if (entry.kind, entry.action, entry.about) == (archive.SKILL, archive.REPLACED, name)
            and entry.reason.startswith(f"remplacé par {proposal.id} :")
        ),
        None,
    )
    if replaced is not None:
        return Reversal(
            replaced.old,
            archive.without_entry(archive_text, replaced),
            [f"{where} : ancienne version remise (retirée de memory/ARCHIVE.md)"],
            replaced=replaced,
        )
    if others:
        raise Refused(
            f"skills/{name}/ contient aussi {', '.join(others)}, ajouté(s) depuis la promotion "
            f"de {proposal.id} : retirer SKILL.md seul laisserait un skill sans SKILL.md ; rien "
            "n'a été modifié",
            fix=(
                f"déplace ces fichiers hors de skills/{name}/ (ou `ocmem retire skill {name}`), "
                f"puis relance `ocmem pending annuler {proposal.id}`"
            ),
        )
    return Reversal("", None, [f"{where} retiré"])


def undo_promotion(ws: Workspace, pid: str | None) -> Outcome:
    """Undo the promotion of ``pid`` (None: the last one)."""
    if ws.sync_mode:
        raise _in_the_space(ws, pid)
    with ws.transaction("pending annuler") as run:
        doc = ws.pending_document()
        if pid is None:
            pid, already = _last_promotion(ws, doc)
            if already is not None:
                return Outcome([already])
        proposal = _find(doc, pid)
        if proposal.state == pending.STATE_PENDING:
            return Outcome([f"Rien à annuler : {proposal.id} est en attente, pas promue"])
        if proposal.state != pending.STATE_PROMOTED:
            raise Refused(
                f"{proposal.id} n'a pas été promue ({proposal.status}) : rien à annuler",
                fix="`ocmem pending list --toutes` montre les propositions promues",
            )
        if proposal.kind == "fait":
            target = ws.paths.memory_md
            done = reverse_fact(ws.memory_text(), ws.archive_text(), proposal)
        else:
            target = ws.paths.skills_dir / (proposal.skill_name or "") / "SKILL.md"
            folder = target.parent
            others = (
                sorted(p.name for p in folder.iterdir() if p.name != "SKILL.md")
                if folder.is_dir() and folder.parent == ws.paths.skills_dir
                else []
            )
            done = reverse_skill(
                read_text(target) if target.is_file() else None,
                others,
                ws.archive_text(),
                proposal,
            )
        doc = doc.replace(proposal.with_status(pending.STATE_PENDING))
        with run.together():  # out of validated memory and back in waiting: both, or neither
            if done.target:
                run.write(target, done.target)
            else:
                run.remove(target, up_to=ws.paths.skills_dir)
            if done.archive == "":
                run.remove(ws.paths.archive_md)
            elif done.archive is not None:
                run.write(ws.paths.archive_md, done.archive)
            run.write(ws.paths.pending, doc.render())
    waiting = sum(p.state == pending.STATE_PENDING for p in doc.proposals)
    ws.log(UNDONE_EVENT, id=proposal.id, kind=proposal.kind, target=ws.paths.rel(target))
    return Outcome(
        [
            f"Promotion de {proposal.id} annulée :",
            *(f"  {line}" for line in done.said),
            f"{proposal.id} est de nouveau en attente (`ocmem pending accept {proposal.id}` la "
            "promeut à nouveau)",
            f"{waiting} proposition{'s' if waiting > 1 else ''} en attente",
        ]
    )


def _find(doc: pending.Document, pid: str) -> pending.Proposal:
    found = pending.find(doc.proposals, pid)
    if found is not None:
        return found
    damaged = [p for p in doc.problems if p.startswith(f"{pid} ")]
    if damaged:
        raise Refused(
            f"la proposition {pid} de memory/pending.md est abîmée : {damaged[0]}",
            fix=f"corrige le bloc {pid} de pending.md à la main (ou restaure-le depuis "
            ".ocmem/backups) ; `ocmem doctor` le montre",
        )
    raise InputError(
        f"pas de proposition {pid}", fix="`ocmem pending list --toutes` montre les identifiants"
    )


def _last_promotion(ws: Workspace, doc: pending.Document) -> tuple[str, str | None]:
    """The proposal whose promotion is the last one, or what to say when it was undone."""
    promoted = [p for p in doc.proposals if p.state == pending.STATE_PROMOTED]
    event = last_event(ws.paths, (PROMOTED_EVENT, UNDONE_EVENT))
    logged = pending.find(doc.proposals, str(event.get("id", ""))) if event else None
    if event is not None and logged is not None:
        if event["action"] == UNDONE_EVENT and logged.state == pending.STATE_PENDING:
            others = ", ".join(f"`ocmem pending annuler {p.id}`" for p in promoted)
            return logged.id, (
                f"Rien à annuler : la dernière promotion, {logged.id}, a déjà été annulée "
                f"({str(event.get('ts', ''))[:10]})"
                + (f" ; pour une plus ancienne : {others}" if others else "")
            )
        if event["action"] == PROMOTED_EVENT and logged.state == pending.STATE_PROMOTED:
            return logged.id, None
    if not promoted:
        raise Refused(
            "aucune promotion à annuler",
            fix="`ocmem pending list --toutes` montre les propositions",
        )
    newest = max((promoted_on(p) or date.min) for p in promoted)
    last = [p for p in promoted if (promoted_on(p) or date.min) == newest]
    if len(last) > 1:
        raise Refused(
            f"{len(last)} promotions le même jour ({newest.isoformat()}), et le journal des "
            "actions ne dit plus laquelle est la dernière",
            fix="donne l'identifiant : "
            + " ou ".join(f"`ocmem pending annuler {p.id}`" for p in last),
        )
    return last[0].id, None


def _in_the_space(ws: Workspace, pid: str | None) -> Refused:
    """The refusal with SilverBullet: where the gesture is made, spelled out for ``pid``."""
    from ocmem.home import identity
    from ocmem.home.space import DEFAULT_PULL_RULES, load_sync_config, pulled_from

    rules = DEFAULT_PULL_RULES  # the configured ones first, when they load
    pending_page = None
    home = identity.read(ws.paths)
    try:
        config = load_sync_config(ws.settings)
        rules = (*config.pull, *DEFAULT_PULL_RULES)
        rule = next((r for r in config.push if r.local == "memory/pending.md"), None)
        if home is not None and rule is not None:
            pending_page = rule.page(home.id, shared=home.shared_pages)
    except OcmemError:
        pass
    decisions = (
        decisionspage.page_beside(pending_page)
        if pending_page
        else f"la page {decisionspage.PAGE_NAME} de ce dossier (à côté de sa page pending.md)"
    )
    memory_page = pulled_from(rules, "memory/MEMORY.md")
    archive_page = pulled_from(rules, "memory/ARCHIVE.md")
    message = (
        "avec SilverBullet, une promotion s'annule dans SilverBullet : MEMORY.md et skills/ y "
        "sont tirés, une annulation locale serait défaite au prochain pull ; rien n'a été modifié. "
        "Le bouton « Annuler » de la page de revue (commande « ocmem: Revue des propositions ») "
        "le fait quand la page tient encore ce que la promotion a écrit ; sinon, à la main"
    )
    proposal = pending.find(ws.proposals(), pid) if pid else None
    if proposal is None or proposal.state != pending.STATE_PROMOTED:
        return Refused(
            message,
            fix=(
                f"retire le fait de {memory_page} (ou le skill de son dossier), puis ajoute à "
                f"{decisions} la ligne « - P-XXXX : {decisionspage.UNDONE} (date) » ; "
                "`ocmem pull` remet la proposition en attente"
            ),
        )
    if proposal.kind == "fait":
        home_id = home.id if home is not None else None
        line = (
            memorymd.line_of_proposal(ws.memory_text(), proposal.id, proposal.content, home_id)
            or f"{inert.inline(proposal.content)} (…)"
        )
        step = f"retire de {memory_page} la ligne « {line} »"
        old = supersession.replaced_fact(proposal.replaces)
        if old is not None:
            step += f", et remets à sa place l'ancien fait « {old} … », gardé dans {archive_page}"
    else:
        folder = pulled_from(rules, "skills/")
        step = (
            f"supprime {folder}{proposal.skill_name}/SKILL.md (ou remets l'ancienne version, "
            f"gardée dans {archive_page})"
        )
    line = f"- {proposal.id} : {decisionspage.UNDONE} ({ws.today().isoformat()})"
    return Refused(
        message,
        details=f"Dans SilverBullet : {step} ; puis ajoute à {decisions} la ligne :\n  {line}",
        fix=f"fais ces deux gestes dans SilverBullet, puis `ocmem pull` remet {proposal.id} en attente",
    )
