"""One ocmem home as every operation sees it: paths, limits, clock, text guards, the locked write
transaction and the readers of its files.

The notes and journal (``ocmem.memory``), proposals, install, doctor, review, the plugin API and
sync are peers that each receive a ``Workspace``; none reaches into another.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ocmem.config import Limits, Paths, Settings, load_settings
from ocmem.errors import OcmemError
from ocmem.fsio import Backups, atomic_write, log_event, read_text, run_lock
from ocmem.textsafety import check_text

if TYPE_CHECKING:
    from ocmem import pending, skills

# What each memory file holds when ocmem creates it (install and doctor's repair).
SHORT_TERM_TEMPLATE = ""


def memory_templates(paths: Paths) -> dict[Path, str]:
    from ocmem.journal import JOURNAL_HEADER
    from ocmem.memoryfile import MEMORY_HEADER
    from ocmem.pending import PENDING_HEADER

    return {
        paths.memory_md: MEMORY_HEADER,
        paths.short_term: SHORT_TERM_TEMPLATE,
        paths.journal: JOURNAL_HEADER,
        paths.pending: PENDING_HEADER,
    }


class Transaction:
    """One locked run: backs up before replacing, writes atomically, logs each write."""

    def __init__(self, paths: Paths, command: str):
        self.paths = paths
        self.command = command
        self.backups = Backups(paths)

    def write(
        self, path: Path, text: str, *, append_only: bool = False, old: str | None = None
    ) -> None:
        """Replace ``path`` with ``text``. ``old``: its current text, when the caller just read
        it under this transaction's lock (saves a read)."""
        old = read_text(path) if old is None else old
        if old == text:
            return
        if append_only and not text.startswith(old):
            raise OcmemError(f"écriture refusée : {self.paths.rel(path)} n'est qu'en ajout")
        backup = None if append_only else self.backups.save(path)
        atomic_write(path, text)
        log_event(
            self.paths,
            "write",
            command=self.command,
            file=self.paths.rel(path),
            chars=len(text),
            backup=self.paths.rel(backup) if backup else None,
        )


class Workspace:
    def __init__(
        self,
        settings: Settings,
        *,
        now: Callable[[], datetime] = datetime.now,
        wait_seconds: float = 0.0,
        known_secrets: Iterable[str] = (),
        sync_mode: bool = False,
    ):
        self.settings = settings
        self.paths: Paths = settings.paths
        self.limits: Limits = settings.limits
        self.now = now
        self.wait_seconds = wait_seconds
        self.known_secrets = tuple(known_secrets)
        self.sync_mode = sync_mode

    def today(self) -> date:
        return self.now().date()

    def check(self, field_name: str, text: str) -> None:
        """Refuse text that must never be memorised (secrets, the configured token, …)."""
        check_text(field_name, text, self.known_secrets)

    @contextlib.contextmanager
    def transaction(self, command: str) -> Iterator[Transaction]:
        with run_lock(self.paths, self.wait_seconds):
            yield Transaction(self.paths, command)

    # --- readers -------------------------------------------------------------------------

    def journal_files(self) -> list[Path]:
        """The journal, then its monthly archives, newest first."""
        from ocmem.journal import archive_files

        return [self.paths.journal, *archive_files(self.paths.memory_dir)]

    def journal_texts(self) -> list[str]:
        return [read_text(path) for path in self.journal_files()]

    def memory_text(self) -> str:
        return read_text(self.paths.memory_md)

    def pending_document(self) -> pending.Document:
        from ocmem import pending

        return pending.document(read_text(self.paths.pending))

    def proposals(self) -> list[pending.Proposal]:
        return self.pending_document().proposals

    def skills(self) -> list[skills.Skill]:
        from ocmem import skills

        return skills.list_skills(self.paths.skills_dir, self.limits.skill_lines)


def open_workspace(
    home: Path | None = None,
    *,
    wait_seconds: float = 0.0,
    env: Mapping[str, str] | None = None,
    now: Callable[[], datetime] = datetime.now,
) -> Workspace:
    """The workspace of a home, knowing the sync mode and the token to keep out of memory."""
    from ocmem.sync.config import is_configured, secret_values

    env = os.environ if env is None else env
    settings = load_settings(home, env)
    return Workspace(
        settings,
        now=now,
        wait_seconds=wait_seconds,
        known_secrets=secret_values(settings, env),
        sync_mode=is_configured(settings, env),
    )
