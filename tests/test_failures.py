"""Every command, in a broken environment: a clear one-line message with its fix, an exit code
from the documented set, never a Python traceback, and nothing changed but what was intended."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult, configure_sync, journal_fields
from ocmem import clidocs

DOCUMENTED_CODES = {0, 1, 2, 3, 75}
JOURNAL_JSON = json.dumps(journal_fields())
ENVELOPE = json.dumps(
    {"session": "ses_1", "user_messages": [], "untrusted_outputs": [], "args": {"text": "une note"}}
)

# Every command of the command line, with arguments that make it do its real work.
COMMANDS: dict[str, tuple[list[str], str]] = {
    "ocmem context-size": (["context-size"], ""),
    "ocmem cron print": (["cron", "print"], ""),
    "ocmem curate": (["curate", "--print"], ""),
    "ocmem doctor": (["doctor"], ""),
    "ocmem gate": (["gate"], '{"id": 1, "op": "prompt-context", "session": "ses_1"}\n'),
    "ocmem history": (["history"], ""),
    "ocmem init": (["init"], ""),
    "ocmem journal add": (["journal", "add"], JOURNAL_JSON),
    "ocmem journal archive": (["journal", "archive", "--older-than", "90"], ""),
    "ocmem journal recent": (["journal", "recent"], ""),
    "ocmem journal search": (["journal", "search", "docker", "ports"], ""),
    "ocmem note": (["note", "une note de travail"], ""),
    "ocmem pending accept": (["pending", "accept", "P-0001", "--yes"], ""),
    "ocmem pending duplicates": (["pending", "duplicates"], ""),
    "ocmem pending list": (["pending", "list"], ""),
    "ocmem pending merge": (["pending", "merge", "P-0001", "P-0002"], ""),
    "ocmem pending reject": (["pending", "reject", "P-0001", "--reason", "non"], ""),
    "ocmem pending show": (["pending", "show", "P-0001"], ""),
    "ocmem plugin-config": (["plugin-config"], ""),
    "ocmem prompt-context": (["prompt-context", "--session", "ses_1"], ""),
    "ocmem propose": (["propose"], json.dumps({"type": "fait", "titre": "t", "contenu": "c"})),
    "ocmem pull": (["pull"], ""),
    "ocmem push": (["push"], ""),
    "ocmem review": (["review"], ""),
    "ocmem status": (["status"], ""),
    "ocmem sync": (["sync"], ""),
    "ocmem tool": (["tool", "memory_note"], ENVELOPE),
}
# They change the user's real crontab: covered by tests/test_schedule.py with a fake crontab.
# `harden` changes owners and /etc/sudoers.d as root: covered by tests/test_harden.py.
NOT_RUN_HERE = {"ocmem cron install", "ocmem cron remove", "ocmem harden"}


def test_the_matrix_covers_every_command() -> None:
    every = {path for path, _ in clidocs.commands(clidocs.cli, "ocmem", hidden=True)}
    assert every - NOT_RUN_HERE == set(COMMANDS)


# What breaks, and how: (file relative to the home, its corrupt content, the commands that
# read it and so must name it).
CORRUPT_STATE: dict[str, tuple[str, str, set[str]]] = {
    # The gate is a server: it stays open and answers each request with its own code (test_gate).
    "ocmem.yaml": ("ocmem.yaml", "silverbullet: [unbalanced\n", set(COMMANDS) - {"ocmem gate"}),
    "sync-state.json": (
        ".ocmem/sync-state.json",
        "{not json",
        {"ocmem status", "ocmem doctor", "ocmem pull", "ocmem push", "ocmem sync"},
    ),
    "plugin.json": (".ocmem/plugin.json", "\x00\x01 not json", {"ocmem doctor"}),
    "ses_1.json": (".ocmem/sessions/ses_1.json", '{"journal": 5}', {"ocmem prompt-context"}),
}


def seed(run_cli: Callable[..., CliResult]) -> None:
    """Two entries and two proposals, so that every command has something to work on."""
    refs = []
    for title in ("Ports", "Sauvegardes"):
        added = run_cli("journal", "add", stdin=json.dumps(journal_fields(titre=title)))
        refs.append(added.out.splitlines()[0].removeprefix("Entrée ajoutée : "))
    for title, content in (("Ports libres", "Vérifier les ports."), ("Copies", "Sauvegarder avant.")):
        proposal = {"type": "fait", "titre": title, "contenu": content, "sources": refs}
        proposal |= {"contradiction": "aucune", "remplace": "rien"}
        assert run_cli("propose", stdin=json.dumps(proposal)).code == 0


def snapshot(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and p.relative_to(home).parts[0] != ".ocmem"
    }


@pytest.mark.parametrize("broken", sorted(CORRUPT_STATE))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_corrupt_state_file_is_named_with_its_fix(
    home: Path, sb: Any, run_cli: Callable[..., CliResult], command: str, broken: str
) -> None:
    seed(run_cli)
    configure_sync(home, sb.url)
    rel, content, readers = CORRUPT_STATE[broken]
    target = home / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    before = snapshot(home)
    args, stdin = COMMANDS[command]
    result = run_cli(*args, stdin=stdin)
    assert "Traceback" not in result.err + result.out
    assert "erreur inattendue" not in result.err, result.err
    assert result.code in DOCUMENTED_CODES
    if command in readers:
        said = result.err + result.out
        assert broken in said, (command, said)
        assert "Correction :" in said or "→" in said, said  # the fix (doctor lists it under →)
        if command != "ocmem doctor":
            assert result.code != 0
            assert snapshot(home) == before
