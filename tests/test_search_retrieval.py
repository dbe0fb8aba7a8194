"""Retrieval quality of ``ocmem journal search``, per part: the labelled set of the benchmark
journal, and the held-out part (``tests/data/retrieval_holdout.txt``: written before any tuning,
never looked at while tuning). Prints recall@5, first-hit, MRR and the « rien de pertinent »
precision, and asserts the figures reached (see docs/benchmarks.md for the targets)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Imported by name: the tests' type checking does not follow the benchmarks' package.
corpus = importlib.import_module("bench.journal_corpus")
Scores = Any  # bench.journal_corpus.Scores: part, ranks, nothing, recall, first, mrr, line()

# What each part keeps (recall@5, first-hit, MRR, « rien de pertinent » precision): the figures
# reached on 2026-12-02, measured once on the held-out part after the ranking was frozen. The
# targets of issue 25 (held-out recall@5 ≥ 95 %, first-hit ≥ 80 %, « rien de pertinent » ≥ 90 %)
# are NOT reached: these floors say what is, not what is wanted, and were not raised by tuning on
# the held-out queries (their misses were never printed).
# First round (Snowball stems, related terms, the 30 % threshold): labelled 96.6 % / 91.4 % / 0.94;
# paraphrase 66.7 % / 66.7 % / 0.67; english 93.3 % / 86.7 % / 0.90; rien 75 %.
# Second round (the thesaurus ocmem.text.thesaurus, question stop-words, synonyms' weight tied to
# their frequency), tuned on the labelled set and tests/data/retrieval_dev_2026-12-02.txt only:
# paraphrase 77.8 % / 77.8 % / 0.78; english 86.7 % / 80.0 % / 0.83 (one query fewer than the
# first round); rien 83.3 %.
FLOORS: dict[str, tuple[float, float, float, float]] = {
    "labelled": (56 / 58, 53 / 58, 0.935, 1.0),
    "held-out paraphrase": (14 / 18, 14 / 18, 0.775, 1.0),
    "held-out english": (13 / 15, 12 / 15, 0.83, 1.0),
    "held-out rien": (1.0, 1.0, 1.0, 10 / 12),
}


@pytest.fixture(scope="module")
def scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Scores]:
    text, evaluated = corpus.parts(2_000)
    found = corpus.evaluate(tmp_path_factory.mktemp("retrieval"), text, evaluated)
    for score in found:
        print(score.line())
    return {s.part: s for s in found}


def test_every_part_is_evaluated(scores: dict[str, Scores]) -> None:
    assert set(scores) == set(FLOORS)
    assert len(scores["labelled"].ranks) == 58
    assert all(scores[p].ranks for p in FLOORS if p != "held-out rien")
    assert len(scores["held-out rien"].nothing) >= 10


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_figures_of_each_part(scores: dict[str, Scores], part: str) -> None:
    score = scores[part]
    print(score.line())
    assert score.short_of(FLOORS[part]) == [], score.line()
