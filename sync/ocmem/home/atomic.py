"""How ocmem opens, reads and writes a file: atomically, and never through a link below the home.

Atomic: a reader or a crash sees a file's old bytes or its new ones, never a mix.

No link followed: below a home (``register_home``, done when its settings are loaded) a path is
walked from the home one name at a time with ``O_NOFOLLOW``, so a symbolic link anywhere below
the home — the file itself, or a folder on the way — is refused (``Refused``, naming the link and
the fix) instead of being read or written through; a rename lands in the folder the walk opened,
never through a link either. The home itself may be reached through a link
(``~/.config/opencode`` → ``/data/opencode``): it is resolved once. A path outside every home
(the package's own files, a token file the user keeps elsewhere) is opened as given. This module
is the one place that does it: every read and write of a memory, journal, pending, state or
token file goes through ``open_file`` (``tests/test_architecture.py`` holds the others to it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from pathlib import Path

from ocmem.errors import OcmemError, Refused
from ocmem.home.diskerrors import about_path

TEMP_SUFFIX = ".ocmem-tmp"

# Each home as named (absolute) → its real folder, resolved once (``register_home``).
_HOMES: dict[str, str] = {}
_PATH = getattr(os, "O_PATH", os.O_RDONLY)  # a folder walked, not read: search right only
_FOLDER = _PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

# Tests only: the process ends (os._exit) right after the Nth rename of this run, as a kill
# would; the crash tests walk N over every rename of a command (tests/test_intent.py).
EXIT_AFTER_RENAME_VARIABLE = "OCMEM_TEST_EXIT_AFTER_RENAME"
KILLED_EXIT = 137
_exit_after = int(os.environ.get(EXIT_AFTER_RENAME_VARIABLE, "0") or 0)
_renames = 0


def register_home(home: Path) -> None:
    """From now on, no link below ``home`` is followed (by this process)."""
    named = os.path.abspath(home)
    if named not in _HOMES:
        real = os.path.realpath(named)
        _HOMES[named] = real
        _HOMES.setdefault(real, real)


def _below(path: Path) -> tuple[str, str, list[str]] | None:
    """(home as named, its real folder, the names below it) of the innermost home holding
    ``path``; None outside every home."""
    full = os.path.abspath(path)
    folder = os.path.dirname(full)
    while _HOMES:
        real = _HOMES.get(folder)
        if real is not None:
            return folder, real, full[len(folder) :].lstrip(os.sep).split(os.sep)
        up = os.path.dirname(folder)
        if up == folder:
            return None
        folder = up
    return None


class _Walk:
    """The folder holding ``path`` opened (``fd``, O_PATH) without following a link below
    the home, and the file's own ``name`` in it; ``make``: create the missing folders."""

    def __init__(self, path: Path, *, make: bool = False, folder_mode: int = 0o777):
        self.path = path
        self.home = ""  # the home holding path, as named; "" outside every home
        where = _below(path)
        if where is None:
            parent, self.name = os.path.split(os.path.abspath(path))
            if make:
                os.makedirs(parent, exist_ok=True)
            self.fd = os.open(parent, _PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            return
        self.home, real, names = where
        *folders, self.name = names
        if self.name in ("", ".", ".."):
            raise OSError(errno.EINVAL, "chemin invalide", str(path))
        try:
            self.fd = os.open(real, _PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            if not make:
                raise FileNotFoundError(
                    errno.ENOENT, os.strerror(errno.ENOENT), str(path)
                ) from None
            os.makedirs(real, exist_ok=True)
            self.fd = os.open(real, _PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for depth, folder in enumerate(folders):
                self._enter(folder, depth, folders, make, folder_mode)
        except BaseException:
            os.close(self.fd)
            raise

    def _enter(self, folder: str, depth: int, folders: list[str], make: bool, mode: int) -> None:
        try:
            inner = os.open(folder, _FOLDER, dir_fd=self.fd)
        except FileNotFoundError:
            if not make:
                raise FileNotFoundError(
                    errno.ENOENT, os.strerror(errno.ENOENT), str(self.path)
                ) from None
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, mode, dir_fd=self.fd)
            inner = os.open(folder, _FOLDER, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ENOTDIR, errno.ELOOP):
                self.refuse_link(folder, os.sep.join(folders[: depth + 1]), folder=True)
            raise about_path(exc, self.path) from exc
        os.close(self.fd)
        self.fd = inner

    def refuse_link(self, name: str, rel: str, *, folder: bool = False) -> None:
        """Refused if ``name`` (in the walked folder) is a symbolic link; else nothing."""
        try:
            found = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            target = os.readlink(name, dir_fd=self.fd) if stat.S_ISLNK(found.st_mode) else None
        except OSError:
            return
        if target is None:
            return
        shown = os.path.join(self.home, rel)
        pointed = os.path.normpath(os.path.join(os.path.dirname(shown), target))
        # A link into ocmem's own state (the token) is never worth copying into a memory file.
        own_state = os.path.join(self.home, ".ocmem")
        into_own_state = os.path.commonpath([pointed, own_state]) == own_state
        put_back = (
            f"remplace le lien par le dossier qu'il désigne (`rm {shown} && cp -a {pointed} "
            f"{shown}`), ou retire-le (`rm {shown}`) et lance `ocmem init`, qui recrée ce qui manque"
            if folder
            else f"retire le lien (`rm {shown}`) et lance `ocmem init`, qui recrée un fichier "
            "manquant (la cible est un fichier d'état d'ocmem, à ne pas copier)"
            if into_own_state
            else f"retire le lien (`rm {shown}`) ; si sa cible est la bonne version du fichier, "
            f"copie-la à sa place (`cp {pointed} {shown}`), sinon `ocmem init` recrée un fichier "
            "manquant"
        )
        raise Refused(
            f"{rel} est un lien symbolique (vers {target}) : ocmem ne suit aucun lien dans son "
            f"dossier ({self.home}), il ne l'a ni lu ni écrit",
            fix=put_back,
        )

    def _rel(self) -> str:
        where = _below(self.path)
        return os.sep.join(where[2]) if where else str(self.path)

    def open(self, flags: int, mode: int = 0o644) -> int:
        try:
            nofollow = os.O_NOFOLLOW if self.home else 0
            return os.open(self.name, flags | nofollow | os.O_CLOEXEC, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP and self.home:
                self.refuse_link(self.name, self._rel())
            raise about_path(exc, self.path) from exc

    def lstat(self) -> os.stat_result | None:
        """The file's own status (None when absent); Refused when it is a link below the home."""
        try:
            found = os.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(found.st_mode) and self.home:
            self.refuse_link(self.name, self._rel())
        return found

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> _Walk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_file(path: Path, flags: int, mode: int = 0o644, *, folder_mode: int = 0o777) -> int:
    """``os.open(path, flags, mode)``, refusing a link below the home (Refused); the folders
    on the way are made (``folder_mode``) when ``flags`` has O_CREAT. The caller closes the
    descriptor."""
    with _Walk(path, make=bool(flags & os.O_CREAT), folder_mode=folder_mode) as walk:
        return walk.open(flags, mode)


def status(path: Path) -> os.stat_result | None:
    """``path``'s own status, None when it (or a folder on the way) is absent; Refused when it
    or a folder on the way is a link below the home."""
    try:
        with _Walk(path) as walk:
            return walk.lstat()
    except FileNotFoundError:
        return None


def refuse_link(path: Path) -> None:
    """Refused when ``path`` or a folder on its way below the home is a symbolic link (for
    what opens a file by its name: git, sqlite)."""
    status(path)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def text_of(data: bytes, errors: str = "strict") -> str:
    """A file's bytes as its text, read as Python reads a text file: UTF-8, and its line ends
    (``\r\n``, ``\r``) as ``\n``. ``errors="replace"``: bytes that are not UTF-8 replaced."""
    text = data.decode("utf-8", errors)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def read_text(path: Path, errors: str = "strict") -> str:
    """The file's text (``text_of``), or "" when it does not exist."""
    data = read_bytes(path)
    if data is None:
        return ""
    try:
        return text_of(data, errors)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise OcmemError(
            f"{path} n'est pas de l'UTF-8 valide (ligne {line}, octet {exc.start})",
            fix=f"réenregistre {path} en UTF-8 (une sauvegarde est dans le dossier .ocmem/backups)",
        ) from exc


def atomic_write(
    path: Path, data: str | bytes, *, mode: int | None = None, folder_mode: int = 0o777
) -> None:
    """Replace ``path`` with ``data`` so that a reader or a crash sees the old or the new bytes.

    Temp file in the same directory, fsync, rename over the target, fsync the directory.
    The previous permission bits are kept unless ``mode`` is given. An error names ``path``,
    not the temp file. A link in its place (or on its way, below the home) is refused.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        walk = _Walk(path, make=True, folder_mode=folder_mode)
    except OSError as exc:
        raise about_path(exc, path) from exc
    with walk:
        try:
            before = walk.lstat()
            # Same directory (so the rename is atomic), unique name, created exclusively.
            tmp = f".{walk.name}.{os.getpid()}.{time.monotonic_ns()}{TEMP_SUFFIX}"
            previous_mode = stat.S_IMODE(before.st_mode) if before else 0o644
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=walk.fd)
        except OSError as exc:
            raise about_path(exc, path) from exc
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
                handle.flush()
                os.fchmod(handle.fileno(), previous_mode if mode is None else mode)
                os.fsync(handle.fileno())
            os.replace(tmp, walk.name, src_dir_fd=walk.fd, dst_dir_fd=walk.fd)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=walk.fd)
            if isinstance(exc, OSError):
                raise about_path(exc, path) from exc
            raise
        _renamed()
        _fsync_folder(walk.fd)


def rename_into(source: Path, path: Path) -> None:
    """Rename ``source`` (same disk) over ``path``, in the folder a no-link walk opened."""
    with _Walk(path) as walk:
        walk.lstat()
        os.replace(source, walk.name, dst_dir_fd=walk.fd)
        _renamed()
        _fsync_folder(walk.fd)


def remove_file(path: Path) -> None:
    """Remove the file ``path`` (never what a link below the home points to)."""
    with _Walk(path) as walk:
        os.unlink(walk.name, dir_fd=walk.fd)


def truncate(path: Path, size: int) -> None:
    """Cut ``path`` to ``size`` bytes (never what a link below the home points to)."""
    fd = open_file(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def append_bytes(path: Path, data: bytes) -> None:
    """Append ``data`` to the existing file ``path`` in one write, then fsync."""
    fd = open_file(path, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def chmod(path: Path, mode: int) -> None:
    """Set ``path``'s permission bits (never those of what a link below the home points to)."""
    fd = open_file(path, os.O_RDONLY)
    try:
        os.fchmod(fd, mode)
    except OSError as exc:
        raise about_path(exc, path) from exc
    finally:
        os.close(fd)


def _renamed() -> None:
    global _renames
    if _exit_after:
        _renames += 1
        if _renames == _exit_after:
            os._exit(KILLED_EXIT)


def _fsync_folder(walked: int) -> None:
    dir_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=walked)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
