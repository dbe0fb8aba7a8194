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

Ranking (``ocmem.home.journalquery``): BM25 over five columns of stems (``ocmem.text.searchterms``), weighted
title > tags > lesson = pitfall > the rest (request, what was done); query words are ORed, so
a question in natural words ranks the entries sharing the most (and the rarest) of its words
first, and a stem of 4 letters or more also matches as a prefix (« certif » finds
« certificat »; « ssh » does not find « sshd »), exact matches counting more. Ties go to the
newest entry. Tags filter exactly.
Synonyms from a small thesaurus of server work (``ocmem.text.thesaurus``: « saturé » → « plein »,
"unreachable" → « injoignable ») add their BM25 at a lower weight, for an entry that lacks the
query's own word. When the best entry lacks part of the query, terms the journal itself relates
to the query's stems (``ocmem.text.searchterms.related``: « espace » → « disque ») add theirs,
lower still. The rank is that BM25 times a power of the share of the query's weight an entry
carries: the more of the question's distinct words, the sooner. When no entry shown holds
enough of the question (``ocmem.text.searchterms.evidence``: the share of its weight, IDF, an
entry carries, the share one of its fields carries alone, how many of its words), the answer is
« rien de pertinent » (``Found.nothing_relevant``), not a match made of one common word, or of
one rare word met in passing; a query word the journal never
uses weighs more there when it is no everyday word either (``ocmem.text.lexicon``: a name such as
« htpasswd »), less when it is one (wording such as « dehors »).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from ocmem.errors import OcmemError
from ocmem.formats import journal
from ocmem.home import journalquery
from ocmem.home.atomic import open_file, status
from ocmem.home.journalquery import Damage, Stale
from ocmem.home.journalquery import Found as Found
from ocmem.home.journalquery import Hit as Hit
from ocmem.text.searchterms import fold, terms
from ocmem.text.searchterms import surfaces as query_surfaces

# Bump when the schema, the terms (stop-words, stemmer) or the columns change: an index of
# another version is rebuilt.
INDEX_VERSION = "6"  # 3: Snowball stems (PyStemmer); 4: more search stop-words; 5: everyday words;
# 6: English glossary words (hour, late, last, project, two), stop-words (one, myself, out), names
# kept whole (gitea, redis, composer)
MAX_RECENT = 20

_COLUMNS = {"lecon": 2, "piege": 3, "demande": 4, "fait": 4, "exposition": -1}
_FIELD = re.compile(r"- ([^:\n]{1,20}?) : ")
_HEADER_START = re.compile(rb"(?:^|\n)## \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?:~\d+)? \xc2\xb7 ")
_BUSY_SECONDS = 2.0
_READ_ATTEMPTS = 3

_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files(
    name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL, stable INTEGER NOT NULL, digest TEXT NOT NULL);
CREATE TABLE entries(
    id INTEGER PRIMARY KEY, file TEXT NOT NULL, start INTEGER NOT NULL, stop INTEGER NOT NULL,
    at TEXT NOT NULL, tags TEXT NOT NULL);
CREATE INDEX entries_file ON entries(file, start);
CREATE VIRTUAL TABLE terms USING fts5(title, tags, lesson, pitfall, rest, tokenize='ascii');
CREATE TABLE everyday(word TEXT PRIMARY KEY) WITHOUT ROWID;
"""


def search(
    index: Path, files: Sequence[Path], query: str, tags: Sequence[str] = (), limit: int = 5
) -> Found:
    """The ``limit`` entries of ``files`` most relevant to ``query`` that have every tag.

    Without query words, the newest entries having the tags. ``index`` is the cache file, in
    ocmem's own state folder; ``files`` the journal then its archives.
    """
    wanted = [t for t in dict.fromkeys(fold(t.strip().lstrip("#")) for t in tags) if t]
    surfaces = query_surfaces(query)
    words = list(surfaces)
    for _ in range(_READ_ATTEMPTS):
        with contextlib.suppress(Stale):
            return _search_once(index, files, words, surfaces, wanted, max(1, limit))
    raise OcmemError(
        "le journal a changé pendant la recherche, plusieurs fois de suite",
        fix="relance la recherche",
    )


def _search_once(
    index: Path,
    files: Sequence[Path],
    words: Sequence[str],
    surfaces: Mapping[str, frozenset[str]],
    tags: Sequence[str],
    limit: int,
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
            return journalquery.query(db, words, surfaces, tags, limit)._replace(damage=damage)
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
        found = journalquery.query(db, words, surfaces, tags, limit)
        return found._replace(saved=saved, damage=damage)
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
        for name, path in names.items():
            found = _refresh_file(db, name, path, recorded.get(name))
            if found is not None:
                damage.append(found)
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
    db: sqlite3.Connection, name: str, path: Path, recorded: tuple[_Stat, int, str] | None
) -> Damage | None:
    if recorded is not None and _stat(path) == recorded[0]:
        return None
    data, stat = _read(path)
    base = 0
    if recorded is not None:
        _, stable, digest = recorded
        if len(data) >= stable and _digest(memoryview(data)[:stable]) == digest:
            base = stable  # appended to: the last entry and what follows only
    # what hides an entry, in the bytes read anew (a « ## » line that is no header is read as
    # the end of the entry before it; bytes that are not UTF-8 are replaced)
    found = [
        (line, what, fix, at + base, raw)
        for line, what, fix, at, raw in journal.damage(data[base:], data.count(b"\n", 0, base) + 1)
    ]
    db.execute(
        "DELETE FROM terms WHERE rowid IN (SELECT id FROM entries WHERE file = ? AND start >= ?)",
        (name, base),
    )
    db.execute("DELETE FROM entries WHERE file = ? AND start >= ?", (name, base))
    last = base
    for start, stop in _spans(data, base):
        chunk = data[start:stop].decode("utf-8", errors="replace")
        parsed = _parse(chunk)
        if parsed is None:
            continue
        at, tag_text, columns = parsed
        cursor = db.execute(
            "INSERT INTO entries(file, start, stop, at, tags) VALUES (?, ?, ?, ?, ?)",
            (name, start, stop, at, tag_text),
        )
        db.execute(
            "INSERT INTO terms(rowid, title, tags, lesson, pitfall, rest) VALUES (?, ?, ?, ?, ?, ?)",
            (cursor.lastrowid, *columns),
        )
        last = start
    if last == base:
        # No new entry: keep the previous stable point, or the start of the file.
        row = db.execute("SELECT max(start) FROM entries WHERE file = ?", (name,)).fetchone()
        last = int(row[0]) if row and row[0] is not None else 0
    db.execute(
        "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?, ?)",
        (name, *stat, last, _digest(memoryview(data)[:last])),
    )
    return Damage(path, found, whole=base == 0)


def _digest(data: bytes | memoryview) -> str:
    import hashlib  # only when a file changed: OpenSSL's part costs a warm search 5 ms

    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _spans(data: bytes, base: int) -> Iterator[tuple[int, int]]:
    """(start, stop) byte offsets of the entries from ``base`` (an entry start, or 0)."""
    # From the newline before ``base``: "^" only matches at the real start of ``data``.
    starts = [
        m.start() + 1 if data[m.start()] == 0x0A else m.start()
        for m in _HEADER_START.finditer(data, max(0, base - 1))
    ]
    if starts:
        yield from zip(starts, [*starts[1:], len(data)], strict=True)


def _parse(chunk: str) -> tuple[str, str, tuple[str, str, str, str, str]] | None:
    """An entry's minute, its tags (folded, space-delimited) and its five columns of terms."""
    found = journal.blocks(chunk)
    if len(found) != 1:
        return None
    block = found[0]
    columns: list[list[str]] = [terms(block.title), terms(" ".join(block.tags)), [], [], []]
    column = 4
    for line in chunk.split("\n")[1:]:
        field = _FIELD.match(line)
        if field:
            key = fold(field.group(1)).strip()
            if key == "resultat":
                column = -1
                continue
            column = _COLUMNS.get(key, 4)
            line = line[field.end() :]
        if column >= 0:
            columns[column] += terms(line)
    at = block.key.stamp
    tag_text = " " + " ".join(fold(t) for t in block.tags) + " "
    c = [" ".join(col) for col in columns]
    return at, tag_text, (c[0], c[1], c[2], c[3], c[4])


# --- recent headers --------------------------------------------------------------------------


class Recent(NamedTuple):
    header: str
    quarantined: bool  # written by an exposed session (journal.is_quarantined)


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
            if journal.blocks(line + "\n"):  # a valid header, as the journal reads it
                found.append(Recent(line, journal.is_quarantined(text[start:end])))
            end = max(cut, 0)
        if len(found) >= n:
            break
    return found
