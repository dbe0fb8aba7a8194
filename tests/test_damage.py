"""Damage is said where it hides something: a pending.md block or a journal entry that a
command skips is named by that command (which line, what to do), and two blocks under one id
are refused before any write of pending.md."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import CliResult, journal_fields
from ocmem.bridge.tools import run_tool
from ocmem.home.workspace import Workspace

Run = Callable[..., CliResult]


def add_entry(run_cli: Run, **overrides: object) -> CliResult:
    result = run_cli("journal", "add", stdin=json.dumps(journal_fields(**overrides)))
    assert result.code == 0, result.err
    return result


def propose(run_cli: Run) -> None:
    a = add_entry(run_cli).out.splitlines()[0].removeprefix("Entrée ajoutée : ")
    b = add_entry(run_cli, titre="Encore").out.splitlines()[0].removeprefix("Entrée ajoutée : ")
    proposal = {
        "type": "fait",
        "titre": "Ports",
        "contenu": "Vérifier les ports libres avant de déployer.",
        "sources": [a, b],
        "contradiction": "aucune",
        "remplace": "rien",
    }
    assert run_cli("propose", stdin=json.dumps(proposal)).code == 0


def duplicated(home: Path) -> tuple[int, int]:
    """pending.md with P-0001's block copied under the same id, another fact in it; the lines
    of the two headers."""
    path = home / "memory/pending.md"
    text = path.read_text()
    block = text[text.index("## P-0001") :]
    twin = block.replace("Ports", "Ports web").replace("ports libres", "ports web")
    path.write_text(text.rstrip("\n") + "\n\n" + twin)
    lines = [
        i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith("## P-0001")
    ]
    return lines[0], lines[1]


# --- pending.md -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ("pending", "accept", "P-0001", "--yes"),
        ("pending", "reject", "P-0001", "--reason", "non"),
    ],
)
def test_two_blocks_under_one_id_are_refused_before_any_write(
    run_cli: Run, home: Path, command: tuple[str, ...]
) -> None:
    propose(run_cli)
    first, second = duplicated(home)
    before = {p: p.read_bytes() for p in (home / "memory").iterdir()}
    result = run_cli(*command)
    assert result.code == 3, (result.out, result.err)
    assert f"P-0001 aux lignes {first}, {second}" in result.err
    assert "identifiant libre (P-0002)" in result.err
    assert {p: p.read_bytes() for p in (home / "memory").iterdir()} == before


def test_a_new_proposal_is_refused_too_while_an_id_is_doubled(run_cli: Run, home: Path) -> None:
    propose(run_cli)
    duplicated(home)
    before = (home / "memory/pending.md").read_bytes()
    a = add_entry(run_cli, titre="Sauvegardes", lecon="tester la restauration des sauvegardes")
    b = add_entry(run_cli, titre="Sauvegardes 2", lecon="tester la restauration des sauvegardes")
    proposal = {
        "type": "fait",
        "titre": "Restauration",
        "contenu": "Tester la restauration des sauvegardes chaque mois.",
        "sources": [s.out.splitlines()[0].removeprefix("Entrée ajoutée : ") for s in (a, b)],
        "contradiction": "aucune",
        "remplace": "rien",
    }
    result = run_cli("propose", stdin=json.dumps(proposal))
    assert result.code == 3 and "identifiant en double" in result.err
    assert (home / "memory/pending.md").read_bytes() == before


def test_the_list_names_the_block_it_skips(run_cli: Run, home: Path) -> None:
    propose(run_cli)
    _, second = duplicated(home)
    listed = run_cli("pending", "list")
    assert f"⚠ memory/pending.md ligne {second - 1}" in listed.out or (
        f"⚠ memory/pending.md ligne {second}" in listed.out
    ), listed.out
    assert "identifiant P-0001 en double (bloc ignoré)" in listed.out
    assert "Correction : " in listed.out
    doctor = run_cli("doctor")
    assert "identifiant en double" in doctor.out and doctor.code == 1


# --- journal.md -------------------------------------------------------------------------------


def broken_header(home: Path) -> int:
    """The first entry's header made « ## pas une date · … »; its line."""
    path = home / "memory/journal.md"
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("## "))
    lines[at] = re.sub(r"^## \S+ \S+", "## pas une date", lines[at])
    path.write_text("".join(lines))
    return at + 1


@pytest.mark.parametrize(
    "reader", [("journal", "recent"), ("journal", "search", "ports"), ("status",)]
)
def test_an_entry_hidden_by_its_header_is_named_by_every_reader(
    run_cli: Run, home: Path, reader: tuple[str, ...]
) -> None:
    add_entry(run_cli, titre="Cachée")
    add_entry(run_cli, titre="Visible")
    line = broken_header(home)
    result = run_cli(*reader)
    assert result.code == 0, result.err
    assert f"memory/journal.md ligne {line} : « ## pas une date" in result.out, result.out
    assert "n'est pas un en-tête d'entrée" in result.out and "Correction : " in result.out


def test_journal_add_says_a_damage_an_earlier_reader_found(run_cli: Run, home: Path) -> None:
    add_entry(run_cli, titre="Cachée")
    line = broken_header(home)
    run_cli("journal", "recent")  # reads the whole journal: remembers what it found
    added = add_entry(run_cli, titre="Nouvelle")
    assert f"memory/journal.md ligne {line}" in added.out


def test_bytes_that_are_not_utf8_are_said_by_journal_add_and_the_readers(
    run_cli: Run, home: Path
) -> None:
    add_entry(run_cli, titre="Avant")
    path = home / "memory/journal.md"
    with path.open("ab") as handle:
        handle.write(b"\xff\xfe pas de l'UTF-8\n")
    bad_line = path.read_bytes().count(b"\n")
    added = add_entry(run_cli, titre="Après")
    assert f"memory/journal.md ligne {bad_line} : octets qui ne sont pas de l'UTF-8" in added.out
    for reader in (("journal", "recent"), ("status",), ("journal", "search", "après")):
        result = run_cli(*reader)
        assert result.code == 0, result.err
        assert f"ligne {bad_line} : octets qui ne sont pas de l'UTF-8" in result.out, reader


def test_a_repaired_journal_is_no_longer_said_damaged(run_cli: Run, home: Path) -> None:
    add_entry(run_cli, titre="Cachée")
    path = home / "memory/journal.md"
    good = path.read_text()
    broken_header(home)
    assert "n'est pas un en-tête" in run_cli("journal", "recent").out
    path.unlink()
    path.write_text(good)  # the human's fix (a new file, as an editor writes it)
    assert "n'est pas un en-tête" not in add_entry(run_cli, titre="Ensuite").out
    assert "n'est pas un en-tête" not in run_cli("status").out


def test_the_agent_never_reads_a_damaged_lines_text(
    run_cli: Run, home: Path, workspace: Workspace
) -> None:
    add_entry(run_cli, titre="Titre secret")
    broken_header(home)
    envelope = {"session": "s", "user_messages": [], "exposures": [], "args": {"recent": 5}}
    shown = run_tool(workspace, "memory_search", envelope).render()
    assert "une ligne « ## » n'est pas un en-tête" in shown
    assert "Titre secret" not in shown
