"""Operations that change several files of the home happen as a whole (ocmem.home.intents).

The kill table: each operation runs in a child process on the test's clock, killed (os._exit,
as SIGKILL would) right after its Nth rename, for N = 1, 2, 3… until it runs through; then the
next command runs, and the home must be exactly as before the operation or exactly as after it
(its memory files, skills, and the state it changes with them), with nothing left half-done.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import CliResult, Clock, journal_fields
from ocmem.home.atomic import EXIT_AFTER_RENAME_VARIABLE, KILLED_EXIT
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals

Run = Callable[..., CliResult]
DRIVER = Path(__file__).parent / "support" / "fixedclock.py"
OLD_PORT = "Le port SSH du VPS est 2222."
NEW_PORT = "Le port SSH du VPS est désormais 2200."


def child(
    home: Path, clock: Clock, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ocmem ARGS`` in a child process on the test's clock."""
    return subprocess.run(
        [sys.executable, str(DRIVER), *args],
        env={
            **os.environ,
            "OCMEM_HOME": str(home),
            "OCMEM_TEST_NOW": clock.value.isoformat(),
            **(env or {}),
        },
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


STATE_KEPT = ("sessions", "note-recurrence.json")  # ocmem's state an operation changes too


def snapshot(home: Path) -> dict[str, bytes]:
    """The home as an operation leaves it: every file but ocmem's bookkeeping (logs, backups,
    the writes journal, the index…), with the state an operation changes along."""
    found = {}
    for path in sorted(home.rglob("*")):
        rel = path.relative_to(home)
        if not path.is_file() or path.is_symlink():
            continue
        if rel.parts[0] == ".ocmem" and (len(rel.parts) < 2 or rel.parts[1] not in STATE_KEPT):
            continue
        found[rel.as_posix()] = path.read_bytes()
    return found


def episodes(memory: Memory, clock: Clock, lesson: str) -> list[str]:
    found = []
    for i in range(2):
        done = memory.add_journal(journal_fields(titre=f"Épisode {i}", lecon=lesson))
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


def propose_skill(proposals: Proposals, refs: list[str]) -> None:
    proposals.propose(
        {
            "type": "skill",
            "titre": "Déployer avec Docker",
            "name": "deployer-docker",
            "description": "Déploie un service avec Docker. Vérifie les ports avant.",
            "contenu": "1. vérifier les ports libres\n2. docker compose up -d",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )


@dataclass
class Scenario:
    """An operation that changes several files, and how to bring a home to just before it."""

    args: tuple[str, ...]
    prepare: Callable[[Memory, Proposals, Clock], None]
    stdin: str = ""


def _fact(m: Memory, p: Proposals, c: Clock) -> None:
    propose_fact(p, episodes(m, c, "vérifier les ports libres avant de déployer"), NEW_PORT)


def _replacing(m: Memory, p: Proposals, c: Clock) -> None:
    propose_fact(p, episodes(m, c, "le port SSH du VPS est 2222"), OLD_PORT)
    p.accept("P-0001")
    propose_fact(p, episodes(m, c, "le port SSH du VPS est passé à 2200"), NEW_PORT)


def _skill(m: Memory, p: Proposals, c: Clock) -> None:
    propose_skill(p, episodes(m, c, "vérifier les ports libres avant docker compose"))


def _promoted_fact(m: Memory, p: Proposals, c: Clock) -> None:
    _fact(m, p, c)
    p.accept("P-0001")


def _promoted_skill(m: Memory, p: Proposals, c: Clock) -> None:
    _skill(m, p, c)
    p.accept("P-0001")


def _promoted_replacing(m: Memory, p: Proposals, c: Clock) -> None:
    _replacing(m, p, c)
    p.accept("P-0002")


def _old_entries(m: Memory, p: Proposals, c: Clock) -> None:
    c.advance(days=-40)
    episodes(m, c, "vérifier les ports libres")
    c.advance(days=40)
    episodes(m, c, "garder les entrées récentes")


def _exposed_session(m: Memory, p: Proposals, c: Clock) -> None:
    # ``ocmem tool`` records its direct call first, in a run of its own: done before
    from ocmem.bridge.tools import record_exposure
    from ocmem.home.sessions import DIRECT_CALL

    record_exposure(m.ws, "ses_1", [(DIRECT_CALL, "")])


ENVELOPE = {"session": "ses_1", "user_messages": [], "exposures": []}
SCENARIOS = {
    "accept a fact": Scenario(("pending", "accept", "P-0001", "--yes"), _fact),
    "accept a replacing fact": Scenario(("pending", "accept", "P-0002", "--yes"), _replacing),
    "accept a skill": Scenario(("pending", "accept", "P-0001", "--yes"), _skill),
    "retire a fact": Scenario(
        ("retire", "fact", NEW_PORT, "--raison", "le VPS a changé"), _promoted_fact
    ),
    "retire a skill": Scenario(
        ("retire", "skill", "deployer-docker", "--raison", "plus de Docker"), _promoted_skill
    ),
    "undo a fact's promotion": Scenario(("pending", "annuler", "P-0001"), _promoted_fact),
    "undo a replacing fact's promotion": Scenario(
        ("pending", "annuler", "P-0002"), _promoted_replacing
    ),
    "undo a skill's promotion": Scenario(("pending", "annuler"), _promoted_skill),
    "archive the journal": Scenario(("journal", "archive", "--plus-vieux-que", "30"), _old_entries),
    "the plugin's journal entry": Scenario(
        ("tool", "memory_journal"),
        _exposed_session,
        json.dumps({**ENVELOPE, "args": journal_fields()}),
    ),
}


@pytest.fixture(params=sorted(SCENARIOS))
def scenario(
    request: pytest.FixtureRequest,
    memory: Memory,
    proposals: Proposals,
    clock: Clock,
) -> Scenario:
    chosen = SCENARIOS[request.param]
    chosen.prepare(memory, proposals, clock)
    return chosen


def copy_of(home: Path, where: Path) -> Path:
    shutil.copytree(home, where, symlinks=True)
    return where


def test_a_kill_after_any_rename_leaves_the_state_before_or_after(
    scenario: Scenario,
    home: Path,
    tmp_path: Path,
    clock: Clock,
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = snapshot(home)
    reference = copy_of(home, tmp_path / "reference")
    done = child(reference, clock, *scenario.args, stdin=scenario.stdin)
    assert done.returncode == 0, done.stderr
    after = snapshot(reference)
    assert after != before
    points = 0
    for n in range(1, 60):
        killed = copy_of(home, tmp_path / f"killed-{n}")
        run = child(
            killed,
            clock,
            *scenario.args,
            stdin=scenario.stdin,
            env={EXIT_AFTER_RENAME_VARIABLE: str(n)},
        )
        if run.returncode != KILLED_EXIT:
            assert run.returncode == 0, run.stderr
            break
        points += 1
        monkeypatch.setenv("OCMEM_HOME", str(killed))
        after_kill = snapshot(killed)
        next_command = run_cli("pending", "list")
        assert "Traceback" not in next_command.err
        state = snapshot(killed)
        assert state in (before, after), f"kill after rename {n}: half-done"
        assert not (killed / ".ocmem/intent.json").exists()
        if after_kill not in (before, after):  # the next command settled it, and said so
            assert "opération interrompue" in next_command.err, next_command.err
            assert "opération interrompue" in run_cli("doctor").out
        assert not list(killed.rglob("*.ocmem-tmp"))
    assert points >= 2, f"only {points} rename(s) seen: the kill was never injected"
    print(f"\nkill table: {' '.join(scenario.args[:3])}: {points} kill points, all consistent")


def test_an_interrupted_accept_is_never_shown_pending_nor_refused(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, run_cli: Run
) -> None:
    # Observed on main: killed right after MEMORY.md landed, the fact was promoted and still
    # « en attente »; a later reject answered « refusée » and the fact stayed.
    _fact(memory, proposals, clock)
    killed = child(
        home,
        clock,
        "pending",
        "accept",
        "P-0001",
        "--yes",
        env={"OCMEM_TEST_EXIT_AFTER_REPLACING": "memory/MEMORY.md"},
    )
    assert killed.returncode == 137
    assert NEW_PORT in (home / "memory/MEMORY.md").read_text()  # the kill came after it landed
    listed = run_cli("pending", "list")
    assert "P-0001 · fait" not in listed.out and "0 proposition en attente" in listed.out
    assert "opération interrompue terminée : « pending accept »" in listed.err
    assert (
        "déjà écrit(s) : memory/MEMORY.md ; écrit(s) maintenant : memory/pending.md" in listed.err
    )
    rejected = run_cli("pending", "reject", "P-0001", "--raison", "finalement non")
    assert rejected.code == 3 and "refusée" not in rejected.out
    memory_md = (home / "memory/MEMORY.md").read_text()
    assert NEW_PORT in memory_md
    assert "Statut : promu" in (home / "memory/pending.md").read_text()


def test_a_recovery_killed_too_is_completed_by_the_next_run(
    home: Path,
    memory: Memory,
    proposals: Proposals,
    clock: Clock,
    tmp_path: Path,
    run_cli: Run,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Completing is idempotent: a second kill, during the completion, changes nothing."""
    _fact(memory, proposals, clock)
    before = snapshot(home)
    reference = copy_of(home, tmp_path / "reference")
    assert child(reference, clock, "pending", "accept", "P-0001", "--yes").returncode == 0
    after = snapshot(reference)
    first = copy_of(home, tmp_path / "first")
    env = {"OCMEM_TEST_EXIT_AFTER_REPLACING": "memory/MEMORY.md"}
    assert child(first, clock, "pending", "accept", "P-0001", "--yes", env=env).returncode == 137
    for n in range(1, 30):
        killed = copy_of(first, tmp_path / f"again-{n}")
        settling = child(killed, clock, "status", env={EXIT_AFTER_RENAME_VARIABLE: str(n)})
        monkeypatch.setenv("OCMEM_HOME", str(killed))
        assert run_cli("status").code == 0
        assert snapshot(killed) in (before, after)
        if settling.returncode != KILLED_EXIT:
            break
    assert snapshot(killed) == after


def test_a_file_changed_since_the_kill_undoes_the_operation(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, run_cli: Run
) -> None:
    """Completing would overwrite the human's edit: the operation is undone, and said."""
    _fact(memory, proposals, clock)
    memory_before = (home / "memory/MEMORY.md").read_bytes()
    env = {"OCMEM_TEST_EXIT_AFTER_REPLACING": "memory/MEMORY.md"}
    assert child(home, clock, "pending", "accept", "P-0001", "--yes", env=env).returncode == 137
    pending_md = home / "memory/pending.md"
    edited = pending_md.read_text() + "\nNote de l'humain.\n"
    pending_md.write_text(edited)
    listed = run_cli("pending", "list")
    assert "opération interrompue annulée" in listed.err
    assert "memory/pending.md a changé depuis" in listed.err
    assert (home / "memory/MEMORY.md").read_bytes() == memory_before
    assert pending_md.read_text() == edited  # the human's edit kept
    assert "P-0001 · fait" in listed.out
    assert "annulée" in run_cli("doctor").out


def test_a_damaged_intent_record_is_set_aside_and_said(home: Path, run_cli: Run) -> None:
    record = home / ".ocmem/intent.json"
    record.write_text("{pas du json")
    listed = run_cli("pending", "list")
    assert listed.code == 0
    assert "intent.json (une opération interrompue) est illisible" in listed.err
    assert not record.exists()
    assert list((home / ".ocmem/backups").rglob("intent.json.illisible"))


def test_a_reader_that_cannot_settle_says_the_operation_is_unfinished(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, run_cli: Run
) -> None:
    import fcntl

    _fact(memory, proposals, clock)
    env = {"OCMEM_TEST_EXIT_AFTER_REPLACING": "memory/MEMORY.md"}
    assert child(home, clock, "pending", "accept", "P-0001", "--yes", env=env).returncode == 137
    with (home / ".ocmem/ocmem.lock").open("a") as held:  # another run holds the lock
        fcntl.flock(held, fcntl.LOCK_EX)
        listed = run_cli("--wait", "0", "pending", "list")
    assert listed.code == 0
    assert "n'a pu être ni terminée ni annulée" in listed.err
    assert "qu'une moitié" in listed.err
    assert (home / ".ocmem/intent.json").exists()  # left for a run that can settle it
    doctor = run_cli("doctor")  # which can: the lock is free again
    assert "opération interrompue terminée" in doctor.out + doctor.err


def test_workspace_readers_see_no_half_state_in_process(
    home: Path, workspace: Workspace, memory: Memory, proposals: Proposals, clock: Clock
) -> None:
    """The plugin's prompt-context says the settlement in its warnings."""
    from ocmem.bridge.tools import prompt_context
    from ocmem.home.workspace import open_workspace

    _fact(memory, proposals, clock)
    env = {"OCMEM_TEST_EXIT_AFTER_REPLACING": "memory/MEMORY.md"}
    assert child(home, clock, "pending", "accept", "P-0001", "--yes", env=env).returncode == 137
    ws = open_workspace(home, clock=clock)
    context = prompt_context(ws)
    assert any("opération interrompue terminée" in w for w in context["warnings"])
    assert NEW_PORT in context["system"][0]


def test_a_torn_append_is_completed_from_the_record(
    home: Path, memory: Memory, proposals: Proposals, clock: Clock, run_cli: Run
) -> None:
    """A kill in the middle of the journal append (no rename there): the record holds the
    entry's bytes, so the next run sets the torn part aside and appends the whole entry."""
    _exposed_session(memory, proposals, clock)
    envelope = json.dumps({**ENVELOPE, "args": journal_fields(titre="Entrée coupée")})
    killed = child(
        home,
        clock,
        "tool",
        "memory_journal",
        stdin=envelope,
        env={EXIT_AFTER_RENAME_VARIABLE: "1"},  # right after the record, before the append
    )
    assert killed.returncode == KILLED_EXIT
    record = json.loads((home / ".ocmem/intent.json").read_text())
    (append,) = [f for f in record["files"] if f["action"] == "append"]
    journal_md = home / "memory/journal.md"
    with journal_md.open("ab") as handle:
        handle.write(append["bytes"].encode("utf-8")[:25])  # what a kill mid-write leaves
    listed = run_cli("journal", "recent")
    assert (
        "rien n'était écrit ; écrit(s) maintenant : memory/journal.md (sa fin coupée" in listed.err
    )
    text = journal_md.read_text()
    assert text.endswith(append["bytes"]) and text.count("Entrée coupée") == 1
    session = json.loads((home / ".ocmem/sessions/ses_1.json").read_text())
    assert len(session["journal"]) == 1
