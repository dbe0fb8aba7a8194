"""Memory that stays true, inside the real OpenCode (issue 21): a changed fact promoted through
OpenCode's permission prompt replaces the old one, which the next session's prompt no longer
holds; a retired fact and a retired skill are gone from the next session too."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest

from e2e.fake_llm import ToolCalls
from e2e.harness import OpenCode
from e2e.test_plugin_e2e import Model, bash, install, ocmem, play

pytestmark = pytest.mark.e2e

OLD = "Le port SSH du VPS est 2222."
NEW = "Le port SSH du VPS est désormais 2200."
DEBIAN = "Le VPS tourne sous Debian 12."


def entry(oc: OpenCode, lesson: str, title: str) -> str:
    done = ocmem(
        oc,
        "journal",
        "add",
        stdin=json.dumps(
            {
                "titre": title,
                "tags": ["ssh"],
                "demande": "d",
                "fait": "f",
                "piege": "p",
                "lecon": lesson,
                "resultat": "réussi",
            }
        ),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[0].removeprefix("Entrée ajoutée : ")


def seeded(oc: OpenCode) -> Path:
    home = install(oc)
    # OpenCode runs on the machine's clock: the facts were validated ten days before today.
    validated = date.today() - timedelta(days=10)
    source = f"journal {validated - timedelta(days=1)} 10:00"
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n"
        f"- {OLD} ({validated}, Source : {source} ; P-0042)\n"
        f"- {DEBIAN} ({validated}, Source : {source} ; P-0043)\n"
    )
    skill = home / "skills/deploy-vps/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: deploy-vps\ndescription: Déploie un service sur le VPS. À utiliser avant "
        "tout déploiement.\n---\n\n# Déployer\n"
    )
    return home


def next_session_system(oc: OpenCode) -> str:
    """The main model's system prompt in a new session (memory, and the skills OpenCode lists)."""
    before = len(oc.llm.main_requests)
    play(oc, Model(work=[bash(1)]))
    result = oc.run(oc.project(), "une commande")
    assert result.returncode == 0, oc.debug_report(result)
    return oc.llm.main_requests[before].system


def test_a_promoted_replacement_is_the_only_fact_the_next_session_reads(oc: OpenCode) -> None:
    home = seeded(oc)
    refs = [entry(oc, "le port SSH du VPS est passé à 2200", t) for t in ("A", "B")]
    proposal = {
        "type": "fait",
        "titre": "Port SSH",
        "contenu": NEW,
        "sources": refs,
        "contradiction": "aucune",
        "remplace": "rien",
    }
    done = ocmem(oc, "propose", stdin=json.dumps(proposal))
    assert done.returncode == 0 and "Remplace (vu par ocmem)" in done.stdout, done.stderr
    play(oc, Model(work=[ToolCalls.one("memory_accept", id="P-0001")]))
    with oc.serve(oc.project()) as server:
        sid = server.create_session()
        mark = server.prompt_async(sid, "valide pending")
        asked = server.events.wait_for("permission.asked", session_id=sid, since=mark, timeout=60)
        # The human sees the old fact next to the new one before saying yes.
        assert any(OLD in p for p in asked["properties"]["patterns"]), asked
        reply = server.request(
            "POST",
            f"/session/{sid}/permissions/{asked['properties']['id']}",
            json={"response": "once"},
        )
        assert reply.status_code == 200
        server.wait_idle(sid, since=mark)
        server.dispose()
    memory = (home / "memory/MEMORY.md").read_text()
    assert NEW in memory and OLD not in memory
    assert OLD in (home / "memory/ARCHIVE.md").read_text()
    system = next_session_system(oc)
    assert "2200" in system and "2222" not in system


def test_a_retired_fact_and_skill_are_gone_from_the_next_session(oc: OpenCode) -> None:
    home = seeded(oc)
    system = next_session_system(oc)
    assert DEBIAN in system and "<name>deploy-vps</name>" in system
    for args in (
        ("retire", "fact", DEBIAN, "--reason", "VPS réinstallé sous Alpine"),
        ("retire", "skill", "deploy-vps", "--reason", "remplacé par Ansible"),
    ):
        done = ocmem(oc, *args)
        assert done.returncode == 0, done.stderr
    system = next_session_system(oc)
    assert DEBIAN not in system and OLD in system
    assert "deploy-vps" not in system and "<name>retrospective</name>" in system
    archived = (home / "memory/ARCHIVE.md").read_text()
    assert DEBIAN in archived and "name: deploy-vps" in archived
