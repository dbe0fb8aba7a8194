"""Where ocmem writes: each write a run makes, named by the innermost function of the package
that made it (``home/atomic.py::atomic_write``). An audit hook (PEP 578) sees every write the
interpreter does for ocmem, whatever module or library issued it: a new way of writing shows up
here without anyone having to list it."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import ocmem

PACKAGE = Path(ocmem.__file__).resolve().parent
# Audit events that change a file system (os.replace is raised as os.rename).
CHANGES = {
    "os.rename",
    "os.remove",
    "os.rmdir",
    "os.mkdir",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.utime",
    "shutil.rmtree",
    "shutil.copyfile",
    "fcntl.flock",
    "fcntl.lockf",
    "sqlite3.connect",
}
PRIMITIVES = "home/atomic.py"  # the file primitives every write goes through
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

_recording: list[set[str]] = []
_installed = False


def _writes(event: str, args: tuple[Any, ...]) -> bool:
    if event in CHANGES:
        return True
    if event == "open":
        _path, mode, flags = args
        return bool(flags & WRITE_FLAGS) if mode is None else any(c in str(mode) for c in "wax+")
    if event == "subprocess.Popen":  # the history of pulls is a git repository
        return Path(str(args[0])).name == "git"
    return False


def _site(frame: FrameType | None) -> str | None:
    """``caller::function`` of the first frame of ocmem outside its file primitives
    (home/atomic.py), with the primitive it called: ``home/workspace.py::append → open_file``."""
    primitive = ""
    while frame is not None:
        path = Path(frame.f_code.co_filename)
        if path.is_relative_to(PACKAGE):
            where = path.relative_to(PACKAGE).as_posix()
            if where != PRIMITIVES:
                caller = f"{where}::{frame.f_code.co_name}"
                return f"{caller} → {primitive}" if primitive else caller
            primitive = frame.f_code.co_name
        frame = frame.f_back
    return None


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _recording or not _writes(event, args):
        return
    site = _site(sys._getframe(1))
    if site is not None:
        _recording[-1].add(site)


@contextlib.contextmanager
def recorded() -> Iterator[set[str]]:
    """The write sites of ocmem reached in this thread's block (and its threads)."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    found: set[str] = set()
    _recording.append(found)
    try:
        yield found
    finally:
        _recording.pop()
