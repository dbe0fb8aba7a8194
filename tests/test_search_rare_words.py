"""Issue 34: a question that shares a rare word with an entry (a product, a version's name, an
error code: a word written as a name or that no dictionary knows, which few entries mention) is
never answered « rien de pertinent », whatever else it says — everyday words, English, names the
journal never mentions. A property over the benchmark journal (``bench.journal_corpus``), by the
words alone: the meaning can only add evidence (``ocmem.text.relevance``)."""

from __future__ import annotations

import importlib
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ocmem.formats import journal
from ocmem.home import journalindex
from ocmem.text import lexicon
from ocmem.text.searchterms import name_shaped, terms
from ocmem.text.words import fold

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
corpus = importlib.import_module("bench.journal_corpus")

RARE_MOST = 3  # entries that mention the word, at most (the search shows 5)
TOKEN = re.compile(r"[^\W_]+")  # as the search splits words: at « - », « _ », « . »…
EVERYDAY = (
    "comment pourquoi erreur problème serveur après encore toujours plus la le sur avec depuis "
    "why error after again still the on with fails broken how"
).split()


def rare_words(text: str) -> list[tuple[str, str]]:
    """(word as written, the entry's header) for every rare word of the journal ``text``: few
    entries hold its stem (a word as the search reads it: « commité » is « commit »)."""
    dictionary = set(lexicon.dictionary_words())
    blocks = journal.blocks(text)
    held = [set(terms(b.text)) for b in blocks]
    count = Counter(stem for stems in held for stem in stems)
    found = []
    for block in blocks:
        for typed in dict.fromkeys(TOKEN.findall(block.text)):
            stems = terms(typed)
            if len(stems) != 1 or count[stems[0]] > RARE_MOST or typed[0].isdigit():
                continue
            if len(typed) < 4:
                continue
            # a product, a version's name, an error code: written as a name, or no word
            if name_shaped(typed, first=True) or fold(typed) not in dictionary:
                found.append((typed, block.text.split("\n", 1)[0]))
    return found


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[tuple[str, str]]]:
    text, _ = corpus.build(600)
    root = tmp_path_factory.mktemp("rare")
    path = root / "journal.md"
    path.write_text(text, encoding="utf-8")
    words = rare_words(text)
    assert len(words) > 40  # products, versions, error codes of the episodes
    return root / "index.sqlite3", path, words


@given(
    pick=st.integers(min_value=0),
    everyday=st.lists(st.sampled_from(EVERYDAY), max_size=5),
    absent=st.lists(st.from_regex(r"[A-Z][a-z]{3,7}[A-Z][a-z]{2,5}", fullmatch=True), max_size=3),
    order=st.randoms(use_true_random=False),
)
def test_a_shared_rare_word_is_never_answered_nothing(
    searched: tuple[Path, Path, list[tuple[str, str]]],
    pick: int,
    everyday: list[str],
    absent: list[str],
    order: object,
) -> None:
    index, path, words = searched
    word, header = words[pick % len(words)]
    parts = [word, *everyday, *absent]
    order.shuffle(parts)  # type: ignore[attr-defined]
    query = " ".join(parts)
    found = journalindex.search(index, [path], query)
    assert found.hits, (query, header, found.missing)
