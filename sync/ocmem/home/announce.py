"""The writes journal: before ocmem changes a file the plugin's tamper monitor watches, it
announces the file and its new bytes' digest there, so the monitor never sees ocmem's own write
unannounced (docs/security.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ocmem.clock import Clock
from ocmem.home.atomic import atomic_write, open_file, read_bytes, status
from ocmem.home.digest import sha256, small_sha256
from ocmem.home.paths import Paths

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
    fd = open_file(paths.writes_journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
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


def trim_writes(paths: Paths) -> None:
    """Keep the writes journal small: the monitor only reads what was added since it started
    (called under the run lock)."""
    found = status(paths.writes_journal)
    if found is None or found.st_size <= WRITES_KEEP_BYTES:
        return
    tail = (read_bytes(paths.writes_journal) or b"")[-WRITES_KEEP_BYTES // 2 :]
    atomic_write(paths.writes_journal, tail[tail.find(b"\n") + 1 :], mode=0o600)
