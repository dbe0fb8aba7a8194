"""Atomic writes: a reader or a crash sees a file's old bytes or its new ones, never a mix; and
the one way ocmem reads a file's text."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from ocmem.errors import OcmemError
from ocmem.home.diskerrors import about_path

TEMP_SUFFIX = ".ocmem-tmp"


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


def _fsync_dir(directory: Path) -> None:
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
