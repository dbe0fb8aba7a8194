"""The local learning loop: every operation the agent or the human performs on memory files.

Each write operation follows the same order: validate the input (refusing before anything is
written), take the run lock, re-read the files, apply the state-dependent guards (caps,
duplicates), back up what will change, write atomically, log. Results carry the text shown to
the caller.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocmem import journal, shortterm
from ocmem.config import Settings
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.fill import Fill
from ocmem.fsio import Backups, atomic_write, log_event, read_text, run_lock
from ocmem.similarity import fold
from ocmem.textsafety import check_text, render_safe

if TYPE_CHECKING:
    from ocmem.proposals import Proposals


class Result:
    """What an operation did, as the lines to show (the last line is the summary)."""

    def __init__(self, lines: list[str] | None = None):
        self.lines = lines if lines is not None else []

    def render(self) -> str:
        return "\n".join(self.lines)


class _Run:
    """One locked run: backs up before replacing, writes atomically, logs each write."""

    def __init__(self, settings: Settings, command: str):
        self.settings = settings
        self.paths = settings.paths
        self.command = command
        self.backups = Backups(settings.paths)

    def write(
        self, path: Path, text: str, *, append_only: bool = False, old: str | None = None
    ) -> None:
        """``old``: the current text when the caller just read it under this run's lock."""
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


class Memory:
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
        self.paths = settings.paths
        self.limits = settings.limits
        self.now = now
        self.wait_seconds = wait_seconds
        self.known_secrets = tuple(known_secrets)
        self.sync_mode = sync_mode

    @contextlib.contextmanager
    def _run(self, command: str) -> Iterator[_Run]:
        with run_lock(self.paths, self.wait_seconds):
            yield _Run(self.settings, command)

    def _check(self, name: str, text: str) -> None:
        check_text(name, text, self.known_secrets)

    def _today(self) -> date:
        return self.now().date()

    # --- SHORT_TERM.md -------------------------------------------------------------------

    def _current_notes(self) -> list[shortterm.Note]:
        return shortterm.parse(read_text(self.paths.short_term))

    def list_notes(self) -> Result:
        kept, dropped = shortterm.split_expired(self._current_notes(), self._today())
        result = Result(_numbered(kept) or ["(aucune note)"])
        if dropped:
            result.lines.append(
                f"{len(dropped)} note(s) expirée(s), supprimée(s) à la prochaine écriture"
            )
        result.lines.append(self._short_term_fill(shortterm.render(kept)))
        return result

    def add_note(self, text: str, days: int | None = None) -> Result:
        note = shortterm.make_note(
            text,
            self._today(),
            self.limits.note_default_days if days is None else days,
            self.limits.note_max_days,
        )
        self._check("note", note.text)
        note = note._replace(text=render_safe(note.text))
        with self._run("note") as run:
            kept, dropped = shortterm.split_expired(self._current_notes(), self._today())
            same = [n for n in kept if fold(n.text) == fold(note.text)]
            candidate = [n for n in kept if n not in same] + [note]
            rendered = shortterm.render(candidate)
            fill = Fill(len(rendered), self.limits.short_term_chars)
            if fill.over:
                raise Refused(
                    f"SHORT_TERM.md serait plein : {fill} avec cette note "
                    f"(rien n'a été écrit ; {len(dropped)} note(s) expirée(s) déjà décomptée(s))",
                    details="Notes actuelles :\n" + "\n".join(_numbered(kept)),
                    fix=(
                        "consolide : supprime les notes devenues inutiles avec "
                        "`ocmem note --remove N` (ou fusionne-les en une note plus courte), "
                        "puis réessaie"
                    ),
                )
            run.write(self.paths.short_term, rendered)
        lines = ["Note mise à jour" if same else "Note ajoutée", note.render()]
        if dropped:
            lines.append(f"{len(dropped)} note(s) expirée(s) supprimée(s)")
        lines.append(self._short_term_fill(rendered))
        return Result(lines)

    def remove_note(self, number: int) -> Result:
        with self._run("note --remove") as run:
            kept, dropped = shortterm.split_expired(self._current_notes(), self._today())
            if not 1 <= number <= len(kept):
                raise InputError(
                    f"pas de note n°{number} ({len(kept)} note(s) en cours)",
                    fix="`ocmem note --list` montre les numéros",
                )
            removed = kept.pop(number - 1)
            rendered = shortterm.render(kept)
            run.write(self.paths.short_term, rendered)
        lines = [f"Note supprimée : {removed.render()}"]
        if dropped:
            lines.append(f"{len(dropped)} note(s) expirée(s) supprimée(s)")
        lines.append(self._short_term_fill(rendered))
        return Result(lines)

    def _short_term_fill(self, rendered: str) -> str:
        fill = Fill(len(rendered), self.limits.short_term_chars)
        warn = " ⚠ bientôt plein : consolide" if fill.warns(self.limits.fill_warning_ratio) else ""
        return f"SHORT_TERM.md {fill}{warn}"

    # --- journal.md ----------------------------------------------------------------------

    def _journal_texts(self) -> list[str]:
        """The journal, then its monthly archives, newest first."""
        files = [self.paths.journal, *journal.archive_files(self.paths.memory_dir)]
        return [read_text(p) for p in files]

    def add_journal(self, data: Mapping[str, Any]) -> Result:
        entry = journal.entry_from_fields(data, self.now(), self.limits.journal_entry_lines)
        for name in ("title", "demande", "fait", "piege", "lecon"):
            self._check(name, getattr(entry, name))
        with self._run("journal add") as run:
            text = read_text(self.paths.journal)
            # References are unique across the journal and its archives (an archive may hold
            # this month's older entries).
            archive = read_text(self.paths.memory_dir / journal.archive_name(entry.when))
            entry = entry._replace(when=journal.free_minute(entry.when, text, archive))
            run.write(self.paths.journal, journal.append(text, entry), append_only=True, old=text)
        return Result([f"Entrée ajoutée : {entry.ref}", "Journal mis à jour"])

    def search_journal(
        self, query: str = "", tags: Sequence[str] = (), last: int | None = None
    ) -> Result:
        """The entries most relevant to ``query`` (the newest without query words), 5 at most."""
        from ocmem import journalindex, searchterms  # sqlite3: only for searches

        cap = self.limits.search_results
        limit = min(last, cap) if last else cap
        if last is not None and last < 1:
            raise InputError("--last doit être au moins 1", fix=f"par ex. --last {cap}")
        files = [self.paths.journal, *journal.archive_files(self.paths.memory_dir)]
        index = self.paths.state_dir / journalindex.INDEX_NAME
        found = journalindex.search(index, files, query, tags, limit)
        lines = [hit.text for hit in found.hits]
        order = "les plus pertinentes" if searchterms.query_terms(query) else "les plus récentes"
        if not found.hits:
            lines.append("0 entrée trouvée")
        elif found.total > len(found.hits):
            lines.append(f"{len(found.hits)} sur {found.total} entrées, {order} d'abord")
        else:
            lines.append(f"{found.total} entrée(s), {order} d'abord")
        return Result(lines)

    def recent_journal(self, last: int) -> Result:
        """Header lines only (date, title, tags) of the last entries: a cheap overview."""
        from ocmem import journalindex

        files = [self.paths.journal, *journal.archive_files(self.paths.memory_dir)]
        headers = journalindex.recent_headers((read_text(p) for p in files), last)
        return Result(
            [
                *headers,
                f"{len(headers)} dernière(s) entrée(s), titres seuls : le détail par `ocmem journal search`",
            ]
        )

    def archive_journal(self, before: date) -> Result:
        """Move entries older than ``before`` into monthly ``journal-AAAA-MM.md`` archives.

        Archives are written (and re-read to check every moved entry is there) before the
        journal loses anything, so a crash can at worst leave an entry in both places — which a
        rerun resolves, since archives hold each minute once.
        """
        cutoff = datetime.combine(before, datetime.min.time())
        with self._run("journal archive") as run:
            kept, moved = journal.split_for_archive(read_text(self.paths.journal), cutoff)
            if not moved:
                return Result([f"Rien à archiver avant le {before.isoformat()}"])
            for name, entries in sorted(moved.items()):
                path = self.paths.memory_dir / name
                run.write(path, journal.merge_archive(read_text(path), entries, name[8:15]))
            for name, entries in moved.items():
                present = {b.text for b in journal.blocks(read_text(self.paths.memory_dir / name))}
                missing = [b.ref for b in entries if b.text not in present]
                if missing:
                    raise OcmemError(
                        f"archivage interrompu : {', '.join(missing)} absentes de {name}",
                        fix="rien n'a été retiré du journal ; `ocmem doctor`",
                    )
            run.write(self.paths.journal, kept)
        count = sum(len(e) for e in moved.values())
        lines = [
            f"{count} entrée(s) archivée(s) : "
            + ", ".join(f"{n} ({len(e)})" for n, e in sorted(moved.items()))
        ]
        lines.append(
            "Elles restent trouvables par `ocmem journal search` ; SilverBullet n'est pas modifié."
        )
        return Result(lines)

    # --- pending.md (ocmem.proposals, imported only when needed) ----------------------

    def _proposal_ops(self) -> Proposals:
        from ocmem.proposals import Proposals

        return Proposals(self)

    def propose(self, data: Mapping[str, Any]) -> Result:
        return self._proposal_ops().propose(data)

    def list_pending(self, show_all: bool = False) -> Result:
        return self._proposal_ops().list_pending(show_all)

    def show_pending(self, pid: str) -> Result:
        return self._proposal_ops().show_pending(pid)

    def accept(self, pid: str) -> Result:
        return self._proposal_ops().accept(pid)

    def reject(self, pid: str, reason: str) -> Result:
        return self._proposal_ops().reject(pid, reason)

    def pending_duplicates(self, threshold: float = 0.35) -> Result:
        return self._proposal_ops().pending_duplicates(threshold)

    def merge_pending(self, keep_id: str, other_id: str) -> Result:
        return self._proposal_ops().merge_pending(keep_id, other_id)

    # --- status --------------------------------------------------------------------------

    def status(self) -> Result:
        warn_at = self.limits.fill_warning_ratio
        lines = []
        memory_fill = Fill(len(read_text(self.paths.memory_md)), self.limits.memory_chars)
        lines.append(f"MEMORY.md       {memory_fill}{_warning(memory_fill, warn_at)}")
        kept, dropped = shortterm.split_expired(self._current_notes(), self._today())
        st_fill = Fill(len(shortterm.render(kept)), self.limits.short_term_chars)
        expired = f", {len(dropped)} expirée(s)" if dropped else ""
        lines.append(
            f"SHORT_TERM.md   {st_fill}{_warning(st_fill, warn_at)} — {len(kept)} note(s){expired}"
        )
        entries = len(journal.blocks(read_text(self.paths.journal)))
        archives = journal.archive_files(self.paths.memory_dir)
        archived = f" (+{len(archives)} archive(s))" if archives else ""
        lines.append(f"journal.md      {entries} entrée(s){archived}")
        from ocmem import pending, skills

        proposals = pending.parse(read_text(self.paths.pending))
        by_state = {
            s: sum(p.state == s for p in proposals)
            for s in (
                pending.STATE_PENDING,
                pending.STATE_PROMOTED,
                pending.STATE_REFUSED,
                pending.STATE_MERGED,
            )
        }
        lines.append(
            f"pending.md      {by_state[pending.STATE_PENDING]} en attente, "
            f"{by_state[pending.STATE_PROMOTED]} promue(s), {by_state[pending.STATE_REFUSED]} refusée(s), {by_state[pending.STATE_MERGED]} fusionnée(s)"
        )
        installed = skills.list_skills(self.paths.skills_dir, self.limits.skill_lines)
        lines.append(f"skills/         {len(installed)}/{self.limits.skills_max} skill(s)")
        for skill in installed:
            for problem in skill.problems:
                lines.append(f"  ⚠ {skill.name} : {problem}")
        lines += self._sync_status()
        return Result(lines)

    def _sync_status(self) -> list[str]:
        from ocmem.syncconfig import load_sync_config
        from ocmem.syncstate import SyncState

        if not self.sync_mode:
            return ["SilverBullet    non configuré (mémoire locale seulement)"]
        config = load_sync_config(self.settings)
        state = SyncState.load(self.paths.state_dir / "sync-state.json", config.url)
        lines = [f"SilverBullet    {config.url} — {len(state.pulled)} fichier(s) tiré(s)"]
        for page, pushed in sorted(state.pushed.items()):
            open_conflicts = (
                f", ⚠ {len(pushed.conflicts)} bloc(s) dans une copie de conflit"
                if pushed.conflicts
                else ""
            )
            lines.append(f"  {page} : {len(pushed.blocks)} bloc(s) poussé(s){open_conflicts}")
        return lines


def _warning(fill: Fill, warn_at: float) -> str:
    if fill.over:
        return " ⚠ au-dessus du plafond"
    return " ⚠ bientôt plein" if fill.warns(warn_at) else ""


def _numbered(notes: list[shortterm.Note]) -> list[str]:
    return [f"{i}. {note.render()}" for i, note in enumerate(notes, start=1)]
