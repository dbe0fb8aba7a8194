"""The home handed to the hardened mode's owner and back, as root (``ocmem.setup.harden``).

Given, top-down: each folder is the owner's before it is walked into, so the agent can no longer
change what is walked. Given back, bottom-up through folder descriptors (``os.fwalk``): what the
agent has back is never walked again, so a folder it swaps for a link meanwhile leads root
nowhere (a walk by path names gave root's files away that way). What giving changes beyond the
owner (a mode, or an owner other than the home's) is noted first (``differences``, kept in the
record), and put back.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from ocmem.home.paths import Paths

Ownership = tuple[int, int, int]  # uid, gid, permission bits


def walk(root: Path) -> Iterator[Path]:
    """Every path under ``root`` (root first), never following symbolic links."""
    yield root
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in dirnames + filenames:
            yield base / name


def given_mode(paths: Paths, path: Path, info: os.stat_result) -> int:
    """The mode ``give`` sets: readable by all but ocmem's state; writable by none else."""
    state = paths.state_dir
    mode = stat.S_IMODE(info.st_mode)
    folder = stat.S_ISDIR(info.st_mode)
    if path == state:
        return 0o711
    if path == paths.plugin_command:
        return 0o644
    if state in path.parents:
        return 0o700 if folder else 0o600
    return (mode | 0o755) & ~0o022 if folder else (mode | 0o444) & ~0o022


def differences(paths: Paths, uid: int, gid: int) -> dict[str, Ownership]:
    """What ``give`` would change beyond an owner ``uid:gid``, by path in the home ("." for the
    home itself), with its owner and mode now: what giving back puts back."""
    found = {}
    for path in walk(paths.home):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode) or path == paths.hardened_file:
            continue
        now = (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))
        if now != (uid, gid, given_mode(paths, path, info)):
            found[path.relative_to(paths.home).as_posix()] = now
    return found


def give(paths: Paths, uid: int, gid: int) -> None:
    """The whole home (but the record, root's) to ``uid:gid``, with ``given_mode``."""
    for path in walk(paths.home):
        if path == paths.hardened_file:
            continue
        os.chown(path, uid, gid, follow_symlinks=False)
        info = path.lstat()
        if not stat.S_ISLNK(info.st_mode):
            path.chmod(given_mode(paths, path, info))


def give_back(paths: Paths, uid: int, gid: int, noted: Mapping[str, Ownership]) -> None:
    """The whole home (but the record) to ``uid:gid``, and what ``noted`` says as it was."""
    root = paths.home
    for folder, dirnames, filenames, folder_fd in os.fwalk(root, topdown=False):
        for name in dirnames + filenames:
            path = Path(folder, name)
            if path != paths.hardened_file:
                rel = path.relative_to(root).as_posix()
                private = 0o700 if path == paths.state_dir else -1  # noted or not
                _restore(folder_fd, name, noted.get(rel, (uid, gid, private)))
    folder_fd = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        _restore(folder_fd, root.name, noted.get(".", (uid, gid, -1)))
    finally:
        os.close(folder_fd)


def _restore(folder_fd: int, name: str, ownership: Ownership) -> None:
    """``name`` in the folder ``folder_fd`` to its owner, then (when not -1) its mode; a link
    is never followed (its own owner changes, not its target's)."""
    uid, gid, mode = ownership
    os.chown(name, uid, gid, dir_fd=folder_fd, follow_symlinks=False)
    if mode < 0:
        return
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW, dir_fd=folder_fd)
    try:
        if not stat.S_ISLNK(os.fstat(fd).st_mode):
            os.chmod(f"/proc/self/fd/{fd}", mode)  # this very file (chmod has no no-follow)
    finally:
        os.close(fd)
