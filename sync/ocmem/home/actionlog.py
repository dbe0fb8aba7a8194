"""The action log (``.ocmem/log.jsonl``): one JSON line per action, and the rotation of ocmem's
logs past LOG_MAX_BYTES."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ocmem.clock import Clock
from ocmem.errors import Refused
from ocmem.home.atomic import open_file, read_bytes
from ocmem.home.paths import Paths

# log.jsonl (and cron.log, curation.log) rotate past LOG_MAX_BYTES; LOG_GENERATIONS old ones stay.
LOG_MAX_BYTES = 1 << 20
LOG_GENERATIONS = 3


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


def log_event(paths: Paths, clock: Clock, action: str, **fields: Any) -> bool:
    """Append one JSON line describing an action. Callers never pass secrets.

    Best effort: the log records what was done, it is not what makes it safe; a disk that
    refuses the line (full, read-only) does not undo a write that succeeded. False then.
    """
    record = {"ts": clock.stamp(), "action": action}
    record.update(fields)
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    try:
        fd = open_file(paths.log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > LOG_MAX_BYTES:
            rotate(paths.log_file)
    except (OSError, Refused):  # a link in its place is refused (ocmem.home.atomic)
        return False
    return True


def last_event(paths: Paths, actions: tuple[str, ...]) -> dict[str, Any] | None:
    """The newest line of the action log (its rotated copies too) whose action is one of
    ``actions``, or None. An unreadable line or file is skipped."""
    log = paths.log_file
    logs = [log, *(log.with_name(f"{log.name}.{n}") for n in range(1, LOG_GENERATIONS + 1))]
    for each in logs:
        try:
            raw = read_bytes(each) or b""
        except (OSError, Refused):
            continue
        for line in reversed(raw.decode("utf-8", "replace").splitlines()):
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("action") in actions:
                return record
    return None
