"""Broken environments made real: a read-only directory, a full disk, a held lock.

As root (CI), a read-only directory is a read-only bind mount (the kernel says EROFS to
everyone, root included) and a full disk is a small tmpfs filled to the last page; as another
user, a read-only directory is ``chmod a-w`` (EACCES) and a full disk cannot be made (the
tests that need it are skipped, saying why). Every mount is undone when the block exits.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

IS_ROOT = os.geteuid() == 0


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True, check=False).returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], capture_output=True, check=False)


def _probe() -> bool:
    if not IS_ROOT or shutil.which("mount") is None:
        return False
    with tempfile.TemporaryDirectory() as scratch:
        ok = _mount("-t", "tmpfs", "-o", "size=64k", "tmpfs", scratch)
        if ok:
            _umount(Path(scratch))
        return ok


CAN_MOUNT = _probe()
WHY_NOT = "needs root with CAP_SYS_ADMIN (mount a tmpfs / a read-only bind mount)"


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[str]:
    """``path`` (a directory) and everything under it read-only; yields the expected errno name."""
    if IS_ROOT:
        if not CAN_MOUNT:
            raise RuntimeError(WHY_NOT)
        assert _mount("--bind", str(path), str(path))
        try:
            assert _mount("-o", "remount,ro,bind", str(path))
            yield "EROFS"
        finally:
            _umount(path)
        return
    modes = {p: p.stat().st_mode for p in [path, *path.rglob("*")] if not p.is_symlink()}
    for p, mode in modes.items():
        p.chmod(mode & ~0o222)
    try:
        yield "EACCES"
    finally:
        for p, mode in sorted(modes.items(), key=lambda item: len(item[0].parts)):
            p.chmod(mode)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``path`` (created empty); unmounted on exit."""
    if not CAN_MOUNT:
        raise RuntimeError(WHY_NOT)
    path.mkdir(parents=True, exist_ok=True)
    assert _mount("-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path))
    try:
        yield path
    finally:
        _umount(path)


def fill(filler: Path) -> int:
    """Write ``filler`` until the disk refuses even one byte; return its size."""
    written = 0
    with filler.open("wb", buffering=0) as handle:
        for chunk in (1 << 16, 1 << 12, 1 << 8, 1):
            block = b"\0" * chunk
            while True:
                try:
                    written += handle.write(block) or 0
                except OSError:
                    break
    return written


@contextlib.contextmanager
def lock_held(lock_file: Path) -> Iterator[None]:
    """ocmem's run lock, held by this process on its own open file (another run, to ocmem)."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
