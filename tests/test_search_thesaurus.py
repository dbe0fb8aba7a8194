"""The search's thesaurus (ocmem.text.thesaurus) and its stop-words: a question worded otherwise
meets its entry, a synonym counts less than the word itself, no product stands for another, and a
question about what the journal never mentions still finds nothing."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from ocmem.formats import journal
from ocmem.home.atomic import atomic_write
from ocmem.home.journalindex import search
from ocmem.text import searchterms, thesaurus
from ocmem.text.searchterms import query_terms, stem, terms

START = datetime(2026, 1, 5, 9, 0)


def _stems(words: str) -> set[str]:
    return {searchterms._term(w) for w in words.split()}


def _synonyms(word: str) -> frozenset[str]:
    return thesaurus.synonyms(searchterms._term(word), searchterms._term)


@pytest.mark.parametrize(
    ("word", "meets"),
    [
        ("saturé", "plein"),
        ("full", "rempli"),
        ("unreachable", "injoignable"),
        ("planifiée", "cron"),
        ("firewall", "ufw"),
        ("backup", "snapshot"),
        ("courriel", "mail"),
        ("indésirables", "spam"),
        ("virtualenv", "venv"),
    ],
)
def test_a_word_meets_its_synonyms(word: str, meets: str) -> None:
    assert searchterms._term(meets) in _synonyms(word)


@pytest.mark.parametrize(
    ("word", "other"),
    [("postgres", "mysql"), ("docker", "podman"), ("nginx", "apache"), ("rame", "mémoire")],
)
def test_no_product_nor_colliding_stem_stands_for_another(word: str, other: str) -> None:
    assert searchterms._term(other) not in _synonyms(word)


def test_every_group_is_single_words_and_never_only_stop_words() -> None:
    for line in thesaurus.GROUPS:
        for word in line.split():
            assert len(terms(word)) == 1, word  # « pare-feu » is two terms: « feu » stands for it
        assert len(_stems(line)) >= 2, line


def test_expansion_leaves_out_the_query_own_stems() -> None:
    words = query_terms("disque plein saturé")
    expanded = thesaurus.expand(words, searchterms._term)
    assert not set(expanded) & set(words)
    assert set(expanded.values()) <= set(words)


def test_function_words_of_a_question_are_not_search_terms() -> None:
    assert query_terms("je me suis enfermé entre deux") == [stem("enfermé"), stem("deux")]
    assert query_terms("it keeps getting slow") == [searchterms._term("slow")]


def _entry(i: int, titre: str, lecon: str, tags: tuple[str, ...]) -> journal.Entry:
    values = {
        "titre": titre,
        "tags": list(tags),
        "demande": "une demande",
        "fait": "fait",
        "piege": "aucun",
        "lecon": lecon,
        "resultat": "réussi",
    }
    return journal.entry_from_fields(values, START + timedelta(hours=i), 10)


@pytest.fixture
def journal_file(tmp_path: Path) -> Path:
    entries = [
        _entry(i, f"Redémarrage de nginx n°{i}", "vérifier la config avant", ("nginx",))
        for i in range(30)
    ]
    entries += [
        _entry(40, "Disque plein à cause des images Docker", "prune : de la place", ("disque",)),
        _entry(41, "Renouvellement du certificat", "certbot renew", ("certbot",)),
        _entry(42, "Sauvegarde restic en échec", "restic unlock après un arrêt", ("backup",)),
    ]
    text = ""
    for e in entries:
        text = journal.append(text, e)
    path = tmp_path / "journal.md"
    atomic_write(path, text)
    return path


def _titles(index: Path, path: Path, query: str) -> list[str]:
    found = search(index, [path], query)
    return [h.text.split(" · ")[1] for h in found.hits]


def test_a_paraphrase_meets_its_entry_through_synonyms(journal_file: Path, tmp_path: Path) -> None:
    """« stockage » meets « place », « saturé » « plein » (one word of two met by a synonym, the
    other by nothing, is too little of a question since the fifth round)."""
    index = tmp_path / "index.sqlite3"
    assert (
        _titles(index, journal_file, "stockage saturé")[0]
        == "Disque plein à cause des images Docker"
    )
    assert (
        _titles(index, journal_file, "the backup keeps failing")[0] == "Sauvegarde restic en échec"
    )


def test_the_word_itself_ranks_before_its_synonym(tmp_path: Path) -> None:
    text = ""
    for e in [
        _entry(1, "Partition saturée sur vps1", "surveiller", ("vps",)),
        _entry(2, "Partition pleine sur vps2", "surveiller", ("vps",)),
    ]:
        text = journal.append(text, e)
    path = tmp_path / "journal.md"
    atomic_write(path, text)
    titles = _titles(tmp_path / "index.sqlite3", path, "partition pleine")
    assert titles == ["Partition pleine sur vps2", "Partition saturée sur vps1"]


def test_what_the_journal_never_mentions_is_still_nothing(
    journal_file: Path, tmp_path: Path
) -> None:
    found = search(tmp_path / "index.sqlite3", [journal_file], "installer kubernetes avec helm")
    assert found.hits == []


def test_a_synonym_commoner_than_the_word_carries_less_of_it() -> None:
    assert searchterms.synonym_share(5, 3, 2_000) == searchterms.SYNONYM_COVER  # rarer: whole
    near = searchterms.synonym_share(3, 5, 2_000)
    assert 0.9 * searchterms.SYNONYM_COVER < near < searchterms.SYNONYM_COVER
    assert searchterms.synonym_share(3, 1_500, 2_000) < near / 10
