"""Weekly curation helpers and their guarantees: nothing lost, nothing deleted, never skills/ or MEMORY.md."""

from __future__ import annotations

import errno
import re
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import InputError, Refused, StorageError
from ocmem.formats import journal, pending
from ocmem.services.journalsearch import JournalSearch
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals


def fill_journal(memory: Memory, clock: Clock, months: list[tuple[int, int]]) -> list[str]:
    refs = []
    for year, month in months:
        clock.value = datetime(year, month, 15, 9, 0)
        refs.append(
            memory.add_journal(journal_fields(titre=f"Tâche {year}-{month:02d}"))
            .lines[0]
            .removeprefix("Entrée ajoutée : ")
        )
    return refs


def protected(home: Path) -> dict[str, bytes]:
    files = [home / "memory/MEMORY.md", home / "AGENTS.md", *sorted((home / "skills").rglob("*"))]
    return {str(p): p.read_bytes() for p in files if p.is_file()}


def test_archive_moves_old_entries_into_monthly_files_and_loses_nothing(
    memory: Memory, clock: Clock, home: Path
) -> None:
    fill_journal(memory, clock, [(2026, 7), (2026, 7), (2026, 8), (2026, 11)])
    before = {b.when: b.text for b in journal.blocks((home / "memory/journal.md").read_text())}
    result = memory.archive_journal(date(2026, 9, 1)).render()
    assert "3 entrée(s) archivée(s)" in result
    main = journal.blocks((home / "memory/journal.md").read_text())
    july = journal.blocks((home / "memory/journal-2026-07.md").read_text())
    august = journal.blocks((home / "memory/journal-2026-08.md").read_text())
    assert [b.title for b in main] == ["Tâche 2026-11"]
    assert len(july) == 2 and len(august) == 1
    assert {b.when: b.text for b in [*main, *july, *august]} == before
    assert (home / "memory/journal.md").read_text().startswith("# Journal\n")


def test_archived_entries_stay_searchable_and_citable(
    memory: Memory, clock: Clock, home: Path, proposals: Proposals
) -> None:
    refs = fill_journal(memory, clock, [(2026, 6), (2026, 11)])
    memory.archive_journal(date(2026, 9, 1))
    assert "Tâche 2026-06" in JournalSearch(memory.ws).search_journal("tache").render()
    clock.value = datetime(2026, 11, 20)
    assert (
        "P-0001"
        in proposals.propose(
            {
                "type": "fait",
                "titre": "X",
                "contenu": "Un fait.",
                "sources": refs,
                "contradiction": "aucune",
                "remplace": "rien",
            }
        ).render()
    )


def test_archive_is_idempotent_and_merges_into_existing_archives(
    memory: Memory, clock: Clock, home: Path
) -> None:
    fill_journal(memory, clock, [(2026, 7)])
    clock.value = datetime(2026, 9, 1, 9, 0)  # a cutoff in the future is refused
    memory.archive_journal(date(2026, 9, 1))
    assert "Rien à archiver" in memory.archive_journal(date(2026, 9, 1)).render()
    fill_journal(memory, clock, [(2026, 7)])
    clock.value = datetime(2026, 7, 1, 8, 0)
    memory.add_journal(journal_fields(titre="Plus ancienne"))
    clock.value = datetime(2026, 9, 1, 9, 0)
    memory.archive_journal(date(2026, 9, 1))
    july = journal.blocks((home / "memory/journal-2026-07.md").read_text())
    assert [b.when for b in july] == sorted(b.when for b in july) and len(july) == 3


def test_a_crash_during_archive_never_loses_an_entry(
    memory: Memory, clock: Clock, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_journal(memory, clock, [(2026, 7), (2026, 11)])
    from ocmem.home import atomic, workspace

    real = atomic.atomic_write

    def crash_on_journal(path: Path, data: Any, **kw: Any) -> None:
        if path.name == "journal.md":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(path, data, **kw)

    monkeypatch.setattr(workspace, "atomic_write", crash_on_journal)
    with pytest.raises(
        StorageError,
        match=r"disque plein : impossible d'écrire memory/journal\.md : rien n'a été modifié",
    ):
        memory.archive_journal(date(2026, 9, 1))
    monkeypatch.setattr(workspace, "atomic_write", real)
    assert "Tâche 2026-07" in (home / "memory/journal.md").read_text()  # still in place
    assert not (home / "memory/journal-2026-07.md").exists()  # the archive written first was undone
    memory.archive_journal(date(2026, 9, 1))
    assert len(journal.blocks((home / "memory/journal-2026-07.md").read_text())) == 1
    assert "Tâche 2026-07" not in (home / "memory/journal.md").read_text()


def propose(proposals: Proposals, refs: list[str], title: str, content: str) -> None:
    proposals.propose(
        {
            "type": "fait",
            "titre": title,
            "contenu": content,
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
            "retiens_ca": True,
        }
    )


def test_duplicates_are_listed_with_their_similarity_and_merged_without_deletion(
    memory: Memory, clock: Clock, home: Path, proposals: Proposals
) -> None:
    refs = fill_journal(memory, clock, [(2026, 11), (2026, 11), (2026, 11)])
    propose(
        proposals,
        refs[:1],
        "Ports libres avant déploiement",
        "Vérifier les ports libres avant un déploiement Docker.",
    )
    propose(  # close, and no rule says how (Docker → Podman): its own proposal, to merge by hand
        proposals,
        refs[1:2],
        "Vérifier les ports",
        "Vérifier que les ports sont libres avant de déployer avec Podman.",
    )
    propose(
        proposals, refs[2:], "Compose sur le VPS", "Le VPS lance ses services par docker compose."
    )
    listing = proposals.pending_duplicates().render()
    assert (
        re.search(r"P-0001 ~ P-0002 \(0\.\d\d\)", listing)
        and "P-0003" not in listing.split("\n")[0]
    )
    before = protected(home)
    proposals.merge_pending("P-0001", "P-0002")
    stored = pending.parse((home / "memory/pending.md").read_text())
    assert [p.id for p in stored] == ["P-0001", "P-0002", "P-0003"]  # nothing deleted
    assert stored[0].sources == tuple(refs[:2])
    assert stored[1].status.startswith("fusionné dans P-0001")
    assert protected(home) == before
    with pytest.raises(Refused, match="n'est plus en attente"):
        proposals.merge_pending("P-0003", "P-0002")
    with pytest.raises(InputError):
        proposals.merge_pending("P-0003", "P-0003")


def test_the_curation_helpers_never_write_skills_or_memory(
    memory: Memory, clock: Clock, home: Path, run_cli: Callable[..., Any], proposals: Proposals
) -> None:
    refs = fill_journal(memory, clock, [(2025, 1), (2026, 11)])
    propose(proposals, refs, "Ports", "Vérifier les ports.")
    before = protected(home)
    for args in (
        ("pending", "duplicates"),
        ("journal", "archive", "--older-than", "90"),
        ("curate", "--print"),
        ("review",),
        ("review", "--json"),
    ):
        assert run_cli(*args).code == 0, args
    assert protected(home) == before


def test_curate_print_schedules_nothing(
    run_cli: Callable[..., Any], home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It shows the commands as `ocmem cron install --job curation --job review` schedules them
    (absolute opencode, the home's copy of the prompt), and writes nothing."""
    import os

    from ocmem.home.shipped import data_root

    opencode = tmp_path / "outils" / "opencode"
    opencode.parent.mkdir()
    opencode.write_text("#!/bin/sh\n")
    opencode.chmod(0o755)
    monkeypatch.setenv("PATH", f"{opencode.parent}:{os.environ['PATH']}")
    out = run_cli("curate", "--print").out
    assert f"{opencode} run < " in out  # absolute: cron's PATH is /usr/bin:/bin
    copy = home / ".ocmem/prompts/curation-hebdomadaire.md"
    assert f"< {copy} " in out and str(data_root() / "prompts") not in out  # pip moves it
    assert not copy.exists()  # copied by `cron install --job curation` only
    assert "cron install --tache curation --tache review" in out
    assert not [
        line for line in out.splitlines() if re.match(r"#? ?\S+ \S+ \S+ \S+ \S+ \S+/", line)
    ]
    text = (data_root() / "prompts/curation-hebdomadaire.md").read_text()
    assert text.startswith("<!-- ocmem:maintenance -->")
    for needle in [
        "ocmem pending duplicates",
        "ocmem pending merge",
        "memory_propose",
        "ocmem journal archive --plus-vieux-que 90",
        "jamais dans `skills/`",
    ]:
        assert needle in text


def test_journal_archive_cli_needs_one_bound(home: Path, run_cli: Callable[..., Any]) -> None:
    assert run_cli("journal", "archive").code == 2
    assert run_cli("journal", "archive", "--before", "2026-01-01").code == 0


@pytest.mark.parametrize(
    ("args", "said", "example"),
    [
        (
            ["--plus-vieux-que", "-1"],
            "--plus-vieux-que -1 : il faut au moins 1 jour",
            "--plus-vieux-que 90",
        ),
        # its English name, still accepted: the message names the French one
        (
            ["--older-than", "0"],
            "--plus-vieux-que 0 : il faut au moins 1 jour",
            "--plus-vieux-que 90",
        ),
        (["--before", "2099-01-01"], "2099-01-01 est dans le futur", "--avant 2026-08-31"),
        # tomorrow by the command's clock (2026-11-29), whatever day the machine says it is
        (["--before", "2026-11-30"], "2026-11-30 est dans le futur", "--avant 2026-08-31"),
    ],
)
def test_journal_archive_refuses_bounds_that_would_archive_today(
    memory: Memory,
    clock: Clock,
    home: Path,
    run_cli: Callable[..., Any],
    args: list[str],
    said: str,
    example: str,
) -> None:
    fill_journal(memory, clock, [(2026, 11)])
    clock.value = datetime(2026, 11, 29, 10, 0)
    memory.add_journal(journal_fields(titre="Tâche du jour"))
    files = {p.name: p.read_bytes() for p in (home / "memory").iterdir() if p.is_file()}
    result = run_cli("journal", "archive", *args)
    assert result.code == 2, result
    first, fix = result.err.splitlines()
    assert first.startswith(f"ocmem : {said}") and first.endswith("rien n'a été modifié")
    assert fix.startswith("Correction : ") and example in fix
    assert {p.name: p.read_bytes() for p in (home / "memory").iterdir() if p.is_file()} == files


def test_journal_archive_before_today_keeps_today(
    memory: Memory, clock: Clock, home: Path, run_cli: Callable[..., Any]
) -> None:
    fill_journal(memory, clock, [(2026, 11)])
    clock.value = datetime(2026, 11, 29, 10, 0)
    memory.add_journal(journal_fields(titre="Tâche du jour"))
    assert run_cli("journal", "archive", "--before", "2026-11-29").code == 0
    titles = [b.title for b in journal.blocks((home / "memory/journal.md").read_text())]
    assert titles == ["Tâche du jour"]


@pytest.mark.parametrize("threshold", ["-1", "1.5", "nan"])
def test_pending_duplicates_refuses_a_similarity_outside_0_to_1(
    home: Path, run_cli: Callable[..., Any], threshold: str
) -> None:
    result = run_cli("pending", "duplicates", "--threshold", threshold)
    assert result.code == 2, result
    assert "de 0 à 1" in result.err and "--seuil 0.35" in result.err
