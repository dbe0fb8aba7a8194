"""The words' side of the journal search (``ocmem.home.journalindex`` keeps the index and its
refresh, and fuses this with the meaning's side): the BM25 of the query's stems over the index,
re-ranked by the share of the question each entry carries (``ocmem.text.searchterms``), the names
the journal never mentions, and the hits read from the files; for the refresh, the ranks an index
already gives within a minute (``ranks_before``, issue 36) and whether new bytes need a damage
scan (``suspect``)."""

from __future__ import annotations

import contextlib
import heapq
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from ocmem.formats import journal
from ocmem.formats.journal import Damaged
from ocmem.home.atomic import open_file
from ocmem.text import searchterms as ranking

MAX_RECENT = 20
# a name of the question that at most this many entries mention is evidence (a product, a
# version's name, an error code): those entries are shown, never « rien de pertinent »
SHARED_MOST = 5  # every entry that mentions it fits in one answer
# title, tags, lesson (Leçon), pitfall (Piège), rest (Demande, Fait)
WEIGHTS = (4.0, 3.0, 2.0, 2.0, 1.0)


class Hit(NamedTuple):
    """One entry found: its reference, its file and its exact text (read from that file)."""

    ref: str
    file: Path
    text: str


class Found(NamedTuple):
    hits: list[Hit]
    total: int  # entries holding a word of the question (having the tags)
    # False when the index file could not be written (read-only, disk full): this search ran
    # on an index built in memory, and the next one will rebuild it again.
    saved: bool = True
    # True when the question names something the journal never mentions and no entry carries
    # it (``ocmem.text.relevance``): « rien de pertinent »; ``missing``: those names.
    nothing_relevant: bool = False
    missing: tuple[str, ...] = ()
    weak: frozenset[str] = frozenset()  # refs of the hits that are weak matches
    meaning: bool = False  # whether the meaning took part (vectors, encoder)
    pending: int = 0  # entries that have no vector yet (the background encodes them)
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


def newest(db: sqlite3.Connection, tags: Sequence[str], limit: int) -> Found:
    """The newest entries having every tag (a search without words)."""
    tag_filter, tag_args = tag_clause(tags)
    source = f"entries e WHERE 1{tag_filter}"
    total = db.execute(f"SELECT count(DISTINCT e.at) FROM {source}", tag_args).fetchone()
    rows = db.execute(
        f"SELECT e.file, e.start, e.stop, e.at FROM {source} ORDER BY e.at DESC LIMIT ?",
        [*tag_args, limit * 2],  # an entry may sit in the journal and an archive after a crash
    ).fetchall()
    return Found(hits(rows, limit), int(total[0]))


def tag_clause(tags: Sequence[str]) -> tuple[str, list[str]]:
    """The SQL condition on ``entries e`` that keeps the entries having every tag, its values."""
    return "".join(" AND instr(e.tags, ?) > 0" for _ in tags), [f" {t} " for t in tags]


def hits(rows: Iterable[Sequence[object]], limit: int) -> list[Hit]:
    """The entries at ``rows`` (file, start, stop, minute), each minute once, read from their
    files."""
    found: list[Hit] = []
    for name, start, stop, at in rows:
        if any(h.ref == f"journal {at}" for h in found):
            continue
        found.append(_hit(Path(str(name)), int(str(start)), int(str(stop)), str(at)))
        if len(found) == limit:
            break
    return found


class Words(NamedTuple):
    """The words' side of one phrasing: the entries ranked (ids, best first) with the share of
    the question's weight each carries, the names the journal never mentions, and what
    ``coverage_of`` needs for other entries."""

    ranked: list[int]
    cover: dict[int, float]
    names: list[str]
    shared: list[str]  # names in the question that some entry does mention (when ``names``)
    total: int  # entries holding a word of the question (having the tags)
    words: list[str]
    frequency: dict[str, int]
    size: int


def words_side(db: sqlite3.Connection, text: str, tags: Sequence[str]) -> Words | None:
    """BM25 of the stems of ``text`` over the index, the best candidates re-ranked by the share
    of the question they carry (``ocmem.text.searchterms.final``); None when ``text`` has no
    word."""
    surfaces = ranking.surfaces(text)
    words = list(surfaces)
    if not words:
        return None
    tag_filter, tag_args = tag_clause(tags)
    size = int(db.execute("SELECT count(*) FROM entries").fetchone()[0])
    frequency = {w: _frequency(db, w) for w in words}
    source = f"terms JOIN entries e ON e.id = terms.rowid WHERE terms MATCH ?{tag_filter}"
    expression = ranking.match_expression(words)
    total = db.execute(f"SELECT count(DISTINCT e.at) FROM {source}", [expression, *tag_args])
    scores = dict(
        db.execute(f"SELECT e.id, -bm25(terms, {_WEIGHTS}) FROM {source}", [expression, *tag_args])
    )
    candidates = heapq.nlargest(ranking.CANDIDATES, scores, key=scores.__getitem__)
    cover = {r: ranking.coverage(words, frequency, size, _terms_of(db, r)) for r in candidates}
    newest = dict(_minutes(db, candidates))
    ranked = sorted(
        candidates, key=lambda r: (ranking.final(scores[r], cover[r]), newest[r]), reverse=True
    )
    names = _names(db, text, [w for w in words if frequency[w] == 0], surfaces)
    # a name the journal does mention is evidence enough to show its entries (looked for only
    # when the question also names something absent: else nothing says « rien » anyway)
    shared: list[str] = []
    if names:
        rare = [w for w in words if frequency[w] and _frequency(db, w, False) <= SHARED_MOST]
        shared = _names(db, text, rare, surfaces) if rare else []
    return Words(ranked, cover, names, shared, int(total.fetchone()[0]), words, frequency, size)


def coverage_of(db: sqlite3.Connection, side: Words, rowid: int) -> float:
    """The share of ``side``'s question that entry ``rowid`` carries."""
    if rowid in side.cover:
        return side.cover[rowid]
    return ranking.coverage(side.words, side.frequency, side.size, _terms_of(db, rowid))


def _names(
    db: sqlite3.Connection,
    text: str,
    unknown: Sequence[str],
    surfaces: Mapping[str, frozenset[str]],
) -> list[str]:
    """The words of ``unknown`` that are names, as typed: written as a name, or no dictionary
    word (numbers are quantities, never names)."""
    unknown = [w for w in unknown if not w[:1].isdigit()]
    if not unknown:
        return []
    typed = ranking.typed_words(text)
    found: list[str] = []
    for word in unknown:
        forms = sorted(surfaces.get(word, ()))
        shaped = [f for f in forms if f in typed and ranking.name_shaped(*typed[f])]
        if shaped or not _in_dictionary(db, forms):
            form = (shaped or forms or [word])[0]
            found.append(typed[form][0] if form in typed else form)
    return found


def _minutes(db: sqlite3.Connection, ids: Sequence[int]) -> Iterable[tuple[int, str]]:
    marks = ", ".join("?" for _ in ids)
    return db.execute(f"SELECT id, at FROM entries WHERE id IN ({marks})", list(ids))


def locations(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[str, int, int, str]]:
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


def _in_dictionary(db: sqlite3.Connection, words: Iterable[str]) -> bool:
    """Whether one of ``words`` is a word of French or English (``ocmem.text.lexicon``)."""
    _fill_dictionary(db)
    return any(
        db.execute("SELECT 1 FROM dictionary WHERE word = ?", (w,)).fetchone() for w in words
    )


def _fill_dictionary(db: sqlite3.Connection) -> None:
    """Fills the index's table of dictionary words, once: at the first search that meets a word
    its journal never uses (0.3 s; most searches never do, and an index is often created for
    one)."""
    if db.execute("SELECT 1 FROM dictionary LIMIT 1").fetchone():
        return
    from ocmem.text import lexicon

    db.execute("BEGIN IMMEDIATE")
    try:
        if not db.execute("SELECT 1 FROM dictionary LIMIT 1").fetchone():  # filled meanwhile?
            db.executemany(
                "INSERT INTO dictionary VALUES (?)", ((w,) for w in lexicon.dictionary_words())
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
    # the header holds the entry's minute (and, written by an older ocmem, a rank)
    minute = f"## {at[:16]}".encode()
    header = chunk.startswith(minute) and chunk[len(minute) : len(minute) + 1] in (b" ", b"~")
    if not header or after not in (b"", b"#", b"\n"):
        raise Stale
    return Hit(f"journal {at}", path, chunk.decode("utf-8", errors="replace").rstrip("\n") + "\n")


def suspect(data: bytes, headers: int) -> bool:
    """Whether ``data``, holding ``headers`` entry headers, has a « ## » line that is none, or
    bytes that are not UTF-8."""
    if data.count(b"\n## ") + data.startswith(b"## ") != headers:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def ranks_before(
    db: sqlite3.Connection, name: str, base: int, earlier: Sequence[str], minutes: list[datetime]
) -> journal.Ranks:
    """The ranks the index holds at the ``minutes`` of the entries about to be indexed (by
    ``journalindex``'s refresh): in the files read before ``name`` (``earlier``) and in ``name``
    before ``base``. One query over their span: an append asks for one minute."""
    ranks = journal.Ranks()
    if not minutes:
        return ranks
    marks = ",".join("?" * len(earlier))
    rows = db.execute(
        f"SELECT at FROM entries WHERE at >= ? AND at < ? "
        f"AND (file IN ({marks}) OR (file = ? AND start < ?))",
        (
            f"{min(minutes):%Y-%m-%d %H:%M}",
            f"{max(minutes):%Y-%m-%d %H:%M}~~",
            *earlier,
            name,
            base,
        ),
    )
    for (at,) in rows:
        ranks.take(datetime.fromisoformat(at[:16]), int(at[17:] or 1))
    return ranks


class Recent(NamedTuple):
    header: str
    quarantined: bool  # written by an exposed session (journal.is_quarantined)
    ref: journal.Ref  # what cites it (its rank counted in its own file)


def recent_headers(texts: Iterable[str], n: int = MAX_RECENT) -> list[Recent]:
    """The header lines of the last ``n`` entries (20 at most), newest first.

    ``texts``: the journal, then its archives newest first; read lazily, so an archive is only
    read when the journal holds fewer than ``n`` entries. Each text is scanned from its end,
    header by header, without parsing the entries.
    """
    n = max(0, min(n, MAX_RECENT))
    found: list[Recent] = []
    for text in texts:
        end = len(text)
        while len(found) < n and end > 0:
            cut = text.rfind("\n## ", 0, end)
            start = cut + 1
            stop = text.find("\n", start, end)
            line = text[start : stop if stop >= 0 else end]
            header = journal.blocks(line + "\n")  # a valid header, as the journal reads it
            if header:
                when = header[0].when
                ref = journal.Ref(when, journal.rank_at(text, start, when))
                found.append(Recent(line, journal.is_quarantined(text[start:end]), ref))
            end = max(cut, 0)
        if len(found) >= n:
            break
    return found
