"""What a space can install is bounded (issue 33): a page's size, the number of skills, the total
bytes, and one deadline for the whole pull — against hostile variants of the loopback
SilverBullet (a 10 MB page, 5 000 skills, a server answering one byte a second, a listing that
never ends). What is over a bound is not installed, the local copy stays, and the pull says which
bound and how to change it; the prompt never carries more validated memory than its budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import CliResult, Clock, configure_sync
from ocmem.bridge.tools import prompt_context
from ocmem.formats import memorymd
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync

MEMORY_PAGE = "Agents/Memory/MEMORY.md"
SKILL = "---\nname: {name}\ndescription: Fait {name}. À utiliser pour {name}.\n---\n\n# {name}\n"
MIB = 1024 * 1024


def pull(home: Path) -> Outcome:
    return sync.pull(Workspace(load_settings(home), clock=Clock()))


def reads_of(sb: Any, prefix: str) -> list[str]:
    return [r.path for r in sb.requests if r.method == "GET" and r.path.startswith(prefix)]


def big_memory(size: int) -> str:
    line = "- Un fait validé, répété pour remplir la page.\n"
    return memorymd.MEMORY_HEADER + "\n" + line * (size // len(line.encode()) + 1)


def test_a_10_mb_memory_page_is_not_installed_nor_even_read(
    synced: Path, sb: Any, run_cli: Callable[..., CliResult]
) -> None:
    before = (synced / "memory/MEMORY.md").read_bytes()
    sb.write(MEMORY_PAGE, big_memory(10 * MIB))
    sb.write("Agents/AGENTS.md", "# Règles\n")
    result = run_cli("pull")
    assert result.code == 3, result.out + result.err
    assert (synced / "memory/MEMORY.md").read_bytes() == before
    assert "# Règles" in (synced / "AGENTS.md").read_text()  # the rest is installed
    assert f"{MEMORY_PAGE} non tiré : 10,0 Mio, au-delà de 1 Mio par fichier" in result.out
    assert "silverbullet.pull_max_file_bytes" in result.out
    assert reads_of(sb, f"/.fs/{MEMORY_PAGE}") == []  # the listing's size was enough


def test_a_page_longer_than_announced_is_cut_off_while_it_streams(synced: Path, sb: Any) -> None:
    before = (synced / "memory/MEMORY.md").read_bytes()
    sb.write(MEMORY_PAGE, "# Mémoire\n\n- Petit.\n")
    sb.tear_next_read(MEMORY_PAGE, body=big_memory(10 * MIB), times=5)
    report = pull(synced)
    assert report.needs_human
    assert f"{MEMORY_PAGE} non tiré : plus de 1 Mio reçus" in report.render()
    assert (synced / "memory/MEMORY.md").read_bytes() == before


def test_5000_skills_stop_the_skills_at_the_listing(synced: Path, sb: Any) -> None:
    for number in range(5000):
        folder = sb.space / f"Agents/Skills/s{number}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL.format(name=f"s{number}"))
    sb.write(MEMORY_PAGE, "# Mémoire\n\n- Un fait.\n")
    started = time.monotonic()
    report = pull(synced)
    elapsed = time.monotonic() - started
    said = report.render()
    assert report.needs_human
    assert "Agents/Skills/ : 5000 skills, au-delà de 50" in said
    assert "aucun skill tiré ni retiré" in said and "silverbullet.pull_max_skills" in said
    assert reads_of(sb, "/.fs/Agents/Skills/") == []
    assert not (synced / "skills/s1").exists()
    assert "- Un fait." in (synced / "memory/MEMORY.md").read_text()
    assert elapsed < 10, elapsed  # one listing, not 5 000 reads


def test_more_than_the_total_bytes_installs_nothing(home: Path, sb: Any) -> None:
    configure_sync(home, sb.url, pull_max_total_bytes=MIB)
    for name in ("a", "b", "c"):
        sb.write(f"Agents/Skills/{name}/SKILL.md", SKILL.format(name=name))
        sb.write(f"Agents/Skills/{name}/details.md", "x" * 400_000)
    report = pull(home)
    assert report.needs_human
    assert "1,1 Mio à tirer, au-delà de 1 Mio en tout : rien n'a été tiré" in report.render()
    assert not (home / "skills/a").exists()


def unchanged_tree(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted(home.rglob("*"))
        if p.is_file() and ".ocmem" not in p.parts
    }


def test_a_server_answering_one_byte_a_second_cannot_hold_the_pull(
    home: Path, sb: Any, run_cli: Callable[..., CliResult]
) -> None:
    configure_sync(home, sb.url, timeout_seconds=2, pull_deadline_seconds=2)
    sb.write(MEMORY_PAGE, "# Mémoire\n\n- Un fait.\n")
    before = unchanged_tree(home)
    sb.drip_bytes_per_second = 1
    started = time.monotonic()
    result = run_cli("pull")
    elapsed = time.monotonic() - started
    assert result.code == 1, result.out + result.err
    assert "n'a pas tout envoyé en 2 s" in result.err
    assert "silverbullet.pull_deadline_seconds" in result.err
    assert unchanged_tree(home) == before
    # The deadline, plus at most one byte's wait (the reads time out at the deadline).
    assert elapsed < 2 + 1 + 1.5, elapsed


def test_a_listing_that_never_ends_is_stopped(home: Path, sb: Any) -> None:
    from ocmem.errors import OcmemError

    configure_sync(home, sb.url, pull_deadline_seconds=5)
    before = unchanged_tree(home)
    sb.endless_listing = True
    started = time.monotonic()
    with pytest.raises(OcmemError) as failed:
        pull(home)
    elapsed = time.monotonic() - started
    said = failed.value.render()  # stopped at the listing's bound, or else at the deadline
    assert ("liste des fichiers" in said and "16 Mio sans finir" in said) or "en 5 s" in said
    assert unchanged_tree(home) == before
    assert elapsed < 5 + 1.5, elapsed


def test_the_prompt_carries_no_more_validated_memory_than_its_budget(
    home: Path, workspace: Workspace
) -> None:
    memory = home / "memory/MEMORY.md"
    memory.write_text(big_memory(10 * MIB))
    context = prompt_context(workspace)
    (facts,) = context["system"]
    assert len(facts) < workspace.limits.memory_chars + 300  # the budget and its heading
    said = " ".join(context["warnings"])
    assert "MEMORY.md" in said and "non chargé" in said
