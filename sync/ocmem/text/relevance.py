"""What a search shows, from its rankings: one by the words and one by the meaning for each way
the question was put (``Phrasing``). Recall first: the best entries are shown whenever some entry
carries the question's words or its meaning, a weak match marked as weak; « rien de pertinent »
only when the evidence is really absent.

- **Fusion** (``fused``): reciprocal rank fusion of every list, k = 10. A phrasing's words list
  weighs (2 × the share of the question's weight its best entry carries)², at most 1: from half
  the question carried, as much as meaning; below, much less, since words that only brush an
  entry say little. Its meaning list weighs 1. Neither buries the other: the best of each list
  is near the top of the fused one.
- **« rien de pertinent »** (``nothing_relevant``): for every phrasing at once, the question names
  something the journal never mentions (a word no entry holds that no dictionary knows, or that
  is written as a name: « Kubernetes », « P2028 »), no entry carries half of the question's
  weight, and the words and the meaning do not agree on their best entry. An unanswerable
  question about the journal's own tools (« Stripe Connect ») is shown, its entries weak.
- **Weak** (``weak``): a shown entry that carries less than half of every phrasing's weight (found
  by meaning, or by a few of the words).

None of these numbers was fitted to a set: half is half; k = 10 and the words' weight were
chosen among four simple forms (1, a step at half, 2c, (2c)²) that rank the development sets
within three queries of each other (docs/benchmarks.md « Le sens »).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

HALF = 0.5
FUSION_K = 10


class Phrasing(NamedTuple):
    """One way the question was put, as the index ranked it."""

    words: Sequence[int]  # entry ids, best first by the words
    cover: Mapping[int, float]  # share of the question's weight each of them carries
    names: Sequence[str]  # names in the question that the journal never mentions
    meaning: Sequence[int]  # entry ids nearest in meaning, best first (none without vectors)
    shared: Sequence[str] = ()  # names in the question that some entry mentions

    @property
    def best_cover(self) -> float:
        return max(self.cover.values(), default=0.0)

    @property
    def agree(self) -> bool:
        """Whether the words and the meaning rank the same entry first."""
        return bool(self.words) and bool(self.meaning) and self.words[0] == self.meaning[0]

    @property
    def nothing(self) -> bool:
        """Whether this phrasing alone says « rien de pertinent »."""
        return bool(self.names) and not self.shared and self.best_cover < HALF and not self.agree


def words_weight(phrasing: Phrasing) -> float:
    """A phrasing's words list weighs 1 from half the question carried, less below (squared, as
    the rank weighs coverage: ``ocmem.text.searchterms.COVER_POWER``)."""
    return min(1.0, 2 * phrasing.best_cover) ** 2


def fused(phrasings: Sequence[Phrasing]) -> list[int]:
    """Every entry of every list, by their fused score (ties: the order they were met in)."""
    score: dict[int, float] = {}
    for phrasing in phrasings:
        for weight, ranked in ((words_weight(phrasing), phrasing.words), (1.0, phrasing.meaning)):
            for rank, entry in enumerate(ranked, start=1):
                score[entry] = score.get(entry, 0.0) + weight / (FUSION_K + rank)
    return sorted(score, key=lambda entry: -score[entry])


def nothing_relevant(phrasings: Sequence[Phrasing]) -> bool:
    return bool(phrasings) and all(p.nothing for p in phrasings)


def missing_names(phrasings: Sequence[Phrasing]) -> list[str]:
    """The names the journal never mentions, of every phrasing, each once."""
    return list(dict.fromkeys(name for p in phrasings for name in p.names))


def weak(covers: Sequence[float]) -> bool:
    """Whether an entry carrying ``covers`` of each phrasing's weight is a weak match."""
    return all(c < HALF for c in covers)
