"""Byte-identical backups (``.ocmem/backups/<stamp>/``) taken before a run overwrites or removes
a file, and their retention (with the rotation of the cron and curation logs)."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from pathlib import Path

from ocmem.clock import Clock
from ocmem.errors import Refused
from ocmem.home.actionlog import rotate
from ocmem.home.atomic import atomic_write, read_bytes, status
from ocmem.home.paths import Paths

# Retention (see docs/guide.md « Sauvegardes et journal des actions »): a backup folder goes
# once it is both older than BACKUP_KEEP_DAYS and not among the BACKUP_KEEP_RUNS newest, and
# then only its copies that a newer backup of the same file supersedes.
BACKUP_KEEP_DAYS = 30
BACKUP_KEEP_RUNS = 20
PRUNE_EVERY = timedelta(days=1)
_STAMP_FORMAT = "%Y%m%d-%H%M%S-%f"


def new_stamp(clock: Clock) -> str:
    """A backup folder name: the run's time, sortable (``Backups`` makes it unique)."""
    return clock.now().strftime(_STAMP_FORMAT)


def stamp_time(folder_name: str) -> datetime | None:
    """The time a backup folder was made (``<stamp>`` or ``<stamp>.N``), None if not ocmem's."""
    return _parse_stamp(folder_name.split(".", 1)[0])


def _parse_stamp(text: str) -> datetime | None:
    """``_STAMP_FORMAT`` read back (YYYYmmdd-HHMMSS-ffffff) by hand: ``strptime`` would import
    ``_strptime``, ``locale`` and ``calendar`` into every command (2 ms of start-up)."""
    if len(text) != 22 or text[8] != "-" or text[15] != "-":
        return None
    digits = (text[0:4], text[4:6], text[6:8], text[9:11], text[11:13], text[13:15], text[16:22])
    if not all(part.isascii() and part.isdigit() for part in digits):
        return None
    year, month, day, hour, minute, second, micro = (int(part) for part in digits)
    try:
        return datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        return None


class Backups:
    """Byte-identical copies taken before a run modifies or removes a file.

    One folder per run (``<state>/backups/<stamp>/<path relative to home>``), made by the run at
    its first copy and never shared: when another run already holds that time's folder (a clock
    that stands still, two runs in one microsecond), this one takes ``<stamp>.2``, ``.3``… The
    first copy of a file in a run wins, so the folder always holds the state from before the run.
    A copy is written like any file (temp, fsync, rename): a full disk leaves no empty or partial
    copy.
    """

    def __init__(self, paths: Paths, clock: Clock, stamp: str | None = None):
        self.paths = paths
        self.stamp = stamp or new_stamp(clock)
        self.saved: list[Path] = []
        self._claimed = False

    def claim(self) -> Path:
        """This run's backup folder, made now if it was not yet (an intent record names it)."""
        self._claim()
        return self.folder

    def _claim(self) -> None:
        if self._claimed:
            return
        self.paths.backups_dir.mkdir(parents=True, exist_ok=True)
        status(self.paths.backups_dir / self.stamp)  # .ocmem or backups/ a link: refused
        base, number = self.stamp.split(".", 1)[0], 1
        while True:
            try:
                (self.paths.backups_dir / self.stamp).mkdir()
                break
            except FileExistsError:
                number += 1
                self.stamp = f"{base}.{number}"
        self._claimed = True

    @property
    def folder(self) -> Path:
        return self.paths.backups_dir / self.stamp

    def save(self, path: Path) -> Path | None:
        """Copy ``path`` (if it exists) into this run's backup folder; return the copy."""
        data = read_bytes(path)
        if data is None:
            return None
        self._claim()
        target = self.folder / self.paths.rel(path)
        if target.exists():
            return target
        self._keep(target, data)
        return target

    def save_bytes(self, name: str, data: bytes) -> Path:
        """Keep bytes that never existed as a local file (e.g. a remote page we overwrite)."""
        self._claim()
        target = self.folder / name
        self._keep(target, data)
        return target

    def _keep(self, target: Path, data: bytes) -> None:
        try:
            atomic_write(target, data, mode=0o600)
        except OSError:
            self._remove_empty_dirs(target.parent)
            raise
        self.saved.append(target)

    def discard(self) -> None:
        """Remove this run's copies (the run changed nothing: they equal the live files)."""
        for copy in reversed(self.saved):
            with contextlib.suppress(OSError):
                copy.unlink()
            self._remove_empty_dirs(copy.parent)
        self.saved.clear()
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # only if empty
        self._claimed = self.folder.is_dir()

    def _remove_empty_dirs(self, directory: Path) -> None:
        while directory != self.paths.backups_dir and self.paths.backups_dir in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent


def prune(paths: Paths, clock: Clock, *, force: bool = False) -> list[Path]:
    """Apply the retention rules, at most once a day (``force``: now); return what was removed.

    Backups: a folder older than BACKUP_KEEP_DAYS and not among the BACKUP_KEEP_RUNS newest
    loses the copies that a newer backup of the same file supersedes; the newest copy of every
    file stays whatever its age (it may be the only copy of a file since deleted). Logs past
    LOG_MAX_BYTES rotate. Best effort: a file system that refuses leaves everything in place.
    The last run's time is written in the marker (by the clock, not read from its mtime).
    """
    now = clock.now()
    marker = paths.backups_dir / ".pruned"
    with contextlib.suppress(OSError, ValueError, Refused):
        last = _parse_stamp((read_bytes(marker) or b"").decode("ascii").strip())
        if last is not None and not force and timedelta(0) <= now - last < PRUNE_EVERY:
            return []
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        removed = _prune_backups(paths, now)
        for log in (paths.cron_log, paths.curation_log):
            rotate(log)
        paths.backups_dir.mkdir(parents=True, exist_ok=True)
        marker.write_text(now.strftime(_STAMP_FORMAT) + "\n", encoding="ascii")
    return removed


def _prune_backups(paths: Paths, now: datetime) -> list[Path]:
    folders: list[tuple[datetime, Path]] = []
    if not paths.backups_dir.is_dir():
        return []
    for folder in paths.backups_dir.iterdir():
        made = stamp_time(folder.name)
        if made is not None:  # else not a run folder ocmem made: left alone
            folders.append((made, folder))
    folders.sort()
    newest: dict[str, Path] = {}
    contents: dict[Path, list[Path]] = {}
    for _, folder in folders:
        files = [p for p in folder.rglob("*") if p.is_file()]
        contents[folder] = files
        for file in files:
            newest[file.relative_to(folder).as_posix()] = folder
    recent = {folder for _, folder in folders[-BACKUP_KEEP_RUNS:]}
    removed: list[Path] = []
    for stamp, folder in folders:
        if folder in recent or now - stamp < timedelta(days=BACKUP_KEEP_DAYS):
            continue
        for file in contents[folder]:
            if newest[file.relative_to(folder).as_posix()] != folder:
                file.unlink()
                removed.append(file)
        for directory in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()
    return removed
