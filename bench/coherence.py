"""The spec's « Cohérence » rule for prose (issue 36, ``ocmem.text.coherence``) on its corpus,
``tests/data/coherence.yaml``: contradictions missed and false flags, per part.

``dev`` was read while the rule was built, ``heldout`` only measured: both are development
figures (same hand for the corpus and the rule). The targets are the floors the rule reached
(docs/benchmarks.md, « Prose against prose »); a MISS names the pairs it got wrong.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from bench.common import BenchResult, Row, verdict

NAME = "coherence"
TITLE = "The coherence rule on its corpus: contradictions missed, false flags"
CORPUS_FILE = Path(__file__).resolve().parents[1] / "tests/data/coherence.yaml"
# (missed, false flags) at most: what the rule reached.
FLOORS = {"dev": (2, 0), "heldout": (1, 0)}


def errors(cases: list[dict[str, str]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The contradictions the rule missed and the compatible pairs it flagged."""
    from ocmem.text import coherence

    missed, false_flags = [], []
    for case in cases:
        found = coherence.between(case["new"], case["held"])
        if case["label"] == "contradiction" and found is None:
            missed.append(case)
        elif case["label"] == "compatible" and found is not None:
            false_flags.append(case)
    return missed, false_flags


def run(quick: bool = False) -> BenchResult:
    del quick  # a few hundred sentence pairs: the whole corpus either way
    result = BenchResult(NAME, TITLE)
    corpus: dict[str, list[dict[str, str]]] = yaml.safe_load(
        CORPUS_FILE.read_text(encoding="utf-8")
    )
    for part, (most_missed, most_false) in FLOORS.items():
        cases = corpus[part]
        missed, false_flags = errors(cases)
        contradictions = sum(c["label"] == "contradiction" for c in cases)
        result.add(
            Row(
                f"{part}: contradictions missed, false flags",
                f"{len(missed)}/{contradictions}, {len(false_flags)}/{len(cases) - contradictions}",
                target=f"≤ {most_missed}, ≤ {most_false}",
                verdict=verdict(len(missed) <= most_missed and len(false_flags) <= most_false),
            )
        )
        for case in missed + false_flags:
            result.note(f"{part}, {case['label']}: {case['new']} | {case['held']}")
    return result


if __name__ == "__main__":
    from bench.run import main

    main(["--only", NAME])
