"""What a pull will fetch and remove, decided from one listing (pure, given the local digests):
the mapping, unsafe names and conflict copies set aside, the bounds of what a space can install
(``ocmem.silverbullet.bounds``), and the guard against a listing that looks emptied."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ocmem.errors import Refused
from ocmem.home.space import LOCAL_ONLY, SyncConfig
from ocmem.silverbullet.bounds import Bounds, judge, problems, skill_of
from ocmem.silverbullet.client import (
    Meta,
    RemoteFile,
    is_conflict_copy,
    original_of,
    remote_name_problem,
)
from ocmem.silverbullet.state import PulledFile


@dataclass(frozen=True)
class Fetch:
    remote: str
    local: str
    meta: Meta
    reason: str  # "nouveau", "modifié", "copie locale modifiée", "vérification"


@dataclass
class PullPlan:
    fetch: list[Fetch] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)  # remote names whose local copy goes
    unchanged: int = 0
    conflict_copies: list[str] = field(default_factory=list)
    rejected: list[tuple[str, str]] = field(default_factory=list)
    files: dict[str, tuple[str, int]] = field(default_factory=dict)  # every mapped: local, size


def plan_pull(
    listing: list[RemoteFile],
    pulled: dict[str, PulledFile],
    local_sha: Callable[[str], str | None],
    config: SyncConfig,
    *,
    full: bool = False,
) -> PullPlan:
    """Decide what to fetch and remove (pure, given the local digests)."""
    plan = PullPlan()
    mapped: dict[str, tuple[str, Meta]] = {}
    taken: dict[str, str] = {}
    for item in listing:
        if is_conflict_copy(item.name):
            if config.local_target(original_of(item.name)) is not None:
                plan.conflict_copies.append(item.name)  # of a pulled page: a human must merge it
            continue
        target = config.local_target(item.name)
        if target is None:
            continue
        problem = remote_name_problem(item.name)
        if problem is None and target in LOCAL_ONLY:
            problem = "cible locale jamais tirée"
        if problem is None and target in taken:
            problem = f"même fichier local que {taken[target]}"
        if problem:
            plan.rejected.append((item.name, problem))
            continue
        taken[target] = item.name
        mapped[item.name] = (target, item.meta)
        plan.files[item.name] = (target, item.meta.size)
    for name, (target, meta) in sorted(mapped.items()):
        previous = pulled.get(name)
        if previous is None:
            reason = "nouveau"
        elif (previous.last_modified, previous.size) != (meta.last_modified, meta.size):
            reason = "modifié"
        elif previous.local != target or local_sha(target) != previous.sha256:
            reason = "copie locale modifiée"
        elif full:
            reason = "vérification"
        else:
            plan.unchanged += 1
            continue
        plan.fetch.append(Fetch(name, target, meta, reason))
    plan.remove = sorted(name for name in pulled if name not in mapped)
    return plan


def within_bounds(
    plan: PullPlan, pulled: dict[str, PulledFile], bounds: Bounds, skills_folder: str
) -> list[str]:
    """Drop from ``plan`` what the listing shows over a bound (``ocmem.silverbullet.bounds``);
    what the pull says of it."""
    verdict = judge(plan.files, bounds)
    over = {name for name, _ in verdict.too_large}
    plan.fetch = [f for f in plan.fetch if f.remote not in over]
    if verdict.skills is not None:
        plan.fetch = [f for f in plan.fetch if skill_of(f.local) is None]
        plan.remove = [n for n in plan.remove if skill_of(pulled[n].local) is None]
    if verdict.total is not None:
        plan.fetch, plan.remove = [], []
    return problems(verdict, bounds, skills_folder)


def check_removals(plan: PullPlan, tracked: int, max_ratio: float, force: bool) -> None:
    """Abort before acting when the listing looks wrong rather than really emptied."""
    if force or not plan.remove:
        return
    if len(plan.remove) == tracked:
        raise Refused(
            f"SilverBullet ne liste plus aucun des {tracked} fichiers tirés : liste vide ou mauvais espace ?",
            fix="vérifie l'URL et l'espace ; si la suppression est voulue, relance avec --forcer-suppression",
        )
    if len(plan.remove) / tracked > max_ratio:
        raise Refused(
            f"{len(plan.remove)} fichiers sur {tracked} seraient supprimés (plus de {max_ratio:.0%})",
            fix="vérifie l'espace SilverBullet ; si c'est voulu, relance avec --forcer-suppression",
        )
