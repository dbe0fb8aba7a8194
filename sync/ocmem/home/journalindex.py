"""Ranked search of the journal and its archives, through an SQLite FTS5 index kept as a cache.

The journal files stay the source of truth: the index (``<home>/.ocmem/journal-index.sqlite3``)
holds, per entry, its file, its byte range and its search terms, and every hit's text is read
back from the journal file. Deleting the index costs one rebuild (about a second for 10 000
entries); a corrupt, foreign or older-version index is rebuilt silently, and when it cannot be
written (locked for too long, read-only, disk full) the search runs on an index built in memory.

Refresh, before every search: a file whose size, mtime and inode are those recorded is skipped
without being read. Otherwise, since ocmem only appends, the bytes before its last indexed entry
are checked against their recorded digest: unchanged, only that last entry and what follows are
(re)indexed; changed (archiving rewrote the journal, a human edited it), the file is re-indexed
whole. Files no longer listed lose their entries. Refreshes run in one ``BEGIN IMMEDIATE``
transaction, re-reading the recorded state inside it, so concurrent ocmem processes neither
duplicate nor lose entries.

What a search shows (``ocmem.text.relevance``): two rankings per way the question is put, fused.
By the words (``ocmem.home.journalquery``): BM25 over five columns of stems
(``ocmem.text.searchterms``), weighted title > tags > lesson = pitfall > the rest; query words are
ORed, a stem of 4 letters or more also matches as a prefix (« certif » finds « certificat »), and
the best candidates are re-ranked by the share of the question's weight (IDF) they carry. By the
meaning (``ocmem.home.journalmeaning``, when the encoder is installed): the entries whose sentence
vectors are nearest the question's. « Rien de pertinent » only when the question names something
the journal never mentions and no entry carries it; a weak match is shown, marked. Ties go to the
newest entry. Tags filter exactly.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ocmem.errors import OcmemError, Refused
from ocmem.formats import journal
from ocmem.home import journalquery
from ocmem.home.atomic import open_file, status
from ocmem.home.journalquery import MAX_RECENT as MAX_RECENT
from ocmem.home.journalquery import Damage, Stale
from ocmem.home.journalquery import Found as Found
from ocmem.home.journalquery import Hit as Hit
from ocmem.home.journalquery import Recent as Recent
from ocmem.home.journalquery import recent_headers as recent_headers
from ocmem.home.journalvectors import entry_digest
from ocmem.text import relevance
from ocmem.text.searchterms import fold, terms

if TYPE_CHECKING:
    from ocmem.home.journalmeaning import Meaning

# Bump when the schema, the terms (stop-words, stemmer) or the columns change: an index of
# another version is rebuilt.
INDEX_VERSION = "8"  # 3: Snowball stems; 4: more search stop-words; 5: everyday words; 6: English
# glossary words, names kept whole; 7: digest and vector row; 8: ranks within a minute (issue 36)

# the column of each field's terms (-1: not searched): as written, then folded (a hand edit)
_COLUMNS = {"Leçon": 2, "Piège": 3, "Demande": 4, "Fait": 4, "Résultat": -1, "Exposition": -1}
_FOLDED_COLUMNS = {
    "lecon": 2,
    "piege": 3,
    "demande": 4,
    "fait": 4,
    "resultat": -1,
    "exposition": -1,
}
_FIELD = re.compile(r"- ([^:\n]{1,20}?) : ")
# after its newline: a literal start lets the regex engine skip ahead (10× faster than « ^|\n »)
_HEADER_LINE = re.compile(rb"\n## \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)? \xc2\xb7 ")
_BUSY_SECONDS = 2.0
_BATCH_SECONDS = 2.0  # encoding between two records of the background encoder
_READ_ATTEMPTS = 3

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL, stable INTEGER NOT NULL, digest TEXT NOT NULL);
CREATE TABLE entries(
    id INTEGER PRIMARY KEY, file TEXT NOT NULL, start INTEGER NOT NULL, stop INTEGER NOT NULL,
    at TEXT NOT NULL, tags TEXT NOT NULL, digest BLOB NOT NULL, vec INTEGER);
CREATE INDEX entries_file ON entries(file, start);
CREATE INDEX entries_vec ON entries(vec);
CREATE INDEX entries_digest ON entries(digest);
CREATE INDEX entries_unencoded ON entries(at) WHERE vec IS NULL;
CREATE VIRTUAL TABLE terms USING fts5(title, tags, lesson, pitfall, rest, tokenize='ascii');
CREATE TABLE dictionary(word TEXT PRIMARY KEY) WITHOUT ROWID;
"""


def search(
    index: Path,
    files: Sequence[Path],
    query: str,
    tags: Sequence[str] = (),
    limit: int = 5,
    *,
    alternatives: Sequence[str] = (),
    meaning: Meaning | None = None,
) -> Found:
    """The ``limit`` entries of ``files`` most relevant to ``query`` (and to each of its
    ``alternatives``: other ways of putting it, fused into one ranking) that have every tag.

    Without query words, the newest entries having the tags. ``index`` is the cache file, in
    ocmem's own state folder; ``files`` the journal then its archives; ``meaning``: the encoder
    and its vectors (``ocmem.home.journalmeaning``), None for the words alone.
    """
    wanted = [t for t in dict.fromkeys(fold(t.strip().lstrip("#")) for t in tags) if t]
    texts = [t for t in dict.fromkeys([query, *alternatives]) if t.strip()]
    for _ in range(_READ_ATTEMPTS):
        with contextlib.suppress(Stale):
            return _search_once(index, files, texts, wanted, max(1, limit), meaning)
    raise OcmemError(
        "le journal a changé pendant la recherche, plusieurs fois de suite",
        fix="relance la recherche",
    )


def _search_once(
    index: Path,
    files: Sequence[Path],
    texts: Sequence[str],
    tags: Sequence[str],
    limit: int,
    meaning: Meaning | None,
) -> Found:
    saved = True
    for attempt in range(2):
        try:
            db = _connect_file(index)
        except _NoFile as exc:
            saved = not exc.unwritable
            break
        try:
            damage = _refresh(db, files)
            return _answer(db, texts, tags, limit, meaning)._replace(damage=damage)
        except sqlite3.DatabaseError as exc:
            if _busy(exc):
                break  # locked beyond the busy timeout: this run gets an index in memory
            if _unwritable(exc):
                saved = False  # read-only, disk full: the file stays as it is, unused
                break
            # a table missing, a bad page…: removed once and rebuilt
        finally:
            db.close()
        if attempt == 0:
            _remove(index)
    db = _memory_connection()
    try:
        damage = _refresh(db, files)
        return _answer(db, texts, tags, limit, meaning)._replace(saved=saved, damage=damage)
    finally:
        db.close()


def _answer(
    db: sqlite3.Connection,
    texts: Sequence[str],
    tags: Sequence[str],
    limit: int,
    meaning: Meaning | None,
) -> Found:
    """The search over a refreshed index: each phrasing ranked by its words and by its meaning,
    fused (``ocmem.text.relevance``)."""
    sides = [(t, side) for t in texts if (side := journalquery.words_side(db, t, tags))]
    if not sides:
        return journalquery.newest(db, tags, limit)
    near: list[list[int]] = [[] for _ in sides]
    used, pending = False, 0
    if meaning is not None:
        from ocmem.home import journalmeaning

        found = journalmeaning.meaning_side(db, [t for t, _ in sides], tags, meaning)
        if found is not None:
            near, pending, used = found
    phrasings = [
        relevance.Phrasing(side.ranked, side.cover, side.names, n, side.shared)
        for (_, side), n in zip(sides, near, strict=True)
    ]
    total = max(side.total for _, side in sides)
    if relevance.nothing_relevant(phrasings):
        missing = tuple(relevance.missing_names(phrasings))
        return Found(
            [], total, nothing_relevant=True, missing=missing, meaning=used, pending=pending
        )
    order = relevance.fused(phrasings)[: limit * 4]
    places = journalquery.locations(db, order)
    located = [i for i in order if i in places]
    hits = journalquery.hits((places[i] for i in located), limit)
    shown = {places[i][3]: i for i in reversed(located)}  # each minute: its best entry
    weak = frozenset(
        h.ref
        for h in hits
        if relevance.weak(
            [
                journalquery.coverage_of(db, side, shown[h.ref.removeprefix("journal ")])
                for _, side in sides
            ]
        )
    )
    return Found(hits, max(total, len(hits)), weak=weak, meaning=used, pending=pending)


def encode_pending(
    index: Path,
    files: Sequence[Path],
    meaning: Meaning,
    lock: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> int | None:
    """Encodes every entry of ``files`` that has no sentence vector yet, newest first, a batch
    at a time (each recorded at once: stopped at any point, what was encoded stays); returns how
    many, or None when another process holds ``lock`` (it is encoding them). Background work: the
    gate's thread after an append, ``ocmem journal index``. ``progress(done, left)`` after each
    batch."""
    import fcntl

    from ocmem.home import journalmeaning

    try:
        fd = open_file(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except (OSError, Refused):
        return 0  # a read-only state folder, a link: nothing can be recorded here
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None
        done = 0
        while True:
            try:
                db = _connect_file(index)
            except _NoFile:
                return done
            try:
                _refresh(db, files)
                store = meaning.store(write=True)
                if store is None:
                    return done
                try:
                    journalmeaning.link(db, store)
                    count = journalmeaning.encode(db, store, meaning.encoder, _BATCH_SECONDS)
                    left = journalmeaning.pending(db)
                finally:
                    store.close()
            finally:
                db.close()
            done += count
            if progress is not None:
                progress(done, left)
            if count == 0 or left == 0:
                return done
    finally:
        os.close(fd)


def count_entries(data: bytes) -> tuple[int, bool]:
    """How many entries a journal's bytes hold, by their header lines (no parsing: 0.1 s for
    100 000 entries), and whether something may hide one (a « ## » line that is no header, bytes
    that are not UTF-8): ``ocmem.formats.journal.damage`` then says what."""
    headers = len(_header_starts(data, 0))
    return headers, journalquery.suspect(data, headers)


def recorded_count(index: Path, path: Path) -> int | None:
    """How many entries the journal file ``path`` holds, from the index, when it describes the
    file as it is now (same size, mtime, inode); else None (the file has to be read)."""
    if status(index) is None:
        return None
    try:
        db = sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=0.5)
    except sqlite3.Error:
        return None
    try:
        if _version(db) != INDEX_VERSION:
            return None
        recorded = _recorded(db).get(str(path))
        if recorded is None or recorded[0] != _stat(path):
            return None
        row = db.execute("SELECT count(*) FROM entries WHERE file = ?", (str(path),)).fetchone()
        return int(row[0])
    except sqlite3.Error:
        return None
    finally:
        db.close()


# --- the index file --------------------------------------------------------------------------


class _NoFile(Exception):
    """The index file cannot serve this run: in use beyond the busy timeout, or not writable
    (``unwritable``: a read-only folder or file, a full disk, a path of the wrong kind)."""

    def __init__(self, unwritable: bool):
        super().__init__()
        self.unwritable = unwritable


def _connect_file(index: Path) -> sqlite3.Connection:
    """The index at ``index``, of this version (a damaged or foreign one replaced once)."""
    for attempt in range(2):
        db: sqlite3.Connection | None = None
        try:
            # SQLite opens its file by name: a link there (or on the way) is refused first
            if status(index) is None:
                # private, like the journal it mirrors; created here so SQLite keeps the mode
                os.close(open_file(index, os.O_WRONLY | os.O_CREAT, 0o600))
            db = sqlite3.connect(index, timeout=_BUSY_SECONDS, isolation_level=None)
            if _ensure_schema(db):
                return db
        except sqlite3.OperationalError as exc:
            if _busy(exc) or _unwritable(exc):
                if db is not None:
                    db.close()
                # in use (not ours to remove) or not writable (it cannot be rebuilt here)
                raise _NoFile(unwritable=not _busy(exc)) from exc
        except sqlite3.DatabaseError:
            pass  # not a database, or a damaged one
        except OSError as exc:
            raise _NoFile(unwritable=True) from exc
        if db is not None:
            db.close()
        if attempt == 0:
            _remove(index)  # a cache of another version, or unreadable: rebuilt from the journal
    raise _NoFile(unwritable=True)  # still not an index of ours: it could not be replaced


def _busy(exc: sqlite3.Error) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


# SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN (sqlite3.h), and
# their messages for Python 3.10, whose exceptions do not carry the code
_UNWRITABLE_CODES = {3, 8, 10, 13, 14}
_UNWRITABLE_MESSAGES = (
    "readonly",
    "read-only",
    "disk i/o",
    "is full",
    "unable to open",
    "permission",
)


def _unwritable(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the index file cannot be written (rather than that it is damaged)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _UNWRITABLE_CODES
    return any(m in str(exc).lower() for m in _UNWRITABLE_MESSAGES)


def _remove(index: Path) -> None:
    for path in (index, index.with_name(index.name + "-journal")):
        with contextlib.suppress(OSError):  # gone already, or a read-only folder
            path.unlink()


def _ensure_schema(db: sqlite3.Connection) -> bool:
    """Whether ``db`` is an index of this version, once created if it was empty."""
    if _version(db) == INDEX_VERSION:
        return True
    db.execute("BEGIN IMMEDIATE")
    try:
        version = _version(db)  # another process may have just created it
        empty = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        if version is None and empty:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
            version = INDEX_VERSION
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    return version == INDEX_VERSION


def _version(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    except sqlite3.OperationalError as exc:
        if _busy(exc):
            raise
        return None  # no such table or column: not one of ours
    return str(row[0]) if row else None


def _memory_connection() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:", isolation_level=None)
    _ensure_schema(db)
    return db


# --- refresh ---------------------------------------------------------------------------------


class _Stat(NamedTuple):
    size: int
    mtime_ns: int
    inode: int


_MISSING = _Stat(0, 0, 0)


def _stat(path: Path) -> _Stat:
    st = status(path)
    if st is None:
        return _MISSING
    return _Stat(st.st_size, st.st_mtime_ns, st.st_ino)


def _recorded(db: sqlite3.Connection) -> dict[str, tuple[_Stat, int, str]]:
    return {
        name: (_Stat(size, mtime, inode), stable, digest)
        for name, size, mtime, inode, stable, digest in db.execute(
            "SELECT name, size, mtime_ns, inode, stable, digest FROM files"
        )
    }


def _refresh(db: sqlite3.Connection, files: Sequence[Path]) -> list[Damage]:
    """Bring the index up to ``files``; the damage met in what was read (``Damage``)."""
    names = {str(p): p for p in files}
    recorded = _recorded(db)
    if set(recorded) == set(names) and all(_stat(p) == recorded[n][0] for n, p in names.items()):
        return []  # the common case: nothing read, nothing written
    damage: list[Damage] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        recorded = _recorded(db)  # as left by whoever held the lock before us
        for name in set(recorded) - set(names):
            db.execute(
                "DELETE FROM terms WHERE rowid IN (SELECT id FROM entries WHERE file = ?)", (name,)
            )
            db.execute("DELETE FROM entries WHERE file = ?", (name,))
            db.execute("DELETE FROM files WHERE name = ?", (name,))
        # Read as references rank entries (journal.journal_blocks): the archives oldest first,
        # the journal last; a file read after one that changed is read whole (its ranks may
        # follow that one's).
        earlier: list[str] = []
        for name, path in reversed(names.items()):
            known = recorded.get(name) if len(damage) == 0 else None
            found = _refresh_file(db, name, path, known, earlier)
            if found is not None:
                damage.append(found)
            earlier.append(name)
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
    return damage


def _read(path: Path) -> tuple[bytes, _Stat]:
    """The file's bytes and the stat that goes with them (re-read if it grew while read)."""
    for _ in range(_READ_ATTEMPTS):
        try:
            handle = os.fdopen(open_file(path, os.O_RDONLY), "rb")
        except FileNotFoundError:
            return b"", _MISSING
        with handle:
            st = os.fstat(handle.fileno())
            data = handle.read()
        if len(data) == st.st_size:
            return data, _Stat(st.st_size, st.st_mtime_ns, st.st_ino)
    raise Stale


def _refresh_file(
    db: sqlite3.Connection,
    name: str,
    path: Path,
    recorded: tuple[_Stat, int, str] | None,
    earlier: Sequence[str] = (),
) -> Damage | None:
    if recorded is not None and _stat(path) == recorded[0]:
        return None
    data, stat = _read(path)
    base = 0
    if recorded is not None:
        _, stable, digest = recorded
        if len(data) >= stable and _digest(memoryview(data)[:stable]) == digest:
            base = stable  # appended to: the last entry and what follows only
    db.execute(
        "DELETE FROM terms WHERE rowid IN (SELECT id FROM entries WHERE file = ? AND start >= ?)",
        (name, base),
    )
    db.execute("DELETE FROM entries WHERE file = ? AND start >= ?", (name, base))
    last = base
    next_id = next_entry_id(db)
    entries: list[tuple[int, str, int, int, str, str, bytes]] = []
    columns: list[tuple[int, str, str, str, str, str]] = []
    spans = list(_spans(data, base))
    parsed = [
        (start, stop, _parse(data[start:stop].decode("utf-8", errors="replace")))
        for start, stop in spans
    ]
    new = [(start, stop, found) for start, stop, found in parsed if found is not None]
    unparsed = len(new) < len(spans)
    ranks = journalquery.ranks_before(db, name, base, earlier, [found[0] for _, _, found in new])
    for start, stop, (when, written, tag_text, terms_of) in new:
        at = journal.Ref(when, ranks.take(when, written)).stamp
        entries.append((next_id, name, start, stop, at, tag_text, entry_digest(data[start:stop])))
        columns.append((next_id, *terms_of))
        next_id += 1
        last = start
    db.executemany(
        "INSERT INTO entries(id, file, start, stop, at, tags, digest) VALUES (?, ?, ?, ?, ?, ?, ?)",
        entries,
    )
    db.execute("INSERT OR REPLACE INTO meta VALUES ('next_id', ?)", (str(next_id),))
    db.executemany(
        "INSERT INTO terms(rowid, title, tags, lesson, pitfall, rest) VALUES (?, ?, ?, ?, ?, ?)",
        columns,
    )
    if last == base:
        # No new entry: keep the previous stable point, or the start of the file.
        row = db.execute("SELECT max(start) FROM entries WHERE file = ?", (name,)).fetchone()
        last = int(row[0]) if row and row[0] is not None else 0
    db.execute(
        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
        (name, *stat, last, _digest(memoryview(data)[:last])),
    )
    # what hides an entry, in the bytes read anew (a « ## » line that is no header is read as
    # the end of the entry before it; bytes that are not UTF-8 are replaced): looked for line by
    # line only when the headers found or their count say something is off (2 s at 100 000)
    fresh = memoryview(data)[base:]
    found = []
    if unparsed or journalquery.suspect(bytes(fresh), len(spans)):
        first_line = data.count(b"\n", 0, base) + 1
        found = [
            (line, what, fix, at + base, raw)
            for line, what, fix, at, raw in journal.damage(bytes(fresh), first_line)
        ]
    return Damage(path, found, whole=base == 0)


def _digest(data: bytes | memoryview) -> str:
    import hashlib  # only when a file changed: OpenSSL's part costs a warm search 5 ms

    return hashlib.blake2b(data, digest_size=16).hexdigest()


def next_entry_id(db: sqlite3.Connection) -> int:
    """The id the next indexed entry gets: never one an entry had before (a vector row's entry
    is looked up once, by id)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()
    return int(row[0]) if row else 1


def _spans(data: bytes, base: int) -> Iterator[tuple[int, int]]:
    """(start, stop) byte offsets of the entries from ``base`` (an entry start, or 0)."""
    starts = _header_starts(data, base)
    if starts:
        yield from zip(starts, [*starts[1:], len(data)], strict=True)


def _header_starts(data: bytes, base: int) -> list[int]:
    """Where each entry's header begins, from ``base`` (an entry start, after a newline, or 0)."""
    starts = [m.start() + 1 for m in _HEADER_LINE.finditer(data, max(0, base - 1))]
    if base == 0 and _HEADER_LINE.match(b"\n" + data[:64]):
        starts.insert(0, 0)
    return starts


def _parse(chunk: str) -> tuple[datetime, int, str, tuple[str, str, str, str, str]] | None:
    """An entry's minute, the rank its header carries (0: none, ``journal.Ranks``), its tags
    (folded, space-delimited) and its five columns of terms."""
    found = journal.header(chunk)
    if found is None:
        return None
    when, written, title, tags = found
    # title, tags, lesson, pitfall, rest: each column's lines, then their terms at once
    columns: list[list[str]] = [[title], [" ".join(tags)], [], [], []]
    column = 4
    for line in chunk.split("\n")[1:]:
        if line.startswith("- "):
            field = _FIELD.match(line)
            if field:
                label = field.group(1)
                column = _COLUMNS.get(label, -2)
                if column == -2:
                    column = _FOLDED_COLUMNS.get(fold(label).strip(), 4)
                line = line[field.end() :]
        if column >= 0:
            columns[column].append(line)
    tag_text = " " + " ".join(fold(t) for t in tags) + " "
    c = [" ".join(terms("\n".join(lines))) for lines in columns]
    return when, written, tag_text, (c[0], c[1], c[2], c[3], c[4])
