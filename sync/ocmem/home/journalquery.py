"""The query side of the journal search (``ocmem.home.journalindex`` keeps the index and its
refresh): the BM25 of the query's stems over the index, their synonyms and related terms, the rank
and « rien de pertinent » (``ocmem.text.searchterms`` decides), and the hits read from the files."""

from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from ocmem.formats.journal import Damaged
from ocmem.home.atomic import open_file
from ocmem.text import searchterms as ranking

# title, tags, lesson (Leçon), pitfall (Piège), rest (Demande, Fait)
WEIGHTS = (4.0, 3.0, 2.0, 2.0, 1.0)


class Hit(NamedTuple):
    """One entry found: its reference, its file and its exact text (read from that file)."""

    ref: str
    file: Path
    text: str


class Found(NamedTuple):
    hits: list[Hit]
    total: int  # entries matching, of which ``hits`` are the best
    # False when the index file could not be written (read-only, disk full): this search ran
    # on an index built in memory, and the next one will rebuild it again.
    saved: bool = True
    # True when entries share words with the query but none carries enough of it: « rien de
    # pertinent » rather than a match invented from one common word.
    nothing_relevant: bool = False
    # what hides an entry, met in the journal files the refresh read (none when none changed)
    damage: Sequence[Damage] = ()


class Damage(NamedTuple):
    """The damage met in a journal file a refresh read (``ocmem.formats.journal.damage``): in
    all of it (``whole``), or in what was appended since the last refresh."""

    path: Path
    found: list[Damaged]
    whole: bool


class Stale(Exception):
    """A file changed between the refresh and the reading of a hit: refresh again."""


def query(
    db: sqlite3.Connection,
    words: Sequence[str],
    surfaces: Mapping[str, frozenset[str]],
    tags: Sequence[str],
    limit: int,
) -> Found:
    tag_filter = "".join(" AND instr(e.tags, ?) > 0" for _ in tags)
    tag_args = [f" {t} " for t in tags]
    if words:
        return _ranked(db, words, surfaces, tag_filter, tag_args, limit)
    source = f"entries e WHERE 1{tag_filter}"
    total = db.execute(f"SELECT count(DISTINCT e.at) FROM {source}", tag_args).fetchone()
    rows = db.execute(
        f"SELECT e.file, e.start, e.stop, e.at FROM {source} ORDER BY e.at DESC LIMIT ?",
        [*tag_args, limit * 2],  # an entry may sit in the journal and an archive after a crash
    ).fetchall()
    return Found(_hits(rows, limit), int(total[0]))


def _hits(rows: Iterable[Sequence[object]], limit: int) -> list[Hit]:
    hits: list[Hit] = []
    for name, start, stop, at in rows:
        if any(h.ref == f"journal {at}" for h in hits):
            continue
        hits.append(_hit(Path(str(name)), int(str(start)), int(str(stop)), str(at)))
        if len(hits) == limit:
            break
    return hits


def _ranked(
    db: sqlite3.Connection,
    words: Sequence[str],
    surfaces: Mapping[str, frozenset[str]],
    tag_filter: str,
    tag_args: list[str],
    limit: int,
) -> Found:
    """BM25 of the query's stems; when the best entry lacks part of the query, plus a lower
    weight of BM25 over their related terms; nothing when no entry shown carries enough of the
    query (``ocmem.text.searchterms.relevant``)."""
    size = int(db.execute("SELECT count(*) FROM entries").fetchone()[0])
    frequency = {w: _frequency(db, w) for w in words}
    words, surfaces = _known_beginnings(db, words, surfaces, frequency)
    source = f"terms JOIN entries e ON e.id = terms.rowid WHERE terms MATCH ?{tag_filter}"
    expression = ranking.match_expression(words)
    total = db.execute(f"SELECT count(DISTINCT e.at) FROM {source}", [expression, *tag_args])
    own_scores = _scored(db, source, expression, tag_args)
    candidates = heapq.nlargest(ranking.CANDIDATES, own_scores, key=own_scores.__getitem__)
    rows = _locations(db, candidates)
    best = max(rows, key=lambda r: (own_scores[r], rows[r][3]), default=None)
    best_terms = ranking.EntryTerms() if best is None else _terms_of(db, best)

    def scored(group: list[str]) -> dict[int, float]:
        return _scored(db, source, ranking.match_expression(group), tag_args)

    synonyms = ranking.Synonyms(words, frequency, size, best_terms, scored)
    if synonyms.per_word:
        _add_best(db, rows, synonyms.summed())
    related: dict[str, tuple[str, float]] = {}
    own = 0.0 if best is None else ranking.coverage(words, frequency, size, {}, best_terms)
    if own < ranking.EXPAND_BELOW:
        related = ranking.related(words, frequency, size, lambda w: _neighbours(db, w))
        for term in synonyms.credit:
            related.pop(term, None)
    expansion_scores: dict[int, float] = {}
    if related:
        expansion_scores = _scored(db, source, ranking.match_expression(list(related)), tag_args)
        _add_best(db, rows, expansion_scores)

    entry_terms = {r: _terms_of(db, r) for r in rows}

    def score(rowid: int) -> tuple[float, str]:
        own, expansion = own_scores.get(rowid, 0.0), expansion_scores.get(rowid, 0.0)
        synonym = synonyms.score(rowid, entry_terms.get(rowid, set()))
        cover = ranking.coverage(
            words, frequency, size, related, entry_terms[rowid], synonyms.credit
        )
        return ranking.final(ranking.combined(own, expansion, synonym), cover), rows[rowid][3]

    order = sorted(rows, key=score, reverse=True)
    hits = _hits((rows[r] for r in order), limit)
    refs = {h.ref for h in hits}
    shown = [r for r in order if f"journal {rows[r][3]}" in refs]
    unknown = [w for w in words if frequency[w] == 0 and not w.isdigit()]
    if unknown:
        _fill_everyday(db)
    wording = {w for w in unknown if _everyday(db, surfaces.get(w, ()))}
    specific = set(unknown) - wording
    if hits and not any(
        ranking.relevant(
            words,
            frequency,
            size,
            related,
            entry_terms[r],
            _fields_of(db, r),
            synonyms.credit,
            specific,
            wording,
        )
        for r in shown
    ):
        return Found([], int(total.fetchone()[0]), nothing_relevant=True)
    return Found(hits, int(total.fetchone()[0]))


def _add_best(
    db: sqlite3.Connection, rows: dict[int, tuple[str, int, int, str]], scores: dict[int, float]
) -> None:
    """Adds to ``rows`` the locations of the best-scored entries of ``scores`` not there yet."""
    more = heapq.nlargest(ranking.CANDIDATES, scores, key=scores.__getitem__)
    rows.update(_locations(db, [r for r in more if r not in rows]))


def _scored(
    db: sqlite3.Connection, source: str, expression: str, tag_args: list[str]
) -> dict[int, float]:
    """Every entry matching ``expression`` (and the tags), with its BM25 (higher is better)."""
    return dict(
        db.execute(f"SELECT e.id, -bm25(terms, {_WEIGHTS}) FROM {source}", [expression, *tag_args])
    )


def _locations(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[str, int, int, str]]:
    """Where each entry of ``ids`` is: its file, its byte range, its minute."""
    marks = ", ".join("?" for _ in ids)
    return {
        rowid: (name, start, stop, at)
        for rowid, name, start, stop, at in db.execute(
            f"SELECT id, file, start, stop, at FROM entries WHERE id IN ({marks})", list(ids)
        )
    }


_WEIGHTS = ", ".join(str(w) for w in WEIGHTS)


def _frequency(db: sqlite3.Connection, word: str, prefix: bool = True) -> int:
    """How many entries hold ``word`` (as a word, or as a prefix too when ``prefix``)."""
    expression = ranking.match_expression([word]) if prefix else f'"{word}"'
    row = db.execute("SELECT count(*) FROM terms WHERE terms MATCH ?", (expression,))
    return int(row.fetchone()[0])


def _neighbours(db: sqlite3.Connection, word: str) -> tuple[int, dict[str, tuple[int, int]]]:
    """The entries holding ``word`` exactly (a sample of them), and for each other term of those
    entries: in how many of the sample, in how many entries of the journal."""
    sample = [
        set(" ".join(row).split())
        for row in db.execute(
            "SELECT title, tags, lesson, pitfall, rest FROM terms WHERE terms MATCH ? LIMIT ?",
            (f'"{word}"', ranking.SAMPLE),
        )
    ]
    together = ranking.cooccurring(word, sample)
    if not together:
        return len(sample), {}
    everywhere = {t: _frequency(db, t, prefix=False) for t in together}
    return len(sample), {u: (c, everywhere[u]) for u, c in together.items()}


def _known_beginnings(
    db: sqlite3.Connection,
    words: Sequence[str],
    surfaces: Mapping[str, frozenset[str]],
    frequency: dict[str, int],
) -> tuple[list[str], dict[str, frozenset[str]]]:
    """The query's stems, each one the journal never uses replaced by the stem of the longest
    beginning of its word that the journal does use (« dockerisée » → « docker »:
    ``ocmem.text.searchterms.known_beginnings``); ``frequency`` and the surfaces follow."""
    found: list[str] = []
    by_stem = dict(surfaces)
    for word in words:
        term = word
        if frequency[word] == 0:
            for surface in sorted(surfaces.get(word, ())):
                term = next(
                    (t for t in ranking.known_beginnings(surface) if _frequency(db, t, False)),
                    word,
                )
                if term != word:
                    frequency.setdefault(term, _frequency(db, term))
                    by_stem[term] = by_stem.get(term, frozenset()) | surfaces[word]
                    break
        if term not in found:
            found.append(term)
    return found, by_stem


def _everyday(db: sqlite3.Connection, words: Iterable[str]) -> bool:
    """Whether every one of ``words`` (at least one) is an everyday word (``ocmem.text.lexicon``;
    ``_fill_everyday`` first)."""
    found = [db.execute("SELECT 1 FROM everyday WHERE word = ?", (w,)).fetchone() for w in words]
    return bool(found) and all(found)


def _fill_everyday(db: sqlite3.Connection) -> None:
    """Fills the index's table of everyday words, once: at the first search that meets a word its
    journal never uses (0.2 s; most searches never do, and an index is often created for one)."""
    if db.execute("SELECT 1 FROM everyday LIMIT 1").fetchone():
        return
    from ocmem.text import lexicon

    db.execute("BEGIN IMMEDIATE")
    try:
        if not db.execute("SELECT 1 FROM everyday LIMIT 1").fetchone():  # filled meanwhile?
            db.executemany(
                "INSERT INTO everyday VALUES (?)", ((w,) for w in lexicon.everyday_words())
            )
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


def _terms_of(db: sqlite3.Connection, rowid: int) -> ranking.EntryTerms:
    row = db.execute(
        "SELECT title, tags, lesson, pitfall, rest FROM terms WHERE rowid = ?", (rowid,)
    ).fetchone()
    return ranking.EntryTerms(" ".join(row).split() if row else ())


def _fields_of(db: sqlite3.Connection, rowid: int) -> list[ranking.EntryTerms]:
    """An entry's terms, per field (title, tags, lesson, pitfall, rest)."""
    row = db.execute(
        "SELECT title, tags, lesson, pitfall, rest FROM terms WHERE rowid = ?", (rowid,)
    ).fetchone()
    return [ranking.EntryTerms(field.split()) for field in row or ()]


def _hit(path: Path, start: int, stop: int, at: str) -> Hit:
    """The entry's exact text, read from the file at the indexed range.

    Appends since the refresh leave the range as it was; anything else (the file rewritten by
    archiving or by hand) shows as another header there, or none, and the search starts over.
    """
    try:
        handle = os.fdopen(open_file(path, os.O_RDONLY), "rb")
    except FileNotFoundError as exc:
        raise Stale from exc
    with handle:
        handle.seek(start)
        data = handle.read(stop - start + 1)
    chunk, after = data[: stop - start], data[stop - start :]
    # ``stop`` was the next header ("#"), or the end of the file, since appended to ("\n")
    if not chunk.startswith(f"## {at} · ".encode()) or after not in (b"", b"#", b"\n"):
        raise Stale
    return Hit(f"journal {at}", path, chunk.decode("utf-8", errors="replace").rstrip("\n") + "\n")
