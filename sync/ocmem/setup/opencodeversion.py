"""Which OpenCode the user runs, and whether ocmem's plugin can run in it (issue 37).

ocmem's plugin is an OpenCode 1 plugin (plugin API V1, checked on ``CHECKED_OPENCODE``).
OpenCode 2 does not load V1 plugins (its docs, build/plugins/migrate-v1): with it the user has
no memory loop at all, and nothing would say so. OpenCode 1 stays on its own 1.x line (npm
``opencode-ai``, the install script); Homebrew follows 2.x and ``opencode upgrade --major``
moves a 1.x to 2 (docs/opencode.md, « OpenCode 2 »).

:func:`inspect` looks once (the program the user's shell finds, its ``--version``, and the
configurations that use OpenCode 2's ``plugins`` key); :meth:`OpenCodeSeen.opencode2` says it in
French, for ``ocmem init``, ``ocmem doctor`` and ``ocmem essai`` alike.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ocmem.bridge.mcpdiscovery import Source, parse_jsonc, read_sources
from ocmem.setup.opencodedir import CHECKED_OPENCODE

OPENCODE1_INSTALL = f"npm install -g opencode-ai@{CHECKED_OPENCODE}"
V2_PLUGINS_KEY = "plugins"  # OpenCode 1 reads `plugin` (and ignores `plugins`)
_VERSION = re.compile(r"(?<![\d.])v?(\d+)\.(\d+)(?:\.(\d+))?")

# What the user goes without when the plugin is not loaded (French, said as it is).
LOST = (
    "la mémoire validée (MEMORY.md) et les notes de travail dans le prompt, les outils memory_* "
    "(notes, journal, propositions, promotion), la rétrospective après une tâche non triviale, "
    "le pull au début des sessions et le push après chaque tour, la remise en état des fichiers "
    "protégés et le masquage du jeton SilverBullet dans ce que lit le modèle"
)


def parse_version(output: str) -> str | None:
    """The version ``opencode --version`` printed (``2.2.7``, ``opencode v2.2.7``, ``1.18.33``),
    None when it printed none."""
    found = _VERSION.search(output)
    if found is None:
        return None
    return ".".join(part for part in found.groups() if part is not None)


def major_of(version: str | None) -> int | None:
    return int(version.split(".", 1)[0]) if version else None


def v2_configs(sources: Iterable[Source]) -> list[str]:
    """The configurations written for OpenCode 2: a top-level ``plugins`` key. Pure."""
    found = []
    for source in sources:
        try:
            config = parse_jsonc(source.text)
        except ValueError:
            continue  # unreadable: doctor's MCP check already says it
        if isinstance(config, dict) and V2_PLUGINS_KEY in config:
            found.append(source.where)
    return found


@dataclass(frozen=True)
class OpenCode2:
    """OpenCode 2 found: ``blocking`` when it is the OpenCode the user's shell starts (the plugin
    will not run), else only a configuration written for it."""

    blocking: bool
    what: str
    lost: str
    fix: str

    def lines(self) -> list[str]:
        mark = "✗" if self.blocking else "⚠"
        return [f"{mark} {self.what}", f"  Sans le plugin : {self.lost}.", f"  → {self.fix}"]


@dataclass(frozen=True)
class OpenCodeSeen:
    """This machine's OpenCode as the user's shell (and cron) finds it."""

    program: Path | None = None  # None: not found
    output: str = ""  # what `--version` printed
    failure: str | None = None  # why `--version` did not answer
    v2_configs: tuple[str, ...] = ()

    @property
    def version(self) -> str | None:
        return parse_version(self.output)

    @property
    def major(self) -> int | None:
        return major_of(self.version)

    def opencode2(self) -> OpenCode2 | None:
        """What to tell the user when OpenCode 2 is in sight (None: it is not)."""
        major = self.major
        if major is not None and major >= 2:
            configs = (
                f" (configuration écrite pour lui : {', '.join(self.v2_configs)})"
                if self.v2_configs
                else ""
            )
            return OpenCode2(
                True,
                f"OpenCode {self.version} ({self.program}) : le plugin d'ocmem tourne sur "
                f"OpenCode 1.x (API de plugins V1, vérifié avec {CHECKED_OPENCODE}) et OpenCode 2 "
                f"ne charge pas les plugins V1 : ocmem n'y est pas chargé{configs}",
                LOST,
                _back_to_1(self.program),
            )
        if self.v2_configs:
            return OpenCode2(
                False,
                f"{', '.join(self.v2_configs)} utilise la clé « {V2_PLUGINS_KEY} » d'OpenCode 2 : "
                "un OpenCode 2 lancé avec cette configuration ne chargera pas le plugin d'ocmem "
                "(OpenCode 1.x seulement)",
                LOST,
                "lance OpenCode 1.x (`opencode --version`), et si OpenCode 2 est installé "
                f"ailleurs, reviens à 1.x : {_back_to_1(None)} ; OpenCode 1 lit la clé "
                f"« plugin », pas « {V2_PLUGINS_KEY} »",
            )
        return None


def _back_to_1(program: Path | None) -> str:
    """How to stay on, or go back to, OpenCode 1.x (Homebrew follows 2.x: uninstall it there)."""
    if program is not None and _from_homebrew(program):
        first = "`brew uninstall opencode` (Homebrew suit OpenCode 2), puis "
    else:
        first = (
            "désinstalle OpenCode 2 comme il a été installé (Homebrew : `brew uninstall opencode`), "
            "puis "
        )
    return (
        f"{first}`{OPENCODE1_INSTALL}` (la version vérifiée avec ocmem ; le script "
        "d'installation d'OpenCode reste aussi sur 1.x) ; ne lance pas `opencode upgrade --major`. "
        "Le plugin pour OpenCode 2 n'existe pas encore (docs/opencode.md, « OpenCode 2 »)"
    )


def _from_homebrew(program: Path) -> bool:
    try:
        real = program.resolve()
    except OSError:
        real = program
    return "Cellar" in real.parts or str(real).startswith(("/opt/homebrew/", "/home/linuxbrew/"))


def find_opencode(env: Mapping[str, str]) -> Path | None:
    """``opencode`` where a user's shell finds it, else where its install script puts it."""
    found = shutil.which("opencode", path=env.get("PATH", os.defpath))
    if found:
        return Path(found)
    installer = Path(env.get("HOME", str(Path.home()))) / ".opencode" / "bin" / "opencode"
    return installer if os.access(installer, os.X_OK) else None


def version_of(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True)
    return done.stdout or done.stderr


def inspect(
    env: Mapping[str, str],
    home: Path | None = None,
    run: Callable[[list[str]], str] | None = None,
) -> OpenCodeSeen:
    """Looks once: the program, its version, and the global configurations (``home``: ocmem's,
    when it is not OpenCode's global folder) that are OpenCode 2's. Writes nothing."""
    sources, _ = read_sources(env, home)
    configs = tuple(v2_configs(sources))
    program = find_opencode(env)
    if program is None:
        return OpenCodeSeen(v2_configs=configs)
    try:
        output = (run or version_of)([str(program), "--version"])
    except (OSError, subprocess.SubprocessError) as exc:
        return OpenCodeSeen(program, failure=str(exc), v2_configs=configs)
    return OpenCodeSeen(program, output, v2_configs=configs)
