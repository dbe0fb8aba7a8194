"""Which limits and settings apply: ``ocmem.yaml`` read once, each section checked.

Value types here (and in the other modules every command loads) are NamedTuples, not
dataclasses: importing ``dataclasses`` pulls in ``inspect`` and costs about as much as Python's
own start-up, on the path of every ``ocmem`` call. Modules that define NamedTuples on that
path do without ``from __future__ import annotations``: typing compiles each string annotation
of a NamedTuple at import (``Limits``: 1.3 ms instead of 0.25).
"""

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from ocmem.errors import InputError
from ocmem.home.paths import Paths, resolve_home


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
    # Alert when what memory puts in every prompt exceeds this (see ocmem.services.context).
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
