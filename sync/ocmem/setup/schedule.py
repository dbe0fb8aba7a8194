r"""Scheduled runs: an idempotent crontab line (or a systemd user timer) for ``ocmem sync``.

The line carries the home and the token *file* location, never the token itself; cron does not
see variables exported in an interactive shell, so a token given only through
OCMEM_SILVERBULLET_TOKEN would be missing there (``print`` says so).

Both run the same shell command (``command``: every word quoted for sh), so any path works —
spaces, quotes, ``$``, ``%``. cron turns an unescaped ``%`` into a newline, so each is written
``\%``; systemd runs it as ``/bin/sh -c "…"``, the one word escaped for systemd's own parser
(``\\`` and ``\"``, ``%%`` for its specifiers, ``$$`` for its variables).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

from ocmem.errors import OcmemError
from ocmem.home.settings import Settings
from ocmem.home.space import ENV_TOKEN, ENV_TOKEN_FILE

MARKER = "# ocmem:sync"


def command(settings: Settings, subcommand: str) -> str:
    exe = shutil.which("ocmem")
    program = shlex.quote(exe) if exe else f"{shlex.quote(sys.executable)} -m ocmem"
    env = [f"OCMEM_HOME={shlex.quote(str(settings.paths.home))}"]
    if os.environ.get(ENV_TOKEN_FILE):
        env.append(f"{ENV_TOKEN_FILE}={shlex.quote(os.environ[ENV_TOKEN_FILE])}")
    return f"{' '.join(env)} {program} --wait 60 {subcommand}"


def _checked(every_minutes: int, line: str) -> str:
    if not 1 <= every_minutes <= 59:
        raise OcmemError("--every doit être entre 1 et 59 minutes", fix="par ex. --every 15")
    if "\n" in line or "\r" in line:
        raise OcmemError(
            "un chemin de la commande contient un saut de ligne : ni cron ni systemd ne le transmettent",
            fix="choisis un dossier ocmem (et un emplacement d'ocmem) sans saut de ligne",
        )
    return line


def cron_escape(shell: str) -> str:
    """A shell command as the command field of a crontab line: each ``%`` as ``\\%``."""
    if "\\%" in shell:  # cron has no way to pass a backslash right before a %
        raise OcmemError(
            "un chemin de la commande contient « \\% », que cron ne sait pas transmettre",
            fix="utilise le timer systemd (`ocmem cron print --systemd`), ou un autre dossier",
        )
    return shell.replace("%", "\\%")


def cron_line(settings: Settings, every_minutes: int) -> str:
    log = shlex.quote(str(settings.paths.cron_log))
    line = _checked(every_minutes, f"{command(settings, 'sync')} >> {log} 2>&1")
    return f"*/{every_minutes} * * * * {cron_escape(line)} {MARKER}"


def systemd_word(word: str) -> str:
    """``word`` as one argument of an ExecStart= line (systemd.syntax(7), systemd.service(5))."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def warnings() -> list[str]:
    if os.environ.get(ENV_TOKEN) and not os.environ.get(ENV_TOKEN_FILE):
        return [
            f"⚠ {ENV_TOKEN} n'existe pas pour cron : mets le jeton dans un fichier (mode 600) désigné par {ENV_TOKEN_FILE} ou `silverbullet.token_file`"
        ]
    return []


def systemd_units(settings: Settings, every_minutes: int) -> str:
    shell = _checked(every_minutes, command(settings, "sync"))
    return "\n".join(
        [
            "# ~/.config/systemd/user/ocmem-sync.service",
            "[Unit]",
            "Description=ocmem : synchronisation SilverBullet",
            "",
            "[Service]",
            "Type=oneshot",
            f"ExecStart=/bin/sh -c {systemd_word(shell)}",
            "",
            "# ~/.config/systemd/user/ocmem-sync.timer",
            "[Unit]",
            "Description=ocmem : synchronisation SilverBullet régulière",
            "",
            "[Timer]",
            f"OnCalendar=*:0/{every_minutes}",
            "Persistent=true",
            "",
            "[Install]",
            "WantedBy=timers.target",
            "",
            "# puis : systemctl --user daemon-reload && systemctl --user enable --now ocmem-sync.timer",
        ]
    )


def _crontab() -> list[str]:
    if shutil.which("crontab") is None:
        raise OcmemError(
            "crontab introuvable sur cette machine",
            fix="installe cron, ou utilise le timer systemd (`ocmem cron print --systemd`)",
        )
    done = subprocess.run(["crontab", "-l"], capture_output=True, text=True, check=False)
    return done.stdout.splitlines() if done.returncode == 0 else []


def _write_crontab(lines: list[str]) -> None:
    text = "".join(line + "\n" for line in lines)
    done = subprocess.run(["crontab", "-"], input=text, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OcmemError(
            f"crontab a refusé la mise à jour : {done.stderr.strip()}", fix="vérifie `crontab -l`"
        )


def install(settings: Settings, every_minutes: int) -> str:
    line = cron_line(settings, every_minutes)
    current = _crontab()
    kept = [existing for existing in current if MARKER not in existing]
    if line in current and len(kept) == len(current) - 1:
        return "Déjà en place :\n" + line
    _write_crontab([*kept, line])
    return "\n".join(
        ["Ajouté à la crontab :", line, "Pour annuler : ocmem cron remove", *warnings()]
    )


def remove() -> str:
    current = _crontab()
    kept = [existing for existing in current if MARKER not in existing]
    if len(kept) == len(current):
        return "Aucune ligne ocmem dans la crontab"
    _write_crontab(kept)
    return f"{len(current) - len(kept)} ligne(s) ocmem retirée(s) de la crontab"
