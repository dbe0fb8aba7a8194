"""What a promotion writes: a fact's line in MEMORY.md, a skill's SKILL.md, inside their caps.

Pure: the caller (``Proposals.accept``) reads the files and writes the result in its transaction.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import NamedTuple

from ocmem.errors import Refused
from ocmem.formats import archive, memorymd, pending, skills
from ocmem.formats.fill import Fill
from ocmem.home.atomic import read_text
from ocmem.home.settings import Limits
from ocmem.services import supersession
from ocmem.services.drafts import NOTHING_REPLACED
from ocmem.text import inert


class Promotion(NamedTuple):
    text: str  # the new MEMORY.md or SKILL.md
    archived: archive.Entry | None  # what it replaced, for memory/ARCHIVE.md
    notes: list[str]  # what to tell the human
    line: str | None = None  # a fact: its new MEMORY.md line (None: already there)


def fact_line(proposal: pending.Proposal, day: date) -> str:
    """The MEMORY.md line (without its « - ») a promotion on ``day`` writes for ``proposal``:
    its fact, dated and sourced, its id last."""
    return (
        f"{inert.inline(proposal.content)} ({day.isoformat()}, Source : "
        f"{' ; '.join(proposal.sources)} ; {proposal.id})"
    )


def skill_text(proposal: pending.Proposal, day: date) -> str:
    """The SKILL.md a promotion on ``day`` writes for ``proposal``."""
    body = (
        f"{inert.draft(proposal.content)}\n\n"
        f"Source : {' ; '.join(proposal.sources)} (promu le {day.isoformat()}, {proposal.id})"
    )
    return skills.render_skill(
        proposal.skill_name or "",
        proposal.description or "",
        body,
        {
            "source": " ; ".join(proposal.sources),
            "promu": day.isoformat(),
            "proposition": proposal.id,
        },
    )


def fact(memory_text: str, proposal: pending.Proposal, today: date, limits: Limits) -> Promotion:
    """MEMORY.md with the proposal's fact, dated and sourced. A proposal that replaces a fact
    (« Remplace : MEMORY.md « … » ») takes its line, in place; the old line is archived."""
    # Promoted before (an interrupted run): the same fact under the same id. Another fact under
    # this id (a reinstalled home numbers from P-0001 again) is not this proposal.
    marker = f"; {proposal.id})"
    content = " ".join(inert.readable(inert.inline(proposal.content)).split())
    if any(
        line.endswith(marker)
        and " ".join(inert.readable(memorymd.fact_statement(line)).split()) == content
        for line in memorymd.fact_lines(memory_text)
    ):
        return Promotion(memory_text, None, ["(fait déjà présent dans MEMORY.md)"])
    line = fact_line(proposal, today)
    old_statement = supersession.replaced_fact(proposal.replaces)
    old_line = (
        memorymd.line_stating(memory_text, old_statement) if old_statement is not None else None
    )
    if old_line is not None:
        new_text = memorymd.replaced_fact(memory_text, old_line, line)
    else:
        new_text = memorymd.with_fact(memory_text, line)
    fill = Fill(len(new_text), limits.memory_chars)
    if fill.over:
        raise Refused(
            f"MEMORY.md dépasserait son plafond : {fill} (rien n'a été écrit)",
            fix=(
                "consolide MEMORY.md à la main (fusionne ou retire des faits dépassés, "
                f"`ocmem retire fact`), puis relance `ocmem pending accept {proposal.id}`"
            ),
        )
    notes = [f"MEMORY.md {fill}"]
    archived = None
    if old_line is not None:
        why = (supersession.replacement(proposal.replaces) or ("", ""))[1] or "remplacé"
        archived = archive.Entry(
            today, archive.FACT, archive.REPLACED, proposal.id, old_line, proposal.content, why
        )
        notes.append(f"Ancien fait remplacé, gardé dans memory/ARCHIVE.md : « {old_line} »")
    elif old_statement is not None:
        notes.append(
            f"Le fait remplacé n'est plus dans MEMORY.md (« {old_statement} ») : le nouveau est ajouté."
        )
    return Promotion(new_text, archived, notes, line)


def skill(
    skills_dir: Path,
    installed: list[skills.Skill],
    proposal: pending.Proposal,
    today: date,
    limits: Limits,
) -> tuple[Path, Promotion]:
    """The proposal's SKILL.md (where, its text), the version it replaces and what to tell the
    human."""
    name = proposal.skill_name or ""
    target = skills_dir / name / "SKILL.md"
    existing = [s for s in installed if s.name != name]
    if not target.exists() and len(existing) >= limits.skills_max:
        raise Refused(
            f"{len(existing)} skills déjà installés (maximum {limits.skills_max})",
            fix="fusionne ou retire un skill avant d'en créer un nouveau",
        )
    if target.exists() and proposal.replaces == NOTHING_REPLACED:
        raise Refused(
            f"le skill {name} existe déjà et la proposition ne dit pas le remplacer",
            fix="refuse la proposition, ou modifie le skill à la main",
        )
    text = skill_text(proposal, today)
    _, problems = skills.check_skill_text(name, text, limits.skill_lines)
    if problems:
        raise Refused(
            f"le skill {name} ne respecterait pas les règles : " + " ; ".join(problems),
            fix="refuse la proposition et demande une version corrigée",
        )
    notes = [f"skills/{name}/SKILL.md : {len(text.splitlines())}/{limits.skill_lines} lignes"]
    archived = None
    if target.exists():
        archived = archive.Entry(
            today,
            archive.SKILL,
            archive.REPLACED,
            name,
            read_text(target),
            "",
            f"remplacé par {proposal.id} : {proposal.replaces}",
        )
        notes.append(f"Ancienne version de {name} gardée dans memory/ARCHIVE.md")
    return target, Promotion(text, archived, notes)
