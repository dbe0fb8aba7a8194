"""Where an ocmem home's files live.

The home mirrors OpenCode's global config dir, so OpenCode finds AGENTS.md, skills/ and plugin/
there by itself: ``OCMEM_HOME``, else ``$XDG_CONFIG_HOME/opencode``, else ``~/.config/opencode``.
ocmem's own bookkeeping (lock, backups, log, sync state) lives in ``<home>/.ocmem`` so that
removing one folder undoes it all. ``Paths`` names every one of them, once.
"""

# No `from __future__ import annotations`: NamedTuples on the hot path (see ocmem.home.settings).

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, NoReturn

CONFIG_FILE_NAME = "ocmem.yaml"


def resolve_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("OCMEM_HOME"):
        return Path(env["OCMEM_HOME"]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "opencode"


def folder_home(home: Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The home; refused when it is a file (``refuse_a_file_home``)."""
    env = os.environ if env is None else env
    where = home if home is not None else resolve_home(env)
    if where.exists() and not where.is_dir():
        named = "--home" if home is not None else "OCMEM_HOME" if env.get("OCMEM_HOME") else ""
        refuse_a_file_home(where, named)
    return where


def refuse_a_file_home(where: Path, named: str) -> NoReturn:
    """A home that is a file, named by where it came from (``named``: --home, OCMEM_HOME, or ""
    for OpenCode's default) — click's own check said « Directory … est un fichier » and --home."""
    from ocmem.errors import InputError

    if named:
        raise InputError(
            f"{named} désigne {where}, qui est un fichier : le dossier ocmem doit être un dossier "
            "(rien n'a été créé)",
            fix=f"corrige {named} : le dossier de configuration d'OpenCode, d'habitude "
            "~/.config/opencode" + (" (ou retire OCMEM_HOME)" if named == "OCMEM_HOME" else ""),
        )
    raise InputError(
        f"{where} est un fichier : le dossier de configuration d'OpenCode doit être un dossier "
        "(rien n'a été créé)",
        fix="déplace ce fichier, ou désigne un autre dossier avec OCMEM_HOME ou --home",
    )


class Paths(NamedTuple):
    home: Path

    @property
    def agents_md(self) -> Path:
        return self.home / "AGENTS.md"

    @property
    def memory_dir(self) -> Path:
        return self.home / "memory"

    @property
    def memory_md(self) -> Path:
        return self.memory_dir / "MEMORY.md"

    @property
    def archive_md(self) -> Path:
        """Replaced and retired facts and skills (ocmem.formats.archive): never in a prompt."""
        return self.memory_dir / "ARCHIVE.md"

    @property
    def short_term(self) -> Path:
        return self.memory_dir / "SHORT_TERM.md"

    @property
    def note_quarantine(self) -> Path:
        """Notes an exposed session wrote, set apart: never loaded, not in SHORT_TERM.md's cap."""
        return self.memory_dir / "QUARANTINE.md"

    @property
    def journal(self) -> Path:
        return self.memory_dir / "journal.md"

    @property
    def pending(self) -> Path:
        return self.memory_dir / "pending.md"

    @property
    def skills_dir(self) -> Path:
        return self.home / "skills"

    @property
    def plugin_file(self) -> Path:
        return self.home / "plugin" / "ocmem.ts"

    @property
    def plugin_parts_dir(self) -> Path:
        """The plugin's parts, which its entry imports (not a top-level file: OpenCode would load
        each as a plugin)."""
        return self.home / "plugin" / "ocmem"

    @property
    def config_file(self) -> Path:
        return self.home / CONFIG_FILE_NAME

    @property
    def state_dir(self) -> Path:
        return self.home / ".ocmem"

    @property
    def backups_dir(self) -> Path:
        return self.state_dir / "backups"

    @property
    def lock_file(self) -> Path:
        return self.state_dir / "ocmem.lock"

    @property
    def log_file(self) -> Path:
        return self.state_dir / "log.jsonl"

    @property
    def sessions_dir(self) -> Path:
        return self.state_dir / "sessions"

    @property
    def windows_index(self) -> Path:
        """Every exposed session's window in one file, kept with the records (ocmem.home.sessions):
        what the plugin reads again when a file it is about to trust changed after it last did."""
        return self.state_dir / "windows.json"

    @property
    def home_id(self) -> Path:
        """This home's identity (ocmem.home): the id naming its pages in SilverBullet."""
        return self.state_dir / "home.json"

    @property
    def sync_state(self) -> Path:
        return self.state_dir / "sync-state.json"

    @property
    def note_recurrence(self) -> Path:
        """The days on which each short-term note was written (ocmem.services.recurrence)."""
        return self.state_dir / "note-recurrence.json"

    @property
    def skill_usage(self) -> Path:
        """One JSON line per skill the plugin saw loaded (for ``ocmem review``)."""
        return self.state_dir / "skill-usage.jsonl"

    @property
    def plugin_command(self) -> Path:
        """How the OpenCode plugin starts this ocmem (written by ``ocmem init``)."""
        return self.state_dir / "plugin.json"

    @property
    def old_memory_dir(self) -> Path:
        """Where ``ocmem init`` sets another memory system's skills aside (ocmem.setup.oldmemory):
        not a ``skills/`` folder, so OpenCode no longer loads them."""
        return self.state_dir / "old-memory"

    @property
    def history_git(self) -> Path:
        return self.state_dir / "history.git"

    @property
    def default_token_file(self) -> Path:
        return self.state_dir / "silverbullet.token"

    @property
    def journal_index(self) -> Path:
        """The search index of the journal: a cache, rebuilt from the journal at will."""
        return self.state_dir / "journal-index.sqlite3"

    @property
    def journal_damage(self) -> Path:
        """What hides a journal entry, as the last full reader found it (ocmem.home.journaldamage)."""
        return self.state_dir / "journal-damage.json"

    @property
    def journal_vectors(self) -> Path:
        """Which entry has which sentence vector (ocmem.home.journalvectors): a cache too."""
        return self.state_dir / "journal-vectors.sqlite3"

    @property
    def journal_vector_rows(self) -> Path:
        """The sentence vectors themselves, one row per entry text: a cache too."""
        return self.state_dir / "journal-vectors.f16"

    @property
    def journal_encoding_lock(self) -> Path:
        """Held by whoever encodes the journal in the background: one encoder at a time."""
        return self.state_dir / "journal-vectors.lock"

    @property
    def agents_dir(self) -> Path:
        """The OpenCode processes a plugin gate serves (see ``ocmem.bridge.agentproc``)."""
        return self.state_dir / "agents"

    @property
    def writes_journal(self) -> Path:
        """Every file ocmem writes in the home, with its new digest: what the plugin's
        tamper monitor accepts as ocmem's own change."""
        return self.state_dir / "writes.jsonl"

    @property
    def intent_file(self) -> Path:
        """An operation that changes several files, while it does (ocmem.home.intents)."""
        return self.state_dir / "intent.json"

    @property
    def recovered_log(self) -> Path:
        """The interrupted operations a later run completed or undid (``ocmem doctor``)."""
        return self.state_dir / "recovered.jsonl"

    @property
    def quarantine_dir(self) -> Path:
        """Where the plugin moves files the agent added or changed behind ocmem's back."""
        return self.state_dir / "quarantine"

    @property
    def plugin_seen(self) -> Path:
        """Written each time OpenCode loads the plugin (``ocmem doctor`` reads it)."""
        return self.state_dir / "plugin-seen.json"

    @property
    def hardened_file(self) -> Path:
        """The hardened mode's record (owner, agent, what ``ocmem harden --undo`` restores)."""
        return self.state_dir / "hardened.json"

    @property
    def cron_log(self) -> Path:
        return self.state_dir / "cron.log"

    @property
    def curation_log(self) -> Path:
        return self.state_dir / "curation.log"

    @property
    def curation_prompt(self) -> Path:
        """The weekly curation's prompt as ``ocmem cron install --job curation`` copied it: the
        crontab line reads it here, not inside the Python install (an upgrade moves that)."""
        return self.state_dir / "prompts" / "curation-hebdomadaire.md"

    def rel(self, path: Path) -> str:
        """Path relative to the home, for messages, logs and backups."""
        try:
            return path.relative_to(self.home).as_posix()
        except ValueError:
            return str(path)
