"""The errors ocmem raises, in one tree. Each says what happened and, where one exists, the fix.

::

    OcmemError               something went wrong; nothing was written unless it says so   → 1
    ├── InputError           the input (arguments, JSON, ocmem.yaml) is malformed           → 2
    ├── Refused              a guard refused, or a person must decide                        → 3
    ├── Busy                 another ocmem run holds the lock                               → 75
    │   └── PageKeepsChanging    a SilverBullet page changed at every attempt (push postponed)
    ├── StorageError         the disk refused (read-only, full, permissions): path and fix   → 1
    ├── PendingFormatError   memory/pending.md cannot be read as proposals                   → 1
    ├── ShortTermFormatError SHORT_TERM.md or QUARANTINE.md cannot be read as notes          → 1
    ├── SilverBulletError    the server could not be used for this run                       → 1
    │   ├── UnknownOutcome       a PUT failed after it left: applied or not
    │   ├── TornRead             a file read shorter or longer than its size, every time
    │   ├── PastDeadline         the pull's deadline passed while the server was still sending
    │   └── TooLarge             a body past the bytes its reader allows, stopped there
    │       └── BudgetSpent          the bytes a whole pull may receive, spent
    └── ForbiddenRequest     a request ocmem never sends (a bug, refused before sending)     → 1

Exit codes are decided in one place, ``ocmem.execution`` (0 ok, 1 error, 2 usage or invalid
input, 3 needs a human, 75 busy), for the command line and the plugin's gate alike; any other
exception is a bug: one line, the traceback in a file. ``tests/test_errors.py`` holds this tree
to the classes.
"""

from __future__ import annotations

import errno
from pathlib import Path


class OcmemError(Exception):
    """Something went wrong; nothing was written unless the message says otherwise."""

    def __init__(self, message: str, *, fix: str | None = None, details: str | None = None):
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.details = details

    def __str__(self) -> str:
        return self.render()

    def render(self) -> str:
        parts = [self.message]
        if self.details:
            parts.append(self.details.rstrip("\n"))
        if self.fix:
            parts.append(f"Correction : {self.fix}")
        return "\n".join(parts)


class InputError(OcmemError):
    """The input is malformed: the caller can fix it and retry."""


class Refused(OcmemError):
    """A guard refused the write, or a human must act."""


class Busy(OcmemError):
    """Another ocmem run holds the lock: retry later."""


class StorageError(OcmemError):
    """The file system refused a read or a write (read-only, full, permissions)."""


FULL = (errno.ENOSPC, errno.EDQUOT)
DENIED = (errno.EACCES, errno.EPERM)


def from_os_error(
    exc: OSError,
    *,
    action: str = "d'écrire",
    changed: bool | None = None,
    extra: str = "",
    where: str | None = None,
    folder: str | None = None,
) -> StorageError:
    """What the file system said, about which file (``where``, as the user knows it), and the
    fix a user can apply. ``changed``: False when nothing was modified (said so), None when it is
    not known here. ``folder``: where the fix applies (the file's folder by default)."""
    raw = str(exc.filename) if exc.filename else None
    where = where or raw or "un fichier d'ocmem"
    folder = folder or (str(Path(raw).parent) if raw else "le dossier ocmem")
    after = " : rien n'a été modifié" if changed is False else ""
    after += f" ; {extra}" if extra else ""
    if exc.errno in FULL:
        return StorageError(
            f"disque plein : impossible {action} {where}{after}",
            fix=f"libère de la place (`df -h {folder}`), puis relance la commande",
        )
    if exc.errno == errno.EROFS:
        return StorageError(
            f"disque en lecture seule : impossible {action} {where}{after}",
            fix="remonte ce disque en écriture, ou indique un dossier ocmem inscriptible "
            "(--home ou OCMEM_HOME)",
        )
    if exc.errno in DENIED:
        return StorageError(
            f"permission refusée : impossible {action} {where}{after}",
            fix=f"donne les droits d'écriture sur {folder} à cet utilisateur (`ls -ld {folder}`), "
            "ou lance ocmem avec le compte propriétaire",
        )
    reason = exc.strerror or str(exc)
    return StorageError(
        f"erreur du système de fichiers ({reason}) : impossible {action} {where}{after}",
        fix="vérifie le disque et le dossier ocmem (`ocmem doctor`), puis relance",
    )
