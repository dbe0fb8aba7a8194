"""Cheap, deterministic text similarity for deduplicating lessons (no model involved)."""

# No `from __future__ import annotations`: see ocmem.home.settings (NamedTuples on the hot path).

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ocmem.text.words import STOPWORDS, WORD, fold

__all__ = ["Match", "closest", "fold", "jaccard", "similarity", "tokens"]


def tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in WORD.findall(fold(text)) if t not in STOPWORDS and len(t) > 1)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the meaningful words; texts made only of short or common words
    (« Use it », « Do it. ») are compared on all their words, so identical ones still match."""
    ta, tb = tokens(a), tokens(b)
    if not ta or not tb:
        ta, tb = frozenset(WORD.findall(fold(a))), frozenset(WORD.findall(fold(b)))
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
