"""The meaning side of the journal search: which indexed entry has which sentence vector
(``ocmem.home.journalvectors``), the entries still to encode, and the entries nearest a query's
meaning.

An entry of the search index (``ocmem.home.journalindex``) holds the row of its vector
(``entries.vec``, NULL until encoded), found by its digest when the entry is indexed and set by
whoever encodes it. Encoding never holds a search up: a search uses what is encoded and the
lexical ranking for the rest, and encodes at most a few of the newest entries within its
``budget``; the rest is left to the gate's background thread or to ``ocmem journal index``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ocmem.errors import Refused
from ocmem.formats import journal
from ocmem.home.atomic import open_file
from ocmem.home.journalvectors import Unusable, Vectors, entry_digest, open_vectors
from ocmem.text import meaning

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# the entries nearest a query's meaning that a search looks at (per phrasing)
NEAREST = 50


class Meaning(NamedTuple):
    """What a search needs for meaning: the encoder, the store's two files, and how long it may
    spend encoding entries that have no vector yet (0: none, the background does it)."""

    encoder: meaning.Encoder
    database: Path
    rows: Path
    budget: float = 0.0

    def store(self, *, write: bool = False) -> Vectors | None:
        return open_vectors(self.database, self.rows, write=write)


class Side(NamedTuple):
    """The meaning's side of a search: per phrasing, the nearest entries (ids, best first); how
    many entries have no vector yet; whether meaning took part at all."""

    near: list[list[int]]
    pending: int
    used: bool


def meaning_side(
    db: sqlite3.Connection, texts: Sequence[str], tags: Sequence[str], meaning: Meaning
) -> Side | None:
    """The entries nearest each of ``texts`` in meaning, after encoding a few of the newest
    entries that have no vector (``meaning.budget``); None when meaning cannot take part (no
    store and none can be made, an encoder that fails): the words answer alone."""
    from ocmem.home.journalquery import tag_clause

    try:
        store = meaning.store(write=True) or meaning.store()
        if store is None:
            return Side([[] for _ in texts], pending(db), used=False)
        try:
            link(db, store)
            if meaning.budget > 0:
                encode(db, store, meaning.encoder, meaning.budget)
            left = pending(db)
            vectors = meaning.encoder.queries(texts)
            found = nearest(db, store, vectors, *tag_clause(tags))
        finally:
            store.close()
    except (sqlite3.Error, OSError, RuntimeError, ImportError, Unusable):
        return None  # locked, read-only, a broken engine: the words answer; doctor says why
    near = found or [[] for _ in texts]
    return Side(near, left, used=True)


def link(db: sqlite3.Connection, store: Vectors) -> None:
    """Gives the entries indexed since the last call the row of their vector, when the store
    has one (an entry archived or re-indexed keeps its vector); all of them again when the
    store was started anew."""
    linked = _meta(db, "vectors")
    seen = int(_meta(db, "linked") or 0)
    if linked != store.ident:
        seen = 0
    newest = int(_meta(db, "next_id") or 1)  # journalindex.next_entry_id: no import cycle
    if seen >= newest and linked == store.ident:
        return
    _write(db, lambda: _link(db, store, seen, linked != store.ident, newest))


def _link(db: sqlite3.Connection, store: Vectors, seen: int, anew: bool, newest: int) -> None:
    if anew:
        db.execute("UPDATE entries SET vec = NULL WHERE vec IS NOT NULL")
    rows = db.execute("SELECT id, digest FROM entries WHERE id >= ? AND vec IS NULL", (seen,))
    found = rows.fetchall()
    known = store.rows_of(bytes(d) for _, d in found)
    db.executemany(
        "UPDATE entries SET vec = ? WHERE id = ?",
        [(known[bytes(d)], i) for i, d in found if bytes(d) in known],
    )
    db.executemany(
        "INSERT OR REPLACE INTO meta VALUES (?, ?)",
        (("vectors", store.ident), ("linked", str(newest))),
    )


def pending(db: sqlite3.Connection) -> int:
    """How many indexed entries have no vector yet."""
    return int(db.execute("SELECT count(*) FROM entries WHERE vec IS NULL").fetchone()[0])


def encode(
    db: sqlite3.Connection,
    store: Vectors,
    encoder: meaning.Encoder,
    budget: float,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Encodes entries without a vector, newest first, for about ``budget`` seconds (the first
    batch always runs); returns how many. Each batch is recorded at once: stopped at any point,
    what was encoded stays."""
    started = clock()
    done = 0
    batch = 1
    skipped: set[int] = set()
    while True:
        todo = [
            r
            for r in db.execute(
                "SELECT id, file, start, stop, digest FROM entries WHERE vec IS NULL "
                "ORDER BY at DESC LIMIT ?",
                (batch + len(skipped),),
            )
            if r[0] not in skipped
        ][:batch]
        if not todo:
            return done
        texts: list[str] = []
        digests: list[bytes] = []
        for rowid, name, start, stop, digest in todo:
            text = _passage_at(Path(name), start, stop, bytes(digest))
            if text is None:
                skipped.add(rowid)  # changed since indexed: the next refresh indexes it anew
                continue
            texts.append(text)
            digests.append(bytes(digest))
        if texts:
            before = clock()
            rows = store.add(digests, encoder.passages(texts))
            _write(db, functools.partial(_record, db, rows))
            done += len(texts)
            per_entry = (clock() - before) / len(texts)
            left = budget - (clock() - started)
            if left <= per_entry:
                return done
            batch = max(1, min(16, int(left / max(per_entry, 1e-3))))


def _record(db: sqlite3.Connection, rows: dict[bytes, int]) -> None:
    db.executemany("UPDATE entries SET vec = ? WHERE digest = ?", [(r, d) for d, r in rows.items()])


def nearest(
    db: sqlite3.Connection,
    store: Vectors,
    queries: NDArray[np.float32],
    tag_filter: str,
    tag_args: Sequence[str],
) -> list[list[int]]:
    """For each query vector, the ``NEAREST`` encoded entries (having the tags), best first."""
    import numpy as np

    tagged: list[int] = []
    if tag_args:
        pairs = db.execute(
            f"SELECT e.id, e.vec FROM entries e WHERE e.vec IS NOT NULL{tag_filter}", tag_args
        ).fetchall()
        tagged = [int(i) for i, _ in pairs]
        cosines = store.scores(queries, [int(v) for _, v in pairs])
    else:
        cosines = store.scores(queries)
    found: list[list[int]] = []
    for column in cosines.T:
        if len(column) == 0:
            return []
        order = [int(r) for r in np.argsort(-column)[: NEAREST * 3]]
        ids = [tagged[r] for r in order] if tag_args else _entries_of_rows(db, order)
        found.append(ids[:NEAREST])
    return found


def _entries_of_rows(db: sqlite3.Connection, rows: list[int]) -> list[int]:
    """The entries whose vectors are ``rows`` (best first); a row no entry holds any more (an
    edited entry's old vector) is skipped."""
    marks = ", ".join("?" for _ in rows)
    by_row: dict[int, list[int]] = {}
    for rowid, vec in db.execute(f"SELECT id, vec FROM entries WHERE vec IN ({marks})", rows):
        by_row.setdefault(int(vec), []).append(int(rowid))
    return [i for r in rows for i in by_row.get(r, [])]


def passage(chunk: str) -> str:
    """What is encoded of an entry's text (``ocmem.text.meaning.entry_text``): its title, tags
    and fields as written, without the result and exposure lines; read leniently, so that an
    entry edited by hand is encoded too."""
    lines = journal.readable(chunk.rstrip("\n")).split("\n")
    found = journal.header(lines[0])
    title, tags = (found[2], found[3]) if found is not None else (lines[0].lstrip("# "), ())
    fields: list[str] = []
    pitfall = ""
    for line in lines[1:]:
        label, _, value = line.partition(" : ")
        label = label.removeprefix("- ").strip()
        if label in ("Résultat", journal.EXPOSURE_LABEL):
            continue
        if label == "Piège":
            pitfall = value
        elif label in ("Demande", "Fait", "Leçon") and line.startswith("- "):
            fields.append(value)
        elif line.strip():
            fields.append(line.strip())
    return meaning.entry_text(title, tags, fields, pitfall)


def _passage_at(path: Path, start: int, stop: int, digest: bytes) -> str | None:
    """The passage of the entry at ``path``'s byte range, if it is still the entry indexed."""
    try:
        with os.fdopen(open_file(path, os.O_RDONLY), "rb") as handle:
            handle.seek(start)
            chunk = handle.read(stop - start)
    except (OSError, Refused):
        return None
    if entry_digest(chunk) != digest:
        return None
    return passage(chunk.decode("utf-8", errors="replace"))


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row else None


def _write(db: sqlite3.Connection, change: Callable[[], None]) -> None:
    db.execute("BEGIN IMMEDIATE")
    try:
        change()
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
