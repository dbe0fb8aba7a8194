"""OpenCode's start-up in the home (its config dir) without a registry (docs/opencode.md,
« Démarrage hors ligne »). With any local plugin, OpenCode 1.18.33 waits at start for an npm
install of ``@opencode-ai/plugin`` into each config dir, unless ``node_modules/`` exists and
``package-lock.json`` lists, as root dependencies, ``@opencode-ai/plugin`` and every dependency
of ``package.json`` (``Npm.checkNodeModules`` / ``Npm.checkDirty``). Offline, that install makes
every start wait over a minute. ocmem's plugin imports no package, so ``ocmem init`` seeds an
empty ``node_modules/`` and a lock naming the package; a home whose ``package.json`` the user
keeps for other plugins is left to them, with the command that settles it.
"""

from __future__ import annotations

import json
from pathlib import Path

# The OpenCode release the end-to-end suite runs against (tests/e2e, docs/opencode.md): the
# hooks, events and config-dir rules ocmem relies on were checked on it.
CHECKED_OPENCODE = "1.18.33"
PLUGIN_PACKAGE = "@opencode-ai/plugin"
LOCK = "package-lock.json"
SEED_NOTE = "LISEZ-MOI-ocmem.txt"
SEED_LOCK = (
    json.dumps(
        {
            "name": "opencode-config",
            "lockfileVersion": 3,
            "requires": True,
            "packages": {"": {"dependencies": {PLUGIN_PACKAGE: CHECKED_OPENCODE}}},
        },
        indent=2,
    )
    + "\n"
)
SEED_README = (
    "Créé par `ocmem init` : tant que ce dossier et ../package-lock.json existent, OpenCode ne "
    "cherche pas à installer de paquets au démarrage (il démarre sans registre npm ; le plugin "
    "ocmem n'importe aucun paquet).\n"
    "Pour rendre la main à OpenCode (un autre plugin qui importe des paquets) : supprime ce "
    "dossier et ../package-lock.json, puis démarre OpenCode une fois en ligne.\n"
)


def _declared(path: Path, section: str = "dependencies") -> set[str] | None:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, ValueError):
        return None
    found = raw.get(section) if isinstance(raw, dict) else None
    return set(found) if isinstance(found, dict) else set()


def _locked(home: Path) -> set[str] | None:
    try:
        raw = json.loads((home / LOCK).read_text(encoding="utf-8"))
        root = raw["packages"][""]
        return set(root.get("dependencies") or {})
    except FileNotFoundError:
        return set()
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def registry_needed(home: Path) -> str | None:
    """Why OpenCode would try the npm registry when it next starts on ``home`` (None: it
    will not)."""
    if not (home / "node_modules").is_dir():
        return "node_modules/ manque"
    wanted = _declared(home / "package.json")
    locked = _locked(home)
    if wanted is None:
        return "package.json est illisible"
    if locked is None:
        return f"{LOCK} est illisible"
    missing = sorted((wanted | {PLUGIN_PACKAGE}) - locked)
    if missing:
        return f"{LOCK} ne liste pas {', '.join(missing)}"
    return None


def seedable(home: Path) -> bool:
    """Whether the seed can be laid without touching anything the user keeps: no package.json
    nor lock of theirs, and node_modules/ absent or ocmem's own (empty but for its note)."""
    if (home / "package.json").exists() or (home / LOCK).exists():
        return False
    modules = home / "node_modules"
    try:
        return not modules.exists() or {p.name for p in modules.iterdir()} <= {SEED_NOTE}
    except OSError:
        return False


def seed_files(home: Path) -> dict[Path, str]:
    """The seed's files that are missing."""
    wanted = {home / "node_modules" / SEED_NOTE: SEED_README, home / LOCK: SEED_LOCK}
    return {path: text for path, text in wanted.items() if not path.exists()}


def settle_command(home: Path) -> str:
    """What the user runs, once online, when their own package.json keeps the seed out."""
    return f"cd {home} && npm install {PLUGIN_PACKAGE}@{CHECKED_OPENCODE} (une fois, en ligne)"
