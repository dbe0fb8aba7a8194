"""The spec's « Cohérence » rule for prose (issue 36): a proposal — a fact or a skill — whose
sentence says the opposite of a sentence of an installed skill, of MEMORY.md or of a waiting
proposal says so in « Contradiction », the contradicted sentence quoted, whatever the agent
declared; in `propose`'s answer and in `pending show`.

The rule (ocmem.text.coherence) is measured on tests/data/coherence.yaml by a benchmark
(bench/coherence.py: contradictions missed and false flags, against the floors it reached); here,
what the corpus must be and what the rule must always do."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import CliResult, Clock, journal_fields
from ocmem.formats import memorymd, pending, skills
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.text import coherence

REPO = Path(__file__).resolve().parents[1]
CORPUS: dict[str, list[dict[str, str]]] = yaml.safe_load(
    (REPO / "tests/data/coherence.yaml").read_text(encoding="utf-8")
)


def test_the_corpus_is_what_the_issue_asks() -> None:
    cases = CORPUS["dev"] + CORPUS["heldout"]
    labels = {c["label"] for c in cases}
    assert labels == {"contradiction", "compatible"}
    for part in ("dev", "heldout"):
        counts = [sum(c["label"] == label for c in CORPUS[part]) for label in sorted(labels)]
        assert min(counts) >= 15, (part, counts)
    english = [c for c in cases if re.search(r"\b(the|before|never|always)\b", c["held"])]
    assert len(english) >= 10
    tricky = ("qu'", " que ", " si ", "sans", "après", "if ", "without", "only")
    assert (
        sum(any(t in c["new"] for t in tricky) for c in cases if c["label"] == "compatible") >= 10
    )


@given(st.text(max_size=160))
def test_a_sentence_never_contradicts_itself(text: str) -> None:
    assert coherence.opposed(coherence.sentence(text), coherence.sentence(text)) is None


@given(st.text(max_size=120), st.text(max_size=120))
def test_a_contradiction_holds_both_ways(a: str, b: str) -> None:
    one, other = coherence.sentence(a), coherence.sentence(b)
    assert (coherence.opposed(one, other) is None) == (coherence.opposed(other, one) is None)


@pytest.mark.parametrize(
    ("held", "new"),
    [(c["held"], c["new"]) for c in CORPUS["dev"] if c["label"] == "contradiction"][:6],
)
def test_each_direction_of_a_dev_contradiction(held: str, new: str) -> None:
    assert coherence.between(held, new) is not None


def test_prose_is_read_sentence_by_sentence_without_code_or_headings() -> None:
    text = "# Titre\n\n1. Vérifie les ports avant. Puis déploie.\n```sh\nnginx -t\n```\n- Recharge."
    assert list(coherence.sentences(text)) == [
        "Vérifie les ports avant.",
        "Puis déploie.",
        "Recharge.",
    ]


# --- through a proposal ------------------------------------------------------------------------

NGINX = """# Déployer nginx

1. Vérifie les ports avant.
2. Lance la vérification de la configuration :
```sh
nginx -t
```
3. Recharge nginx plutôt que de le redémarrer.
"""


def install_skill(home: Path, name: str, description: str, body: str) -> None:
    target = home / "skills" / name / "SKILL.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(skills.render_skill(name, description, body, {}), encoding="utf-8")


def episodes(memory: Memory, clock: Clock, lesson: str) -> list[str]:
    refs = []
    for i in range(2):
        added = memory.add_journal(journal_fields(titre=f"Épisode {i}", lecon=lesson))
        refs.append(added.lines[0].removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    return refs


def skill_proposal(refs: list[str], title: str, content: str, **more: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "skill",
        "titre": title,
        "contenu": content,
        "sources": refs,
        "contradiction": "aucune",  # what the agent declared in the issue
        "remplace": "rien",
        "name": "deploy-rapide",
        "description": "Déployer nginx rapidement sur le VPS.",
    }
    data.update(more)
    return data


@pytest.fixture
def nginx(home: Path) -> None:
    install_skill(home, "deploy-nginx", "Déployer la configuration nginx sur le VPS.", NGINX)


def test_the_issue_a_skill_that_says_not_to_check_the_ports(
    home: Path,
    memory: Memory,
    clock: Clock,
    proposals: Proposals,
    nginx: None,
    run_cli: Callable[..., CliResult],
) -> None:
    refs = episodes(memory, clock, "ne pas vérifier les ports du nginx avant de déployer")
    said = proposals.propose(
        skill_proposal(
            refs, "Ne pas vérifier les ports", "# Déploiement rapide\n\nNe pas vérifier les ports."
        )
    ).render()
    quoted = "skill deploy-nginx « Vérifie les ports avant. »"
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert proposal.contradiction.startswith(quoted), proposal.contradiction
    assert "négation" in proposal.contradiction
    assert f"Contradiction (vue par ocmem) : {quoted}" in said and said.count(quoted) == 1
    shown = run_cli("pending", "show", proposal.id).out
    assert f"- Contradiction : {quoted}" in shown
    assert "⚠ contradiction" in run_cli("pending", "list").out


def test_a_fact_that_contradicts_a_step_of_a_skill(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, nginx: None
) -> None:
    refs = episodes(memory, clock, "le déploiement nginx ne vérifie jamais les ports")
    proposals.propose(
        {
            "type": "fait",
            "titre": "Ports jamais vérifiés",
            "contenu": "Les ports ne sont jamais vérifiés avant un déploiement nginx.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert "skill deploy-nginx « Vérifie les ports avant. »" in proposal.contradiction


def test_a_skill_that_contradicts_memory_and_a_waiting_proposal(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    (home / "memory/MEMORY.md").write_text(
        memorymd.MEMORY_HEADER
        + "\n- Le swap est activé sur le VPS de build. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)\n"
    )
    refs = episodes(memory, clock, "lancer les migrations avant de redémarrer l'API")
    proposals.propose(
        {
            "type": "fait",
            "titre": "Migrations avant le redémarrage",
            "contenu": "Lancer les migrations avant de redémarrer l'API.",
            "sources": refs,
            "contradiction": "aucune",
            "remplace": "rien",
        }
    )
    refs = episodes(
        memory, clock, "redémarrer l'API puis lancer les migrations, désactiver le swap"
    )
    body = "# API\n\n- Désactiver le swap sur le VPS de build.\n- Lancer les migrations après le redémarrage de l'API.\n"
    said = proposals.propose(
        skill_proposal(
            refs,
            "Mise à jour de l'API",
            body,
            name="maj-api",
            description="Mettre à jour l'API du VPS.",
        )
    ).render()
    proposal = pending.parse((home / "memory/pending.md").read_text())[-1]
    assert "MEMORY.md « Le swap est activé sur le VPS de build. »" in proposal.contradiction
    assert "sens opposé : « activé » / « désactiver »" in proposal.contradiction
    assert (
        "P-0001 « Migrations avant le redémarrage » « Lancer les migrations avant de redémarrer l'API. »"
        in proposal.contradiction
    )
    assert "ordre inversé : « après » / « avant »" in proposal.contradiction
    assert "Contradiction (vue par ocmem)" in said


def test_what_the_agent_declared_is_kept_beside_what_ocmem_found(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, nginx: None
) -> None:
    refs = episodes(memory, clock, "ne pas vérifier les ports du nginx avant de déployer")
    proposals.propose(
        skill_proposal(
            refs,
            "Ne pas vérifier les ports",
            "Ne pas vérifier les ports.",
            contradiction="la consigne de l'équipe réseau",
        )
    )
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert proposal.contradiction.startswith("skill deploy-nginx « Vérifie les ports avant. »")
    assert proposal.contradiction.endswith(" ; la consigne de l'équipe réseau")


RETRO = (REPO / "skills/retrospective/SKILL.md").read_text(encoding="utf-8")


def test_a_skill_that_agrees_with_what_is_held_is_not_flagged(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, nginx: None
) -> None:
    """Document-level false flags: a realistic draft against the shipped retrospective skill,
    deploy-nginx and MEMORY.md; it shares words and markers with them, and contradicts none."""
    (home / "memory/MEMORY.md").write_text(
        memorymd.MEMORY_HEADER
        + "\n- Le VPS de prod tourne sous Debian 12. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0042)\n"
        "- Ne jamais redémarrer nginx en journée. (2026-11-20, Source : journal 2026-11-19 10:00 ; P-0043)\n"
    )
    body = """# Renouveler le certificat

1. Vérifie les ports avant, puis lance certbot.
2. Ne redémarre pas nginx : recharge-le après le renouvellement.
3. Si le renouvellement échoue, ne touche pas à la configuration et note l'erreur dans le journal.
4. N'oublie pas de vérifier la date d'expiration après le renouvellement.
"""
    refs = episodes(memory, clock, "renouveler le certificat puis recharger nginx")
    proposals.propose(
        skill_proposal(
            refs,
            "Renouveler le certificat",
            body,
            name="certificat",
            description="Renouveler le certificat TLS du VPS.",
        )
    )
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert proposal.contradiction == "aucune", proposal.contradiction


def test_a_draft_that_reverses_a_whole_skill_names_four_at_most(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals
) -> None:
    steps = [f"Activer le service numéro {w}." for w in ("alpha", "beta", "gamma", "delta", "eta")]
    install_skill(home, "services", "Gérer les services.", "\n".join(steps))
    refs = episodes(memory, clock, "désactiver les services alpha beta gamma delta eta")
    body = "\n".join(s.replace("Activer", "Désactiver") for s in steps)
    proposals.propose(skill_proposal(refs, "Tout désactiver", body, name="eteindre"))
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert proposal.contradiction.count("skill services «") == 3
    assert proposal.contradiction.endswith("et 2 autre(s) élément(s) contredit(s)")


def test_a_linked_skill_states_nothing_and_breaks_nothing(
    home: Path, memory: Memory, clock: Clock, proposals: Proposals, nginx: None, tmp_path: Path
) -> None:
    """The home's door refuses a SKILL.md that is a link (ocmem.home.atomic): its text is never
    read, so it is compared with nothing, and the proposal is still judged against the others."""
    outside = tmp_path / "ailleurs.md"
    outside.write_text("---\nname: lien\ndescription: Lien.\n---\nNe jamais vérifier les ports.\n")
    (home / "skills/lien").mkdir()
    (home / "skills/lien/SKILL.md").symlink_to(outside)
    refs = episodes(memory, clock, "ne pas vérifier les ports du nginx avant de déployer")
    proposals.propose(
        skill_proposal(refs, "Ne pas vérifier les ports", "Ne pas vérifier les ports.")
    )
    (proposal,) = pending.parse((home / "memory/pending.md").read_text())
    assert proposal.contradiction.startswith("skill deploy-nginx « Vérifie les ports avant. »")
    assert "skill lien" not in proposal.contradiction
    from ocmem.home.settings import load_settings
    from ocmem.home.workspace import Workspace
    from ocmem.services.review import review

    review(Workspace(load_settings(home), clock=clock))  # reads the same way
