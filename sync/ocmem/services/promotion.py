"""What a promotion writes: a fact's line in MEMORY.md, a skill's SKILL.md, inside their caps.

Pure: the caller (``Proposals.accept``) reads the files and writes the result in its transaction.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from ocmem.errors import Refused
from ocmem.formats import memorymd, pending, skills
from ocmem.formats.fill import Fill
from ocmem.home.settings import Limits
from ocmem.services.drafts import NOTHING_REPLACED
from ocmem.text import inert


def fact(
    memory_text: str, proposal: pending.Proposal, today: date, limits: Limits
) -> tuple[str, list[str]]:
    """MEMORY.md with the proposal's fact, dated and sourced, and what to tell the human."""
    marker = f"; {proposal.id})"
    if any(line.endswith(marker) for line in memorymd.fact_lines(memory_text)):
        return memory_text, ["(fait déjà présent dans MEMORY.md)"]
    line = (
        f"{inert.inline(proposal.content)} ({today.isoformat()}, Source : "
        f"{' ; '.join(proposal.sources)} ; {proposal.id})"
    )
    new_text = memorymd.with_fact(memory_text, line)
    fill = Fill(len(new_text), limits.memory_chars)
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
            f"La proposition remplace : {proposal.replaces} — retire l'ancienne ligne de "
            "MEMORY.md à la main."
        )
    return new_text, notes


def skill(
    skills_dir: Path,
    installed: list[skills.Skill],
    proposal: pending.Proposal,
    today: date,
    limits: Limits,
) -> tuple[Path, str, list[str]]:
    """The proposal's SKILL.md (where, its text) and what to tell the human."""
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
    _, problems = skills.check_skill_text(name, text, limits.skill_lines)
    if problems:
        raise Refused(
            f"le skill {name} ne respecterait pas les règles : " + " ; ".join(problems),
            fix="refuse la proposition et demande une version corrigée",
        )
    return (
        target,
        text,
        [f"skills/{name}/SKILL.md : {len(text.splitlines())}/{limits.skill_lines} lignes"],
    )
