"""ocmem's own state files under ``.ocmem`` (logs, records, indexes), which the plugin's tamper
monitor does not watch.

Two doors write under a home, and only two. The home's files (memory, skills, AGENTS.md,
the plugin, ``.ocmem/plugin.json``: all the plugin's tamper monitor watches) change only through
``ocmem.home.workspace.Transaction``, which announces each change (``ocmem.home.announce``)
before it lands. ocmem's own state is written by ``write_state``, ``append_state`` and
``remove_state`` here, which refuse any other path. ``tests/test_architecture.py`` holds every
other module to these two doors.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ocmem.home.announce import monitored
from ocmem.home.atomic import atomic_write, open_file, remove_file
from ocmem.home.paths import Paths


def _state_file(paths: Paths, path: Path) -> Path:
    """``path``, if it is ocmem's own state (under .ocmem, unwatched by the monitor)."""
    if paths.state_dir not in path.parents or monitored(paths, path):
        raise ValueError(f"{path} is not ocmem's private state: write it through a Transaction")
    return path


def write_state(paths: Paths, path: Path, data: str | bytes, *, mode: int = 0o600) -> None:
    """Replace one of ocmem's state files (atomic; its folders made private)."""
    atomic_write(_state_file(paths, path), data, mode=mode, folder_mode=0o700)


def append_state(paths: Paths, path: Path, text: str) -> None:
    """Append ``text`` (one write) to one of ocmem's state files, made private if new."""
    fd = open_file(
        _state_file(paths, path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600, folder_mode=0o700
    )
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)


def remove_state(paths: Paths, path: Path) -> None:
    """Remove one of ocmem's state files (absent: nothing to do)."""
    with contextlib.suppress(FileNotFoundError):
        remove_file(_state_file(paths, path))
