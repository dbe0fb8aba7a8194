r"""Scheduled runs: one block of crontab lines per home (or a systemd user timer for the sync).

Three jobs, one line each, every line marked with its job and the home's absolute path
(``# ocmem:sync /chemin/du/dossier``): installing or removing one home's jobs leaves every other
line alone, another home's included, and installing twice leaves one block.

- ``sync``: ``ocmem sync`` every N minutes, log in ``.ocmem/cron.log``; only for a home where
  SilverBullet is configured (elsewhere it would fail at every run: refused, with the fix);
- ``curation``: ``opencode run`` of the weekly curation prompt (Mondays, 07:00), log in
  ``.ocmem/curation.log``;
- ``review``: ``ocmem review`` each quarter, into ``.ocmem/revue-AAAA-MM.md``.

cron runs a line from $HOME, with PATH=/usr/bin:/bin and none of the interactive shell's
variables. So every path a line holds is absolute (the home, ocmem, opencode, the prompt, the
token file), opencode is found when the line is installed (``--opencode`` otherwise), the prompt
is copied into the home (``Paths.curation_prompt``: a pip upgrade moves the shipped one), and the
curation's PATH names ocmem's and opencode's folders, since the model's shell calls ``ocmem``.

The sync line carries the token *file* location, never the token itself; cron does not see
variables exported in an interactive shell, so a token given only through
OCMEM_SILVERBULLET_TOKEN would be missing there (``warnings`` says so).

cron and systemd run the same shell command (every word quoted for sh), so any path works —
spaces, quotes, ``$``, ``%``. cron turns an unescaped ``%`` into a newline, so each is written
``\%``; systemd runs it as ``/bin/sh -c "…"``, the one word escaped for systemd's own parser
(``\\`` and ``\"``, ``%%`` for its specifiers, ``$$`` for its variables).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home.atomic import read_bytes, read_text
from ocmem.home.backups import Backups
from ocmem.home.diskerrors import storage_error
from ocmem.home.paths import Paths, resolve_home
from ocmem.home.settings import Settings
from ocmem.home.shipped import data_root
from ocmem.home.space import (
    ENV_TOKEN,
    ENV_TOKEN_FILE,
    ENV_URL,
    is_configured,
    load_sync_config,
)
from ocmem.home.statefiles import write_state

if TYPE_CHECKING:
    from ocmem.home.workspace import Workspace

JOBS = ("sync", "curation", "review")
MARKER = "# ocmem:"
# Before one block per home, the only line was marked so, without its home.
LEGACY_MARKER = "# ocmem:sync"
WHEN = {"curation": "0 7 * * 1", "review": "0 8 1 1,4,7,10 *"}
# What the curation's PATH ends with, after ocmem's and opencode's folders.
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


# --- paths as cron sees them -----------------------------------------------------------------


def absolute(settings: Settings) -> Settings:
    """``settings`` with the home made absolute: cron runs from $HOME, not from here."""
    return settings._replace(paths=Paths(Path(os.path.abspath(settings.paths.home))))


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def ocmem_program() -> list[str]:
    """How cron starts this ocmem: the ``ocmem`` on PATH, else this interpreter's ``-m ocmem``;
    absolute either way (a PATH may hold relative folders)."""
    exe = shutil.which("ocmem")
    if exe:
        return [os.path.abspath(exe)]
    return [os.path.abspath(sys.executable), "-m", "ocmem"]


def which_opencode() -> str | None:
    found = shutil.which("opencode")
    return os.path.abspath(found) if found else None


def cli_for(home: Path) -> str:
    """``ocmem`` as the user types it for ``home`` here: with ``--home`` unless it is the one
    this shell already uses."""
    if Path(os.path.abspath(resolve_home())) == home:
        return "ocmem"
    return f"ocmem --home {_q(home)}"


def find_opencode(given: str | None, home: Path) -> str:
    """opencode's absolute path: ``given`` (``--opencode``), else the one on PATH now."""
    if given is not None:
        path = os.path.abspath(os.path.expanduser(given))
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise InputError(
                f"--opencode {given} : ce n'est pas un programme exécutable",
                fix="donne le chemin qu'affiche `command -v opencode` dans ton shell",
            )
        return path
    found = which_opencode()
    if found is None:
        raise InputError(
            "opencode introuvable dans le PATH : la curation planifiée ne pourrait pas le lancer "
            "(cron n'a que /usr/bin:/bin) ; rien n'a été installé",
            fix=f"`{cli_for(home)} cron install --tache curation --opencode /chemin/vers/opencode`",
        )
    return found


# --- the lines -------------------------------------------------------------------------------


def command(settings: Settings, subcommand: str, env: Mapping[str, str] | None = None) -> str:
    """``ocmem --wait 60 <subcommand>`` for this home, as sh runs it from any folder."""
    env = os.environ if env is None else env
    words = [f"OCMEM_HOME={_q(absolute(settings).paths.home)}"]
    if subcommand == "sync":  # what this shell's sync would use, cron having none of it
        if env.get(ENV_URL):
            words.append(f"{ENV_URL}={_q(env[ENV_URL])}")
        if env.get(ENV_TOKEN_FILE):
            token_file = os.path.abspath(os.path.expanduser(env[ENV_TOKEN_FILE]))
            words.append(f"{ENV_TOKEN_FILE}={_q(token_file)}")
    program = " ".join(_q(word) for word in ocmem_program())
    return f"{' '.join(words)} {program} --wait 60 {subcommand}"


def curation_command(settings: Settings, opencode: str) -> str:
    """The weekly curation: opencode, run in the home on the home's copy of the prompt."""
    paths = absolute(settings).paths
    home = paths.home
    program = ocmem_program()
    # The model's shell runs `ocmem …`; an npm opencode needs the node next to it.
    wanted = [os.path.dirname(program[0])] if len(program) == 1 else []
    folders: list[str] = []
    for folder in [*wanted, os.path.dirname(opencode), *SYSTEM_PATH]:
        if folder and folder not in folders and ":" not in folder:
            folders.append(folder)
    env = [f"OCMEM_HOME={_q(home)}"]
    if home != Path(os.path.abspath(os.path.expanduser("~/.config/opencode"))):
        env.append(f"OPENCODE_CONFIG_DIR={_q(home)}")  # OpenCode, under cron, looks there only
    env.append(f"PATH={_q(':'.join(folders))}")
    return (
        f"cd {_q(home)} && {' '.join(env)} {_q(opencode)} run"
        f" < {_q(paths.curation_prompt)} >> {_q(paths.curation_log)} 2>&1"
    )


def review_command(settings: Settings) -> str:
    """The quarterly review, into ``.ocmem/revue-AAAA-MM.md``."""
    state = _q(absolute(settings).paths.state_dir)
    return f"{command(settings, 'review')} > {state}/revue-$(date +%Y-%m).md 2>&1"


def _one_line(shell: str) -> str:
    if "\n" in shell or "\r" in shell:
        raise OcmemError(
            "un chemin de la commande contient un saut de ligne : ni cron ni systemd ne le transmettent",
            fix="choisis un dossier ocmem (et un emplacement d'ocmem) sans saut de ligne",
        )
    return shell


def _checked(every_minutes: int, line: str) -> str:
    if not 1 <= every_minutes <= 59:
        raise InputError(
            f"--toutes-les doit être entre 1 et 59 minutes (reçu {every_minutes})",
            fix="par ex. --toutes-les 15",
        )
    return _one_line(line)


def cron_escape(shell: str) -> str:
    """A shell command as the command field of a crontab line: each ``%`` as ``\\%``."""
    if "\\%" in shell:  # cron has no way to pass a backslash right before a %
        raise OcmemError(
            "un chemin de la commande contient « \\% », que cron ne sait pas transmettre",
            fix="utilise le timer systemd (`ocmem cron print --systemd`), ou un autre dossier",
        )
    return shell.replace("%", "\\%")


def marker(home: Path, job: str) -> str:
    """What ends ``job``'s line for ``home``: a comment for sh, the line's owner for ocmem."""
    return f"{MARKER}{job} {_q(home)}"


def _crontab_line(when: str, shell: str, home: Path, job: str) -> str:
    return f"{when} {cron_escape(_one_line(shell) + ' ' + marker(home, job))}"


# The line each cron run ends with in its log: which job, its exit code, when (UTC) — read back
# by `ocmem doctor` (a job that fails at every run, or no longer runs, is said there).
RUN_END = re.compile(r"^ocmem:fin (\S+) (\d+) (\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)$")


def _recorded(shell: str, job: str, log: str) -> str:
    """``shell`` followed by the record of its end in ``log`` (even when it could not start)."""
    return (
        f'{shell} >> {log} 2>&1; echo "ocmem:fin {job} $? $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> {log}'
    )


def cron_line(settings: Settings, every_minutes: int) -> str:
    """The sync's crontab line."""
    settings = absolute(settings)
    log = _q(settings.paths.cron_log)
    shell = _checked(every_minutes, _recorded(command(settings, "sync"), "sync", log))
    return _crontab_line(f"*/{every_minutes} * * * *", shell, settings.paths.home, "sync")


def curation_line(settings: Settings, opencode: str) -> str:
    home = absolute(settings).paths.home
    return _crontab_line(WHEN["curation"], curation_command(settings, opencode), home, "curation")


def review_line(settings: Settings) -> str:
    home = absolute(settings).paths.home
    return _crontab_line(WHEN["review"], review_command(settings), home, "review")


def systemd_word(word: str) -> str:
    """``word`` as one argument of an ExecStart= line (systemd.syntax(7), systemd.service(5))."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def warnings(settings: Settings | None = None) -> list[str]:
    found = []
    if settings is not None and not is_configured(settings):
        found.append(
            f"⚠ SilverBullet n'est pas configuré pour {absolute(settings).paths.home} : "
            "cette synchronisation échouerait à chaque passage (`silverbullet.url` dans ocmem.yaml)"
        )
    if os.environ.get(ENV_TOKEN) and not os.environ.get(ENV_TOKEN_FILE):
        found.append(
            f"⚠ {ENV_TOKEN} n'existe pas pour cron : mets le jeton dans un fichier (mode 600) désigné par {ENV_TOKEN_FILE} ou `silverbullet.token_file`"
        )
    return found


SYNC_SERVICE, SYNC_TIMER = "ocmem-sync.service", "ocmem-sync.timer"
_SERVICE_DESCRIPTION = "Description=ocmem : synchronisation SilverBullet\n"
_TIMER_DESCRIPTION = "Description=ocmem : synchronisation SilverBullet régulière\n"


def user_units_dir(env: Mapping[str, str], user_home: Path | None = None) -> Path:
    """Where systemd looks for a user's own units: ``$XDG_CONFIG_HOME/systemd/user`` (or
    ``<user_home>/.config/systemd/user`` for another user's)."""
    if user_home is not None:
        return user_home / ".config" / "systemd" / "user"
    config = env.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(config) / "systemd" / "user"


def installed_units(settings: Settings, units_dir: Path) -> list[Path]:
    """This home's sync units, as the user installed them from ``ocmem cron print --systemd``
    (ocmem only prints them): the service when ocmem's and naming this home, then its timer
    and the link that enables it. Another home's units, or the user's own, are not listed."""
    home = absolute(settings).paths.home
    service, timer = units_dir / SYNC_SERVICE, units_dir / SYNC_TIMER
    needle = systemd_word(f"OCMEM_HOME={_q(home)} ")[1:-1]
    try:
        text = read_text(service) if service.is_file() else ""
    except (OSError, UnicodeDecodeError):
        return []
    if _SERVICE_DESCRIPTION not in text or needle not in text:
        return []
    found = [service]
    try:
        if timer.is_file() and _TIMER_DESCRIPTION in read_text(timer):
            found.append(timer)
    except (OSError, UnicodeDecodeError):
        pass
    enabled = units_dir / "timers.target.wants" / SYNC_TIMER
    if timer in found and enabled.is_symlink():
        found.append(enabled)
    return found


def systemd_units(settings: Settings, every_minutes: int) -> str:
    shell = _checked(every_minutes, command(settings, "sync"))
    return "\n".join(
        [
            "# ~/.config/systemd/user/ocmem-sync.service",
            "[Unit]",
            _SERVICE_DESCRIPTION.rstrip("\n"),
            "",
            "[Service]",
            "Type=oneshot",
            f"ExecStart=/bin/sh -c {systemd_word(shell)}",
            "",
            "# ~/.config/systemd/user/ocmem-sync.timer",
            "[Unit]",
            _TIMER_DESCRIPTION.rstrip("\n"),
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


# --- the crontab ---------------------------------------------------------------------------


def _crontab(user: str | None = None) -> list[str]:
    """The crontab's lines (``user``'s, when root reads another user's)."""
    if shutil.which("crontab") is None:
        raise OcmemError(
            "crontab introuvable sur cette machine",
            fix="installe cron, ou utilise le timer systemd (`ocmem cron print --systemd`)",
        )
    command = ["crontab", *(["-u", user] if user else []), "-l"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.splitlines() if done.returncode == 0 else []


def _write_crontab(lines: list[str], user: str | None = None) -> None:
    text = "".join(line + "\n" for line in lines)
    command = ["crontab", *(["-u", user] if user else []), "-"]
    done = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise OcmemError(
            f"crontab a refusé la mise à jour : {done.stderr.strip()}", fix="vérifie `crontab -l`"
        )


def _legacy_home(line: str) -> Path | None:
    """The home an old ``# ocmem:sync`` line synchronises (its OCMEM_HOME, from $HOME where
    cron runs it when relative)."""
    fields = line.split(None, 5)
    if len(fields) < 6:
        return None
    try:
        words = shlex.split(fields[5].replace("\\%", "%"))
    except ValueError:
        return None
    for word in words:
        if word.startswith("OCMEM_HOME="):
            home = Path(word[len("OCMEM_HOME=") :]).expanduser()
            return Path(os.path.abspath(Path.home() / home))
    return None


def job_of(line: str, home: Path) -> str | None:
    """The job ``line`` runs for ``home``, or None when it is not one of this home's."""
    line = line.rstrip()
    for job in JOBS:
        if line.endswith(" " + marker(home, job).replace("%", "\\%")):
            return job
    if line.endswith(" " + LEGACY_MARKER) and _legacy_home(line) == home:
        return "sync"
    return None


def scheduled_jobs(home: Path, user: str | None = None) -> dict[str, str]:
    """This home's lines in the crontab, by job (none when this machine has no crontab)."""
    try:
        current = _crontab(user)
    except OcmemError:
        return {}
    home = Path(os.path.abspath(home))
    return {job: line for line in current if (job := job_of(line, home)) is not None}


def last_runs(log_text: str, job: str) -> list[tuple[int, str]]:
    """(exit code, UTC stamp) of each recorded end of ``job``, oldest first."""
    found = (RUN_END.match(line) for line in log_text.splitlines())
    return [(int(m.group(2)), m.group(3)) for m in found if m and m.group(1) == job]


def _others(lines: list[str], home: Path) -> list[str]:
    """Lines of ocmem's that belong to other homes."""
    return [line for line in lines if MARKER in line and job_of(line, home) is None]


# --- install, remove -------------------------------------------------------------------------


def shipped_prompt() -> Path:
    return data_root() / "prompts" / "curation-hebdomadaire.md"


def _install_prompt(ws: Workspace, paths: Paths) -> list[str]:
    """Copy the shipped curation prompt into the home (a changed copy is backed up first)."""
    shipped = read_text(shipped_prompt()).encode("utf-8")
    if not shipped:
        raise OcmemError("prompt de curation livré introuvable", fix="réinstalle ocmem")
    target = paths.curation_prompt
    current = read_bytes(target)
    if current == shipped:
        return []
    try:
        kept = Backups(paths, ws.clock).save(target) if current is not None else None
        write_state(paths, target, shipped, mode=0o644)  # opencode may run as another user
    except OSError as exc:
        raise storage_error(exc, paths, changed=False) from exc
    if kept is None:
        return [f"Prompt de curation copié dans {target}"]
    return [f"Prompt de curation mis à jour dans {target} (l'ancien : {kept})"]


def _block_for(
    settings: Settings, jobs: Sequence[str], every_minutes: int, opencode: str | None
) -> dict[str, str]:
    """The lines of ``jobs`` for this home; every refusal comes from here, before any write."""
    home = settings.paths.home
    cli = cli_for(home)
    if opencode is not None and "curation" not in jobs:
        raise InputError("--opencode ne sert qu'à la curation", fix="ajoute --tache curation")
    lines = {}
    if "sync" in jobs:
        if not is_configured(settings):
            raise Refused(
                f"SilverBullet n'est pas configuré pour {home} : une synchronisation planifiée "
                "échouerait à chaque passage ; rien n'a été installé",
                fix=f"configure SilverBullet dans {settings.paths.config_file} (`silverbullet:` puis "
                f"`url: https://…`, voir docs/sync.md) et relance `{cli} cron install` ; sans "
                f"SilverBullet, planifie seulement les routines : "
                f"`{cli} cron install --tache curation --tache review`",
            )
        load_sync_config(settings)  # any other mistake of the section: said now, not in cron.log
        lines["sync"] = cron_line(settings, every_minutes)
    if "curation" in jobs:
        lines["curation"] = curation_line(settings, find_opencode(opencode, home))
    if "review" in jobs:
        lines["review"] = review_line(settings)
    return lines


def install(
    ws: Workspace,
    jobs: Sequence[str] = ("sync",),
    every_minutes: int = 15,
    opencode: str | None = None,
) -> str:
    """Put this home's lines for ``jobs`` in the crontab, in its block; its other jobs and every
    other line stay as they are. Idempotent."""
    settings = absolute(ws.settings)
    home = settings.paths.home
    asked = [job for job in JOBS if job in jobs]
    new = _block_for(settings, asked, every_minutes, opencode)
    current = _crontab()
    mine = [i for i, line in enumerate(current) if job_of(line, home)]
    block: dict[str, str] = {}
    for i in mine:
        block.setdefault(job_of(current[i], home) or "sync", current[i])
    block.update(new)
    lines = [block[job] for job in JOBS if job in block]
    at = mine[0] if mine else len(current)
    updated = [
        *current[:at],
        *lines,
        *(x for i, x in enumerate(current) if i > at and i not in mine),
    ]
    notes = _install_prompt(ws, settings.paths) if "curation" in asked else []
    if "curation" in asked and len(ocmem_program()) > 1:
        notes.append(
            "⚠ aucun programme `ocmem` dans le PATH : les commandes `ocmem …` du prompt de "
            "curation échoueront (installe ocmem avec pip ou pipx, puis relance)"
        )
    if "sync" in asked:
        notes += warnings()
    others = _others(current, home)
    if others:
        notes.append(
            f"{len(others)} ligne(s) ocmem d'autres dossiers, laissée(s) telle(s) quelle(s)"
        )
    if updated == current:
        return "\n".join([f"Déjà en place pour {home} :", *lines, *notes])
    _write_crontab(updated)
    undo = f"{cli_for(home)} cron remove"
    if len(asked) < len(lines):
        undo += "".join(f" --tache {job}" for job in asked)
    return "\n".join(
        [f"Crontab mise à jour pour {home} :", *lines, f"Pour annuler : {undo}", *notes]
    )


def remove(settings: Settings, jobs: Sequence[str] = JOBS, user: str | None = None) -> str:
    """Take this home's lines for ``jobs`` out of the crontab (``user``'s, when root removes
    another user's); every other line stays."""
    home = absolute(settings).paths.home
    current = _crontab(user)
    kept = [line for line in current if job_of(line, home) not in jobs]
    others = _others(current, home)
    tail = [f"{len(others)} ligne(s) ocmem d'autres dossiers, laissée(s)"] if others else []
    if len(kept) == len(current):
        return "\n".join([f"Aucune ligne ocmem pour {home} dans la crontab", *tail])
    _write_crontab(kept, user)
    return "\n".join(
        [f"{len(current) - len(kept)} ligne(s) ocmem retirée(s) de la crontab ({home})", *tail]
    )
