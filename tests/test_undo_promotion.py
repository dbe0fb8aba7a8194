"""Undoing a promotion in one command (issue 36): `ocmem pending annuler [ID]` takes the fact or
the skill back out of validated memory (or puts back the one it replaced, from memory/ARCHIVE.md),
sets the proposal back to « en attente », logs it, lands as a whole, and refuses — changing
nothing — when the promoted text was changed by hand or is gone. Run twice, it changes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import HOME_ID, CliResult, Clock, journal_fields
from ocmem.errors import Refused
from ocmem.formats import archive, pending
from ocmem.home.workspace import Workspace, open_workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.services.unpromotion import undo_promotion

Run = Callable[..., CliResult]
OLD_PORT = "Le port SSH du VPS est 2222."
NEW_PORT = "Le port SSH du VPS est désormais 2200."
PORTS = "Vérifier que les ports sont libres avant un déploiement Docker."


def episodes(memory: Memory, clock: Clock, lesson: str) -> list[str]:
    found = []
    for i in range(2):
        done = memory.add_journal(journal_fields(titre=f"Épisode {lesson[:20]} {i}", lecon=lesson))
        found.append(done.lines[0].removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    return found


def propose_fact(proposals: Proposals, refs: list[str], content: str) -> None:
    proposals.propose(
        {
            "type": "fait",
            "titre": content[:60].rstrip("."),
            "contenu": content,
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )


def propose_skill(proposals: Proposals, refs: list[str], replaces: str = "rien") -> None:
    proposals.propose(
        {
            "type": "skill",
            "titre": "Déployer avec Docker",
            "name": "deployer-docker",
            "description": "Déploie un service avec Docker. Vérifie les ports avant.",
            "contenu": "1. vérifier les ports libres\n2. docker compose up -d",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": replaces,
        }
    )


def memory_files(home: Path) -> dict[str, bytes]:
    """What a promotion and its undo change: validated memory, the archive, the proposals."""
    found = {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".ocmem" not in p.relative_to(home).parts
    }
    found.pop("memory/journal.md", None)
    return found


def stored(home: Path) -> list[pending.Proposal]:
    return pending.parse((home / "memory/pending.md").read_text())


def logged(home: Path, action: str) -> list[dict[str, object]]:
    lines = (home / ".ocmem/log.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["action"] == action]


def test_a_promoted_fact_is_taken_back_and_the_proposal_waits_again(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    before = memory_files(home)
    clock.advance(days=1)
    proposals.accept("P-0001")
    assert memory_files(home) != before
    said = undo_promotion(workspace, "P-0001").render()
    assert "Promotion de P-0001 annulée" in said and "en attente" in said
    assert memory_files(home) == before  # MEMORY.md and pending.md byte for byte
    assert stored(home)[0].state == pending.STATE_PENDING
    (event,) = logged(home, "promotion annulée")
    assert event["id"] == "P-0001" and event["target"] == "memory/MEMORY.md"
    again = undo_promotion(workspace, "P-0001").render()
    assert "Rien à annuler" in again and memory_files(home) == before
    proposals.accept("P-0001")  # promoted again, as the first time
    assert PORTS in (home / "memory/MEMORY.md").read_text()


def test_a_replacing_fact_is_taken_back_and_the_old_one_restored_in_place(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "le port SSH du VPS est 2222"), OLD_PORT)
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    proposals.accept("P-0001")
    proposals.accept("P-0002")
    propose_fact(
        proposals, episodes(memory, clock, "le port SSH du VPS est passé à 2200"), NEW_PORT
    )
    assert stored(home)[2].replaces.startswith(f"MEMORY.md « {OLD_PORT} »")
    before = memory_files(home)
    clock.advance(days=1)
    proposals.accept("P-0003")
    assert OLD_PORT not in (home / "memory/MEMORY.md").read_text()
    assert archive.entries((home / "memory/ARCHIVE.md").read_text())
    said = undo_promotion(workspace, "P-0003").render()
    assert f"« {OLD_PORT}" in said and "remis à sa place" in said
    assert memory_files(home) == before  # the old fact in its place; the archive it made, gone
    assert undo_promotion(workspace, "P-0003").render().startswith("Rien à annuler")


def test_a_promoted_skill_is_removed_and_a_replaced_one_restored(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    refs = episodes(memory, clock, "vérifier les ports libres avant docker compose")
    propose_skill(proposals, refs)
    before = memory_files(home)
    proposals.accept("P-0001")
    assert (home / "skills/deployer-docker/SKILL.md").is_file()
    said = undo_promotion(workspace, "P-0001").render()
    assert "skills/deployer-docker/SKILL.md retiré" in said
    assert memory_files(home) == before and not (home / "skills/deployer-docker").exists()
    # A skill the human wrote, replaced by a promotion, comes back as it was.
    own = "---\nname: deployer-docker\ndescription: Le mien. Il marche.\n---\n\n# Le mien\n"
    (home / "skills/deployer-docker").mkdir()
    (home / "skills/deployer-docker/SKILL.md").write_text(own)
    (home / "memory/pending.md").write_text(
        (home / "memory/pending.md")
        .read_text()
        .replace("- Remplace : rien", "- Remplace : le mien")
    )
    before = memory_files(home)
    proposals.accept("P-0001")
    assert (home / "skills/deployer-docker/SKILL.md").read_text() != own
    said = undo_promotion(workspace, "P-0001").render()
    assert "ancienne version remise" in said
    assert (
        memory_files(home) == before
        and (home / "skills/deployer-docker/SKILL.md").read_text() == own
    )


def test_without_an_id_the_last_promotion_is_undone_and_only_once(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    propose_fact(proposals, episodes(memory, clock, "le port SSH du VPS est 2222"), OLD_PORT)
    proposals.accept("P-0002")
    proposals.accept("P-0001")  # the last one, though its id is lower
    said = undo_promotion(workspace, None).render()
    assert "Promotion de P-0001 annulée" in said
    assert [p.state for p in stored(home)] == [pending.STATE_PENDING, pending.STATE_PROMOTED]
    files = memory_files(home)
    again = undo_promotion(workspace, None).render()
    assert "P-0001" in again and "déjà été annulée" in again and "pending annuler P-0002" in again
    assert memory_files(home) == files  # twice: nothing more is undone


def test_without_a_log_the_last_promotion_is_read_from_the_statuses(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    propose_fact(proposals, episodes(memory, clock, "le port SSH du VPS est 2222"), OLD_PORT)
    proposals.accept("P-0002")
    clock.advance(days=2)
    proposals.accept("P-0001")
    (home / ".ocmem/log.jsonl").unlink()  # rotated away, or an older ocmem's promotions
    assert "Promotion de P-0001 annulée" in undo_promotion(workspace, None).render()
    proposals.accept("P-0001")
    clock.advance(days=-2)
    undo_promotion(workspace, "P-0001")
    proposals.accept("P-0001")  # now both promoted the same day
    (home / ".ocmem/log.jsonl").unlink()
    files = memory_files(home)
    with pytest.raises(Refused, match="le même jour") as refused:
        undo_promotion(workspace, None)
    assert "ocmem pending annuler P-0001" in refused.value.render()
    assert memory_files(home) == files


def test_a_fact_changed_by_hand_or_gone_is_refused_and_nothing_changes(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    proposals.accept("P-0001")
    memory_md = home / "memory/MEMORY.md"
    promoted = memory_md.read_text()
    memory_md.write_text(promoted.replace("libres avant", "libres juste avant"))
    files = memory_files(home)
    with pytest.raises(Refused, match="modifié à la main") as refused:
        undo_promotion(workspace, "P-0001")
    assert (
        "Correction :" in refused.value.render() and "ocmem retire fact" in refused.value.render()
    )
    assert memory_files(home) == files
    memory_md.write_text("\n".join(x for x in promoted.split("\n") if "P-0001" not in x))
    files = memory_files(home)
    with pytest.raises(Refused, match=r"n'est plus dans MEMORY\.md"):
        undo_promotion(workspace, "P-0001")
    assert memory_files(home) == files


def test_a_skill_changed_by_hand_is_refused(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_skill(proposals, episodes(memory, clock, "vérifier les ports libres avant docker"))
    proposals.accept("P-0001")
    skill = home / "skills/deployer-docker/SKILL.md"
    skill.write_text(skill.read_text() + "\n3. Vérifier les journaux.\n")
    files = memory_files(home)
    with pytest.raises(Refused, match="modifié à la main"):
        undo_promotion(workspace, "P-0001")
    assert memory_files(home) == files
    skill.unlink()
    (home / "skills/deployer-docker/notes.md").write_text("à moi\n")
    with pytest.raises(Refused, match="n'est plus là"):
        undo_promotion(workspace, "P-0001")


def test_what_cannot_be_undone_is_said(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    with pytest.raises(Refused, match="aucune promotion à annuler"):
        undo_promotion(workspace, None)
    assert "Rien à annuler" in undo_promotion(workspace, "P-0001").render()  # still pending
    proposals.reject("P-0001", "déjà connu")
    with pytest.raises(Refused, match="n'a pas été promue"):
        undo_promotion(workspace, "P-0001")


def test_with_silverbullet_the_cli_says_the_gesture_in_the_space(
    synced: Path, memory: Memory, proposals: Proposals, clock: Clock
) -> None:
    config = yaml.safe_load((synced / "ocmem.yaml").read_text())
    assert config["silverbullet"]["url"]
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    (synced / "memory/pending.md").write_text(
        (synced / "memory/pending.md").read_text().replace("en attente", "promu (2026-11-29)")
    )
    files = memory_files(synced)
    with pytest.raises(Refused) as refused:
        undo_promotion(open_workspace(synced, clock=clock), "P-0001")
    said = refused.value.render()
    assert "dans SilverBullet" in said and "Agents/Memory/MEMORY.md" in said
    assert "- P-0001 : annulé (2026-11-29)" in said  # the line for the decisions page
    assert memory_files(synced) == files


def test_the_command_line_undoes_on_a_real_home(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, run_cli: Run
) -> None:
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    before = memory_files(home)
    assert run_cli("pending", "accept", "P-0001", "--oui").code == 0
    done = run_cli("pending", "annuler")
    assert done.code == 0, done.err
    assert "Promotion de P-0001 annulée" in done.out and memory_files(home) == before
    again = run_cli("pending", "annuler", "P-0001")
    assert again.code == 0 and "Rien à annuler" in again.out and memory_files(home) == before
    assert run_cli("pending", "undo", "P-0001").code == 0  # the English name, hidden
    assert "annuler" in run_cli("pending", "--help").out
    assert "undo" not in run_cli("pending", "--help").out


def test_undone_in_the_space_the_pull_sets_the_proposal_waiting_again(
    synced: Path, sb: Any, memory: Memory, clock: Clock, run_cli: Run
) -> None:
    """With SilverBullet, the gesture is in the space: the fact leaves the MEMORY.md page and the
    decisions page says « annulé »; the pull sets the proposal back to « en attente », once."""
    from ocmem.formats import decisionspage
    from ocmem.services import sync

    def pull() -> str:
        return sync.pull(open_workspace(synced, clock=clock)).render()

    decisions = f"Agents/Inbox/{HOME_ID}/decisions.md"
    proposals = Proposals(open_workspace(synced, clock=clock))
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), PORTS)
    sync.push(open_workspace(synced, clock=clock))
    line = f"- {PORTS} (2026-11-30, Source : x ; {HOME_ID}/P-0001)\n"
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n" + line)
    sb.write(decisions, decisionspage.HEADER + "\n- P-0001 : promu (2026-11-30)\n")
    assert "P-0001 : promu (2026-11-30)" in pull()
    assert stored(synced)[0].state == pending.STATE_PROMOTED
    # Undone, but the fact still on the page: the proposal waits, and the pull says what is left.
    sb.write(decisions, sb.read(decisions) + "- P-0001 : annulé (2026-12-01)\n")
    said = pull()
    assert "P-0001 : promotion annulée dans SilverBullet" in said
    assert "encore dans MEMORY.md" in said
    assert stored(synced)[0].state == pending.STATE_PENDING
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n")
    said = pull()
    assert "encore dans MEMORY.md" not in said and stored(synced)[0].state == pending.STATE_PENDING
    assert PORTS not in (synced / "memory/MEMORY.md").read_text()
    assert "P-0001 · fait" in run_cli("pending", "list").out  # waiting, shown as such
    files = memory_files(synced)
    assert "P-0001" not in pull() and memory_files(synced) == files  # twice: nothing more
    # Promoted again later: the newest line wins.
    sb.write(decisions, sb.read(decisions) + "- P-0001 : promu (2026-12-02)\n")
    assert "P-0001 : promu (2026-12-02)" in pull()


def test_a_fact_that_names_a_date_is_taken_back_too(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, workspace: Workspace
) -> None:
    dated = "Vérifier les ports libres : la règle du pare-feu date du 2000-01-01."
    propose_fact(proposals, episodes(memory, clock, "vérifier les ports libres"), dated)
    before = memory_files(home)
    proposals.accept("P-0001")
    said = undo_promotion(workspace, "P-0001").render()
    assert "Promotion de P-0001 annulée" in said, said
    assert memory_files(home) == before
