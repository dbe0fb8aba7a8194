"""False-positive and miss rates of the personal-data and prose-secret guards on labelled lines.

``tests/data/sensitive_corpus.txt`` was written before the detectors; ``sensitive_holdout.txt``
after their rules were settled. The figures are printed (``pytest -s``) and kept in
docs/security.md.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ocmem.guards.personal import ADDRESS, CARD, EMAIL, IBAN, PHONE, find_personal_data
from ocmem.guards.textsafety import find_secrets

DATA = Path(__file__).parent / "data"
FILES = ("sensitive_corpus.txt", "sensitive_holdout.txt")
KINDS = {"email": EMAIL, "phone": PHONE, "address": ADDRESS, "iban": IBAN, "card": CARD}
MAX_FALSE_POSITIVES = 0.02
MAX_MISSES = 0.05


def load(name: str) -> list[tuple[str, str]]:
    samples = []
    for raw in (DATA / name).read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            label, text = raw.split(None, 1)
            samples.append((label, text))
    return samples


def is_flagged(label: str, text: str) -> bool:
    """Clean lines: flagged by any guard. Dirty lines: flagged as their own kind."""
    if label == "clean":
        return bool(find_secrets(text) or find_personal_data(text))
    if label == "secret":
        return bool(find_secrets(text))
    return KINDS[label] in {f.kind for f in find_personal_data(text)}


def test_the_corpus_is_large_and_labelled() -> None:
    labels = Counter(label for name in FILES for label, _ in load(name))
    assert set(labels) == {"clean", "secret", *KINDS}
    assert labels["clean"] >= 200
    assert sum(labels.values()) - labels["clean"] >= 100


def test_false_positive_and_miss_rates() -> None:
    total: Counter[str] = Counter()
    wrong: Counter[str] = Counter()
    wrong_lines: list[str] = []
    for name in FILES:
        for label, text in load(name):
            flagged = is_flagged(label, text)
            total[label] += 1
            if flagged == (label == "clean"):
                wrong[label] += 1
                wrong_lines.append(f"{label}: {text}")
    dirty = sum(total.values()) - total["clean"]
    false_positives = wrong["clean"] / total["clean"]
    misses = (sum(wrong.values()) - wrong["clean"]) / dirty
    print(f"\nfalse positives: {wrong['clean']}/{total['clean']} = {false_positives:.1%}")
    print(f"misses: {sum(wrong.values()) - wrong['clean']}/{dirty} = {misses:.1%}")
    for label in sorted(total):
        print(f"  {label}: {wrong[label]}/{total[label]} wrong")
    print("\n".join(f"  {line}" for line in wrong_lines))
    assert false_positives <= MAX_FALSE_POSITIVES, wrong_lines
    assert misses <= MAX_MISSES, wrong_lines
