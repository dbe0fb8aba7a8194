"""Which limits and settings apply: ``ocmem.yaml`` read once, every section checked by one
typed loader (``SECTIONS``): each key's type and bounds, an unknown key refused with its name
and the keys possible, before any command does anything.

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

from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home.atomic import read_text, register_home
from ocmem.home.paths import Paths, folder_home


class Limits(NamedTuple):
    """Caps from the user's spec; each can be overridden under ``limits:`` in ocmem.yaml."""

    short_term_chars: int = 2000
    # Notes an exposed session wrote, set apart in memory/QUARANTINE.md (never in SHORT_TERM.md).
    quarantine_chars: int = 2000
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
    raw: Mapping[str, Any] = MappingProxyType({})  # every section checked (SECTIONS)


# --- the typed loader ------------------------------------------------------------------------

INTEGER, NUMBER, BOOLEAN, TEXT, TEXTS, RULES = (
    "integer",
    "number",
    "boolean",
    "text",
    "texts",
    "rules",
)
_WHAT = {
    INTEGER: "un nombre entier",
    NUMBER: "un nombre",
    BOOLEAN: "true ou false",
    TEXT: "un texte",
    TEXTS: "une liste de noms",
    RULES: "une liste de règles",
}
_EXAMPLE = {INTEGER: "10", NUMBER: "20", BOOLEAN: "false", TEXT: "…", TEXTS: "[nom1, nom2]"}


class Option(NamedTuple):
    """What one key of ocmem.yaml takes: its kind, and bounds for a number."""

    kind: str
    low: float | None = None  # inclusive
    high: float | None = None  # inclusive
    above_zero: bool = False  # strictly positive (the caps)
    nullable: bool = False
    help: str = ""  # what the user reads in the guide's table (French)
    default: Any = None  # when the key is absent (the caps': Limits)


_CAPS = {
    "short_term_chars": "taille maximale de memory/SHORT_TERM.md (caractères)",
    "quarantine_chars": "taille maximale de memory/QUARANTINE.md, les notes mises à part (caractères)",
    "memory_chars": "taille maximale de memory/MEMORY.md (caractères)",
    "note_default_days": "durée de vie d'une note sans --jours (jours)",
    "note_max_days": "durée de vie maximale d'une note (jours)",
    "journal_entry_lines": "lignes d'une entrée du journal, au plus",
    "journal_field_chars": "caractères d'un champ du journal, au plus",
    "journal_entry_chars": "caractères d'une entrée du journal, au plus",
    "note_chars": "caractères d'une note, au plus",
    "search_results": "entrées rendues par une recherche dans le journal",
    "skills_max": "nombre de skills, au plus",
    "skill_lines": "lignes d'un SKILL.md, au plus",
    "retrospective_threshold": "appels d'outils d'une session avant la rétrospective",
    "context_alert_tokens": "alerte quand la mémoire chargée dépasse ces tokens (estimés)",
    "fill_warning_ratio": "remplissage (0 à 1) à partir duquel un plafond est signalé",
    "duplicate_similarity": "similarité (0 à 1) à partir de laquelle deux propositions de skill sont la même",
}


def _cap(name: str, default: object) -> Option:
    kind = INTEGER if isinstance(default, int) else NUMBER
    high = 1 if kind == NUMBER else None
    return Option(kind, high=high, above_zero=True, help=_CAPS[name], default=default)


_PLUGIN = {
    "pull_timeout_seconds": Option(
        NUMBER,
        0.1,
        600,
        help="durée maximale du pull lancé en arrière-plan au démarrage d'une session (s)",
        default=20.0,
    ),
    "trusted_tools": Option(
        TEXTS, help="outils de plus dont la sortie n'expose pas la session", default=[]
    ),
    "untrusted_tools": Option(
        TEXTS, help="outils dont la sortie expose la session", default=["webfetch", "websearch"]
    ),
    "untrusted_dirs": Option(
        TEXTS, help="dossiers tiers de plus dont la lecture expose la session", default=[]
    ),
    "trust_project": Option(
        BOOLEAN, help="false : toute lecture d'un fichier du projet expose la session", default=True
    ),
}
_SILVERBULLET = {
    "url": Option(TEXT, help="adresse de l'instance (ou OCMEM_SILVERBULLET_URL)"),
    "token_file": Option(
        TEXT,
        help="fichier du jeton, mode 600 (relatif : au dossier ; défaut : .ocmem/silverbullet.token)",
    ),
    "inbox": Option(TEXT, help="le seul dossier où ocmem écrit", default="Agents/Inbox/"),
    "pull": Option(RULES, help="règles {remote, local} des fichiers tirés"),
    "push": Option(RULES, help="règles {local, remote} des pages poussées"),
    "max_delete_ratio": Option(
        NUMBER,
        0,
        1,
        help="part des fichiers tirés qu'un pull peut supprimer d'un coup",
        default=0.5,
    ),
    "concurrency": Option(INTEGER, 1, 64, help="lectures simultanées", default=8),
    "timeout_seconds": Option(NUMBER, 0.1, 600, help="délai d'une requête (s)", default=30.0),
    "retry_wait_seconds": Option(NUMBER, 0, 60, help="attente avant de réessayer (s)", default=0.5),
    "quiet_seconds": Option(
        NUMBER,
        0,
        60,
        help="calme exigé d'une page qu'un autre a modifiée, avant de l'écrire (s)",
        default=0.3,
    ),
    "patience_seconds": Option(
        NUMBER, 0, 600, help="attente d'une page en cours d'édition avant report (s)", default=20.0
    ),
    # What a space can install, whoever wrote it (a broken sync job, a compromised account):
    # over a bound, nothing of it is installed and the local copy stays (docs/sync.md).
    "pull_max_file_bytes": Option(
        INTEGER, 1024, 1 << 30, help="taille maximale d'un fichier tiré (octets)", default=1 << 20
    ),
    "pull_max_skills": Option(
        INTEGER,
        1,
        10_000,
        help="nombre de skills au-delà duquel le pull n'en tire aucun",
        default=50,
    ),
    "pull_max_total_bytes": Option(
        INTEGER,
        1024,
        1 << 32,
        help="taille totale maximale de ce qu'un pull tire (octets)",
        default=8 << 20,
    ),
    "pull_deadline_seconds": Option(
        NUMBER,
        1,
        3600,
        help="durée maximale d'un pull, liste et lectures comprises, quelle que soit la lenteur du serveur (s)",
        default=90.0,
    ),
    "expect_space_path": Option(
        TEXT, nullable=True, help="dossier de l'espace attendu sur le serveur (X-Space-Path)"
    ),
    "trusted_pages": Option(
        TEXTS,
        help="pages (ou dossiers, finis par /) dont la lecture par space_read n'expose pas la session",
        default=[],
    ),
    "allow_plain_http": Option(
        BOOLEAN, help="true : jeton en http:// vers une autre machine (réseau sûr)", default=False
    ),
}
SECTIONS: Mapping[str, Mapping[str, Option]] = MappingProxyType(
    {
        "limits": {name: _cap(name, value) for name, value in Limits()._asdict().items()},
        "plugin": _PLUGIN,
        "silverbullet": _SILVERBULLET,
    }
)
# Keys refused with their own reason, not as unknown.
_NEVER = {
    ("silverbullet", "token"): (
        "le jeton ne va jamais dans ocmem.yaml",
        "retire `token` de ocmem.yaml ; le jeton va dans un fichier en mode 600, nommé par "
        "`token_file` ou OCMEM_SILVERBULLET_TOKEN_FILE",
    )
}


def section(settings: Settings, name: str) -> Mapping[str, Any]:
    """One top-level section of ocmem.yaml, checked (empty when absent)."""
    value: Mapping[str, Any] = settings.raw.get(name) or {}
    return value


def setting(settings: Settings, name: str, key: str) -> Any:
    """The value of ``name.key``: as ocmem.yaml gives it (checked), else its default."""
    value = section(settings, name).get(key)
    return SECTIONS[name][key].default if value is None else value


def load_settings(home: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    paths = Paths(folder_home(home, env))
    register_home(paths.home)  # from now on, no link below it is followed (ocmem.home.atomic)
    raw = _read_config_file(paths.config_file)
    if raw:
        checked(raw, paths.config_file)
    return Settings(paths=paths, limits=_limits_from(raw.get("limits") or {}), raw=raw)


def checked(raw: Mapping[str, Any], where: Path) -> None:
    """Refuse ``raw`` (ocmem.yaml) unless every section and key is known and has its type."""
    unknown = sorted(str(k) for k in set(raw) - set(SECTIONS))
    if unknown:
        raise InputError(
            f"clé(s) inconnue(s) dans {where} : {', '.join(unknown)}",
            fix=f"sections possibles : {', '.join(SECTIONS)}",
        )
    for name, options in SECTIONS.items():
        values = raw.get(name)
        if values is None:
            continue
        if not isinstance(values, Mapping):
            raise InputError(
                f"`{name}` doit être un dictionnaire (reçu {values!r:.60})",
                fix=f"corrige {where} : `{name}:` suivi de clés indentées",
            )
        for key in values:
            if (name, key) in _NEVER:
                reason, fix = _NEVER[(name, key)]
                raise InputError(reason, fix=fix)
        unknown = sorted(str(k) for k in set(values) - set(options))
        if unknown:
            raise InputError(
                f"clé(s) inconnue(s) sous `{name}` : {', '.join(unknown)}",
                fix=f"clés possibles : {', '.join(options)} (dans {where})",
            )
        for key, value in values.items():
            wanted = _problem(options[key], value)
            if wanted:
                example = _EXAMPLE.get(options[key].kind, "…")
                raise InputError(
                    f"`{name}.{key}` doit être {wanted} (reçu {value!r:.60})",
                    fix=f"corrige {where}, par ex. `{key}: {example}`",
                )


def _problem(option: Option, value: object) -> str | None:
    """What ``value`` should be instead, or None when it fits ``option``."""
    if value is None and option.nullable:
        return None
    if option.kind in (INTEGER, NUMBER):
        return _number_problem(option, value)
    fits = {
        BOOLEAN: isinstance(value, bool),
        TEXT: isinstance(value, str),
        TEXTS: isinstance(value, list) and all(isinstance(v, str) and v for v in value),
        RULES: isinstance(value, list),
    }[option.kind]
    return None if fits else _WHAT[option.kind]


def _number_problem(option: Option, value: object) -> str | None:
    low, high = option.low, option.high
    if low is not None and high is not None:
        wanted = f"{_WHAT[option.kind]} de {low:g} à {high:g}"
    elif option.above_zero:
        wanted = f"{_WHAT[option.kind]} positif" + (f", {high:g} au plus" if high else "")
    else:
        wanted = _WHAT[option.kind]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return wanted
    if option.kind == INTEGER and not float(value).is_integer():
        return wanted
    if option.above_zero and value <= 0:
        return wanted
    if (low is not None and value < low) or (high is not None and value > high):
        return wanted
    return None


def _read_config_file(path: Path) -> Mapping[str, Any]:
    fix = f"corrige {path} (ou renomme-le pour revenir aux valeurs par défaut)"
    try:
        text = read_text(path)
    except OcmemError as exc:
        if isinstance(exc, Refused):
            raise
        raise InputError(exc.message, fix=fix) from exc
    if not text:
        return {}
    import yaml  # lazy: local commands without a config file never pay for it

    try:
        data = yaml.safe_load(text)
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


def _limits_from(values: Mapping[str, Any]) -> Limits:
    """The caps, from a checked `limits:` section."""
    defaults = Limits()
    limits = defaults._replace(
        **{name: type(getattr(defaults, name))(value) for name, value in values.items()}
    )
    if limits.note_default_days > limits.note_max_days:
        raise InputError(
            "`limits.note_default_days` dépasse `limits.note_max_days`",
            fix="corrige ocmem.yaml : la durée par défaut d'une note tient dans son maximum",
        )
    return limits
