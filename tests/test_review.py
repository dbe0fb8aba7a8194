from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

from conftest import Clock, journal_fields
from ocmem.home.settings import load_settings
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.review import USAGE_WINDOW_DAYS, review


def skill(home: Path, name: str, description: str) -> None:
    folder = home / "skills" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n"
    )


def test_unused_and_rarely_used_skills(home: Path, clock: Clock, memory: Memory) -> None:
    clock.advance(days=USAGE_WINDOW_DAYS + 10)  # a home that has lived a whole window
    skill(home, "deploy-docker", "Déploie un service avec Docker.")
    skill(home, "backup", "Sauvegarde la base de données.")
    usage = home / ".ocmem/skill-usage.jsonl"
    used = (clock.now() - timedelta(days=9)).isoformat() + "Z"
    usage.write_text(
        "".join(
            json.dumps({"ts": used, "skill": "deploy-docker", "session": "s"}) + "\n"
            for _ in range(5)
        )
        + "pas du json\n"
    )
    memory.add_journal(journal_fields(tags=["backup"]))
    report = review(Workspace(load_settings(home), clock=clock))
    found = {s.subject: s.detail for s in report.suggestions if s.kind == "skill peu utilisé"}
    assert "deploy-docker" not in found
    assert found["backup"] == "utilisé 1 fois en 90 jours"
    assert found["retrospective"] == "jamais utilisé en 90 jours"
    assert report.too_early is None


def test_a_home_made_minutes_ago_is_too_young_to_call_a_skill_unused(
    home: Path, clock: Clock
) -> None:
    clock.advance(minutes=3)
    skill(home, "deploy-nginx", "Déploie nginx sur le VPS.")
    report = review(Workspace(load_settings(home), clock=clock))
    assert [s for s in report.suggestions if s.kind == "skill peu utilisé"] == []
    assert report.too_early == (
        "dossier ocmem créé il y a 0 jour (le 2026-11-29) : trop tôt pour juger de l'usage des "
        "skills, qui se compte sur 90 jours (à partir du 2027-02-27)"
    )
    text = report.render()
    assert "jamais utilisé" not in text
    assert (
        "## Skills peu utilisés (0)\n- dossier ocmem créé il y a 0 jour (le 2026-11-29) : trop tôt "
        "pour juger de l'usage des skills, qui se compte sur 90 jours (à partir du 2027-02-27)\n\n"
        in text
    )
    assert json.loads(report.to_json())["skills_too_early"] == report.too_early
    clock.advance(days=30)
    later = review(Workspace(load_settings(home), clock=clock))
    assert later.too_early is not None and "créé il y a 30 jours" in later.too_early


def test_a_home_made_before_its_creation_was_recorded_counts_from_its_identity_file(
    home: Path, clock: Clock
) -> None:
    record = home / ".ocmem/home.json"
    data = json.loads(record.read_text())
    del data["created"]  # as every home.json written before the field
    record.write_text(json.dumps(data))
    made = (clock.now() - timedelta(days=4)).timestamp()
    os.utime(record, (made, made))
    report = review(Workspace(load_settings(home), clock=clock))
    assert (
        report.too_early is not None and "créé il y a 4 jours (le 2026-11-25)" in report.too_early
    )
    old = (clock.now() - timedelta(days=200)).timestamp()
    os.utime(record, (old, old))
    report = review(Workspace(load_settings(home), clock=clock))
    assert report.too_early is None
    assert "retrospective" in {
        s.subject for s in report.suggestions if s.kind == "skill peu utilisé"
    }


def test_possible_contradictions_between_facts_and_skills(home: Path, clock: Clock) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Le service web écoute sur le port 8080.\n- Le service web écoute sur le port 9090.\n"
        "- Les déploiements passent par Docker Compose.\n"
    )
    skill(home, "deploy", "Les déploiements ne passent pas par Docker Compose.")
    found = [
        s
        for s in review(Workspace(load_settings(home), clock=clock)).suggestions
        if s.kind == "contradiction possible"
    ]
    details = {s.detail for s in found}
    assert "valeurs différentes (8080 / 9090)" in details
    assert "l'une est négative, l'autre non" in details


def test_facts_to_revalidate(home: Path, clock: Clock) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Fait sans source.\n"
        "- Fait ancien. (2026-01-10, Source : journal 2026-01-02 10:00 ; journal 2026-01-05 11:00 ; P-0001)\n"
        "- Fait récent. (2026-11-20, Source : journal 2026-11-18 10:00 ; journal 2026-11-19 11:00 ; P-0002)\n"
    )
    (home / "memory/pending.md").write_text(
        "# Propositions en attente\n\n## P-0003 · fait · Nouveau\n- Statut : en attente\n- Date : 2026-11-25\n"
        "- Sources : journal 2026-11-18 10:00\n- Origine : x\n- Remplace : modifie P-0002\n- Contradiction : aucune\n"
        "- Contenu proposé :\n\n~~~text\nFait récent, corrigé.\n~~~\n"
    )
    found = {
        (s.subject[:12], s.detail)
        for s in review(Workspace(load_settings(home), clock=clock)).suggestions
        if s.kind == "fait à revalider"
    }
    assert ("Fait sans so", "sans date ni source") in found
    assert ("Fait ancien.", "source la plus récente de plus de 180 jours") in found
    assert ("Fait récent.", "P-0003 dit le remplacer (en attente)") in found


def test_review_suggests_and_changes_nothing(
    home: Path, clock: Clock, run_cli: object, files_snapshot: object
) -> None:
    before = files_snapshot()  # type: ignore[operator]
    text = run_cli("review").out  # type: ignore[operator]
    assert text.startswith(f"# Revue de la mémoire ({clock.today():%Y-%m-%d})")
    assert "Suggestions seulement : rien n'a été modifié ni supprimé." in text
    data = json.loads(run_cli("review", "--json").out)  # type: ignore[operator]
    assert {"date", "suggestions"} <= set(data)
    assert files_snapshot() == before  # type: ignore[operator]


def test_many_near_identical_facts_are_one_suggestion_and_headings_have_plurals(
    home: Path, clock: Clock
) -> None:
    facts = "".join(f"- Le service {i} écoute sur le port {8000 + i} du VPS.\n" for i in range(33))
    (home / "memory/MEMORY.md").write_text("# Mémoire\n\n" + facts)
    report = review(Workspace(load_settings(home), clock=clock))
    found = [s for s in report.suggestions if s.kind == "contradiction possible"]
    assert len(found) == 1, len(found)
    assert (
        found[0].subject.startswith("33 énoncés sur le même sujet : ")
        and "et 30 autres" in found[0].subject
    )
    assert found[0].detail == "528 paire(s) divergent (valeurs différentes)"
    text = report.render()
    assert (
        "## Skills peu utilisés (" in text
        and "## Contradictions possibles (1)" in text
        and "## Faits à revalider (" in text
    )


def test_freshness_facts_the_journal_contradicts_facts_never_spoken_of_and_old_proposals(
    home: Path, clock: Clock, memory: Memory
) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n"
        "- Le port SSH du VPS est 2222. (2026-10-01, Source : journal 2026-09-30 10:00 ; P-0001)\n"
        "- Le VPS tourne sous Debian 12. (2026-06-01, Source : journal 2026-05-30 10:00 ; P-0002)\n"
        "- Le swap est activé. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0003)\n"
    )
    memory.add_journal(journal_fields(titre="SSH", lecon="le port SSH du VPS est désormais 2200"))
    memory.add_journal(journal_fields(titre="Swap", lecon="le swap est toujours activé"))
    (home / "memory/pending.md").write_text(
        "# Propositions en attente\n\n## P-0004 · fait · Vieux\n- Statut : en attente\n"
        "- Date : 2026-11-01\n- Sources : journal 2026-10-31 10:00\n- Origine : x\n"
        "- Remplace : rien\n- Contradiction : aucune\n- Contenu proposé :\n\n~~~text\nVieux.\n~~~\n"
    )
    found = {
        (s.kind, s.subject[:22], s.detail)
        for s in review(Workspace(load_settings(home), clock=clock)).suggestions
        if s.kind
        in ("fait contredit par le journal", "fait jamais évoqué", "proposition qui attend")
    }
    contradicted = [(subject, d) for k, subject, d in found if k == "fait contredit par le journal"]
    assert len(contradicted) == 1 and contradicted[0][0] == "Le port SSH du VPS est"
    assert "2222 → 2200" in contradicted[0][1] and "journal 2026-11-29 10:00" in contradicted[0][1]
    assert (
        "fait jamais évoqué",
        "Le VPS tourne sous Deb",
        "aucune entrée du journal n'en parle depuis sa validation (2026-06-01)",
    ) in found
    assert ("proposition qui attend", "P-0004 « Vieux »", "en attente depuis 28 jours") in found
    assert not any("swap" in subject for _, subject, _ in found)  # confirmed, not contradicted


def test_a_new_id_for_the_same_home_keeps_its_age(home: Path, clock: Clock) -> None:
    from ocmem.home import identity
    from ocmem.setup.install import Installer

    made = identity.created(load_settings(home).paths)
    clock.advance(days=100)
    Installer(Workspace(load_settings(home), clock=clock), home_id="vps-autre").run()
    paths = load_settings(home).paths
    assert identity.require(paths).id == "vps-autre"
    assert identity.created(paths) == made == datetime(2026, 11, 29, 10, 0)


def test_prose_that_contradicts_a_skill_step_is_a_possible_contradiction(
    home: Path, clock: Clock
) -> None:
    """The proposals' rule (ocmem.text.coherence) over what is held now: a fact against a step of
    a skill, and a waiting proposal against a skill installed after it was written."""
    folder = home / "skills/deploy-nginx"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: deploy-nginx\ndescription: Déploie nginx.\n---\n# nginx\n\n"
        "1. Vérifie les ports avant.\n2. Recharge nginx.\n"
    )
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Ne jamais vérifier les ports : le pare-feu s'en charge. (2026-11-20, "
        "Source : journal 2026-11-19 10:00 ; P-0001)\n"
    )
    (home / "memory/pending.md").write_text(
        "# Propositions en attente\n\n## P-0002 · skill · Sans recharge\n- Statut : en attente\n"
        "- Date : 2026-11-25\n- Sources : journal 2026-11-18 10:00\n- Origine : x\n"
        "- Remplace : rien\n- Contradiction : aucune\n- Skill : vite\n- Description : Vite.\n"
        "- Contenu proposé :\n\n~~~markdown\nNe pas recharger nginx.\n~~~\n"
    )
    found = {
        (s.subject, s.detail)
        for s in review(Workspace(load_settings(home), clock=clock)).suggestions
        if s.kind == "contradiction possible"
    }
    assert (
        "fait « Ne jamais vérifier les ports : le pare-feu s'en charge. »",
        "contredit skill deploy-nginx « Vérifie les ports avant. » — négation : l'un nie ce "
        "que l'autre affirme",
    ) in found, found
    assert (
        "P-0002 « Sans recharge »",
        "contredit skill deploy-nginx « Recharge nginx. » — négation : l'un nie ce que l'autre "
        "affirme",
    ) in found, found
