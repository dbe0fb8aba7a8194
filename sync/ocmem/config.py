"""Where ocmem's files live and which limits apply.

Value types here (and in the other modules every command loads) are NamedTuples, not
dataclasses: importing ``dataclasses`` pulls in ``inspect`` and costs about as much as Python's
own start-up, on the path of every ``ocmem`` call. Modules that define NamedTuples on that
path do without ``from __future__ import annotations``: typing compiles each string annotation
of a NamedTuple at import (``Limits``: 1.3 ms instead of 0.25).

The home mirrors OpenCode's global config dir, so OpenCode finds AGENTS.md, skills/ and
plugin/ there by itself: ``OCMEM_HOME``, else ``$XDG_CONFIG_HOME/opencode``, else
``~/.config/opencode``. ocmem's own bookkeeping (lock, backups, log, sync state) lives in
``<home>/.ocmem`` so that removing one folder undoes it all.
"""

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ocmem.errors import InputError

CONFIG_FILE_NAME = "ocmem.yaml"


def resolve_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("OCMEM_HOME"):
        return Path(env["OCMEM_HOME"]).expanduser()
    xdg = env.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "opencode"


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
    def short_term(self) -> Path:
        return self.memory_dir / "SHORT_TERM.md"

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
        """Every exposed session's window in one file, kept with the records (ocmem.sessions):
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
        """The days on which each short-term note was written (ocmem.recurrence)."""
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
        """Where ``ocmem init`` sets another memory system's skills aside (ocmem.oldmemory):
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
    def agents_dir(self) -> Path:
        """The OpenCode processes a plugin gate serves (see ``ocmem.agentproc``)."""
        return self.state_dir / "agents"

    @property
    def writes_journal(self) -> Path:
        """Every file ocmem writes in the home, with its new digest: what the plugin's
        tamper monitor accepts as ocmem's own change."""
        return self.state_dir / "writes.jsonl"

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

    def rel(self, path: Path) -> str:
        """Path relative to the home, for messages, logs and backups."""
        try:
            return path.relative_to(self.home).as_posix()
        except ValueError:
            return str(path)


class Limits(NamedTuple):
    """Caps from the user's spec; each can be overridden under ``limits:`` in ocmem.yaml."""

    short_term_chars: int = 2000
    memory_chars: int = 2000
    note_default_days: int = 7
    note_max_days: int = 30
    journal_entry_lines: int = 10
    # Size caps (characters): each journal value, a whole rendered entry, one short-term note.
    journal_field_chars: int = 500
    journal_entry_chars: int = 2000
    note_chars: int = 300
    search_results: int = 5
    skills_max: int = 15
    skill_lines: int = 60
    retrospective_threshold: int = 5
    # Alert when what memory puts in every prompt exceeds this (see ocmem.context).
    context_alert_tokens: int = 5000
    fill_warning_ratio: float = 0.9
    # Proposals whose normalised similarity reaches this are the same lesson.
    duplicate_similarity: float = 0.5


class Settings(NamedTuple):
    paths: Paths
    limits: Limits = Limits()
    raw: Mapping[str, Any] = MappingProxyType({})


def section(settings: Settings, name: str) -> Mapping[str, Any]:
    """One top-level section of ocmem.yaml (empty when absent)."""
    value = settings.raw.get(name) or {}
    if not isinstance(value, Mapping):
        raise InputError(
            f"`{name}` doit être un dictionnaire", fix=f"corrige {settings.paths.config_file}"
        )
    return value


def load_settings(home: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    paths = Paths(home if home is not None else resolve_home(env))
    raw = _read_config_file(paths.config_file)
    return Settings(paths=paths, limits=_limits_from(raw.get("limits") or {}, paths), raw=raw)


def _read_config_file(path: Path) -> Mapping[str, Any]:
    if not path.exists():
        return {}
    import yaml  # lazy: local commands without a config file never pay for it

    fix = f"corrige {path} (ou renomme-le pour revenir aux valeurs par défaut)"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path} n'est pas de l'UTF-8 valide (octet {exc.start})", fix=fix
        ) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"ligne {mark.line + 1}, colonne {mark.column + 1} : " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
        raise InputError(f"{path} n'est pas du YAML valide ({where}{problem})", fix=fix) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{path} doit contenir un dictionnaire YAML", fix=f"corrige {path}")
    return data


def _limits_from(values: Mapping[str, Any], paths: Paths) -> Limits:
    if not isinstance(values, Mapping):
        raise InputError("`limits` doit être un dictionnaire", fix=f"corrige {paths.config_file}")
    known = Limits._fields
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InputError(
            f"clé(s) inconnue(s) sous `limits` : {', '.join(unknown)}",
            fix=f"clés possibles : {', '.join(known)} (dans {paths.config_file})",
        )
    defaults = Limits()
    kwargs: dict[str, Any] = {}
    for name, value in values.items():
        default = getattr(defaults, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise InputError(
                f"`limits.{name}` doit être un nombre positif (reçu {value!r})",
                fix=f"corrige {paths.config_file}",
            )
        kwargs[name] = type(default)(value)
    limits = defaults._replace(**kwargs)
    if limits.note_default_days > limits.note_max_days:
        raise InputError(
            "`limits.note_default_days` dépasse `limits.note_max_days`",
            fix=f"corrige {paths.config_file}",
        )
    return limits
