"""False refusals of the secret, personal-data and injection guards on the project's own clean text: every
entry of the benchmark journal (``bench/journal_corpus.py``, 2 000 entries), every search query
(its labelled ones and ``tests/data/retrieval_*.txt``), the clean lines of
``tests/data/sensitive_*.txt`` and the memory and skill files ocmem ships. None is refused.

The figures are printed (``pytest -s``) and kept in docs/security.md. Also printed: how many
texts wake detect-secrets up (``detectsecrets.may_hold_token``), whose import the write pays.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from pathlib import Path

from ocmem.formats import journal
from ocmem.guards.detectsecrets import may_hold_token
from ocmem.guards.homoglyphs import latin_skeleton
from ocmem.guards.personal import find_personal_data
from ocmem.guards.textsafety import find_injection, find_secrets

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Imported by name: the tests' type checking does not follow the benchmarks' package.
corpus = importlib.import_module("bench.journal_corpus")


def clean_texts() -> list[tuple[str, str]]:
    """(source, text) of every clean text of the corpora."""
    texts: list[tuple[str, str]] = []
    built, queries = corpus.build(2_000)
    texts += [("journal", block.text) for block in journal.blocks(built)]
    texts += [("query", query.text) for query in queries]
    for path in sorted((ROOT / "tests/data").glob("retrieval_*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith(("#", "[")):
                texts.append(("query", line.split(" => ")[0]))
    # The search's sets written blind: a sysadmin's journal each, and their queries.
    for folder in sorted((ROOT / "tests/data").glob("search_*")):
        texts += [
            ("blind journal", block.text)
            for block in journal.blocks((folder / "journal.md").read_text(encoding="utf-8"))
        ]
        for line in (folder / "queries.txt").read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith(("#", "[")):
                texts.append(("query", line.split(" => ")[0]))
    for path in sorted((ROOT / "tests/data").glob("sensitive_*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("clean"):
                texts.append(("clean line", line.split(None, 1)[1]))
    for path in sorted([*(ROOT / "memory").glob("*.md"), *(ROOT / "skills").rglob("*.md")]):
        texts.append(("shipped file", path.read_text(encoding="utf-8")))
    return texts


def test_no_clean_text_of_the_corpora_is_refused() -> None:
    texts = clean_texts()
    total = Counter(source for source, _ in texts)
    assert total["journal"] == 2_000 and total["query"] > 900 and total["clean line"] > 300
    assert total["blind journal"] == 1_000
    refused = [
        (source, text[:200], findings)
        for source, text in texts
        if (findings := find_secrets(text) + find_personal_data(text) + find_injection(text))
    ]
    woken = Counter(
        source
        for source, text in texts
        if any(map(may_hold_token, latin_skeleton(text).split("\n")))
    )
    print(f"\nclean texts refused: {len(refused)}/{len(texts)} ({dict(total)})")
    print(f"texts that import detect-secrets: {sum(woken.values())} ({dict(woken)})")
    assert not refused, refused
