"""Scheduled runs: an idempotent crontab line (or a systemd user timer) for ``ocmem sync``.

The line carries the home and the token *file* location, never the token itself; cron does not
see variables exported in an interactive shell, so a token given only through
OCMEM_SILVERBULLET_TOKEN would be missing there (``print`` says so).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

from ocmem.config import Settings
from ocmem.errors import OcmemError
from ocmem.sync.config import ENV_TOKEN, ENV_TOKEN_FILE

MARKER = "# ocmem:sync"


def command(settings: Settings, subcommand: str) -> str:
    exe = shutil.which("ocmem")
    program = shlex.quote(exe) if exe else f"{shlex.quote(sys.executable)} -m ocmem"
    env = [f"OCMEM_HOME={shlex.quote(str(settings.paths.home))}"]
    if os.environ.get(ENV_TOKEN_FILE):
        env.append(f"{ENV_TOKEN_FILE}={shlex.quote(os.environ[ENV_TOKEN_FILE])}")
    return f"{' '.join(env)} {program} --wait 60 {subcommand}"


def cron_line(settings: Settings, every_minutes: int) -> str:
    if not 1 <= every_minutes <= 59:
        raise OcmemError("--every doit être entre 1 et 59 minutes", fix="par ex. --every 15")
    log = shlex.quote(str(settings.paths.cron_log))
    return f"*/{every_minutes} * * * * {command(settings, 'sync')} >> {log} 2>&1 {MARKER}"


def warnings() -> list[str]:
    if os.environ.get(ENV_TOKEN) and not os.environ.get(ENV_TOKEN_FILE):
        return [
            f"⚠ {ENV_TOKEN} n'existe pas pour cron : mets le jeton dans un fichier (mode 600) désigné par {ENV_TOKEN_FILE} ou `silverbullet.token_file`"
        ]
    return []


def systemd_units(settings: Settings, every_minutes: int) -> str:
    exec_line = command(settings, "sync").split(" ")
    env = [part for part in exec_line if "=" in part and not part.startswith("-")]
    program = " ".join(part for part in exec_line if part not in env)
    return "\n".join(
        [
            "# ~/.config/systemd/user/ocmem-sync.service",
            "[Unit]",
            "Description=ocmem : synchronisation SilverBullet",
            "",
            "[Service]",
            "Type=oneshot",
            *[f"Environment={item}" for item in env],
            f"ExecStart={program}",
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
