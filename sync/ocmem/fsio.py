"""Local file primitives: atomic writes, byte-identical backups, the run lock, the action log."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ocmem.config import Paths
from ocmem.errors import Busy, OcmemError

TEMP_SUFFIX = ".ocmem-tmp"
WRITES_KEEP_BYTES = 256 * 1024
# The home whose run lock this thread holds: its writes go to the writes journal.
_RECORDING: ContextVar[Paths | None] = ContextVar("ocmem_recording", default=None)


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


def record_writes(paths: Paths, changes: Iterable[tuple[str, str | None]]) -> None:
    """Append ``(path relative to the home, new sha256 or None when removed)`` to the writes
    journal, before the change lands, so the monitor never sees ocmem's write unannounced."""
    ts = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    lines = "".join(
        json.dumps({"ts": ts, "file": rel, "sha256": digest}) + "\n" for rel, digest in changes
    )
    if not lines:
        return
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.writes_journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def _trim_writes(paths: Paths) -> None:
    """Keep the writes journal small: the monitor only reads what was added since it started."""
    try:
        if paths.writes_journal.stat().st_size <= WRITES_KEEP_BYTES:
            return
        tail = paths.writes_journal.read_bytes()[-WRITES_KEEP_BYTES // 2 :]
    except FileNotFoundError:
        return
    atomic_write(paths.writes_journal, tail[tail.find(b"\n") + 1 :], mode=0o600)


def sha256(data: bytes) -> str:
    import hashlib  # lazy: the hot path never hashes

    return hashlib.sha256(data).hexdigest()


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
            f"{path} n'est pas de l'UTF-8 valide",
            fix=f"réenregistre {path} en UTF-8 (une sauvegarde est dans le dossier backups)",
        ) from exc


def atomic_write(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` so that a reader or a crash sees the old or the new bytes.

    Temp file in the same directory, fsync, rename over the target, fsync the directory.
    The previous permission bits are kept unless ``mode`` is given.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory (so the rename is atomic), unique name, created exclusively.
    tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}{TEMP_SUFFIX}"
    previous_mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    recording = _RECORDING.get()
    if recording is not None and monitored(recording, path):
        record_writes(recording, [(recording.rel(path), sha256(payload))])
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, previous_mode if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def new_stamp() -> str:
    """A backup folder name, sortable and unique enough for one run."""
    return datetime.now().strftime("%Y%m%d-%H%M%S-%f")


class Backups:
    """Byte-identical copies taken before a run modifies or removes a file.

    One folder per run (``<state>/backups/<stamp>/<path relative to home>``); the first copy of
    a file in a run wins, so the folder always holds the state from before the run.
    """

    def __init__(self, paths: Paths, stamp: str | None = None):
        self.paths = paths
        self.stamp = stamp or new_stamp()
        self.saved: list[Path] = []

    @property
    def folder(self) -> Path:
        return self.paths.backups_dir / self.stamp

    def save(self, path: Path) -> Path | None:
        """Copy ``path`` (if it exists) into this run's backup folder; return the copy."""
        if not path.exists():
            return None
        target = self.folder / self.paths.rel(path)
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        import shutil  # lazy: most runs back nothing up

        shutil.copyfile(path, target)
        os.chmod(target, 0o600)
        self.saved.append(target)
        return target

    def save_bytes(self, name: str, data: bytes) -> Path:
        """Keep bytes that never existed as a local file (e.g. a remote page we overwrite)."""
        target = self.folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, data, mode=0o600)
        self.saved.append(target)
        return target


@contextlib.contextmanager
def run_lock(paths: Paths, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold ocmem's single lock for a whole run; Busy (exit 75) when another run has it.

    An flock on a dedicated file (never on a data file, which os.replace swaps): the kernel
    releases it when the process dies, so a crashed run never leaves a stale lock behind.
    """
    import fcntl

    paths.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + max(wait_seconds, 0.0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Busy(
                        "une autre exécution d'ocmem est en cours",
                        fix="réessaie plus tard, ou passe --wait SECONDES pour attendre le verrou",
                    ) from None
                time.sleep(0.05)
        _trim_writes(paths)
        recording = _RECORDING.set(paths)
        try:
            yield
        finally:
            _RECORDING.reset(recording)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def log_event(paths: Paths, action: str, **fields: Any) -> None:
    """Append one JSON line describing an action. Callers never pass secrets."""
    if action == "pull" and fields.get("removed"):
        record_writes(paths, [(str(rel), None) for rel in fields["removed"]])
    record = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "action": action}
    record.update(fields)
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    fd = os.open(paths.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
