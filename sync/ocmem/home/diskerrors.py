"""What a refusing file system means for the user: the error names the file as the home knows
it (never a temp file, never a backup copy), and says whether anything changed."""

from __future__ import annotations

import os
from pathlib import Path

from ocmem.errors import StorageError, from_os_error
from ocmem.home.paths import Paths


def about_path(exc: OSError, path: Path) -> OSError:
    """The same error, about ``path`` (a temp file's name means nothing to a user)."""
    if exc.errno is None:
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


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
