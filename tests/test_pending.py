from __future__ import annotations

import errno
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import Clock, journal_fields
from ocmem.errors import InputError, Refused, StorageError
from ocmem.formats import marks, pending, skills
from ocmem.guards import exposure
from ocmem.home.workspace import Workspace
from ocmem.services.memory import Memory
from ocmem.services.proposals import Proposals
from ocmem.services.status import status
from ocmem.text import inert


@pytest.fixture
def refs(memory: Memory, clock: Clock) -> list[str]:
    """Three journal entries about the same lesson, and their references."""
    found = []
    for i, lesson in enumerate(
        [
            "vérifier les ports libres avant un déploiement Docker",
            "les ports étaient pris : vérifier avant de déployer",
            "autre chose",
        ]
    ):
        line = memory.add_journal(journal_fields(titre=f"Épisode {i}", lecon=lesson)).lines[0]
        found.append(line.removeprefix("Entrée ajoutée : "))
        clock.advance(hours=1)
    return found


def fact(refs: list[str], **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "fait",
        "titre": "Vérifier les ports avant un déploiement",
        "contenu": "Vérifier que les ports sont libres avant un déploiement Docker.",
        "sources": refs[:2],
        "contradiction": "aucune",
        "remplace": "rien",
    }
    data.update(overrides)
    return data


def skill(refs: list[str], **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "skill",
        "titre": "Déployer un service Docker",
        "name": "deploy-docker",
        "description": "Déploie un service avec Docker Compose sur le VPS. À utiliser pour tout nouveau service.",
        "contenu": "# Déployer\n\n1. Vérifier les ports.\n2. Lancer :\n\n```bash\ndocker compose up -d\n```",
        "sources": refs[:2],
        "contradiction": "aucune",
        "remplace": "rien",
    }
    data.update(overrides)
    return data


def stored(home: Path) -> list[pending.Proposal]:
    return pending.parse((home / "memory/pending.md").read_text())


def test_a_recurring_lesson_becomes_one_proposal(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    result = proposals.propose(fact(refs)).render()
    assert "Proposition P-0001 ajoutée (fait)" in result
    assert result.endswith("1 proposition en attente")
    (only,) = stored(home)
    assert only.status == "en attente"
    assert only.sources == tuple(refs[:2])
    assert only.origin == "récurrence (2 épisodes)"
    assert only.created == date(2026, 11, 29)


def test_the_same_lesson_again_completes_instead_of_duplicating(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    again = proposals.propose(
        fact(
            refs,
            titre="Ports à vérifier",
            sources=[refs[1], refs[2]],
            contenu="Toujours vérifier les ports libres avant de déployer avec Docker.",
        )
    )
    assert "P-0001 complétée" in again.render()
    (only,) = stored(home)
    assert only.sources == tuple(refs)
    assert only.origin == "récurrence (3 épisodes)"


def test_an_identical_second_run_changes_nothing(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    before = (home / "memory/pending.md").read_bytes()
    assert "rien de nouveau" in proposals.propose(fact(refs)).render()
    assert (home / "memory/pending.md").read_bytes() == before


def test_a_lesson_seen_once_makes_no_proposal(
    memory: Memory, refs: list[str], unchanged: None, proposals: Proposals
) -> None:
    with pytest.raises(Refused, match="vue une seule fois"):
        proposals.propose(fact(refs, sources=[refs[0]]))
    with pytest.raises(Refused, match="vue une seule fois"):
        proposals.propose(fact(refs, sources=[refs[0], refs[0]]))


def test_retiens_ca_needs_one_cited_entry(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    with pytest.raises(Refused, match="cite l'entrée"):
        proposals.propose(fact(refs, sources=[], retiens_ca=True))
    proposals.propose(fact(refs, sources=[refs[2]], retiens_ca=True))
    assert stored(home)[0].origin == "demande explicite de l'utilisateur (« retiens ça »)"


def test_sources_must_exist(
    memory: Memory, refs: list[str], unchanged: None, proposals: Proposals
) -> None:
    with pytest.raises(Refused, match="introuvable"):
        proposals.propose(fact(refs, sources=[refs[0], "journal 2020-01-01 00:00"]))


def test_silence_on_contradiction_is_refused_and_shows_neighbours(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Les ports du VPS sont gérés par Traefik.\n"
    )
    with pytest.raises(Refused) as refused:
        proposals.propose(fact(refs, contradiction=None))
    message = refused.value.render()
    assert "MEMORY.md « Les ports du VPS sont gérés par Traefik. »" in message
    assert '"contradiction": "aucune"' in message
    with pytest.raises(Refused):
        proposals.propose(fact(refs, remplace=""))


def test_a_contradiction_is_flagged_in_the_proposal(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    (home / "skills/deploy-podman").mkdir(parents=True)
    (home / "skills/deploy-podman/SKILL.md").write_text(
        "---\nname: deploy-podman\ndescription: Déploie avec Podman, jamais Docker.\n---\n# x\n"
    )
    result = proposals.propose(
        skill(refs, contradiction="contredit le skill deploy-podman (Podman plutôt que Docker)")
    ).render()
    assert "⚠ Contradiction signalée : contredit le skill deploy-podman" in result
    assert "⚠ contradiction" in proposals.list_pending().render()
    assert stored(home)[0].contradiction.startswith("contredit le skill deploy-podman")


def test_a_close_fact_ocmem_cannot_classify_is_refused_until_the_agent_says(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Vérifier les ports libres avant un déploiement Podman.\n"
    )
    with pytest.raises(Refused) as refused:
        proposals.propose(fact(refs))
    quoted = "MEMORY.md « Vérifier les ports libres avant un déploiement Podman. »"
    assert quoted in str(refused.value) and '"independant"' in str(refused.value.fix)
    assert stored(home) == []
    proposals.propose(fact(refs, independant=[quoted]))  # Docker's check is another fact
    assert stored(home)[0].replaces == "rien"
    proposals.propose(
        fact(refs, contenu="Vérifier que les ports sont libres avant un déploiement Docker.")
    )  # said again: completed, not refused again


def test_a_fact_already_in_memory_is_refused(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Vérifier que les ports sont libres avant un déploiement Docker. (2026-11-01)\n"
    )
    with pytest.raises(Refused, match=r"déjà dans MEMORY\.md"):
        proposals.propose(fact(refs))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"type": "astuce"}, "type"),
        ({"titre": ""}, "titre"),
        ({"contenu": "a\nb"}, "une ligne"),
        ({"sources": "hier"}, "référence"),
        ({"retiens_ca": "oui"}, "true ou false"),
        ({"bonus": 1}, "inconnue"),
    ],
)
def test_malformed_proposals_are_input_errors(
    memory: Memory,
    refs: list[str],
    overrides: dict[str, Any],
    message: str,
    unchanged: None,
    proposals: Proposals,
) -> None:
    with pytest.raises(InputError, match=message):
        proposals.propose(fact(refs, **overrides))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"name": "Deploy_Docker"}, "nom"),
        ({"description": "Une. Deux. Trois."}, "3 phrases"),
        ({"description": "x" * 1025}, "1025 caractères"),
        ({"description": ""}, "description absente"),
    ],
)
def test_skill_frontmatter_rules_are_checked_at_proposal(
    memory: Memory, refs: list[str], overrides: dict[str, Any], message: str, proposals: Proposals
) -> None:
    with pytest.raises(InputError, match=message):
        proposals.propose(skill(refs, **overrides))


def test_an_overlong_skill_is_refused_with_its_count(
    memory: Memory, refs: list[str], proposals: Proposals
) -> None:
    with pytest.raises(Refused, match=r"ferait 71 lignes une fois promu \(maximum 60") as refused:
        proposals.propose(skill(refs, contenu="\n".join(f"étape {i}" for i in range(60))))
    assert "retire au moins 11 ligne(s)" in refused.value.render()


def test_an_existing_skill_needs_an_explicit_replacement(
    memory: Memory, refs: list[str], proposals: Proposals
) -> None:
    with pytest.raises(Refused, match="existe déjà"):
        proposals.propose(skill(refs, name="retrospective"))
    proposals.propose(
        skill(refs, name="retrospective", remplace="modifie la section Fin du skill retrospective")
    )


def test_skill_count_cap(memory: Memory, refs: list[str], home: Path, proposals: Proposals) -> None:
    for i in range(14):
        folder = home / f"skills/s{i}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\nname: s{i}\ndescription: Skill {i}.\n---\n")
    with pytest.raises(Refused, match="15 skills installés"):
        proposals.propose(skill(refs))
    proposals.propose(skill(refs, remplace="fusionne s1 et s2"))


def test_accepting_a_fact_appends_it_with_date_and_source(
    memory: Memory, refs: list[str], home: Path, clock: Clock, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    clock.advance(days=2)
    result = proposals.accept("P-0001").render()
    memory_md = (home / "memory/MEMORY.md").read_text()
    assert (
        f"- Vérifier que les ports sont libres avant un déploiement Docker. (2026-12-01, Source : {refs[0]} ; {refs[1]} ; P-0001)"
        in memory_md
    )
    assert "MEMORY.md " in result and "/2 000" in result
    assert stored(home)[0].status == "promu (2026-12-01)"
    with pytest.raises(Refused, match="déjà promue"):
        proposals.accept("1")


def test_accepting_over_the_memory_cap_is_refused_with_fill_level(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n" + "".join(f"- fait {i} " + "x" * 80 + "\n" for i in range(21))
    )
    before = (home / "memory/MEMORY.md").read_bytes(), (home / "memory/pending.md").read_bytes()
    with pytest.raises(Refused) as refused:
        proposals.accept("P-0001")
    assert "plafond" in refused.value.render() and "/2 000 (" in refused.value.render()
    assert (
        (home / "memory/MEMORY.md").read_bytes(),
        (home / "memory/pending.md").read_bytes(),
    ) == before


def test_accepting_a_skill_creates_a_valid_skill_md(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals, workspace: Workspace
) -> None:
    proposals.propose(
        skill(refs, contenu="Lancer `${service}` puis :\n\n```bash\necho ${HOME}\n```")
    )
    proposals.accept("P-0001")
    text = (home / "skills/deploy-docker/SKILL.md").read_text()
    assert text.startswith("---\nname: deploy-docker\ndescription: Déploie un service")
    assert "Source : " + refs[0] in text
    assert "~~~bash\necho ${HOME}\n~~~" in text  # fenced code stays code
    assert "Lancer \\`\\$\\{service\\}\\` puis :" in text  # inert, and visible as typed
    assert inert.active_constructs(text) == []
    assert "skills/         2/15 skill(s)" in status(workspace).render()
    assert not [s for s in workspace.skills() if s.problems]


def test_a_crash_between_the_two_writes_does_not_duplicate_the_fact(
    memory: Memory,
    refs: list[str],
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    proposals: Proposals,
) -> None:
    proposals.propose(fact(refs))
    from ocmem.home import atomic, workspace

    real_write = atomic.atomic_write

    def crash_on_pending(path: Path, data: Any, **kw: Any) -> None:
        if path.name == "pending.md":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data, **kw)

    memory_before = (home / "memory/MEMORY.md").read_bytes()
    monkeypatch.setattr(workspace, "atomic_write", crash_on_pending)
    with pytest.raises(
        StorageError,
        match=r"disque plein : impossible d'écrire memory/pending\.md : rien n'a été modifié",
    ):
        proposals.accept("P-0001")
    monkeypatch.setattr(workspace, "atomic_write", real_write)
    assert (home / "memory/MEMORY.md").read_bytes() == memory_before  # the first write was undone
    assert not list((home / ".ocmem/backups").rglob("MEMORY.md"))  # and its backup discarded
    proposals.accept("P-0001")
    assert (home / "memory/MEMORY.md").read_text().count("P-0001)") == 1


def test_reject_keeps_the_proposal_marked(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    proposals.reject("P-0001", "déjà couvert par la doc ${x}")
    assert stored(home)[0].status == "refusé (2026-11-29) : déjà couvert par la doc ${x}"
    assert "déjà couvert par la doc \\$\\{x\\}" in (home / "memory/pending.md").read_text()
    with pytest.raises(Refused, match="refusé une proposition semblable"):
        proposals.propose(fact(refs))
    assert "P-0002" in proposals.propose(fact(refs, retiens_ca=True)).render()


@pytest.mark.parametrize("kind", [fact, skill])
def test_a_lesson_waiting_again_after_a_refusal_is_completed_not_proposed_a_third_time(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals, kind: Any
) -> None:
    """Refused, then proposed again on « retiens ça »: the next time it is said, it completes
    the waiting proposal (it was another one each time, and the review page showed them all;
    found by tests/test_sync_stateful.py)."""
    proposals.propose(kind(refs))
    proposals.reject("P-0001", "pas maintenant")
    assert "P-0002 ajoutée" in proposals.propose(kind(refs, retiens_ca=True)).render()
    for retiens_ca in (True, False):
        said = proposals.propose(kind(refs, sources=refs[1:], retiens_ca=retiens_ca)).render()
        assert "P-0002 complétée" in said or "P-0002 déjà en attente" in said, said
    assert [p.state for p in stored(home)] == [pending.STATE_REFUSED, pending.STATE_PENDING]


def test_promoted_lessons_are_not_proposed_again(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(skill(refs))
    proposals.accept("P-0001")
    with pytest.raises(Refused, match="déjà été promue"):
        proposals.propose(skill(refs, titre="Autre titre", remplace="remplace deploy-docker"))


def test_unknown_id(memory: Memory, proposals: Proposals) -> None:
    with pytest.raises(InputError, match="pending list"):
        proposals.accept("P-0042")


text_line = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=["Cs", "Cc", "Zl", "Zp"], blacklist_characters=";"
        ),
        min_size=1,
        max_size=30,
    )
    .map(str.strip)
    .filter(bool)
)


@given(
    kind=st.sampled_from(["fait", "skill"]),
    title=text_line,
    content=st.text(min_size=1, max_size=200)
    .map(lambda s: s.replace("\r", "").strip("\n"))
    .filter(lambda s: s.strip()),
    sources=st.lists(
        st.from_regex(r"journal 20[0-9]{2}-0[1-9]-1[0-9] 1[0-9]:[0-5][0-9]", fullmatch=True),
        min_size=1,
        max_size=3,
    ),
    contradiction=text_line,
    number=st.integers(1, 9999),
)
def test_proposals_round_trip(
    kind: str, title: str, content: str, sources: list[str], contradiction: str, number: int
) -> None:
    proposal = pending.Proposal(
        id=f"P-{number:04d}",
        kind=kind,
        title=title,
        status="en attente",
        created=date(2026, 11, 29),
        sources=tuple(sources),
        origin="récurrence (2 épisodes)",
        replaces="rien",
        contradiction=contradiction,
        content=content,
        skill_name="x-y" if kind == "skill" else None,
        description="Une phrase." if kind == "skill" else None,
    )
    rendered = pending.render(
        [proposal, proposal.__class__(**{**proposal.__dict__, "id": f"P-{number + 1:05d}"})]
    )
    parsed = pending.parse(rendered)[0]
    assert pending.render([parsed]) == pending.render([proposal])  # re-rendering never drifts
    assert (parsed.title, parsed.contradiction) == (inert.clean(title), inert.clean(contradiction))
    if kind == "fait":
        assert parsed.content == "\n".join(inert.clean_lines(content))
    assert inert.active_constructs(rendered) == []


def test_a_refused_or_merged_proposal_cannot_be_accepted(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    proposals.propose(fact(refs))
    proposals.propose(skill(refs))
    proposals.reject("P-0001", "faux sur ce VPS")
    before = (home / "memory/MEMORY.md").read_bytes()
    with pytest.raises(Refused, match=r"a été refusée : refusé .* faux sur ce VPS"):
        proposals.accept("P-0001")
    assert (home / "memory/MEMORY.md").read_bytes() == before
    proposals.propose(skill(refs, name="deploy-compose"))
    proposals.merge_pending("P-0002", "P-0003")
    with pytest.raises(Refused, match="fusionnée"):
        proposals.accept("P-0003")
    assert stored(home)[0].status.startswith("refusé")  # the reason stays


def test_identical_short_proposals_are_the_same_but_another_skill_is_not(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    short = fact(refs, titre="Ports", contenu="Ports libres.")
    proposals.propose(short)
    assert "déjà en attente" in proposals.propose(short).render()
    proposals.propose(skill(refs, titre="Nginx", name="nginx-reload"))
    other = proposals.propose(skill(refs, titre="Nginx", name="nginx-restart")).render()
    assert (
        "ajoutée (skill)" in other
        and "ressemble à P-0002" in other
        and "ocmem pending merge P-0002 P-0003" in other
    )
    assert [p.skill_name for p in stored(home) if p.kind == "skill"] == [
        "nginx-reload",
        "nginx-restart",
    ]


def test_only_close_items_are_listed_as_neighbours(
    memory: Memory, refs: list[str], home: Path, proposals: Proposals
) -> None:
    (home / "memory/MEMORY.md").write_text(
        "# Mémoire\n\n- Le serveur de mail tourne sous Postfix avec Dovecot et Rspamd pour le filtrage des messages entrants.\n"
    )
    shown = proposals.propose(fact(refs)).render()
    assert "similarité" not in shown  # one common word at most: 0.04, not a neighbour


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Utilise p. ex. rsync pour copier.", 1),
        ("Monte en v1.2.3 puis vérifie.", 1),
        ("Installe la v1.2.3. Puis redémarre.", 2),
        ("Copie les fichiers (p. ex. /etc). Vérifie la copie.", 2),
        ("Pourquoi ? Parce que. Enfin.", 3),
        ("M. Dupont valide la migration.", 1),
    ],
)
def test_sentences_are_not_cut_at_abbreviations_or_versions(text: str, count: int) -> None:
    assert skills.sentence_count(text) == count


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"contradiction": "x" * 301}, "« contradiction » fait 301 caractères"),
        ({"remplace": "y" * 400}, "« remplace » fait 400 caractères"),
    ],
)
def test_every_proposal_field_has_a_size_cap(
    memory: Memory,
    refs: list[str],
    proposals: Proposals,
    overrides: dict[str, str],
    message: str,
    unchanged: None,
) -> None:
    with pytest.raises(InputError, match=message):
        proposals.propose(fact(refs, **overrides))
    with pytest.raises(InputError, match="« contenu » fait 6001 caractères"):
        proposals.propose(skill(refs, contenu="z" * 6001))


@pytest.mark.parametrize(
    ("entry", "lesson", "says"),
    [
        (
            "Leçon : vérifier les ports libres avant de déployer",
            "Ports libres Vérifier les ports.",
            True,
        ),
        (
            "Piège : le port 8080 était pris",
            "Ports Vérifier les ports libres avant un déploiement.",
            False,
        ),
        ("Leçon : vérifie que le port est libre", "Ports libres Vérifier les ports libres.", True),
        # a translation sharing one keyword is not evidence (the glossary maps a few words only)
        (
            "Lesson: check that ports are free before deploying",
            "Ports libres Vérifier les ports libres.",
            False,
        ),
        (
            "Les SAUVEGARDES tournent à 3 h",
            "Sauvegardes nocturnes Les sauvegardes tournent la nuit.",
            True,
        ),
        ("docker compose up -d", "Serveur de prod Le serveur de prod est 10.0.0.5.", False),
        (
            "Mise à jour de nginx, certificat renouvelé",
            "Certificats Renouveler le certificat nginx avant expiration.",
            True,
        ),
        (
            "Mise à jour de nginx",
            "Certificats Renouveler le certificat nginx avant expiration.",
            False,
        ),
        ("rien à voir", "Podman", False),
        ("on passe à Podman", "Podman", True),
    ],
)
def test_a_source_must_speak_of_the_lesson(entry: str, lesson: str, says: bool) -> None:
    from ocmem.services.drafts import says_lesson

    assert says_lesson(entry, lesson) is says


def test_a_proposal_citing_entries_that_do_not_show_the_lesson_is_refused(
    memory: Memory, refs: list[str], proposals: Proposals, home: Path
) -> None:
    before = (home / "memory/pending.md").read_bytes()
    injected = fact(refs[:2], titre="Serveur de prod", contenu="Le serveur de prod est 10.0.0.5.")
    with pytest.raises(Refused, match="ne parle"):
        proposals.propose(injected)
    assert (home / "memory/pending.md").read_bytes() == before


# --- an exposed session's proposals (issue 12) --------------------------------------------------


@given(
    state=st.sampled_from(marks.STATES),
    source=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=150),
    title=text_line,
    number=st.integers(1, 9999),
)
def test_the_exposure_round_trips_right_after_the_status(
    state: str, source: str, title: str, number: int
) -> None:
    mark = marks.mark(state, exposure.clean_source(source))
    proposal = pending.Proposal(
        id=f"P-{number:04d}",
        kind="fait",
        title=title,
        status="en attente",
        created=date(2026, 11, 29),
        sources=("journal 2026-11-20 10:12",),
        origin="récurrence (2 épisodes)",
        replaces="rien",
        contradiction="aucune",
        content="Le serveur de prod est 10.0.0.5.",
        exposure=mark,
    )
    text = pending.render([proposal])
    (parsed,) = pending.parse(text)
    assert parsed.exposure == mark and pending.render([parsed]) == text
    lines = proposal.render().split("\n")
    assert lines[1] == "- Statut : en attente" and lines[2].startswith("- Exposition : ")
    assert inert.active_constructs(text) == []


def test_a_proposal_without_exposure_has_no_such_line() -> None:
    proposal = pending.Proposal(
        id="P-0001",
        kind="fait",
        title="Ports",
        status="en attente",
        created=date(2026, 11, 29),
        sources=("journal 2026-11-20 10:12",),
        origin="récurrence (2 épisodes)",
        replaces="rien",
        contradiction="aucune",
        content="Vérifier les ports.",
    )
    assert (
        "Exposition" not in proposal.render()
        and pending.parse(proposal.render())[0].exposure is None
    )
