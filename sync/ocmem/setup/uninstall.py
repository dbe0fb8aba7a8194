"""``ocmem desinstaller``: take out of a home what ocmem installed, keep the memory.

What ocmem installed, each recognised as ocmem's before it goes (what is not stays, and is said):

- the hardened mode (``ocmem harden``): undone by ``harden --annuler``'s own code, as root;
- this home's crontab lines (their marker names the home; the user's lines and other homes'
  stay) and the systemd user units the user made from ``ocmem cron print --systemd`` (ocmem's
  names and descriptions, the service naming this home), stopped first;
- the plugin (``plugin/ocmem.ts`` and the parts ``plugin/ocmem/`` ships; another file there, or
  another plugin, stays), the retrospective skill when it is the shipped one, ocmem's section
  of AGENTS.md (between its markers; the rest of the file stays), the offline-start seed when
  it is untouched (``node_modules/`` with only ocmem's note, ocmem's ``package-lock.json``), and
  the ``mcp.ocmem`` entry an older ocmem wrote in the home's ``opencode.json`` (its other
  entries stay: ``ocmem.setup.formermcp``);
- ``.ocmem/``, ocmem's state (backups, history, token, sessions, logs, a memory system set aside
  at install): moved, whole, into the archive.

What it keeps: the memory — ``memory/`` (MEMORY.md, the journal and its archives, pending.md,
SHORT_TERM.md, ARCHIVE.md), the skills, AGENTS.md, ocmem.yaml — where it is (``ocmem init``
finds it again), and copied first into the archive folder, next to the home:
``<parent>/ocmem-archive-<date>/``, which the command names. Nothing is ever deleted in
SilverBullet. The plan is computed before anything changes (and shown, to be confirmed), then
again under the run lock: what runs is what was shown, archive folder included, or nothing
runs; a second run finds nothing to do and writes nothing (no state folder grows back).
"""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ocmem.bridge import agentproc
from ocmem.errors import Refused
from ocmem.home.atomic import read_bytes, read_text
from ocmem.home.runlock import run_lock
from ocmem.home.shipped import END_MARKER, SECTION, data_root, plugin_files
from ocmem.home.workspace import Workspace
from ocmem.outcome import Outcome
from ocmem.setup import formermcp, opencodedir, schedule
from ocmem.setup.hardrecord import read_record

ARCHIVE_PREFIX = "ocmem-archive-"
STATE_IN_ARCHIVE = "etat-ocmem"  # .ocmem/, once in the archive (a name a person sees)
KEPT_MEMORY = ("memory", "skills", "AGENTS.md", "ocmem.yaml")


@dataclass
class Plan:
    """What ``ocmem desinstaller`` will do in one home, read before anything changes."""

    home: Path
    hardened: dict[str, Any] | None = None  # the record `harden --annuler` undoes
    cron: dict[str, str] = field(default_factory=dict)  # job → line
    cron_user: str | None = None  # root undoing another user's set-up
    units: list[Path] = field(default_factory=list)
    plugin: list[Path] = field(default_factory=list)
    retrospective: Path | None = None
    section: str | None = None  # AGENTS.md without ocmem's section ("": nothing else left)
    seed: list[Path] = field(default_factory=list)
    former_mcp: bool = False
    state: bool = False  # .ocmem/ is there
    kept: list[str] = field(default_factory=list)  # ocmem's names that are not ocmem's now

    def empty(self) -> bool:
        return not (
            self.hardened
            or self.cron
            or self.units
            or self.plugin
            or self.retrospective
            or self.section is not None
            or self.seed
            or self.former_mcp
            or self.state
        )

    def removals(self) -> list[str]:
        found = []
        if self.hardened:
            found.append(
                f"mode durci : {self.home} rendu à {self.hardened.get('agent')}, la règle sudo "
                f"{self.hardened.get('sudoers')} retirée (`ocmem harden --annuler`)"
            )
        if self.cron:
            found.append(
                f"crontab : {len(self.cron)} ligne(s) de ce dossier ({', '.join(self.cron)}) ; "
                "les autres lignes restent"
            )
        if self.units:
            folder = self.units[0].parent
            names = ", ".join(p.relative_to(folder).as_posix() for p in self.units)
            found.append(f"systemd : {names} (dans {folder} ; le timer arrêté d'abord)")
        if self.plugin:
            found.append(f"plugin : plugin/ocmem.ts et plugin/ocmem/ ({len(self.plugin)} fichiers)")
        if self.retrospective:
            found.append("skills/retrospective/ (le skill d'ocmem)")
        if self.section is not None:
            found.append("AGENTS.md : la section d'ocmem (le reste du fichier gardé)")
        if self.former_mcp:
            found.append("opencode.json : l'entrée mcp.ocmem (les autres gardées)")
        if self.seed:
            found.append(
                "la graine du démarrage hors ligne : " + ", ".join(_rel(self, p) for p in self.seed)
            )
        if self.state:
            found.append(
                ".ocmem/ (l'état d'ocmem : sauvegardes, historique, jeton, journaux) : déplacé "
                "dans l'archive"
            )
        return found

    def render(self, archive: Path, *, done: bool) -> list[str]:
        lines = [f"ocmem desinstaller : {self.home}", "Retiré :" if done else "Sera retiré :"]
        lines += [f"  - {line}" for line in self.removals()]
        memory = [name for name in KEPT_MEMORY if os.path.lexists(self.home / name)]
        lines += [
            "Gardé (ta mémoire), tel quel, et copié d'abord dans l'archive : "
            + (", ".join(f"{n}/" if (self.home / n).is_dir() else n for n in memory) or "rien"),
            f"  dossier d'archive : {archive}",
        ]
        if self.kept:
            lines.append("Gardé aussi (plus à ocmem tel quel) : " + " ; ".join(self.kept))
        return lines


def _rel(plan: Plan, path: Path) -> str:
    try:
        return path.relative_to(plan.home).as_posix()
    except ValueError:
        return str(path)


def plan(ws: Workspace, env: Mapping[str, str] | None = None) -> Plan:
    """What uninstalling ``ws``'s home would do; refused (before anything) when it cannot."""
    env = os.environ if env is None else env
    paths = ws.paths
    found = Plan(paths.home)
    user_home: Path | None = None
    if os.path.lexists(paths.hardened_file):
        if os.geteuid() != 0:
            raise Refused(
                f"{paths.home} est en mode durci : le défaire (propriétaires, règle sudo) "
                "demande root ; rien n'a été modifié",
                fix=f"sudo ocmem --home {paths.home} desinstaller",
            )
        # Refused here, before any change, when root did not write it (ocmem.setup.hardrecord).
        found.hardened = read_record(paths)
    if found.hardened:
        found.cron_user = str(found.hardened["agent"])
        with contextlib.suppress(KeyError):
            user_home = Path(pwd.getpwnam(found.cron_user).pw_dir)
    live = [key.partition("-")[0] for key in agentproc.registered(paths) if agentproc.alive(key)]
    if live:
        raise Refused(
            f"OpenCode tourne avec le plugin d'ocmem (processus {', '.join(sorted(live))}) : il "
            "remettrait son état en place pendant la désinstallation ; rien n'a été modifié",
            fix="ferme OpenCode, puis relance `ocmem desinstaller`",
        )
    found.cron = schedule.scheduled_jobs(paths.home, found.cron_user)
    found.units = schedule.installed_units(ws.settings, schedule.user_units_dir(env, user_home))
    root = data_root()
    shipped = {target: source for source, target in plugin_files(root, paths)}
    found.plugin = [target for target in shipped if os.path.lexists(target)]
    if paths.plugin_parts_dir.is_dir():
        found.kept += [
            f"plugin/ocmem/{p.name} (pas livré par cet ocmem)"
            for p in sorted(paths.plugin_parts_dir.iterdir())
            if p not in shipped
        ]
    retrospective = paths.skills_dir / "retrospective" / "SKILL.md"
    if retrospective.is_file():
        if read_bytes(retrospective) == read_bytes(root / "skills" / "retrospective" / "SKILL.md"):
            found.retrospective = retrospective
        else:
            found.kept.append("skills/retrospective/SKILL.md (diffère de la version livrée)")
    found.section, problem = _without_section(paths.agents_md)
    if problem:
        found.kept.append(problem)
    found.seed, problem = _seed(paths.home)
    if problem:
        found.kept.append(problem)
    found.former_mcp = formermcp.present(paths)
    found.state = os.path.lexists(paths.state_dir)
    return found


def _without_section(agents: Path) -> tuple[str | None, str | None]:
    """AGENTS.md without ocmem's section (None: no section), or why it is left as it is."""
    if not agents.is_file():
        return None, None
    text = read_text(agents)
    sections = list(SECTION.finditer(text))
    if not sections:
        return None, None
    if len(sections) > 1 or text.count(END_MARKER) != 1:
        return None, "AGENTS.md (marqueurs d'ocmem en double ou incomplets : à retirer à la main)"
    before = text[: sections[0].start()].rstrip("\n")
    after = text[sections[0].end() :].lstrip("\n")
    if before and after:
        return f"{before}\n\n{after}", None
    return (f"{before}\n" if before else after), None


def _seed(home: Path) -> tuple[list[Path], str | None]:
    """The offline-start seed's files when untouched since ``ocmem init`` laid them."""
    note = home / "node_modules" / opencodedir.SEED_NOTE
    lock = home / opencodedir.LOCK
    if not os.path.lexists(note):
        return [], None
    untouched = (
        not os.path.lexists(home / "package.json")
        and read_bytes(note) == opencodedir.SEED_README.encode()
        and read_bytes(lock) == opencodedir.SEED_LOCK.encode()
        and {p.name for p in note.parent.iterdir()} == {opencodedir.SEED_NOTE}
    )
    if not untouched:
        return [], "node_modules/ et package-lock.json (modifiés depuis `ocmem init`, ou à toi)"
    return [note, lock], None


def uninstall(ws: Workspace, found: Plan, archive: Path) -> Outcome:
    """Carry ``found`` out, the plan shown with ``archive``: planned again under the run lock
    and refused, nothing changed, if the home changed since. The memory's copy, the home's
    files (one Transaction: a failure changes nothing), then the OS's side (the hardened mode,
    cron, systemd), .ocmem/ last."""
    paths = ws.paths
    had_state = os.path.lexists(paths.state_dir)
    with ws.transaction("desinstaller") as run:
        now = plan(ws)
        now.state = now.state and had_state  # else the lock just taken made .ocmem/
        if now != found:
            raise Refused(
                f"{paths.home} a changé depuis que le plan t'a été montré (une autre exécution "
                "d'ocmem, ou toi ?) : rien n'a été modifié",
                details="Serait retiré maintenant :\n"
                + "\n".join(f"  - {line}" for line in now.removals()),
                fix="relance `ocmem desinstaller` et relis le plan qu'il montre",
            )
        try:
            archive.mkdir(parents=True)
        except FileExistsError:
            raise Refused(
                f"le dossier d'archive {archive} a été créé depuis que le plan t'a été montré : "
                "rien n'a été modifié",
                fix="relance `ocmem desinstaller` : il en choisira un autre",
            ) from None
        try:
            for name in KEPT_MEMORY:  # the copy first: nothing is lost whatever happens next
                source = paths.home / name
                if source.is_dir() and not source.is_symlink():
                    shutil.copytree(source, archive / name, symlinks=True)
                elif source.is_file() and not source.is_symlink():
                    shutil.copy2(source, archive / name)
            with run.together():
                for path in found.plugin:
                    run.remove(path, up_to=paths.home)
                if found.retrospective:
                    run.remove(found.retrospective, up_to=paths.skills_dir)
                if found.section == "":
                    run.remove(paths.agents_md)
                elif found.section is not None:
                    run.write(paths.agents_md, found.section)
                for path in found.seed:
                    run.remove(path, up_to=paths.home)
                if found.former_mcp:
                    formermcp.remove(run, paths)
        except BaseException:
            shutil.rmtree(archive, ignore_errors=True)
            raise
    ws.log("desinstaller", archive=str(archive), removed=found.removals())
    said: list[str] = []
    if found.hardened:
        from ocmem.setup.harden import DEFAULT_OWNER, harden

        said += harden(paths.home, None, DEFAULT_OWNER, ws.clock, undo=True).lines
    if found.cron:
        schedule.remove(ws.settings, schedule.JOBS, found.cron_user)  # the plan says it
    if found.units:
        said += _remove_units(found.units, foreign=found.cron_user is not None)
    if os.path.lexists(paths.state_dir):  # the run above made one if there was none
        with run_lock(paths, ws.clock, ws.wait_seconds):  # the last run under .ocmem/
            _move(paths.state_dir, archive / STATE_IN_ARCHIVE)
    if os.geteuid() == 0:  # root (a hardened home given back): the archive is the home's user's
        owner = paths.home.stat()
        for path in [archive, *archive.rglob("*")]:
            os.chown(path, owner.st_uid, owner.st_gid, follow_symlinks=False)
    return Outcome(
        [
            *found.render(archive, done=True),
            *(f"  {line}" for line in said if line),
            "Pour revenir : `ocmem init` (ta mémoire est restée en place) ; l'état d'ocmem, jeton "
            f"compris, est dans {archive / STATE_IN_ARCHIVE} (à remettre en {paths.state_dir}).",
            "Reste à toi, si tu veux : `pipx uninstall ocmem` (ou `pip uninstall ocmem`) ; dans "
            "SilverBullet, ocmem n'a rien supprimé (pages Agents/Inbox/…, Library/ocmem, la "
            "section d'ocmem dans Agents/AGENTS.md).",
        ]
    )


def archive_folder(ws: Workspace) -> Path:
    """``<parent of the home>/ocmem-archive-<date>``, a name not taken yet."""
    stamp = ws.now().strftime("%Y-%m-%d-%H%M%S")
    base = ws.paths.home.parent / f"{ARCHIVE_PREFIX}{stamp}"
    candidate, n = base, 1
    while os.path.lexists(candidate):
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _move(source: Path, target: Path) -> None:
    try:
        os.rename(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.copytree(source, target, symlinks=True)
        shutil.rmtree(source)


def _remove_units(units: list[Path], *, foreign: bool) -> list[str]:
    """Stop the timer, remove the unit files and the link that enabled it. Another user's
    service manager (root undoing a hardened home) is not reached: the user is told."""
    manager = not foreign and shutil.which("systemctl") is not None
    said = _systemctl("disable", "--now", schedule.SYNC_TIMER) if manager else []
    for unit in units:
        unit.unlink(missing_ok=True)
    if manager:
        said += _systemctl("daemon-reload")
    else:
        said.append(
            f"⚠ le timer {schedule.SYNC_TIMER} peut encore tourner jusqu'à la prochaine session "
            f"de son utilisateur : `systemctl --user disable --now {schedule.SYNC_TIMER}`"
        )
    return said


def _systemctl(*args: str) -> list[str]:
    done = subprocess.run(
        ["systemctl", "--user", *args], capture_output=True, text=True, check=False
    )
    if done.returncode == 0:
        return []
    return [f"⚠ systemctl --user {' '.join(args)} : {done.stderr.strip() or done.returncode}"]
