"""Local file primitives: atomic writes, byte-identical backups and their retention, the run
lock, the action log, and what a refusing file system means for the user.

Two doors write under a home, and only two. The home's files (memory, skills, AGENTS.md,
the plugin, ``.ocmem/plugin.json``: all the plugin's tamper monitor watches) change only through
``ocmem.home.workspace.Transaction``, which announces each change here (``announce*``) before it
lands. ocmem's own state under ``.ocmem`` (logs, records, indexes), which the monitor does not
watch, is written by ``write_state``, ``append_state`` and ``remove_state``, which refuse any
other path. ``tests/test_architecture.py`` holds every other module to these two doors.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocmem.clock import Clock
from ocmem.errors import DENIED, Busy, OcmemError, StorageError, from_os_error
from ocmem.home.paths import Paths

if TYPE_CHECKING:
    from ocmem.progress import Waiting

TEMP_SUFFIX = ".ocmem-tmp"
WRITES_KEEP_BYTES = 256 * 1024


def monitored(paths: Paths, path: Path) -> bool:
    """Whether the plugin's tamper monitor watches ``path``: the whole home (OpenCode's
    config dir) but ocmem's own state, except the file that says how to start ocmem."""
    try:
        path.relative_to(paths.home)
    except ValueError:
        return False
    try:
        path.relative_to(paths.state_dir)
    except ValueError:
        return True
    return path == paths.plugin_command


def record_writes(paths: Paths, clock: Clock, changes: Iterable[tuple[str, str | None]]) -> None:
    """Append ``(path relative to the home, new sha256 or None when removed)`` to the writes
    journal, before the change lands, so the monitor never sees ocmem's write unannounced."""
    ts = clock.stamp()
    lines = "".join(
        json.dumps({"ts": ts, "file": rel, "sha256": digest}) + "\n" for rel, digest in changes
    )
    if lines:
        _add_to_writes_journal(paths, lines)


def _add_to_writes_journal(paths: Paths, lines: str) -> None:
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.writes_journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def announce(paths: Paths, clock: Clock, path: Path, content: Callable[[], bytes | None]) -> None:
    """Before ``path`` changes: its new bytes' digest (None: it goes away) to the writes
    journal, if the plugin's monitor watches it (``content`` is only called then)."""
    if monitored(paths, path):
        data = content()
        record_writes(paths, clock, [(paths.rel(path), None if data is None else sha256(data))])


def announce_removal(paths: Paths, clock: Clock, path: Path) -> None:
    """Before ``path`` (a file, a link or a whole folder) goes away: it and everything in it."""
    if not monitored(paths, path):
        return
    gone = [path]
    if path.is_dir() and not path.is_symlink():
        gone += sorted(path.rglob("*"))
    record_writes(paths, clock, [(paths.rel(p), None) for p in gone])


def announce_append(paths: Paths, clock: Clock, path: Path, start: int, payload: bytes) -> None:
    """Before ``payload`` is appended to ``path`` at offset ``start``: where it goes and its
    digest, so an append costs the same on any journal (the monitor checks the bytes before
    ``start`` against the file it kept, and the new ones against this digest)."""
    if not monitored(paths, path):
        return
    entry = {
        "ts": clock.stamp(),
        "file": paths.rel(path),
        "append_at": start,
        "size": start + len(payload),
        "sha256": small_sha256(payload),
    }
    _add_to_writes_journal(paths, json.dumps(entry) + "\n")


def _state_file(paths: Paths, path: Path) -> Path:
    """``path``, if it is ocmem's own state (under .ocmem, unwatched by the monitor)."""
    if paths.state_dir not in path.parents or monitored(paths, path):
        raise ValueError(f"{path} is not ocmem's private state: write it through a Transaction")
    return path


def write_state(paths: Paths, path: Path, data: str | bytes, *, mode: int = 0o600) -> None:
    """Replace one of ocmem's state files (atomic; its folders made private)."""
    _state_file(paths, path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    atomic_write(path, data, mode=mode)


def append_state(paths: Paths, path: Path, text: str) -> None:
    """Append ``text`` (one write) to one of ocmem's state files, made private if new."""
    _state_file(paths, path).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def remove_state(paths: Paths, path: Path) -> None:
    """Remove one of ocmem's state files (absent: nothing to do)."""
    _state_file(paths, path).unlink(missing_ok=True)


def _trim_writes(paths: Paths) -> None:
    """Keep the writes journal small: the monitor only reads what was added since it started."""
    try:
        if paths.writes_journal.stat().st_size <= WRITES_KEEP_BYTES:
            return
        tail = paths.writes_journal.read_bytes()[-WRITES_KEEP_BYTES // 2 :]
    except FileNotFoundError:
        return
    atomic_write(paths.writes_journal, tail[tail.find(b"\n") + 1 :], mode=0o600)


# How long a direct command waits for another ocmem run, and when it says it is waiting.
DEFAULT_WAIT_SECONDS = 10.0
WAIT_NOTICE_SECONDS = 1.0

# Retention (see docs/guide.md « Sauvegardes et journal des actions »): a backup folder goes
# once it is both older than BACKUP_KEEP_DAYS and not among the BACKUP_KEEP_RUNS newest, and
# then only its copies that a newer backup of the same file supersedes.
BACKUP_KEEP_DAYS = 30
BACKUP_KEEP_RUNS = 20
PRUNE_EVERY = timedelta(days=1)
# log.jsonl (and cron.log, curation.log) rotate past LOG_MAX_BYTES; LOG_GENERATIONS old ones stay.
LOG_MAX_BYTES = 1 << 20
LOG_GENERATIONS = 3
_STAMP_FORMAT = "%Y%m%d-%H%M%S-%f"


def sha256(data: bytes) -> str:
    import hashlib  # lazy: the hot path never hashes

    return hashlib.sha256(data).hexdigest()


def small_sha256(data: bytes) -> str:
    """The sha256 of a few kilobytes without loading OpenSSL: ``hashlib``'s import (~3.5 ms)
    would be most of what a journal append adds to Python's start-up. Python's own
    implementation is ``_sha2`` from 3.12, ``_sha256`` before."""
    import importlib

    for name in ("_sha2", "_sha256"):
        try:
            builtin = importlib.import_module(name)
        except ImportError:
            continue
        return str(builtin.sha256(data).hexdigest())
    return sha256(data)


def file_sha256(path: Path) -> str | None:
    """The digest of a file's bytes, or None when it is not a file."""
    return sha256(path.read_bytes()) if path.is_file() else None


def read_text(path: Path) -> str:
    """The file's text, or "" when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as exc:
        raise OcmemError(
            f"{path} n'est pas de l'UTF-8 valide (octet {exc.start})",
            fix=f"réenregistre {path} en UTF-8 (une sauvegarde est dans le dossier .ocmem/backups)",
        ) from exc


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so that a reader or a crash sees the old or the new bytes.

    Temp file in the same directory, fsync, rename over the target, fsync the directory.
    The previous permission bits are kept unless ``mode`` is given. An error names ``path``,
    not the temp file.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Same directory (so the rename is atomic), unique name, created exclusively.
        tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}{TEMP_SUFFIX}"
        previous_mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise about_path(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, previous_mode if mode is None else mode)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise about_path(exc, path) from exc
        raise
    _fsync_dir(path.parent)


def about_path(exc: OSError, path: Path) -> OSError:
    """The same error, about ``path`` (a temp file's name means nothing to a user)."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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

    def _claim(self) -> None:
        if self._claimed:
            return
        self.paths.backups_dir.mkdir(parents=True, exist_ok=True)
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
        try:
            data = path.read_bytes()
        except FileNotFoundError:
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
    with contextlib.suppress(OSError, ValueError):
        last = _parse_stamp(marker.read_text(encoding="ascii").strip())
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


def rotate(log: Path) -> bool:
    """``log`` → ``log.1`` → … → ``log.N`` once it passes LOG_MAX_BYTES (the oldest goes)."""
    try:
        if log.stat().st_size <= LOG_MAX_BYTES:
            return False
    except FileNotFoundError:
        return False
    for n in range(LOG_GENERATIONS - 1, 0, -1):
        older = log.with_name(f"{log.name}.{n}")
        if older.exists():
            os.replace(older, log.with_name(f"{log.name}.{n + 1}"))
    os.replace(log, log.with_name(f"{log.name}.1"))
    return True


@contextlib.contextmanager
def run_lock(
    paths: Paths,
    clock: Clock,
    wait_seconds: float = 0.0,
    notify: Callable[[str], None] | None = None,
    waiting: Waiting | None = None,
) -> Iterator[None]:
    """Hold ocmem's single lock for a whole run; Busy (exit 75) when another run keeps it
    beyond ``wait_seconds``. ``waiting`` (ocmem.progress: a terminal's progress line) is
    entered for as long as we wait; without it, ``notify`` hears once, after
    WAIT_NOTICE_SECONDS, that we wait.

    An flock on a dedicated file (never on a data file, which os.replace swaps): the kernel
    releases it when the process dies, so a crashed run never leaves a stale lock behind.
    """
    import fcntl

    try:
        paths.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        # flock needs no write access: on a read-only home the run goes on, and fails (if it
        # must write) on the file it needs, which says more than the lock would.
        if exc.errno not in (*DENIED, errno.EROFS) or not paths.lock_file.is_file():
            raise storage_error(exc, paths, action="de créer le verrou", changed=False) from exc
        try:
            fd = os.open(paths.lock_file, os.O_RDONLY)
        except OSError as again:
            raise storage_error(again, paths, action="d'ouvrir le verrou", changed=False) from exc
    try:
        started = clock.monotonic()
        deadline = started + max(wait_seconds, 0.0)
        told = False
        with contextlib.ExitStack() as said:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if waiting is not None and wait_seconds > 0:
                        # entered at the first refusal only: an uncontended run says nothing;
                        # the progress line says we wait, so the notice is not needed
                        said.enter_context(
                            waiting(
                                "en attente d'une autre exécution d'ocmem "
                                f"(verrou, au plus {wait_seconds:.0f} s)"
                            )
                        )
                        waiting, told = None, True
                    now = clock.monotonic()
                    if now >= deadline:
                        waited = f" (attendu {now - started:.0f} s)" if wait_seconds >= 1 else ""
                        raise Busy(
                            f"une autre exécution d'ocmem tient le verrou{waited} : rien n'a été modifié",
                            fix="relance dans un moment, ou attends plus longtemps avec --wait SECONDES",
                        ) from None
                    if notify and not told and now - started >= WAIT_NOTICE_SECONDS:
                        notify(
                            f"une autre exécution d'ocmem tient le verrou : j'attends "
                            f"(jusqu'à {wait_seconds:.0f} s)…"
                        )
                        told = True
                    clock.sleep(0.05)
        _trim_writes(paths)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def log_event(paths: Paths, clock: Clock, action: str, **fields: Any) -> bool:
    """Append one JSON line describing an action. Callers never pass secrets.

    Best effort: the log records what was done, it is not what makes it safe; a disk that
    refuses the line (full, read-only) does not undo a write that succeeded. False then.
    """
    record = {"ts": clock.stamp(), "action": action}
    record.update(fields)
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    try:
        paths.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(paths.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > LOG_MAX_BYTES:
            rotate(paths.log_file)
    except OSError:
        return False
    return True


def storage_error(
    exc: OSError,
    paths: Paths | None = None,
    *,
    action: str = "d'écrire",
    changed: bool | None = None,
    extra: str = "",
    about: Path | None = None,
) -> StorageError:
    """``errors.from_os_error``, naming the file as the home knows it.

    ``about``: the file to name, when the one refused is a means to it (its backup).
    """
    raw = str(exc.filename) if exc.filename else None
    if about is None and raw and paths and paths.backups_dir in Path(raw).parents:
        # a copy taken before a write: name the file it protects
        inside = Path(raw).relative_to(paths.backups_dir).parts[1:]
        if inside:
            about, action = paths.home.joinpath(*inside), "de sauvegarder (dans .ocmem/backups)"
    named = str(about) if about else raw
    return from_os_error(
        exc,
        action=action,
        changed=changed,
        extra=extra,
        where=paths.rel(Path(named)) if paths and named else named,
        folder=str(Path(raw).parent) if raw else (str(paths.home) if paths else None),
    )
