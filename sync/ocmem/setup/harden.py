"""``ocmem harden``: the hardened mode, where the operating system enforces what the agent may
change, read and promote. Run as root; ``ocmem harden --undo`` puts everything back.

A separate Unix user, the *owner* (``ocmem`` by default), owns the home (OpenCode's config dir):
AGENTS.md, memory/, skills/, the plugin, OpenCode's own config files, and ``.ocmem/`` with the
token. The agent's user keeps read access to what OpenCode reads and nothing more:

- the home and its folders are ``0755`` and its files ``0644``, all the owner's: the agent can
  neither change a file nor add one (no ``plugins/evil.ts``, no ``skill/x/``, no
  ``opencode.json``); ``.ocmem/`` is ``0711`` with its files ``0600`` (the token too), except
  ``plugin.json`` (``0644``), which tells the plugin how to start the gate, and ``hardened.json``,
  what ``--undo`` puts back, written before the first change and kept root's
  (``ocmem.setup.hardrecord``);
- every parent folder of the home that the agent owns (usually its own home folder and
  ``~/.config``) is given to root, so the agent cannot rename the config dir away and put its
  own in its place; OpenCode's data and cache folders there stay the agent's;
- one sudoers rule lets the agent's user start exactly ``<ocmem> --home <home> gate`` as the
  owner, and nothing else: the plugin starts that gate when OpenCode loads it, then forbids
  OpenCode and all it starts to gain privileges again (``no_new_privs``): a model's shell can
  neither run ocmem as the owner nor sudo at all. The gate applies ocmem's policy (notes, journal,
  proposals, search; never a promotion);
- the ocmem that runs as the owner must not be writable by the agent: it is checked here (a
  root-owned virtualenv, e.g. ``/opt/ocmem``).

The human promotes in a terminal, as the owner: ``sudo -u ocmem ocmem --home … pending accept``.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ocmem.clock import Clock
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.home import gateenv
from ocmem.home.actionlog import log_event
from ocmem.home.atomic import read_text
from ocmem.home.paths import Paths
from ocmem.home.statefiles import remove_state
from ocmem.outcome import Outcome
from ocmem.setup import handover
from ocmem.setup.hardrecord import SUDOERS_DIR, USER_NAME, read_record, sudoers_file, write_record

DEFAULT_OWNER = "ocmem"
_PLAIN_PATH = re.compile(r"^[A-Za-z0-9._/+@-]+$")  # what a sudoers rule holds without quoting


def program() -> Path:
    """The ``ocmem`` console script of this installation (what the sudoers rule names)."""
    script = Path(sys.executable).with_name("ocmem")
    if not script.is_file():
        raise Refused(
            f"pas de commande ocmem à côté de {sys.executable}",
            fix="installe ocmem avec pip dans un virtualenv appartenant à root "
            "(python3 -m venv /opt/ocmem && /opt/ocmem/bin/pip install ocmem), puis lance "
            "/opt/ocmem/bin/ocmem harden …",
        )
    return script


def gate_command(owner: str, script: Path, home: Path) -> list[str]:
    """How the plugin starts the gate in the hardened mode (it appends ``gate``)."""
    return ["sudo", "-n", "-u", owner, "--", str(script), "--home", str(home)]


def sudoers_rule(agent: str, owner: str, script: Path, home: Path) -> str:
    return (
        "# ocmem hardened mode: the agent's user may start ocmem's gate as the owner, nothing\n"
        f"# else. Removed by `{script} --home {home} harden --annuler`.\n"
        f"{agent} ALL=({owner}) NOPASSWD: {script} --home {home} gate\n"
    )


def _user(name: str, role: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        fix = (
            f"crée-le : useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin {name}"
            if role == "propriétaire"
            else "donne le compte Unix sous lequel tourne OpenCode (--agent)"
        )
        raise Refused(f"l'utilisateur {name} ({role}) n'existe pas", fix=fix) from None


def writable_by(info: os.stat_result, uid: int, groups: set[int]) -> bool:
    mode = info.st_mode
    if info.st_uid == uid:
        return bool(mode & stat.S_IWUSR)
    if info.st_gid in groups:
        return bool(mode & stat.S_IWGRP)
    return bool(mode & stat.S_IWOTH)


def replaceable(path: Path, uid: int, groups: set[int]) -> Path | None:
    """The first component of ``path`` the user could change or swap for its own (a folder it
    may write that is not sticky, or a sticky one where it owns the entry), or None."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        parent, current = current, current / part
        parent_info, info = parent.lstat(), current.lstat()
        sticky = bool(parent_info.st_mode & stat.S_ISVTX)
        if writable_by(parent_info, uid, groups) and (not sticky or info.st_uid == uid):
            return current
    info = path.lstat()
    return path if writable_by(info, uid, groups) or info.st_uid == uid else None


def carried_config(text: str, carried: Sequence[gateenv.Decision], config: Path) -> str:
    """ocmem.yaml's ``text`` with every carried setting in it (``gateenv.with_setting``);
    refused when one cannot be added without touching the rest: ``check`` calls it, before
    ``harden`` changes anything."""
    for decision in carried:
        new = gateenv.with_setting(text, decision.key, decision.value)
        if new is None:
            raise Refused(
                f"{config} : ocmem ne sait pas y ajouter `{decision.key}` sans toucher au "
                "reste ; rien n'a été modifié",
                fix=f"ajoute-y à la main, sous `silverbullet:`, la ligne "
                f"`{decision.key}: {decision.value}`, puis relance `ocmem harden`",
            )
        text = new
    return text


class Hardener:
    def __init__(
        self,
        paths: Paths,
        agent: str,
        owner: str,
        clock: Clock,
        env: Mapping[str, str] | None = None,
    ):
        self.clock = clock
        self.env = os.environ if env is None else env
        self.carried: list[gateenv.Decision] = []
        self.config_text = ""  # ocmem.yaml with the carried settings in it (``check``)
        if os.geteuid() != 0:
            raise Refused(
                "ocmem harden change des propriétaires et une règle sudo : il faut être root",
                fix=f"sudo {program()} --home {paths.home} harden --agent {agent}",
            )
        for name in (agent, owner):
            if not USER_NAME.match(name):
                raise InputError(f"nom d'utilisateur invalide : {name!r}", fix="un nom Unix")
        self.paths = paths
        self.agent = _user(agent, "agent")
        self.owner = _user(owner, "propriétaire")
        if 0 in (self.agent.pw_uid, self.owner.pw_uid) or self.agent.pw_uid == self.owner.pw_uid:
            raise Refused(
                "l'agent et le propriétaire doivent être deux utilisateurs distincts, ni l'un ni l'autre root",
                fix="--agent <compte d'OpenCode> --proprietaire ocmem",
            )
        self.groups = set(os.getgrouplist(self.agent.pw_name, self.agent.pw_gid))
        self.script = program()
        self.rule_file = sudoers_file(agent)

    # -- checks --------------------------------------------------------------------------------

    def check(self) -> list[Path]:
        """Refuse what cannot be made safe; return the home's parents to give to root."""
        home = self.paths.home
        if not _PLAIN_PATH.match(str(home)) or not _PLAIN_PATH.match(str(self.script)):
            raise InputError(
                f"chemin inutilisable dans une règle sudo : {home} ou {self.script}",
                fix="lettres, chiffres et . _ / + @ - seulement",
            )
        if home.is_symlink() or (home.exists() and not home.is_dir()):
            raise Refused(
                f"{home} n'est pas un dossier", fix="donne le dossier de config d'OpenCode"
            )
        for needed, where in (("sudo", "/usr/bin"), ("visudo", "/usr/sbin")):
            if shutil.which(needed) is None:
                raise Refused(
                    f"{needed} est introuvable dans le PATH ({where} ?) ; rien n'a été modifié",
                    fix=f"installe sudo (apt-get install sudo), ou ajoute {where} au PATH de root "
                    f"(`sudo env PATH=$PATH:{where} ocmem …`, ou `su -` plutôt que `su`)",
                )
        if not SUDOERS_DIR.is_dir():
            raise Refused(
                f"{SUDOERS_DIR} n'existe pas : sudo n'y lirait pas la règle de la passerelle",
                fix="installe sudo (apt-get install sudo), qui le crée",
            )
        self.carried = self._check_environment()
        config = self.paths.config_file
        self.config_text = carried_config(read_text(config), self.carried, config)
        self._check_program()
        self._check_owner_runs_it()
        to_lock: list[Path] = []
        for parent in reversed(home.parents):  # from / down
            info = parent.lstat()
            if parent.is_symlink():
                raise Refused(
                    f"{parent} est un lien symbolique", fix="donne le chemin réel du --home"
                )
            if info.st_uid == self.agent.pw_uid:
                to_lock.append(parent)  # given to root below
            elif writable_by(info, self.agent.pw_uid, self.groups) and not (
                info.st_mode & stat.S_ISVTX
            ):
                raise Refused(
                    f"{self.agent.pw_name} peut écrire dans {parent}, un parent de {home} : il "
                    "pourrait remplacer le dossier de config",
                    fix=f"retire-lui l'écriture sur {parent} (ou choisis un autre --home)",
                )
        return to_lock

    def _check_environment(self) -> list[gateenv.Decision]:
        """The OCMEM_SILVERBULLET_* variables this run sees: the gate, started by sudo, will
        not (ocmem.home.gateenv). Refused here before any change, or carried into ocmem.yaml
        by ``run``; and the token file the gate will read must stay out of the agent's reach."""
        from ocmem.home.settings import load_settings
        from ocmem.home.space import sync_section, token_file_path

        settings = load_settings(self.paths.home, self.env)
        section = sync_section(settings)
        decisions = gateenv.decide(self.env, section, self.paths)
        refused = [d for d in decisions if d.action == gateenv.REFUSE]
        token = token_file_path(settings, section, {})
        if self.paths.home in token.parents and self.paths.state_dir not in token.parents:
            refused.append(
                gateenv.Decision(
                    "token_file",
                    gateenv.REFUSE,
                    "token_file",
                    str(token),
                    f"le jeton SilverBullet ({token}, `silverbullet.token_file`) deviendrait "
                    "lisible par tous en mode durci (seul .ocmem/ reste au propriétaire)",
                    f"install -m 600 {token} {self.paths.default_token_file}, puis retire "
                    f"`token_file` de {self.paths.config_file}",
                )
            )
        if refused:
            raise Refused(
                "la passerelle du mode durci, lancée par sudo, ne verrait pas ce que tu as "
                "réglé : rien n'a été modifié",
                details="\n".join(f"- {d.why}" for d in refused),
                fix=" ; ".join(d.fix for d in refused),
            )
        return [d for d in decisions if d.action == gateenv.CARRY]

    def _check_program(self) -> None:
        import ocmem

        scheme = sysconfig.get_paths()
        code = [
            self.script,
            Path(sys.executable).resolve(),
            Path(sys.prefix),
            Path(scheme["purelib"]),
            Path(scheme["platlib"]),
            Path(ocmem.__file__).resolve().parent,
        ]
        for path in code:
            found = replaceable(path, self.agent.pw_uid, self.groups) if path.exists() else None
            if found is not None:
                raise Refused(
                    f"{self.agent.pw_name} peut modifier {found} : le code d'ocmem qui tourne sous "
                    f"{self.owner.pw_name} ne doit pas être à sa portée",
                    fix="installe ocmem dans un virtualenv appartenant à root (python3 -m venv "
                    "/opt/ocmem && /opt/ocmem/bin/pip install ocmem) et lance-le de là",
                )

    def _check_owner_runs_it(self) -> None:
        """The gate runs as the owner: its interpreter must be readable by the owner (a Python
        under /root is not)."""
        try:
            done = subprocess.run(
                [str(self.script), "--version"],
                user=self.owner.pw_uid,
                group=self.owner.pw_gid,
                extra_groups=[],
                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
                cwd="/",
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            failed = done.returncode != 0
            why = (done.stderr or done.stdout).strip()
        except OSError as exc:
            failed, why = True, str(exc)
        if failed:
            raise Refused(
                f"{self.owner.pw_name} ne peut pas lancer {self.script} ({why})",
                fix="installe ocmem avec un Python que tous peuvent lire, dans un virtualenv "
                "appartenant à root (python3 -m venv /opt/ocmem && /opt/ocmem/bin/pip install ocmem)",
            )

    # -- set up --------------------------------------------------------------------------------

    def run(self) -> Outcome:
        to_lock = self.check()
        previous = read_record(self.paths)  # refused here, before any change, if forged
        record = self._plan(to_lock, previous)
        self._make_folders(record["home_owner"])
        try:
            write_record(self.paths, record)  # before the first chown: what undoes each step
        except (OcmemError, OSError) as exc:
            cause = exc.message if isinstance(exc, OcmemError) else str(exc)
            raise OcmemError(
                f"ocmem harden n'a pas pu noter ce qu'il allait changer dans "
                f"{self.paths.hardened_file} ({cause}) : il s'est arrêté avant de changer le "
                "moindre propriétaire",
                fix="corrige la cause (place sur le disque ?), puis relance `ocmem harden`",
            ) from exc
        try:
            return Outcome(self._apply(to_lock))
        except (OcmemError, OSError) as exc:
            raise self._interrupted(exc) from exc

    def _make_folders(self, owner: list[int]) -> None:
        """The home and its .ocmem/, when missing, are made ``owner``'s whole, each under a
        name of its own then put in place: a run killed before its record leaves nothing of
        root's (the next run would take root for their owner before). The home's parents exist
        (``check``)."""
        for folder, mode in ((self.paths.home, 0o755), (self.paths.state_dir, 0o700)):
            if not os.path.lexists(folder):
                made = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
                os.chown(made, owner[0], owner[1])
                made.chmod(mode)
                os.rename(made, folder)

    def _plan(self, to_lock: list[Path], previous: dict[str, Any] | None) -> dict[str, Any]:
        """The record of this run: what it is about to change, with the owners and modes from
        before; on a run again, what the runs before changed first (the original owners)."""
        home = self.paths.home
        locked: list[list[Any]] = [] if previous is None else list(previous["locked"])
        known = {entry[0] for entry in locked}
        for parent in to_lock:
            if str(parent) not in known:
                info = parent.lstat()
                locked.append([str(parent), info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)])
        if previous is not None:
            home_owner, inside = previous["home_owner"], previous.get("inside", {})
        elif home.exists():
            home_owner = [home.lstat().st_uid, home.lstat().st_gid]
            inside = handover.differences(self.paths, *home_owner)
        else:
            home_owner, inside = [self.agent.pw_uid, self.agent.pw_gid], {}
        return {
            "owner": self.owner.pw_name,
            "agent": self.agent.pw_name,
            "program": str(self.script),
            "sudoers": str(self.rule_file),
            "ts": self.clock.stamp("seconds"),
            "locked": locked,
            "home_owner": home_owner,
            "inside": inside,  # what giving the home changes beyond its owner
        }

    def _apply(self, to_lock: list[Path]) -> list[str]:
        from ocmem.home.workspace import open_workspace
        from ocmem.setup.install import Installer

        home = self.paths.home
        lines = ["ocmem harden :"]
        for parent in to_lock:
            lines.append(
                f"  {parent} : propriétaire root, plus d'écriture pour {self.agent.pw_name}"
            )
            lines += self._lock(parent)
        workspace = open_workspace(home, creating=True, clock=self.clock)
        Installer(workspace).run()  # the layout, the plugin, the AGENTS.md section
        command = gate_command(self.owner.pw_name, self.script, home)
        # As a whole: a plugin that starts the gate without the settings carried for it (it
        # syncs nothing, silently) is a half-hardened home. The record is not part of it: an
        # ocmem run of the agent's may settle this intent, and the record must stay root's.
        with workspace.transaction("harden") as txn, txn.together():
            if self.carried:
                txn.write(self.paths.config_file, self.config_text)
            txn.write(
                self.paths.plugin_command,
                json.dumps({"command": command}) + "\n",
                mode=0o644,
                backup=False,
            )
        lines += [
            f"  {d.variable} de ton environnement écrit dans {self.paths.config_file} "
            f"(`silverbullet.{d.key}: {d.value}`) : la passerelle, lancée par sudo, ne voit pas "
            "l'environnement d'OpenCode"
            for d in self.carried
        ]
        handover.give(self.paths, self.owner.pw_uid, self.owner.pw_gid)
        self._install_rule()
        log_event(
            self.paths, self.clock, "harden", agent=self.agent.pw_name, owner=self.owner.pw_name
        )
        self._chown(self.paths.log_file)
        lines += [
            f"  {home} et tout son contenu : propriétaire {self.owner.pw_name} ; "
            f"{self.agent.pw_name} lit ce qu'OpenCode lit, n'écrit rien",
            f"  {self.paths.state_dir} : 0711, le jeton et l'état d'ocmem en 0600",
            f"  {self.rule_file} : {self.agent.pw_name} peut lancer la passerelle d'ocmem sous "
            f"{self.owner.pw_name}, rien d'autre",
            "",
            "Au prochain démarrage d'OpenCode (lancé par "
            f"{self.agent.pw_name}), le plugin ouvre la passerelle puis interdit tout gain de "
            "privilège à OpenCode et à ce qu'il lance (sudo compris).",
            "Promouvoir une proposition (l'humain, dans un terminal) :",
            f"  sudo -u {self.owner.pw_name} {self.script} --home {home} pending accept P-XXXX",
            "Pour annuler :",
            f"  {self.script} --home {home} harden --annuler",
        ]
        return lines

    def _interrupted(self, exc: OcmemError | OSError) -> OcmemError:
        """A run stopped half-way: what it changed is in the record; say how to finish or undo."""
        cause = exc.message if isinstance(exc, OcmemError) else str(exc)
        home = self.paths.home
        return OcmemError(
            f"ocmem harden s'est arrêté en cours de route ({cause}) : {home} n'est durci qu'à "
            f"moitié ; les propriétaires et droits d'avant sont notés dans "
            f"{self.paths.hardened_file}",
            fix=f"corrige la cause puis relance `{self.script} --home {home} harden --agent "
            f"{self.agent.pw_name} --proprietaire {self.owner.pw_name}` pour terminer, ou "
            f"`{self.script} --home {home} harden --annuler` pour tout remettre comme avant",
        )

    def _lock(self, parent: Path) -> list[str]:
        info = parent.lstat()
        notes = []
        # OpenCode writes its data and cache there: they stay the agent's.
        if parent == self.paths.home.parent.parent:
            for sub in (".local", ".local/share", ".local/state", ".cache"):
                target = parent / sub
                if not target.exists():
                    target.mkdir(mode=0o755)
                    os.chown(target, self.agent.pw_uid, self.agent.pw_gid)
                    notes.append(f"  {target} créé pour {self.agent.pw_name}")
        os.chown(parent, 0, info.st_gid, follow_symlinks=False)
        parent.chmod((stat.S_IMODE(info.st_mode) | 0o755) & ~0o022)
        return notes

    def _chown(self, path: Path) -> None:
        if path.exists():
            os.chown(path, self.owner.pw_uid, self.owner.pw_gid, follow_symlinks=False)

    def _install_rule(self) -> None:
        rule = sudoers_rule(self.agent.pw_name, self.owner.pw_name, self.script, self.paths.home)
        staged = self.rule_file.with_name(f".{self.rule_file.name}.new")
        staged.write_text(rule, encoding="utf-8")
        staged.chmod(0o440)
        checked = subprocess.run(
            ["visudo", "-cf", str(staged)], capture_output=True, text=True, check=False
        )
        if checked.returncode != 0:
            staged.unlink(missing_ok=True)
            raise OcmemError(
                f"règle sudo refusée par visudo : {checked.stdout.strip()} {checked.stderr.strip()}",
                fix="vérifie les noms d'utilisateurs et le chemin du --home",
            )
        os.replace(staged, self.rule_file)

    # -- undo ----------------------------------------------------------------------------------

    def undo(self) -> Outcome:
        """Put back what the record says, whatever step the run stopped at; the record goes
        last, so an undo stopped half-way can be run again."""
        from ocmem.home.workspace import open_workspace

        record = read_record(self.paths)
        if record is None:
            raise Refused(
                f"{self.paths.home} n'est pas en mode durci ({self.paths.hardened_file} absent)",
                fix="rien à annuler",
            )
        uid, gid = record["home_owner"]
        Path(record["sudoers"]).unlink(missing_ok=True)
        with open_workspace(self.paths.home, clock=self.clock).transaction(
            "harden --annuler"
        ) as txn:
            txn.write(
                self.paths.plugin_command,
                json.dumps({"command": [str(self.script)]}) + "\n",
                mode=0o600,
                backup=False,
            )
        log_event(self.paths, self.clock, "harden --annuler", agent=record["agent"])
        noted = {rel: (o[0], o[1], o[2]) for rel, o in record.get("inside", {}).items()}
        handover.give_back(self.paths, uid, gid, noted)
        lines = [
            "ocmem harden --annuler :",
            f"  {record['sudoers']} supprimé",
            f"  {self.paths.home} rendu à {pwd.getpwuid(uid).pw_name}:{grp.getgrgid(gid).gr_name}",
        ]
        for path, p_uid, p_gid, mode in reversed(record["locked"]):
            os.chown(path, p_uid, p_gid, follow_symlinks=False)
            os.chmod(path, mode)
            lines.append(f"  {path} : propriétaire et droits d'avant rétablis")
        remove_state(self.paths, self.paths.hardened_file)  # last: what undoes all of it
        return Outcome(lines)


def harden(
    home: Path | None,
    agent: str | None,
    owner: str,
    clock: Clock,
    *,
    undo: bool = False,
    env: Mapping[str, str] | None = None,
) -> Outcome:
    """Set the hardened mode up for ``home`` (default: the agent's ~/.config/opencode), or undo it."""
    if home is None:
        if undo or not agent:
            raise InputError(
                "donne le dossier de config d'OpenCode de l'agent",
                fix="--home /home/<agent>/.config/opencode (ou --agent <compte>)",
            )
        home = Path(_user(agent, "agent").pw_dir) / ".config" / "opencode"
    paths = Paths(home)
    if not undo:
        if not agent:
            raise InputError(
                "donne le compte Unix sous lequel tourne OpenCode", fix="--agent <compte>"
            )
        return Hardener(paths, agent, owner, clock, env).run()
    record = read_record(paths)
    if record is None:
        raise Refused(
            f"{paths.home} n'est pas en mode durci ({paths.hardened_file} absent)",
            fix="rien à annuler (ou donne le bon --home)",
        )
    return Hardener(paths, record["agent"], record["owner"], clock).undo()
