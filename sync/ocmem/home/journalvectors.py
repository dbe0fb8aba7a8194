"""The sentence vectors of the journal's entries (``ocmem.text.meaning``): a cache beside the
search index, rebuilt at will, never in the way of a search.

Two files in ``.ocmem``: ``journal-vectors.f16``, one row of float16 per entry text, appended
(384 × 2 bytes), and ``journal-vectors.sqlite3``, which row holds the vector of which entry, by
the digest of the entry's bytes, and the model they come from. Keyed by content, not by place:
an entry moved into an archive (``journal archive``), or a journal re-indexed after a hand edit,
keeps its vector; an edited entry is encoded again and its old row is left unused. A store of
another model, or damaged, is removed and started again.

Writers (the gate's background thread, ``ocmem journal index``, a search's few entries) append
under the database's write lock: the file is first cut back to whole rows (a writer killed
mid-row leaves a torn one), the rows are written, then recorded. A reader only uses recorded
rows, so it never sees a row being written.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ocmem.errors import Refused
from ocmem.home.atomic import open_file, status
from ocmem.text import meaning

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows(row INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE);
"""
_BUSY_SECONDS = 5.0
_ROW_BYTES = meaning.DIMENSIONS * 2
_BATCH = 900  # SQLite's variables per statement, with room to spare
_CHUNK = 8192  # rows converted to float32 at a time while scoring


class Unusable(Exception):
    """The store cannot be opened or written here (read-only, full, locked beyond the wait)."""


class Vectors:
    """An open store: ``rows_of``, ``add``, ``scores``. ``ident``: this store's identity (a new
    one each time it is started again), so that the search index knows its rows still mean the
    same vectors."""

    def __init__(self, database: Path, rows: Path, *, write: bool):
        self.rows_path = rows
        try:
            if status(database) is None and not write:
                raise Unusable("no store yet")
            if write:
                _private(database)
                _private(rows)
            self.db = sqlite3.connect(database, timeout=_BUSY_SECONDS, isolation_level=None)
            self.ident = self._check(write)
        except (sqlite3.Error, OSError, Refused) as exc:
            raise Unusable(str(exc)) from exc

    def _check(self, write: bool) -> str:
        """This store's identity, once created (or started again, when of another model)."""
        model = self._meta("model")
        ident = self._meta("ident")
        if model == meaning.MODEL and ident:
            return ident
        if not write:
            raise Unusable("another model's store")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            model, ident = self._meta("model"), self._meta("ident")  # another writer, meanwhile?
            if model != meaning.MODEL or not ident:
                self.db.execute("DELETE FROM rows")
                # emptied through the home's door: never what a link in its place points to
                os.close(open_file(self.rows_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
                ident = os.urandom(8).hex()
                self.db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    (("model", meaning.MODEL), ("ident", ident)),
                )
            self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise
        return ident

    def _meta(self, key: str) -> str | None:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        return str(row[0]) if row else None

    def close(self) -> None:
        self.db.close()

    def count(self) -> int:
        """How many rows are recorded."""
        return int(self.db.execute("SELECT count(*) FROM rows").fetchone()[0])

    def rows_of(self, digests: Iterable[bytes]) -> dict[bytes, int]:
        """The row of each of ``digests`` that has one."""
        found: dict[bytes, int] = {}
        for batch in _batches(list(dict.fromkeys(digests))):
            marks = ", ".join("?" for _ in batch)
            found.update(
                (bytes(d), int(r))
                for d, r in self.db.execute(
                    f"SELECT digest, row FROM rows WHERE digest IN ({marks})", batch
                )
            )
        return found

    def add(self, digests: Sequence[bytes], vectors: NDArray[np.float16]) -> dict[bytes, int]:
        """Appends the ``vectors`` of ``digests`` (one row each) and returns every digest's row
        (a digest another writer recorded meanwhile keeps that one)."""
        if not digests:
            return {}
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                with os.fdopen(open_file(self.rows_path, os.O_RDWR), "r+b") as handle:
                    # The database says which rows are whole. Rows it records past the file's
                    # end (a file cut by hand, or lost with the power) are forgotten, and so
                    # encoded again; bytes past its last row (a writer killed before COMMIT)
                    # are cut off.
                    whole = os.fstat(handle.fileno()).st_size // _ROW_BYTES
                    self.db.execute("DELETE FROM rows WHERE row >= ?", (whole,))
                    first = int(
                        self.db.execute("SELECT coalesce(max(row) + 1, 0) FROM rows").fetchone()[0]
                    )
                    known = self.rows_of(digests)
                    new = [i for i, d in enumerate(digests) if d not in known]
                    handle.truncate(first * _ROW_BYTES)
                    handle.seek(first * _ROW_BYTES)
                    handle.write(vectors[new].astype("<f2").tobytes())
                    handle.flush()
                    os.fsync(handle.fileno())  # the rows on disk before the database names them
                rows = {digests[i]: first + n for n, i in enumerate(new)}
                self.db.executemany(
                    "INSERT INTO rows VALUES (?, ?)", [(r, d) for d, r in rows.items()]
                )
                self.db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise
        except (sqlite3.Error, OSError, Refused) as exc:
            raise Unusable(str(exc)) from exc
        return known | rows

    def scores(
        self, queries: NDArray[np.float32], rows: Sequence[int] | None = None
    ) -> NDArray[np.float32]:
        """The cosine of every recorded row (or of ``rows``, in that order) with each query: an
        array of (rows, queries)."""
        import numpy as np

        with os.fdopen(open_file(self.rows_path, os.O_RDONLY), "rb") as handle:
            count = os.fstat(handle.fileno()).st_size // _ROW_BYTES
            if rows and max(rows) >= count:  # the file was cut since the database named them
                raise Unusable("vectors file shorter than its database")
            if count == 0:
                return np.zeros((0, len(queries)), dtype=np.float32)
            shape = (count, meaning.DIMENSIONS)
            matrix = np.memmap(handle, dtype="<f2", mode="r", shape=shape)
        if rows is not None:
            picked = np.asarray(rows, dtype=np.int64)
            chosen: NDArray[np.float32] = matrix[picked].astype(np.float32) @ queries.T
            return chosen
        out = np.empty((count, len(queries)), dtype=np.float32)
        for start in range(0, count, _CHUNK):
            out[start : start + _CHUNK] = (
                matrix[start : start + _CHUNK].astype(np.float32) @ queries.T
            )
        return out


def open_vectors(database: Path, rows: Path, *, write: bool = False) -> Vectors | None:
    """The store, or None when there is none yet (``write``: created) or it cannot serve."""
    try:
        return Vectors(database, rows, write=write)
    except Unusable:
        return None


def entry_digest(chunk: bytes) -> bytes:
    """What identifies an entry's text wherever it is (the journal, an archive): the digest of
    its bytes, without the blank lines that separate it from the next."""
    import hashlib  # only when an entry is indexed or encoded

    return hashlib.blake2b(chunk.rstrip(b"\n"), digest_size=16).digest()


def encoder_running(lock: Path) -> bool:
    """Whether a process holds ``lock`` (``ocmem.home.journalindex.encode_pending``: one encoder
    at a time)."""
    import fcntl

    try:
        fd = open_file(lock, os.O_RDONLY)
    except (OSError, Refused):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _private(path: Path) -> None:
    if status(path) is None:  # private, like the journal; made here so SQLite keeps the mode
        os.close(open_file(path, os.O_WRONLY | os.O_CREAT, 0o600))


def _batches(items: list[bytes]) -> Iterator[list[bytes]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]
