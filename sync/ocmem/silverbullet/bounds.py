"""What a space can install, whoever wrote it (a broken sync job, a compromised account): each
file's size, the number of skills, the bytes of the whole pull (``silverbullet.pull_max_*`` in
ocmem.yaml). Decided from the listing before anything is read (pure, here); the pull also holds
each read to them while it streams (``ocmem.silverbullet.client``), since a listing can lie.
What is over a bound is not installed, and the local copy stays.
"""

from __future__ import annotations

from typing import NamedTuple

from ocmem.home.space import SyncConfig

_KIB, _MIB = 1 << 10, 1 << 20


class Bounds(NamedTuple):
    file_bytes: int
    skills: int
    total_bytes: int

    @classmethod
    def of(cls, config: SyncConfig) -> Bounds:
        return cls(config.pull_max_file_bytes, config.pull_max_skills, config.pull_max_total_bytes)

    def said(self) -> str:
        """The bounds in the pull's summary line."""
        return (
            f"bornes : {size(self.file_bytes)} par fichier, {self.skills} skills, "
            f"{size(self.total_bytes)} en tout"
        )


class Verdict(NamedTuple):
    too_large: list[tuple[str, int]]  # (remote name, size) of each file over the per-file bound
    skills: int | None  # the number of skill folders, when over the bound: no skill is pulled
    total: int | None  # the bytes of what would be pulled, when over the bound: nothing is


def size(count: int) -> str:
    """``count`` bytes as a French reader reads them (« 10,0 Mio », « 512 Kio », « 300 o »)."""
    for unit, name in ((_MIB, "Mio"), (_KIB, "Kio")):
        if count >= unit:
            whole = count % unit == 0
            shown = f"{count // unit}" if whole else f"{count / unit:.1f}".replace(".", ",")
            return f"{shown} {name}"
    return f"{count} o"


def skill_of(local: str) -> str | None:
    """The skill a pulled file belongs to (``skills/<name>/…``), None for any other file."""
    parts = local.split("/")
    return parts[1] if len(parts) >= 3 and parts[0] == "skills" else None


def judge(files: dict[str, tuple[str, int]], bounds: Bounds) -> Verdict:
    """``files``: every file the listing maps, remote name → (local path, listed size)."""
    too_large = sorted(
        (name, listed) for name, (_, listed) in files.items() if listed > bounds.file_bytes
    )
    kept = {name: entry for name, entry in files.items() if entry[1] <= bounds.file_bytes}
    skills = {skill for local, _ in files.values() if (skill := skill_of(local))}
    over_skills = len(skills) if len(skills) > bounds.skills else None
    if over_skills is not None:
        kept = {name: entry for name, entry in kept.items() if skill_of(entry[0]) is None}
    total = sum(listed for _, listed in kept.values())
    return Verdict(too_large, over_skills, total if total > bounds.total_bytes else None)


def problems(verdict: Verdict, bounds: Bounds, skills_folder: str) -> list[str]:
    """What the pull says of a verdict: each bound passed, what stays, how to change it."""
    lines = [
        f"⚠ {name} non tiré : {size(listed)}, au-delà de {size(bounds.file_bytes)} par "
        "fichier ; la copie locale reste. Correction : allège la page dans SilverBullet, ou "
        "relève `silverbullet.pull_max_file_bytes` dans ocmem.yaml"
        for name, listed in verdict.too_large
    ]
    if verdict.skills is not None:
        lines.append(
            f"⚠ {skills_folder} : {verdict.skills} skills, au-delà de {bounds.skills} : aucun "
            "skill tiré ni retiré, les skills locaux restent tels quels. Correction : retire des "
            "skills dans SilverBullet, ou relève `silverbullet.pull_max_skills` dans ocmem.yaml"
        )
    if verdict.total is not None:
        lines.append(too_much(verdict.total, bounds))
    return lines


def too_much(total: int, bounds: Bounds) -> str:
    return (
        f"⚠ {size(total)} à tirer, au-delà de {size(bounds.total_bytes)} en tout : rien n'a été "
        "tiré ni retiré. Correction : allège l'espace dans SilverBullet, ou relève "
        "`silverbullet.pull_max_total_bytes` dans ocmem.yaml"
    )


def streamed_too_much(total_bytes: int) -> str:
    """The reads of one pull received more than its total (the listing had announced less)."""
    return (
        f"⚠ plus de {size(total_bytes)} reçus en tout (la liste annonçait moins) : rien n'a été "
        "tiré ni retiré. Correction : vérifie l'espace dans SilverBullet, ou relève "
        "`silverbullet.pull_max_total_bytes` dans ocmem.yaml"
    )


def streamed_too_large(name: str, bound: int) -> str:
    """A read stopped while it streamed: the listing had announced less."""
    return (
        f"⚠ {name} non tiré : plus de {size(bound)} reçus (la liste annonçait moins) ; la copie "
        "locale reste. Correction : vérifie la page dans SilverBullet, ou relève "
        "`silverbullet.pull_max_file_bytes` dans ocmem.yaml"
    )
