"""One ocmem home as every operation sees it: paths, limits, clock, text guards, the locked write
transaction and the readers of its files.

The notes and journal (``ocmem.services.memory``), proposals, install, doctor, review, the plugin API and
sync are peers that each receive a ``Workspace``; none reaches into another.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ocmem.clock import Clock
from ocmem.errors import InputError, OcmemError
from ocmem.home.actionlog import log_event
from ocmem.home.announce import announce, announce_append, announce_removal
from ocmem.home.atomic import (
    append_bytes,
    atomic_write,
    chmod,
    open_file,
    read_bytes,
    read_text,
    remove_file,
    rename_into,
    status,
    truncate,
)
from ocmem.home.backups import Backups, prune
from ocmem.home.diskerrors import about_path, storage_error
from ocmem.home.paths import Paths
from ocmem.home.runlock import run_lock
from ocmem.home.settings import Limits, Settings, load_settings

if TYPE_CHECKING:
    from ocmem.formats import pending, skills
    from ocmem.home.intents import Planned
    from ocmem.progress import Waiting

# What each memory file holds when ocmem creates it (install and doctor's repair).
SHORT_TERM_TEMPLATE = ""


def memory_templates(paths: Paths) -> dict[Path, str]:
    from ocmem.formats.journal import JOURNAL_HEADER
    from ocmem.formats.memorymd import MEMORY_HEADER
    from ocmem.formats.pending import PENDING_HEADER

    return {
        paths.memory_md: MEMORY_HEADER,
        paths.short_term: SHORT_TERM_TEMPLATE,
        paths.journal: JOURNAL_HEADER,
        paths.pending: PENDING_HEADER,
    }


class Transaction:
    """One locked run, and the only door to the home's files: backs up before replacing or
    removing, writes atomically, announces each change to the plugin's tamper monitor before it
    lands, logs it, and undoes its own writes when the run fails (``Workspace.transaction``), so
    that a run that stops half-way (disk full, a guard) leaves every file as it found it.

    A ``durable`` change (the pull's: each installed file is the human's version, recorded in
    the sync state as it lands) is backed up and announced like any other, and kept when the run
    fails; its backups are then kept too."""

    def __init__(self, paths: Paths, command: str, clock: Clock):
        self.paths = paths
        self.command = command
        self.clock = clock
        self.backups = Backups(paths, clock)
        self.current: Path | None = None  # the file being written, while it is
        self.saving = False  # whether that write is at its backup step
        self._undo: list[tuple[Path, Callable[[], None]]] = []
        self._touched: set[Path] = set()
        self._kept = False  # a durable change happened: the backups are its only undo
        self._planned: list[Planned] | None = None  # inside ``together``: changes to land
        self.intent_open = False  # an intent record is on disk for the changes landing

    @contextlib.contextmanager
    def together(self) -> Iterator[None]:
        """The writes, removals and appends made inside land as one (``intents.land``: an intent
        record first when they change several files), so that a crash leaves the state before
        or the state after, once the next run has settled the record. Nothing inside may read
        back what it wrote."""
        from ocmem.home import intents  # only the operations that change several files use it

        if self._planned is not None:
            yield
            return
        self._planned = []
        try:
            yield
            planned = self._planned
        finally:
            self._planned = None
        intents.land(self, planned)

    def write(
        self,
        path: Path,
        data: str | bytes,
        *,
        old: str | None = None,
        mode: int | None = None,
        backup: bool = True,
        durable: bool = False,
    ) -> bool:
        """Replace ``path`` with ``data``; whether anything changed. ``old``: its current text,
        when the caller just read it under this transaction's lock (saves a read). ``backup``:
        False for ocmem's own state files (the undo then keeps the old bytes in memory)."""
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if path == self.paths.pending:  # two blocks under one id: refused before any write
            from ocmem.formats import pending

            text = old if old is not None else read_text(path, errors="replace")
            pending.refuse_duplicate_ids(pending.document(text))
        if self._planned is not None and not durable:
            from ocmem.home.intents import Planned

            if read_bytes(path) == payload and mode is None:
                return False
            self._planned.append(Planned("write", path, payload, mode, backup))
            return True
        if old is not None:  # read under this lock, through the same door: only its existence
            existed = status(path) is not None
            before = old.encode("utf-8")
        else:
            current = read_bytes(path)
            existed, before = current is not None, current or b""
        if existed and before == payload and mode is None:
            return False
        self.current, self.saving = path, True
        # An empty file needs no copy: the undo keeps its (empty) bytes, and no backup is 0 bytes.
        copy = self.backups.save(path) if existed and backup and before else None
        self.saving = False
        undo = (
            None
            if durable or path in self._touched
            else self._restorer(path, existed, copy, before)
        )
        announce(self.paths, self.clock, path, lambda: payload)
        atomic_write(path, payload, mode=mode)  # atomic: if it fails, there is nothing to undo
        self._kept |= durable
        if undo is not None:
            self._touched.add(path)
            self._undo.append((path, undo))
        self.current = None
        log_event(
            self.paths,
            self.clock,
            "write",
            command=self.command,
            file=self.paths.rel(path),
            chars=len(data),
            backup=self.paths.rel(copy) if copy else None,
        )
        return True

    def create(self, path: Path, data: str | bytes, *, mode: int | None = None) -> bool:
        """Write ``path`` only if it does not exist yet; whether it was created."""
        if status(path) is not None:  # a link in its place is refused, not kept
            return False
        return self.write(path, data, mode=mode)

    def remove(
        self, path: Path, *, up_to: Path | None = None, durable: bool = False
    ) -> Path | None:
        """Remove the file ``path`` (backed up first; its removal announced), then the folders it
        leaves empty up to (not including) ``up_to``; its backup copy, or None if it was absent."""
        found = status(path)
        if found is None or not stat.S_ISREG(found.st_mode):
            return None
        if self._planned is not None and not durable:
            from ocmem.home.intents import Planned

            self._planned.append(Planned("remove", path, up_to=up_to))
            return None  # backed up when it lands
        self.current, self.saving = path, True
        copy = self.backups.save(path)
        self.saving = False
        emptied = self._emptied(path, up_to)
        undo = None if durable else self._restorer(path, True, copy, b"")
        announce(self.paths, self.clock, path, lambda: None)
        try:
            remove_file(path)
            self._kept |= durable
            if undo is not None:
                self._undo.append((path, undo))
            for directory in emptied:
                directory.rmdir()
        except OSError as exc:
            raise about_path(exc, path) from exc
        self.current = None
        log_event(
            self.paths,
            self.clock,
            "remove",
            command=self.command,
            file=self.paths.rel(path),
            backup=self.paths.rel(copy) if copy else None,
        )
        return copy

    @staticmethod
    def _emptied(path: Path, up_to: Path | None) -> list[Path]:
        """The folders above ``path``, below ``up_to``, that its removal leaves empty."""
        found: list[Path] = []
        gone = {path}
        parent = path.parent
        while up_to is not None and up_to in parent.parents:
            if any(entry not in gone for entry in parent.iterdir()):
                break
            found.append(parent)
            gone.add(parent)
            parent = parent.parent
        return found

    def set_mode(self, path: Path, mode: int, *, durable: bool = False) -> None:
        """Set ``path``'s permission bits (the monitor compares bytes, not modes)."""
        found = status(path)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        previous = stat.S_IMODE(found.st_mode)
        if previous == mode:
            return
        chmod(path, mode)
        self._kept |= durable
        if not durable:
            self._undo.append((path, lambda: chmod(path, previous)))

    def move_out(self, source: Path, target: Path) -> None:
        """Move ``source`` (a file, a link or a folder: old memory the user set aside) to
        ``target``, outside the monitor's watch; its removal announced first. A rename on one
        disk, else a copy then the removal of the original. Undone by the move back."""
        import shutil

        announce_removal(self.paths, self.clock, source)
        self.current = source
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(source, target)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                if source.is_symlink():
                    target.symlink_to(os.readlink(source))
                    source.unlink()
                elif source.is_dir():
                    shutil.copytree(source, target, symlinks=True)
                    shutil.rmtree(source)
                else:
                    shutil.copy2(source, target)
                    source.unlink()
        except OSError as exc:
            raise about_path(exc, source) from exc
        self.current = None

        def move_back() -> None:
            shutil.move(target, source)

        self._undo.append((source, move_back))
        log_event(
            self.paths, self.clock, "move", command=self.command, file=str(source), to=str(target)
        )

    def append(self, path: Path, text: str) -> None:
        """Append ``text`` in one write and fsync: the cost does not grow with the file, and a
        killed run leaves the old bytes followed by a prefix of ``text`` at worst."""
        if self._planned is not None:
            from ocmem.home.intents import Planned

            self._planned.append(Planned("append", path, text.encode("utf-8")))
            return
        self.current = path
        existed = status(path) is not None
        payload = text.encode("utf-8")
        try:
            fd = open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise about_path(exc, path) from exc
        try:
            start = os.fstat(fd).st_size
            self._undo.append((path, self._truncater(path, existed, start)))
            announce_append(self.paths, self.clock, path, start, payload)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError as exc:
            raise about_path(exc, path) from exc
        finally:
            os.close(fd)
        self.current = None
        log_event(
            self.paths,
            self.clock,
            "append",
            command=self.command,
            file=self.paths.rel(path),
            at=start,
            bytes=len(payload),
        )

    def set_aside(self, path: Path, start: int, name: str) -> Path:
        """Move the bytes of ``path`` from ``start`` to its end into this run's backup folder
        (as ``name``), then cut them from ``path``: what an interrupted write left behind."""
        self.current = path
        whole = read_bytes(path) or b""
        tail = whole[start:]
        kept = self.backups.save_bytes(name, tail)
        self._undo.append((path, self._reappender(path, tail)))
        try:
            announce(self.paths, self.clock, path, lambda: whole[:start])
            truncate(path, start)
        except OSError as exc:
            raise about_path(exc, path) from exc
        self.current = None
        log_event(
            self.paths,
            self.clock,
            "set-aside",
            command=self.command,
            file=self.paths.rel(path),
            bytes=len(tail),
            backup=self.paths.rel(kept),
        )
        return kept

    def _restorer(
        self, path: Path, existed: bool, copy: Path | None, old: bytes
    ) -> Callable[[], None]:
        made = [d for d in (path.parent, *path.parent.parents) if not d.exists()]
        found = status(path) if existed else None
        previous_mode = stat.S_IMODE(found.st_mode) if found is not None else None

        def undo() -> None:
            if not existed:
                with contextlib.suppress(FileNotFoundError):
                    remove_file(path)
                for directory in made:
                    with contextlib.suppress(OSError):
                        directory.rmdir()
                return
            if copy is None:
                atomic_write(path, old, mode=previous_mode)
                return
            try:
                path.parent.mkdir(parents=True, exist_ok=True)  # a removal may have taken it
                rename_into(copy, path)  # same disk: no space needed, atomic
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                atomic_write(path, read_bytes(copy) or b"", mode=previous_mode)
                copy.unlink()
            self.backups.saved.remove(copy)
            if previous_mode is not None:
                chmod(path, previous_mode)

        return undo

    @staticmethod
    def _truncater(path: Path, existed: bool, size: int) -> Callable[[], None]:
        def undo() -> None:
            if existed or size:
                truncate(path, size)
            else:
                with contextlib.suppress(FileNotFoundError):
                    remove_file(path)

        return undo

    @staticmethod
    def _reappender(path: Path, tail: bytes) -> Callable[[], None]:
        return lambda: append_bytes(path, tail)

    def rollback(self) -> list[str]:
        """Undo this run's writes, newest first; what could not be restored, with where its
        previous version is (that backup is then kept)."""
        failed: list[str] = []
        while self._undo:
            path, undo = self._undo.pop()
            try:
                undo()
            except OSError:
                failed.append(self.paths.rel(path))
        if self.intent_open:  # the record of the changes that were landing
            from ocmem.home import intents

            intents.closed_after_failure(self.paths, undone=not failed)
            self.intent_open = False
        if failed:
            return [
                f"{name} n'a pas pu être remis dans son état d'avant : "
                f"sa version précédente est dans {self.paths.rel(self.backups.folder)}"
                for name in failed
            ]
        if not self._kept:
            self.backups.discard()  # every copy equals its live file again
        return []

    def error(self, exc: OSError, unrestored: list[str]) -> OcmemError:
        """The storage error of a failed run, saying whether anything stayed changed."""
        if self.current is None:
            action = "d'accéder à"
        elif self.saving:
            action = "de sauvegarder (dans .ocmem/backups)"
        else:
            action = "d'écrire"
        # "nothing changed" only when the failure hit a write this transaction made itself and
        # every change before it was undone (a durable change stays)
        return storage_error(
            exc,
            self.paths,
            action=action,
            changed=None if unrestored or self.current is None or self._kept else False,
            extra=" ; ".join(unrestored),
            about=self.current,
        )


class Workspace:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Clock,
        wait_seconds: float = 0.0,
        known_secrets: Iterable[str] = (),
        sync_mode: bool = False,
        notify: Callable[[str], None] | None = None,
        waiting: Waiting | None = None,
    ):
        self.settings = settings
        self.paths: Paths = settings.paths
        self.limits: Limits = settings.limits
        self.clock = clock
        self.wait_seconds = wait_seconds
        self.known_secrets = tuple(known_secrets)
        self.sync_mode = sync_mode
        # hears what the run says on the side: it waits for the lock, the search index could
        # not be saved (the CLI prints it on stderr)
        self.notify = notify
        # entered around each long wait (the lock, SilverBullet): a terminal shows it
        # (ocmem.progress); None when nobody watches
        self.waiting = waiting
        # what settling an operation a killed run left half-done said (ocmem.home.intents)
        self.settled: list[str] = []

    def now(self) -> datetime:
        return self.clock.now()

    def today(self) -> date:
        return self.clock.today()

    def log(self, action: str, **fields: object) -> bool:
        """One line in the action log, stamped by this workspace's clock (best effort)."""
        return log_event(self.paths, self.clock, action, **fields)

    def check(self, field_name: str, text: str) -> None:
        """Refuse text that must never be memorised (secrets, the configured token, …)."""
        # imported here: its patterns cost a reader (journal search, recent, status) 20 ms
        from ocmem.guards.textsafety import check_text

        check_text(field_name, text, self.known_secrets)

    @contextlib.contextmanager
    def transaction(self, command: str) -> Iterator[Transaction]:
        """The run lock and a Transaction; if the body fails, its writes are undone, and a file
        system error becomes a StorageError that names the file and says what changed."""
        with run_lock(self.paths, self.clock, self.wait_seconds, self.notify, self.waiting):
            if os.path.lexists(self.paths.intent_file):  # a run killed half-way: settled first
                from ocmem.home import intents

                intents.settle_locked(self, Transaction(self.paths, "reprise", self.clock))
            run = Transaction(self.paths, command, self.clock)
            try:
                yield run
            except (Exception, KeyboardInterrupt) as exc:  # Ctrl-C undoes too
                unrestored = run.rollback()
                if isinstance(exc, OSError):
                    raise run.error(exc, unrestored) from exc
                raise
            prune(self.paths, self.clock)

    # --- readers -------------------------------------------------------------------------

    def journal_files(self) -> list[Path]:
        """The journal, then its monthly archives, newest first."""
        from ocmem.formats.journal import archive_files

        return [self.paths.journal, *archive_files(self.paths.memory_dir)]

    def journal_texts(self) -> list[str]:
        return [read_text(path) for path in self.journal_files()]

    def memory_text(self) -> str:
        return read_text(self.paths.memory_md)

    def archive_text(self) -> str:
        return read_text(self.paths.archive_md)

    def pending_document(self) -> pending.Document:
        from ocmem.formats import pending

        return pending.document(read_text(self.paths.pending))

    def proposals(self) -> list[pending.Proposal]:
        return self.pending_document().proposals

    def skills(self) -> list[skills.Skill]:
        """Every installed skill (a linked one listed with its refusal, unread)."""
        from ocmem.formats import skills

        return skills.list_skills(
            self.paths.skills_dir, self.limits.skill_lines, lambda p: read_text(p, errors="replace")
        )


def has_layout(home: Path) -> bool:
    """Whether ``home`` looks like an ocmem home (made by ``ocmem init``)."""
    return (home / "memory").is_dir() or (home / ".ocmem").is_dir()


def open_workspace(
    home: Path | None = None,
    *,
    wait_seconds: float = 0.0,
    env: Mapping[str, str] | None = None,
    clock: Clock,
    notify: Callable[[str], None] | None = None,
    waiting: Waiting | None = None,
    creating: bool = False,
) -> Workspace:
    """The workspace of a home, knowing the sync mode and the token to keep out of memory.

    Unless ``creating`` (``ocmem init``), the home must already be an ocmem home: a mistyped
    --home or OCMEM_HOME is refused before anything is written, instead of growing a new home.
    """
    env = os.environ if env is None else env
    settings = load_settings(home, env)
    if not creating and not has_layout(settings.paths.home):
        import shlex  # lazy: only for this message

        where = settings.paths.home
        missing = "n'existe pas" if not where.exists() else "ne contient ni memory/ ni .ocmem/"
        raise InputError(
            f"{where} {missing} : ce n'est pas un dossier ocmem (rien n'a été créé)",
            fix=f"vérifie --home ou OCMEM_HOME ; pour créer ce dossier : "
            f"`ocmem --home {shlex.quote(str(where))} init`",
        )
    secrets: tuple[str, ...] = ()
    sync_mode = False
    if _sync_mentioned(settings, env):
        from ocmem.home.space import is_configured, secret_values

        secrets, sync_mode = secret_values(settings, env), is_configured(settings, env)
    workspace = Workspace(
        settings,
        clock=clock,
        wait_seconds=wait_seconds,
        known_secrets=secrets,
        sync_mode=sync_mode,
        notify=notify,
        waiting=waiting,
    )
    if os.path.lexists(workspace.paths.intent_file):  # before anything reads the home
        from ocmem.home import intents

        intents.settle_before_reading(workspace)
    return workspace


def _sync_mentioned(settings: Settings, env: Mapping[str, str]) -> bool:
    """Whether anything could configure sync or hold a token: a `silverbullet` section, an
    OCMEM_SILVERBULLET_* variable, or the default token file. When nothing does, a local
    command skips loading the sync settings (a millisecond and more on every run)."""
    return (
        "silverbullet" in settings.raw
        or any(key.startswith("OCMEM_SILVERBULLET_") and value for key, value in env.items())
        or settings.paths.default_token_file.exists()
    )
