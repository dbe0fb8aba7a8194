"""Memory that stays true (issue 21): a changed fact replaces the old one when promoted, opposite
lessons never merge, a fact said again is no second copy, and the human can retire a fact or a
skill; what leaves memory goes to memory/ARCHIVE.md with its dates and the reason."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import Clock, journal_fields
from ocmem.errors import InputError, Refused
from ocmem.formats import archive, memorymd, pending
from ocmem.home.workspace import Workspace
from ocmem.services import supersession
from ocmem.services.drafts import Draft
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.services.retirement import retire_fact, retire_skill

OLD_PORT = "Le port SSH du VPS est 2222."


def episodes(memory: Memory, clock: Clock, lesson: str, count: int = 2) -> list[str]:
    """``count`` journal entries teaching ``lesson``: what a proposal cites."""
    found = []
    for i in range(count):
        line = memory.add_journal(journal_fields(titre=f"Épisode {lesson[:30]} {i}", lecon=lesson))
        found.append(line.lines[0].removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    return found


def fact(sources: list[str], content: str, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "fait",
        "titre": content[:60].rstrip("."),
        "contenu": content,
        "sources": sources,
        "contradiction": "aucune",  # what agents write by default: ocmem must see past it
        "remplace": "rien",
    }
    data.update(overrides)
    return data


def promoted_memory(home: Path, *lines: str) -> None:
    body = "".join(f"- {line}\n" for line in lines)
    (home / "memory/MEMORY.md").write_text(memorymd.MEMORY_HEADER + "\n" + body)


def stored(home: Path) -> list[pending.Proposal]:
    return pending.parse((home / "memory/pending.md").read_text())


@pytest.fixture
def validated_port(home: Path) -> None:
    promoted_memory(home, f"{OLD_PORT} (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)")


def test_a_changed_value_replaces_the_old_fact_and_the_old_one_is_archived(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, validated_port: None
) -> None:
    refs = episodes(memory, clock, "le port SSH du VPS est passé à 2200")
    said = proposals.propose(fact(refs, "Le port SSH du VPS est désormais 2200."))
    (proposal,) = stored(home)
    assert proposal.replaces == f"MEMORY.md « {OLD_PORT} » — valeur changée : 2222 → 2200"
    assert "Remplace (vu par ocmem)" in said.render()
    shown = proposals.show_pending(proposal.id).render()
    assert f"avant (MEMORY.md) : {OLD_PORT}" in shown and "après (P-0001)" in shown
    assert proposals.summary(proposal.id)["replaces"].startswith(OLD_PORT)
    proposals.accept(proposal.id)
    facts = memorymd.fact_lines((home / "memory/MEMORY.md").read_text())
    assert len(facts) == 1 and facts[0].startswith("Le port SSH du VPS est désormais 2200.")
    (entry,) = archive.entries((home / "memory/ARCHIVE.md").read_text())
    assert entry.kind == archive.FACT and entry.action == archive.REPLACED
    assert entry.old.startswith(OLD_PORT) and "2026-11-20" in entry.old  # its dates kept
    assert entry.new == "Le port SSH du VPS est désormais 2200." and "2222 → 2200" in entry.reason


def test_opposite_lessons_are_never_merged(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    refs = episodes(
        memory, clock, "toujours redémarrer nginx après le renouvellement du certificat"
    )
    proposals.propose(
        fact(refs, "Toujours redémarrer nginx après le renouvellement du certificat.")
    )
    refs = episodes(
        memory, clock, "ne jamais redémarrer nginx après le certificat, un reload suffit"
    )
    said = proposals.propose(
        fact(
            refs,
            "Ne jamais redémarrer nginx après le renouvellement du certificat : un reload suffit.",
        )
    )
    first, second = stored(home)
    assert first.sources == tuple(first.sources[:2]) and len(first.sources) == 2  # not grown
    assert "Ne jamais" in second.content and second.id == "P-0002"
    assert second.contradiction.startswith("P-0001 « ") and "toujours" in second.contradiction
    assert "Contradiction (vue par ocmem)" in said.render()


def test_a_promoted_fact_can_be_reversed_and_a_negation_is_no_duplicate(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    promoted_memory(home, "Le VPS utilise Redis pour les sessions. (2026-11-01, Source : P-0001)")
    (home / "memory/pending.md").write_text(
        pending.PENDING_HEADER
        + "\n## P-0001 · fait · Redis pour les sessions\n- Statut : promu (2026-11-01)\n"
        "- Date : 2026-10-30\n- Sources : journal 2026-10-01 10:00\n- Origine : récurrence (2 épisodes)\n"
        "- Remplace : rien\n- Contradiction : aucune\n- Contenu proposé :\n\n~~~text\n"
        "Le VPS utilise Redis pour les sessions.\n~~~\n"
    )
    refs = episodes(memory, clock, "le VPS n'utilise plus Redis pour les sessions")
    proposals.propose(fact(refs, "Le VPS n'utilise plus Redis pour les sessions."))
    proposal = stored(home)[-1]
    assert proposal.replaces.startswith("MEMORY.md « Le VPS utilise Redis pour les sessions. »")
    assert "négation" in proposal.contradiction
    proposals.accept(proposal.id)
    (line,) = memorymd.fact_lines((home / "memory/MEMORY.md").read_text())
    assert line.startswith("Le VPS n'utilise plus Redis")


def test_a_paraphrase_of_a_validated_fact_is_refused(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, validated_port: None
) -> None:
    refs = episodes(memory, clock, "le VPS a son port SSH sur 2222")
    with pytest.raises(Refused, match=r"déjà dans MEMORY\.md") as refused:
        proposals.propose(fact(refs, "Le VPS a son port SSH sur 2222."))
    assert OLD_PORT in str(refused.value)
    assert not (home / "memory/pending.md").read_text().count("## P-")


def test_a_replacement_the_agent_names_is_taken_and_a_wrong_name_refused(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, validated_port: None
) -> None:
    refs = episodes(memory, clock, "le port SSH du VPS passe en clé seule")
    with pytest.raises(Refused, match="« remplace » ne désigne aucun fait"):
        proposals.propose(
            fact(refs, "Le port SSH du VPS n'accepte que les clés.", remplace="l'ancienne règle")
        )
    proposals.propose(fact(refs, "Le port SSH du VPS n'accepte que les clés.", remplace=OLD_PORT))
    assert stored(home)[0].replaces.startswith(f"MEMORY.md « {OLD_PORT} »")


def test_retiring_a_fact_and_a_skill_archives_them_and_a_comeback_quotes_it(
    home: Path, workspace: Workspace, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    promoted_memory(
        home, f"{OLD_PORT} (2026-11-20, Source : P-0001)", "Le VPS tourne sous Debian 12."
    )
    skill = home / "skills/deploy-vps/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: deploy-vps\ndescription: Déploie sur le VPS. À utiliser avant.\n---\n\n# D\n"
    )
    (skill.parent / "notes.md").write_text("annexe\n")
    with pytest.raises(InputError, match="aucun fait"):
        retire_fact(workspace, "Le VPS a 64 Go", "périmé")
    retire_fact(workspace, "Le port SSH du VPS est 2222", "le VPS a été réinstallé")
    retire_skill(workspace, "deploy-vps", "remplacé par Ansible")
    facts = memorymd.fact_lines((home / "memory/MEMORY.md").read_text())
    assert facts == ["Le VPS tourne sous Debian 12."]
    assert not skill.parent.exists() and (home / "skills").is_dir()
    fact_entry, skill_entry = archive.entries((home / "memory/ARCHIVE.md").read_text())
    assert fact_entry.action == archive.RETIRED and fact_entry.reason == "le VPS a été réinstallé"
    assert skill_entry.kind == archive.SKILL and "name: deploy-vps" in skill_entry.old
    refs = episodes(memory, clock, "le port SSH du VPS est 2222")
    said = proposals.propose(fact(refs, OLD_PORT))
    assert "reprend un fait retiré" in said.render() and "réinstallé" in (
        stored(home)[0].check or ""
    )


def test_retiring_is_refused_with_silverbullet_and_for_the_agent(
    home: Path, run_cli: Any, monkeypatch: pytest.MonkeyPatch, validated_port: None
) -> None:
    monkeypatch.setenv("OCMEM_AGENT_SESSION", "ses_model")
    result = run_cli("retire", "fact", OLD_PORT, "--reason", "x")
    assert result.code == 3 and "refusé" in result.err
    assert OLD_PORT in (home / "memory/MEMORY.md").read_text()


def test_retiring_words_found_in_two_facts_names_both_and_retires_neither(
    home: Path, run_cli: Any
) -> None:
    promoted_memory(home, OLD_PORT, "Le port HTTP du reverse proxy est 8080.")
    before = (home / "memory/MEMORY.md").read_text()
    result = run_cli("retire", "fact", "port", "--raison", "périmé")
    assert result.code == 2
    assert OLD_PORT.rstrip(".") in result.err and "Le port HTTP du reverse proxy" in result.err
    assert "cite assez du fait" in result.err and "--raison" in result.err
    assert (home / "memory/MEMORY.md").read_text() == before
    assert run_cli("retire", "fact", "port SSH", "--raison", "périmé").code == 0
    assert "8080" in (home / "memory/MEMORY.md").read_text()


def test_a_replacement_found_in_two_facts_names_both_and_writes_nothing(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    proxy = "Le port HTTP du reverse proxy est 8080."
    promoted_memory(home, OLD_PORT, proxy)
    refs = episodes(memory, clock, "le port SSH du VPS n'accepte que les clés")
    before = (home / "memory/pending.md").read_text()
    with pytest.raises(Refused, match="« remplace » « port » se trouve dans 2 faits") as refused:
        proposals.propose(fact(refs, "Le port SSH du VPS n'accepte que les clés.", remplace="port"))
    said = str(refused.value)
    assert f"« {OLD_PORT} »" in said and f"« {proxy} »" in said
    assert "cite assez de la ligne voulue" in said and "--remplace" in said
    assert (home / "memory/pending.md").read_text() == before
    proposals.propose(fact(refs, "Le port SSH du VPS n'accepte que les clés.", remplace="port SSH"))
    assert stored(home)[0].replaces.startswith(f"MEMORY.md « {OLD_PORT} »")


PROXY = "Le port HTTP du reverse proxy est 8080."
TWO_PORTS = memorymd.MEMORY_HEADER + (
    f"\n- {OLD_PORT} (2026-11-20, Source : P-0001)\n- {PROXY}\n- {OLD_PORT} (2026-11-21, Source : P-0002)\n"
)


@pytest.mark.parametrize(
    ("fields", "declared"),
    [
        ({"replaces": "port"}, "« remplace » « port » se trouve dans 2 faits"),
        ({"replaces": "PORT http"}, {f"MEMORY.md « {PROXY} »": supersession.REPLACES}),
        # written twice by hand: one fact (« Remplace » names its statement, not a line)
        ({"replaces": OLD_PORT}, {f"MEMORY.md « {OLD_PORT} »": supersession.REPLACES}),
        ({"replaces": "MEMORY.md « Le port » — x"}, "« Le port » — x » se trouve dans 2 faits"),
        ({"independent": ("port",)}, "« independant » « port » se trouve dans 2 faits"),
        ({"contradiction": "port"}, {}),  # the agent's words stay in « Contradiction », unmatched
    ],
)
def test_words_found_in_several_facts_name_none_of_them(
    fields: dict[str, Any], declared: dict[str, str] | str
) -> None:
    draft = Draft(
        "fait", "t", "Le port SSH n'accepte que les clés.", (), None, None, False, False, None, None
    )
    items = supersession.held_items(TWO_PORTS, [], [], "")
    draft = dataclasses.replace(draft, **fields)
    if isinstance(declared, str):
        with pytest.raises(Refused, match=re.escape(declared)) as refused:
            supersession.declarations(draft, items)
        named = supersession.named_facts(draft.replaces or draft.independent[0], items)
        assert len(named) == 2 and all(f"« {i.line} »" in refused.value.message for i in named)
    else:
        assert supersession.declarations(draft, items) == declared


def test_on_the_command_line_an_ambiguous_replacement_changes_nothing(
    home: Path, memory: Memory, clock: Clock, run_cli: Any
) -> None:
    promoted_memory(home, OLD_PORT, PROXY)
    first, second = episodes(memory, clock, "le port SSH du VPS n'accepte que les clés")
    before = (home / "memory/pending.md").read_text()
    args = ["propose", "--type", "fait", "--titre", "Clés seules", "--source", first]
    args += ["--source", second, "--contenu", "Le port SSH du VPS n'accepte que les clés."]
    result = run_cli(*args, "--contradiction", "aucune", "--remplace", "port")
    assert result.code == 3 and f"« {OLD_PORT} » ; « {PROXY} »" in result.err
    assert "--remplace" in result.err and (home / "memory/pending.md").read_text() == before
