"""Retrieval quality of ``ocmem journal search``, per part: the labelled set of the benchmark
journal, and the held-out parts (``tests/data/retrieval_holdout*.txt``: each written before a
round of tuning, never looked at while tuning). Prints recall@5, first-hit, MRR and the « rien de pertinent »
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
# reached on 2026-12-02. The targets of issue 25 (held-out recall@5 ≥ 95 %, first-hit ≥ 80 %,
# « rien de pertinent » ≥ 90 %) are judged on the parts held out from the last round, held-out 6
# and 7 together: paraphrases 144/144 (first 97.2 %), English 46/48 (95.8 %, first 85.4 %), all
# their answers 190/192 (99.0 %, first 94.3 %), « rien » 110/120 (91.7 %): met. Held-out 7's
# English questions alone miss (22/24, first 19/24). These floors say what is, not what is wanted.
# Held-out 1 (written by the session that tuned). First round (Snowball stems, related terms, the
# 30 % threshold): paraphrase 66.7 % / 66.7 % / 0.67, english 93.3 % / 86.7 % / 0.90, rien 75 %.
# Second round (the thesaurus ocmem.text.thesaurus, question stop-words): paraphrase 77.8 % /
# 77.8 % / 0.78, english 86.7 % / 80.0 % / 0.83, rien 83.3 %.
# Third round (the rank weighs the share of the query an entry carries, names the journal never
# met weigh more in « rien de pertinent », a word the journal lacks stands for a known beginning),
# tuned on the labelled set and the development files only. Held-out 2 (written blind) was scored
# before the round (paraphrase 86.1 % / 83.3 % / 0.84, english 100 % / 94.4 % / 0.96, rien 83.3 %)
# and, by mistake, once in its middle (aggregates only: paraphrase 80.6 %, rien 88.9 %); held-out 3
# (written blind) only once, after the round: paraphrase 91.7 % / 88.9 %, english 100 % / 94.4 %,
# rien 100 %.
# Fourth round (prefixes from 4-letter stems, the question's everyday words weigh less in « rien
# de pertinent », more thesaurus groups), tuned on the development files AND on held-out parts 1–3,
# whose misses were read: from then on they are development data. Held-out 4 (written blind by a
# writer who saw only the episodes' text, committed before the round's first change) was scored
# once, after the round (paraphrase 95.8 %, first 91.7 %, English 100 %, rien 86.7 %). Held-out 5,
# written blind after the round was frozen, was scored once too, with the same ranker: a second
# judgment of it (paraphrase 97.2 %, first 94.4 %, English 91.7 %, rien 86.7 %).
# Fifth round (« rien de pertinent » weighs the question's words an entry holds together and how
# many, more English glossary words, names the stemmer keeps whole), tuned on the development
# files and held-out parts 1–5 (4 and 5: 86.7 % → 93.3 % « rien »). Held-out 6 (written blind,
# with twice the « rien » questions, committed before the round's first change) was scored once,
# after the round; held-out 7 (the same recipe, written after the round was frozen) too.
FLOORS: dict[str, tuple[float, float, float, float]] = {
    "labelled": (56 / 58, 54 / 58, 0.945, 1.0),
    "held-out paraphrase": (16 / 18, 13 / 18, 0.805, 1.0),
    "held-out english": (13 / 15, 13 / 15, 0.865, 1.0),
    "held-out rien": (1.0, 1.0, 1.0, 11 / 12),
    "held-out 2 paraphrase": (36 / 36, 33 / 36, 0.94, 1.0),
    "held-out 2 english": (18 / 18, 16 / 18, 0.93, 1.0),
    "held-out 2 rien": (1.0, 1.0, 1.0, 17 / 18),
    "held-out 3 paraphrase": (35 / 36, 33 / 36, 0.935, 1.0),
    "held-out 3 english": (18 / 18, 17 / 18, 0.955, 1.0),
    "held-out 3 rien": (1.0, 1.0, 1.0, 24 / 24),
    "held-out 4 paraphrase": (69 / 72, 66 / 72, 0.935, 1.0),
    "held-out 4 english": (24 / 24, 22 / 24, 0.945, 1.0),
    "held-out 4 rien": (1.0, 1.0, 1.0, 28 / 30),
    "held-out 5 paraphrase": (71 / 72, 69 / 72, 0.965, 1.0),
    "held-out 5 english": (24 / 24, 24 / 24, 0.995, 1.0),
    "held-out 5 rien": (1.0, 1.0, 1.0, 28 / 30),
    "held-out 6 paraphrase": (72 / 72, 70 / 72, 0.98, 1.0),
    "held-out 6 english": (24 / 24, 22 / 24, 0.955, 1.0),
    "held-out 6 rien": (1.0, 1.0, 1.0, 55 / 60),
    "held-out 7 paraphrase": (72 / 72, 70 / 72, 0.985, 1.0),
    "held-out 7 english": (22 / 24, 19 / 24, 0.84, 1.0),
    "held-out 7 rien": (1.0, 1.0, 1.0, 55 / 60),
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
    assert all(scores[p].ranks for p in FLOORS if not p.endswith(" rien"))
    assert all(len(scores[p].nothing) >= 10 for p in FLOORS if p.endswith(" rien"))


@pytest.mark.parametrize("part", sorted(FLOORS))
def test_figures_of_each_part(scores: dict[str, Scores], part: str) -> None:
    score = scores[part]
    print(score.line())
    assert score.short_of(FLOORS[part]) == [], score.line()
