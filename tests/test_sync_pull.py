"""ocmem pull against the SilverBullet-faithful server over real HTTP."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock
from ocmem.errors import Refused
from ocmem.home.settings import load_settings
from ocmem.home.shipped import shipped_section
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.services import sync
from ocmem.silverbullet.history import History

SKILL = "---\nname: {name}\ndescription: Fait {name}. À utiliser pour {name}.\n---\n\n# {name}\n\nÉtapes.\n"


def pull(home: Path, **kwargs: Any) -> Outcome:
    return sync.pull(Workspace(load_settings(home), clock=Clock()), **kwargs)


def fs_requests(sb: Any) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in sb.requests if r.path.startswith("/.fs")]


def seed(sb: Any) -> None:
    sb.write("Agents/Skills/deploy/SKILL.md", SKILL.format(name="deploy"))
    sb.write("Agents/Skills/deploy/details.md", "Détails du déploiement.\n")
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n")
    sb.write("Agents/AGENTS.md", "# Règles\n\nRéponds en français.\n")
    sb.write("Journal/2026-11-29.md", "page sans rapport\n")


def test_spec_a_file_modified_in_silverbullet_appears_locally_after_pull(
    synced: Path, sb: Any
) -> None:
    seed(sb)
    pull(synced)
    assert (
        synced / "memory/MEMORY.md"
    ).read_text() == "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n"
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Le VPS tourne sous Debian 13.\n")
    report = pull(synced)
    assert (
        synced / "memory/MEMORY.md"
    ).read_text() == "# Mémoire\n\n- Le VPS tourne sous Debian 13.\n"
    assert "1 fichier(s) mis à jour" in report.render()


def test_mapping_and_read_only_install(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    assert (synced / "skills/deploy/SKILL.md").read_text() == SKILL.format(name="deploy")
    assert (synced / "skills/deploy/details.md").read_text() == "Détails du déploiement.\n"
    # The human's rules, and ocmem's section the page lacks (the loop needs it: issue 22).
    assert (
        synced / "AGENTS.md"
    ).read_text() == "# Règles\n\nRéponds en français.\n\n" + shipped_section() + "\n"
    assert not (synced / "Journal").exists()
    for rel in ["skills/deploy/SKILL.md", "memory/MEMORY.md", "AGENTS.md"]:
        assert stat.S_IMODE((synced / rel).stat().st_mode) == 0o444


def test_a_noop_pull_is_exactly_one_request(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    sb.clear_requests()
    report = pull(synced)
    assert fs_requests(sb) == [("GET", "/.fs")]
    assert "0 fichier(s) mis à jour, 0 supprimé(s), 4 inchangé(s)" in report.render()


def test_only_changed_files_are_fetched(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    sb.clear_requests()
    sb.clock.advance(5)
    sb.write("Agents/Skills/deploy/details.md", "Détails v2.\n")
    pull(synced)
    assert fs_requests(sb) == [("GET", "/.fs"), ("GET", "/.fs/Agents/Skills/deploy/details.md")]


def test_pull_never_touches_local_only_files(synced: Path, sb: Any) -> None:
    for name in ["journal.md", "pending.md", "SHORT_TERM.md"]:
        (synced / "memory" / name).write_text(f"local {name}\n")
    sb.write("Agents/Memory/journal.md", "distant\n")
    sb.write("Agents/Memory/SHORT_TERM.md", "distant\n")
    seed(sb)
    pull(synced)
    for name in ["journal.md", "pending.md", "SHORT_TERM.md"]:
        assert (synced / "memory" / name).read_text() == f"local {name}\n"


def test_a_mapping_onto_local_only_files_is_refused(home: Path, sb: Any) -> None:
    from conftest import configure_sync

    configure_sync(home, sb.url, pull=[{"remote": "Agents/Memory/", "local": "memory/"}])
    with pytest.raises(Exception, match="le pull ne peut pas écrire"):
        pull(home)


def test_every_overwrite_and_removal_is_backed_up_byte_for_byte(synced: Path, sb: Any) -> None:
    original = (synced / "skills/retrospective/SKILL.md").read_bytes()
    sb.write("Agents/Skills/retrospective/SKILL.md", SKILL.format(name="retrospective"))
    sb.write("Agents/Skills/other/SKILL.md", SKILL.format(name="other"))
    sb.write("Agents/Skills/third/SKILL.md", SKILL.format(name="third"))
    pull(synced)
    backups = list((synced / ".ocmem/backups").rglob("retrospective/SKILL.md"))
    assert [b.read_bytes() for b in backups] == [original]
    sb.delete("Agents/Skills/other/SKILL.md")
    report = pull(synced)
    assert not (synced / "skills/other").exists()
    removed_backup = list((synced / ".ocmem/backups").rglob("other/SKILL.md"))
    assert [b.read_text() for b in removed_backup] == [SKILL.format(name="other")]
    assert "1 supprimé(s)" in report.render()


def test_an_empty_listing_aborts_before_removing_anything(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    for name in [
        "Agents/Skills/deploy/SKILL.md",
        "Agents/Skills/deploy/details.md",
        "Agents/Memory/MEMORY.md",
        "Agents/AGENTS.md",
    ]:
        sb.delete(name)
    with pytest.raises(Refused, match="ne liste plus aucun") as refused:
        pull(synced)
    assert "--forcer-suppression" in refused.value.render()
    assert (synced / "skills/deploy/SKILL.md").exists()
    pull(synced, force_delete=True)
    assert not (synced / "skills/deploy").exists()


def test_too_many_removals_abort(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    for name in [
        "Agents/Skills/deploy/SKILL.md",
        "Agents/Skills/deploy/details.md",
        "Agents/Memory/MEMORY.md",
    ]:
        sb.delete(name)
    with pytest.raises(Refused, match="3 fichiers sur 4"):
        pull(synced)


def test_a_hand_edited_pulled_file_is_restored_and_kept(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    target = synced / "memory/MEMORY.md"
    target.chmod(0o644)
    target.write_text("modifié à la main\n")
    report = pull(synced)
    assert target.read_text() == "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n"
    assert "copie locale modifiée à la main" in report.render()
    assert any(
        b.read_text() == "modifié à la main\n"
        for b in (synced / ".ocmem/backups").rglob("MEMORY.md")
    )


def test_conflict_copies_and_unsafe_names_are_ignored_and_reported(synced: Path, sb: Any) -> None:
    sb.write("Agents/Skills/deploy/SKILL.md", SKILL.format(name="deploy"))
    sb.write("Agents/Skills/deploy/SKILL.conflicted:1754000012345.md", "copie\n")
    sb.write("Agents/Skills/caf\u0065\u0301/SKILL.md", "nfd\n")
    report = pull(synced).render()
    assert (
        "copie de conflit ignorée : Agents/Skills/deploy/SKILL.conflicted:1754000012345.md"
        in report
    )
    assert "nom non normalisé" in report
    assert not list((synced / "skills/deploy").glob("*conflicted*"))


def test_invalid_human_content_is_installed_but_flagged(synced: Path, sb: Any) -> None:
    sb.write("Agents/Skills/Bad_Name/SKILL.md", "---\nname: autre\n---\n" + "ligne\n" * 70)
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n" + "- fait\n" * 400)
    report = pull(synced).render()
    assert (synced / "skills/Bad_Name/SKILL.md").exists()
    assert "skill Bad_Name installé mais non conforme" in report
    assert "MEMORY.md dépasse son plafond" in report


def test_history_records_each_changing_pull(synced: Path, sb: Any) -> None:
    seed(sb)
    pull(synced)
    sb.write("Agents/Memory/MEMORY.md", "# Mémoire\n\n- Faux fait promu par erreur.\n")
    report = pull(synced)
    assert "Historique : version" in report.render()
    history = History(load_settings(synced).paths)
    versions = history.versions("memory/MEMORY.md")
    assert len(versions) == 2 and all(message.startswith("pull ") for _, _, message in versions)
    oldest = versions[-1][0]
    assert (
        history.show(oldest, "memory/MEMORY.md") == "# Mémoire\n\n- Le VPS tourne sous Debian 12.\n"
    )
    assert "memory/MEMORY.md" in history.log()


def test_dry_run_writes_nothing(synced: Path, sb: Any, files_snapshot: Any) -> None:
    seed(sb)
    before = files_snapshot()
    report = pull(synced, dry_run=True).render()
    assert "à tirer : Agents/Memory/MEMORY.md → memory/MEMORY.md (nouveau)" in report
    assert files_snapshot() == before


def test_a_torn_read_is_never_installed(synced: Path, sb: Any) -> None:
    sb.write(
        "Agents/Memory/MEMORY.md", "# Mémoire\n\n- fait complet et assez long pour être coupé\n"
    )
    sb.tear_next_read("Agents/Memory/MEMORY.md")
    pull(synced)
    assert (
        synced / "memory/MEMORY.md"
    ).read_text() == "# Mémoire\n\n- fait complet et assez long pour être coupé\n"


def test_transient_errors_are_retried_on_reads(synced: Path, sb: Any) -> None:
    seed(sb)
    sb.fail_next(503, method="GET", path="/.fs", times=2)
    sb.reset_next(method="GET", path="Agents/AGENTS.md")
    pull(synced)
    # The human's rules, and ocmem's section the page lacks (the loop needs it: issue 22).
    assert (
        synced / "AGENTS.md"
    ).read_text() == "# Règles\n\nRéponds en français.\n\n" + shipped_section() + "\n"


def test_unrelated_files_are_never_fetched(synced: Path, sb: Any) -> None:
    seed(sb)
    sb.write("Archives/gros-fichier.md", "x" * 2_000_000)
    pull(synced)
    assert not [p for _, p in fs_requests(sb) if "Archives" in p]


def test_context_report_follows_a_changing_pull(synced: Path, sb: Any) -> None:
    seed(sb)
    report = pull(synced).render()
    assert "Contexte chargé à chaque session" in report and "memory/MEMORY.md" in report


@pytest.mark.parametrize(
    "page",
    [
        "# Mémoire\n\n- Le serveur de prod est ${space.writePage('x', 'y')}\n",
        "# Mémoire\n\n- fait <img src=x onerror=alert(1)>\n",
        "# Mémoire\n\n- ```space-lua\n  editor.flashNotification('x')\n  ```\n",
        "# Mémoire\n\n#space-style [style: 'body {display: none}']\n",
    ],
)
def test_a_page_with_active_content_is_not_installed_without_the_human(
    synced: Path, sb: Any, page: str
) -> None:
    seed(sb)
    pull(synced)
    before = (synced / "memory/MEMORY.md").read_bytes()
    sb.write("Agents/Memory/MEMORY.md", page)
    report = pull(synced)
    assert report.needs_human
    assert "Agents/Memory/MEMORY.md non installé : contenu actif" in report.render()
    assert "--accepter-actif" in report.render()
    assert (synced / "memory/MEMORY.md").read_bytes() == before
    assert pull(synced).needs_human  # asked again at every pull, until the human decides
    accepted = pull(synced, accept_active=True)
    assert not accepted.needs_human
    assert (synced / "memory/MEMORY.md").read_text() == page


def test_code_the_human_writes_in_code_blocks_is_not_active(synced: Path, sb: Any) -> None:
    seed(sb)
    skill = (
        SKILL.format(name="deploy")
        + "\n```bash\necho ${HOME}\n```\n\nVoir `${x}` et <b>ceci</b>.\n"
    )
    sb.write("Agents/Skills/deploy/SKILL.md", skill)
    report = pull(synced)
    assert not report.needs_human
    assert (synced / "skills/deploy/SKILL.md").read_text() == skill
