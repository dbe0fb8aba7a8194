"""Cheap, deterministic text similarity for deduplicating lessons (no model involved)."""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import NamedTuple

_STOPWORDS = frozenset(
    """
    a au aux avec ce ces cet cette dans de des du elle en est et il ils je la le les leur lui
    ma mais me mes mon ne ni nos notre nous on ou par pas pour qu que qui sa se ses si son sur
    ta te tes ton tu un une vos votre vous y d l j n s t c qu est sont etre avoir fait faut
    the an and are as at be by for from has have in is it its of on or that this to was were
    will with not no do does don use utiliser toujours jamais always never
    """.split()
)

_TOKEN = re.compile(r"[a-z0-9]+")


def fold(text: str) -> str:
    """Lowercase, without accents: the form every comparison and search works on."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in _TOKEN.findall(fold(text)) if t not in _STOPWORDS and len(t) > 1)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the meaningful words; texts made only of short or common words
    (« Use it », « Do it. ») are compared on all their words, so identical ones still match."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        ta, tb = frozenset(_TOKEN.findall(fold(a))), frozenset(_TOKEN.findall(fold(b)))
    return jaccard(ta, tb)


class Match(NamedTuple):
    item: str
    text: str
    score: float


def closest(
    query: str, candidates: Iterable[tuple[str, str]], limit: int = 3, minimum: float = 0.0
) -> Sequence[Match]:
    """The ``limit`` candidates most similar to ``query`` (best first, score > ``minimum``)."""
    query_tokens = tokens(query)
    scored = [Match(item, text, jaccard(query_tokens, tokens(text))) for item, text in candidates]
    ranked = sorted((m for m in scored if m.score > minimum), key=lambda m: -m.score)
    return ranked[:limit]
