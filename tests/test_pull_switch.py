"""Switching from local to SilverBullet loses nothing (issue 33): a fact or a skill validated here
before SilverBullet was set up (the path ``ocmem init`` suggests) keeps its file from being
replaced by the first pull; its proposal is reopened, so that the human validates it in
SilverBullet with one gesture; once decided there, the pull installs the space's page. Or the
human lets the space win, explicitly, with the local copy in the backups. Later pulls hold the
same rule, and no status line says « promu » of what validated memory no longer holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import HOME_ID, CliResult, Clock, configure_sync
from ocmem.formats import pending
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from test_supersession import episodes, fact

PORT = "Le port SSH du VPS est 2222."
SPACE_MEMORY = "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n"
MEMORY_PAGE = "Agents/Memory/MEMORY.md"
PENDING_PAGE = f"Agents/Inbox/{HOME_ID}/pending.md"
DECISIONS_PAGE = f"Agents/Inbox/{HOME_ID}/decisions.md"


def ws(home: Path, clock: Clock) -> Workspace:
    return Workspace(load_settings(home), clock=clock)


def pull(home: Path, clock: Clock, **kwargs: Any) -> Outcome:
    return sync.pull(ws(home, clock), **kwargs)


def stored(home: Path) -> dict[str, pending.Proposal]:
    return {p.id: p for p in pending.parse((home / "memory/pending.md").read_text())}


@pytest.fixture
def validated_here(home: Path, memory: Any, clock: Clock, proposals: Proposals) -> str:
    """P-0001, a fact promoted locally, before SilverBullet: its MEMORY.md line."""
    refs = episodes(memory, clock, "le port SSH du VPS est 2222")
    proposals.propose(fact(refs, PORT))
    proposals.accept("P-0001")
    (line,) = [x for x in (home / "memory/MEMORY.md").read_text().splitlines() if PORT in x]
    return line


def test_the_first_pull_keeps_a_fact_validated_here_and_reopens_it(
    home: Path, sb: Any, validated_here: str, run_cli: Callable[..., CliResult]
) -> None:
    before = (home / "memory/MEMORY.md").read_bytes()
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    sb.write("Agents/AGENTS.md", "# Règles\n")
    configure_sync(home, sb.url)
    result = run_cli("pull")
    assert result.code == 3, result.out + result.err
    assert (home / "memory/MEMORY.md").read_bytes() == before  # nothing lost
    assert "# Règles" in (home / "AGENTS.md").read_text()  # the rest is installed
    said = result.out
    assert ": 1 fichier(s) installé(s) comme mémoire validée" in said  # AGENTS.md alone
    assert f"memory/MEMORY.md gardé tel quel, pas remplacé par {MEMORY_PAGE}" in said
    assert validated_here in said
    assert (
        f"reproposé ici, à valider dans SilverBullet : P-0001 (envoyé dans {PENDING_PAGE}" in said
    )
    assert "--remplacer-local" in said
    assert stored(home)["P-0001"].state == pending.STATE_PENDING
    listed = run_cli("pending", "list", "--toutes").out
    assert "P-0001" in listed and "promu" not in listed.split("P-0001")[1].split("\n")[0]


def test_once_promoted_in_silverbullet_the_page_is_installed(
    home: Path, sb: Any, clock: Clock, validated_here: str
) -> None:
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    configure_sync(home, sb.url)
    assert pull(home, clock).needs_human
    sync.push(ws(home, clock))
    assert "en attente" in sb.read(PENDING_PAGE).split("P-0001")[1].split("- Date")[0]
    # The review page's « Promouvoir »: the fact in MEMORY.md, the decision beside pending.
    sb.write(MEMORY_PAGE, SPACE_MEMORY + f"- {PORT} (2026-11-30, Source : x ; {HOME_ID}/P-0001)\n")
    sb.write(DECISIONS_PAGE, "# Décisions\n\n- P-0001 : promu (2026-11-30)\n")
    report = pull(home, clock)
    assert not report.needs_human, report.render()
    text = (home / "memory/MEMORY.md").read_text()
    assert "Debian 12" in text and PORT in text
    assert stored(home)["P-0001"].state == pending.STATE_PROMOTED


def test_once_refused_in_silverbullet_the_page_is_installed_and_the_status_says_so(
    home: Path, sb: Any, clock: Clock, validated_here: str
) -> None:
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    configure_sync(home, sb.url)
    pull(home, clock)
    sync.push(ws(home, clock))
    sb.write(DECISIONS_PAGE, "# Décisions\n\n- P-0001 : refusé (2026-11-30) : plus vrai\n")
    report = pull(home, clock)
    assert not report.needs_human, report.render()
    assert (home / "memory/MEMORY.md").read_text() == SPACE_MEMORY
    assert stored(home)["P-0001"].status.startswith("refusé (2026-11-30)")


def test_the_space_wins_when_asked_and_the_local_copy_is_kept(
    home: Path, sb: Any, clock: Clock, validated_here: str
) -> None:
    before = (home / "memory/MEMORY.md").read_bytes()
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    configure_sync(home, sb.url)
    pull(home, clock)  # reopens P-0001
    report = pull(home, clock, replace_local=True)
    said = report.render()
    assert not report.needs_human, said
    assert (home / "memory/MEMORY.md").read_text() == SPACE_MEMORY
    assert "memory/MEMORY.md remplacé par Agents/Memory/MEMORY.md (--remplacer-local)" in said
    assert validated_here in said
    backups = list((home / ".ocmem/backups").rglob("memory/MEMORY.md"))
    assert before in [b.read_bytes() for b in backups]
    assert stored(home)["P-0001"].state == pending.STATE_REFUSED


SKILL = "---\nname: deploy\ndescription: Déploie. À utiliser pour déployer.\n---\n\n# deploy\n\n{body}\n"


def skill_proposal(memory: Any, clock: Clock) -> dict[str, Any]:
    refs = episodes(memory, clock, "déployer avec docker compose pull puis up -d")
    return {
        "type": "skill",
        "titre": "Déployer",
        "name": "deploy",
        "description": "Déploie le service. À utiliser pour déployer.",
        "contenu": "1. docker compose pull\n2. docker compose up -d\n",
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }


def test_a_skill_validated_here_is_kept_and_reopened_and_one_the_space_lacks_is_left(
    home: Path, sb: Any, clock: Clock, memory: Any, proposals: Proposals
) -> None:
    proposals.propose(skill_proposal(memory, clock))
    proposals.accept("P-0001")
    local = (home / "skills/deploy/SKILL.md").read_bytes()
    sb.write("Agents/Skills/deploy/SKILL.md", SKILL.format(body="Autre façon."))
    configure_sync(home, sb.url)
    report = pull(home, clock)
    said = report.render()
    assert report.needs_human and "skills/deploy/SKILL.md gardé tel quel" in said
    assert (home / "skills/deploy/SKILL.md").read_bytes() == local
    assert stored(home)["P-0001"].state == pending.STATE_PENDING


def test_the_humans_own_rules_in_agents_md_are_kept_until_copied(
    home: Path, sb: Any, clock: Clock
) -> None:
    agents = home / "AGENTS.md"
    agents.write_text("# Mes règles\n\nToujours répondre en français.\n\n" + agents.read_text())
    before = agents.read_bytes()
    sb.write("Agents/AGENTS.md", "# Règles de l'espace\n")
    configure_sync(home, sb.url)
    report = pull(home, clock)
    said = report.render()
    assert report.needs_human and "Toujours répondre en français." in said
    assert "à recopier à la main dans Agents/AGENTS.md" in said
    assert agents.read_bytes() == before
    sb.write("Agents/AGENTS.md", "# Mes règles\n\nToujours répondre en français.\n")
    assert not pull(home, clock).needs_human
    assert "Toujours répondre en français." in agents.read_text()


def test_a_fact_promoted_here_while_synced_is_not_erased_by_the_next_pull(
    home: Path, sb: Any, clock: Clock, memory: Any
) -> None:
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    configure_sync(home, sb.url)
    assert not pull(home, clock).needs_human
    # Promoted with the sync configured only in cron's environment (OCMEM_SILVERBULLET_URL):
    # the terminal's `pending accept` saw no SilverBullet.
    (home / "memory/MEMORY.md").chmod(0o644)
    local = Workspace(load_settings(home), clock=clock, sync_mode=False)
    refs = episodes(Memory(local), clock, "le port SSH du VPS est 2222")
    Proposals(local).propose(fact(refs, PORT))
    Proposals(local).accept("P-0001")
    sb.clock.advance(5)
    sb.write(MEMORY_PAGE, SPACE_MEMORY + "- Un autre fait.\n")
    report = pull(home, clock)
    assert report.needs_human, report.render()
    assert PORT in (home / "memory/MEMORY.md").read_text()
    assert stored(home)["P-0001"].state == pending.STATE_PENDING


def test_a_hand_edit_of_a_pulled_copy_is_replaced_as_before_with_a_backup(
    home: Path, sb: Any, clock: Clock
) -> None:
    sb.write("Agents/Skills/deploy/SKILL.md", SKILL.format(body="Étapes."))
    sb.write(MEMORY_PAGE, SPACE_MEMORY)
    configure_sync(home, sb.url)
    pull(home, clock)
    # The pulled copy is the space's: edited by hand (no promotion carries it), it is
    # replaced at the next change, its bytes kept in the backups, as it always was.
    path = home / "skills/deploy/SKILL.md"
    path.chmod(0o644)
    path.write_text(SKILL.format(body="Étapes, corrigées ici."))
    sb.clock.advance(5)
    sb.write("Agents/Skills/deploy/SKILL.md", SKILL.format(body="Étapes v2."))
    report = pull(home, clock)
    assert not report.needs_human, report.render()
    assert path.read_text() == SKILL.format(body="Étapes v2.")
    backups = [b.read_text() for b in (home / ".ocmem/backups").rglob("skills/deploy/SKILL.md")]
    assert SKILL.format(body="Étapes, corrigées ici.") in backups


def test_no_status_line_says_promu_of_a_fact_the_pull_took_out(
    home: Path, sb: Any, clock: Clock, validated_here: str, run_cli: Callable[..., CliResult]
) -> None:
    promoted = SPACE_MEMORY + f"- {PORT} (2026-11-30, Source : x ; {HOME_ID}/P-0001)\n"
    sb.write(MEMORY_PAGE, promoted)
    configure_sync(home, sb.url)
    assert not pull(home, clock).needs_human  # the space holds it: nothing to keep
    assert "absent" not in run_cli("pending", "list", "--toutes").out
    clock.advance(days=4)
    sb.clock.advance(5)
    sb.write(MEMORY_PAGE, SPACE_MEMORY)  # the human took it out in SilverBullet
    assert not pull(home, clock).needs_human
    said = "promu (2026-11-29), absent de MEMORY.md depuis le pull du 2026-12-03"
    assert said in run_cli("pending", "list", "--toutes").out
    assert said in run_cli("pending", "show", "P-0001").out
    status = run_cli("status").out
    assert "1 promue(s) (dont 1 absente(s) de la mémoire validée)" in status
    assert f"⚠ P-0001 : {said}" in status
    sb.clock.advance(5)
    sb.write(MEMORY_PAGE, promoted)  # back: the status says « promu » again, alone
    pull(home, clock)
    assert "absent" not in run_cli("pending", "list", "--toutes").out


def test_without_silverbullet_a_retired_fact_is_not_said_promu_alone(
    home: Path, validated_here: str, run_cli: Callable[..., CliResult]
) -> None:
    assert run_cli("retire", "fact", PORT, "--raison", "VPS réinstallé").code == 0
    listed = run_cli("pending", "list", "--toutes").out
    assert "promu (2026-11-29), absent de MEMORY.md\n" in listed
