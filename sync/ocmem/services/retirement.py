"""Retiring a validated fact or skill: the human's gesture (``ocmem retire``; with SilverBullet,
the review page's command), never the agent's. The item leaves MEMORY.md or skills/ (so the next
prompt no longer holds it) and goes to memory/ARCHIVE.md with the date and the reason; a later
proposal that brings it back quotes that retirement (ocmem.services.supersession)."""

from __future__ import annotations

from ocmem.errors import InputError, Refused
from ocmem.formats import archive, memorymd
from ocmem.home.atomic import read_text
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import supersession
from ocmem.services.drafts import MAX_LINE


def _checked_reason(ws: Workspace, reason: str) -> str:
    reason = reason.strip()
    if not reason or "\n" in reason or len(reason) > MAX_LINE:
        raise InputError(
            f"donne une raison sur une ligne ({MAX_LINE} caractères au plus)",
            fix='--raison "remplacé par …" (elle reste dans memory/ARCHIVE.md)',
        )
    ws.check("raison", reason)
    return reason


def _not_synced(ws: Workspace, what: str) -> None:
    if ws.sync_mode:
        raise Refused(
            f"avec SilverBullet, {what} se retire dans SilverBullet : MEMORY.md et skills/ y sont "
            "tirés, un retrait local serait annulé au prochain pull",
            fix="commande « ocmem: Retirer un fait ou un skill » de la page Library/ocmem, "
            "puis `ocmem pull`",
        )


def retire_fact(ws: Workspace, quote: str, reason: str) -> Outcome:
    """Remove the MEMORY.md fact ``quote`` names (its text, whole or enough of it)."""
    _not_synced(ws, "un fait")
    reason = _checked_reason(ws, reason)
    today = ws.today()
    with ws.transaction("retire") as run:
        memory_text = ws.memory_text()
        items = supersession.held_items(memory_text, [], [], "")
        several = supersession.quoted_facts(quote, items)
        if len(several) > 1:
            raise InputError(
                f"« {quote} » se trouve dans {len(several)} faits de MEMORY.md : "
                + " ; ".join(f"« {i.statement} »" for i in several),
                fix="cite assez du fait à retirer pour le distinguer des autres, par ex. "
                f'`ocmem retire fact "{several[0].statement}" --raison "…"`',
            )
        item = supersession.resolve(quote, items)
        if item is None:
            close = supersession.touches(quote, items)[:3]
            raise InputError(
                f"aucun fait de MEMORY.md ne correspond à « {quote} »",
                fix="cite le fait tel qu'il est dans MEMORY.md"
                + (
                    " ; les plus proches : " + " ; ".join(t.item.ref for t in close)
                    if close
                    else ""
                ),
            )
        entry = archive.Entry(
            today, archive.FACT, archive.RETIRED, "à la main", item.line, "", reason
        )
        with run.together():  # out of MEMORY.md and into ARCHIVE.md: both, or neither
            run.write(ws.paths.archive_md, archive.with_entry(ws.archive_text(), entry))
            run.write(ws.paths.memory_md, memorymd.without_fact(memory_text, item.line))
    return Outcome(
        [
            f"Fait retiré de MEMORY.md : « {item.line} »",
            "Gardé dans memory/ARCHIVE.md, avec la raison ; la prochaine session ne le charge plus.",
        ]
    )


def retire_skill(ws: Workspace, name: str, reason: str) -> Outcome:
    """Remove the skill ``name`` (its whole folder, backed up); its SKILL.md is archived."""
    _not_synced(ws, "un skill")
    reason = _checked_reason(ws, reason)
    today = ws.today()
    folder = ws.paths.skills_dir / name
    with ws.transaction("retire") as run:
        installed = {s.name for s in ws.skills()}
        skill_md = folder / "SKILL.md"
        if name not in installed or not skill_md.is_file() or folder.parent != ws.paths.skills_dir:
            raise InputError(
                f"pas de skill {name!r} dans {ws.paths.rel(ws.paths.skills_dir)}",
                fix="skills installés : " + (", ".join(sorted(installed)) or "aucun"),
            )
        entry = archive.Entry(
            today,
            archive.SKILL,
            archive.RETIRED,
            name,
            read_text(skill_md),
            "",
            reason,
        )
        with run.together():  # out of skills/ and into ARCHIVE.md: both, or neither
            run.write(ws.paths.archive_md, archive.with_entry(ws.archive_text(), entry))
            for path in sorted((p for p in folder.rglob("*") if p.is_file()), reverse=True):
                run.remove(path, up_to=ws.paths.skills_dir)
    return Outcome(
        [
            f"Skill {name} retiré de skills/ (sauvegarde faite)",
            "Son SKILL.md est gardé dans memory/ARCHIVE.md, avec la raison ; OpenCode ne le "
            "charge plus à la prochaine session.",
        ]
    )
