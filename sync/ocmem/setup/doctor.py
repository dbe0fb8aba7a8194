"""``ocmem doctor``: is everything in place and within its rules? Each problem comes with the
command that fixes it; ``--fix`` applies only the safe, deterministic repairs (after a backup)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

import httpx

from ocmem.errors import Busy, OcmemError, Refused
from ocmem.formats import journal, pending, shortterm
from ocmem.formats.fill import Fill
from ocmem.home import journaldamage
from ocmem.home.atomic import TEMP_SUFFIX, read_bytes, read_text, text_of
from ocmem.home.digest import file_sha256
from ocmem.home.diskerrors import storage_error
from ocmem.home.paths import Paths, resolve_home
from ocmem.home.runlock import run_lock
from ocmem.home.shipped import OWN_SKILLS, data_root, has_section, plugin_files
from ocmem.home.space import (
    ENV_TOKEN,
    configured_url,
    is_configured,
    loose_mode,
    sync_section,
    token_file_path,
)
from ocmem.home.workspace import Transaction, Workspace, memory_templates
from ocmem.outcome import Outcome, Status
from ocmem.services.memory import Memory
from ocmem.setup import setupchecks, todo
from ocmem.setup.mcpchecks import mcp_problems
from ocmem.setup.setupchecks import ERROR, WARNING, Problem, Repair

LOW_DISK_BYTES = 1 << 20


def _render(problems: list[Problem], repaired: list[str], left: list[str]) -> Outcome:
    lines = [f"✓ réparé : {r}" for r in repaired]
    for problem in problems:
        mark = "✗" if problem.level == ERROR else "⚠"
        lines += [f"{mark} {problem.level} : {problem.what}", f"  → {problem.fix}"]
    lines += left
    errors = sum(p.level == ERROR for p in problems)
    lines.append(
        f"Bilan : {errors} erreur(s), {len(problems) - errors} avertissement(s)"
        + (f", {len(repaired)} réparation(s)" if repaired else "")
    )
    return Outcome(lines, Status.FAILED if errors else Status.OK)


class Doctor:
    def __init__(
        self,
        workspace: Workspace,
        env: Mapping[str, str],
        transport: httpx.BaseTransport | None = None,
    ):
        self.transport = transport  # to SilverBullet (tests: a loopback server's)
        self.space = setupchecks.SpaceSeen()  # what the SilverBullet check saw
        self.ws = workspace
        self.settings = workspace.settings
        self.paths: Paths = workspace.paths
        self.limits = workspace.limits
        self.env = env
        self.sync = workspace.sync_mode
        self.found: list[Problem] = []

    def problem(self, level: str, what: str, fix: str, repair: Repair | None = None) -> None:
        self.found.append(Problem(level, what, fix, repair))

    def run(self) -> list[Problem]:
        for check in (
            self.storage,
            self.layout,
            self.caps,
            self.formats,
            self.skills,
            self.plugin,
            self.plugin_loaded,
            self.hardened,
            self.quarantine,
            self.opencode,
            self.lock,
            self.leftovers,
            self.sync_state,
            self.old_memory,
            self.setup,
        ):
            try:
                check()
            except OcmemError as exc:  # a file a check reads is broken: say it, check the rest
                self.problem(ERROR, exc.message, exc.fix or "ocmem doctor après correction")
            except OSError as exc:
                error = storage_error(exc, self.paths, action="de lire")
                self.problem(ERROR, error.message, error.fix or "")
        # one cause met by several checks (a linked file every reader refuses) is said once
        said: dict[str, Problem] = {}
        for problem in self.found:
            said.setdefault(problem.what, problem)
        self.found = list(said.values())
        return self.found

    def storage(self) -> None:
        for folder in (self.paths.memory_dir, self.paths.state_dir):
            if folder.is_dir() and not os.access(folder, os.W_OK):
                self.problem(
                    ERROR,
                    f"{self.paths.rel(folder)}/ n'est pas inscriptible (disque en lecture seule, ou droits)",
                    f"rends {folder} inscriptible pour cet utilisateur (`ls -ld {folder}`)",
                )
        free = shutil.disk_usage(self.paths.home).free
        if free < LOW_DISK_BYTES:
            self.problem(
                WARNING,
                f"disque presque plein : {free // 1024} Kio libres sous {self.paths.home}",
                f"libère de la place (`df -h {self.paths.home}`) : les écritures d'ocmem échoueraient",
            )

    def layout(self) -> None:
        for path, template in memory_templates(self.paths).items():
            if not path.exists():
                self.problem(
                    ERROR,
                    f"{self.paths.rel(path)} manque",
                    "ocmem init (ou ocmem doctor --reparer)",
                    _create(path, template),
                )
        # The loop runs only with ocmem's section and skill: checked in both modes (a pull
        # composes them back, a hand edit or an older ocmem may have lost them).
        for skill in OWN_SKILLS:
            if not (self.paths.skills_dir / skill / "SKILL.md").exists():
                self.problem(
                    ERROR,
                    f"le skill {skill} n'est pas installé : pas de rétrospective, la boucle "
                    "d'apprentissage est coupée",
                    "ocmem pull (le remet depuis ocmem)" if self.sync else "ocmem init",
                )
        if not has_section(read_text(self.paths.agents_md)):
            self.problem(
                ERROR,
                "AGENTS.md n'a pas la section « Mémoire et apprentissage » : l'agent ne tient plus "
                "ni journal ni propositions",
                "ajoute-la à la page Agents/AGENTS.md dans SilverBullet (`ocmem init "
                "--voir-section` l'affiche), ou lance `ocmem pull`, qui la compose"
                if self.sync
                else "ocmem init",
            )

    def caps(self) -> None:
        memory = Fill(len(read_text(self.paths.memory_md)), self.limits.memory_chars)
        if memory.over:
            where = (
                "dans SilverBullet (Agents/Memory/MEMORY.md), puis ocmem pull"
                if self.sync
                else "à la main"
            )
            self.problem(
                ERROR, f"MEMORY.md dépasse son plafond : {memory}", f"consolide MEMORY.md {where}"
            )
        try:
            held = Memory(self.ws).held()
        except shortterm.ShortTermFormatError as exc:
            self.problem(ERROR, exc.message, exc.fix or "corrige la ligne")
            return
        if held.expired or held.expired_apart or held.moved:
            self.problem(
                WARNING,
                f"{held.expired + held.expired_apart} note(s) expirée(s), {held.moved} note(s) en "
                f"quarantaine encore dans SHORT_TERM.md (à ranger dans {shortterm.QUARANTINE_FILE})",
                "ocmem doctor --reparer (ou la prochaine note) les range",
                Memory(self.ws).tidy,
            )
        short = Fill(len(shortterm.render(held.working)), self.limits.short_term_chars)
        if short.over:
            self.problem(
                ERROR,
                f"SHORT_TERM.md dépasse son plafond : {short}",
                "ocmem note --liste, puis ocmem note --retirer N",
            )

    def formats(self) -> None:
        data = read_bytes(self.paths.journal) or b""
        text = text_of(data, errors="replace")
        parsed = journal.blocks(text)
        damaged = journal.damage(data, limit=1000)
        journaldamage.remember(self.paths, self.paths.journal, damaged)
        for line, what, fix, *_ in damaged:
            self.problem(WARNING, f"journal.md ligne {line} : {what}", fix)
        for block in parsed:
            lines = block.text.rstrip("\n").splitlines()
            labels = [line.split(" : ")[0] for line in lines[1:] if line.startswith("- ")]
            if (
                labels != ["- Demande", "- Fait", "- Piège", "- Leçon", "- Résultat"]
                or len(lines) > self.limits.journal_entry_lines
            ):
                self.problem(
                    WARNING,
                    f"entrée {block.ref} hors format (champs ou plus de {self.limits.journal_entry_lines} lignes)",
                    "le journal est en ajout seul : rien à corriger, l'entrée reste lisible",
                )
        document = pending.document(read_text(self.paths.pending))
        try:
            pending.refuse_duplicate_ids(document)
        except Refused as exc:  # every write of pending.md is refused until it is fixed
            self.problem(ERROR, exc.message, exc.fix or "")
        for line, span in document.lines():
            if span.problem:
                self.problem(
                    WARNING,
                    f"pending.md ligne {line} : un bloc ne se lit pas comme une proposition "
                    f"({span.problem}) ; il est ignoré, gardé tel quel",
                    "corrige-le à la main, ou laisse-le : ocmem n'y touche pas et ne réutilise "
                    "pas son identifiant",
                )

    def skills(self) -> None:
        installed = self.ws.skills()
        where = (
            "dans SilverBullet (Agents/Skills/), puis ocmem pull" if self.sync else "dans skills/"
        )
        for skill in installed:
            for problem in skill.problems:
                self.problem(ERROR, f"skill {skill.name} : {problem}", f"corrige-le {where}")
        if len(installed) > self.limits.skills_max:
            self.problem(
                ERROR,
                f"{len(installed)} skills (maximum {self.limits.skills_max})",
                f"fusionne ou retire des skills {where}",
            )

    def plugin(self) -> None:
        target = self.paths.plugin_file
        files = plugin_files(data_root(), self.paths)
        if not target.exists():
            self.problem(ERROR, "le plugin OpenCode n'est pas installé", "ocmem init")
        elif any(not t.exists() for _, t in files):
            missing = ", ".join(self.paths.rel(t) for _, t in files if not t.exists())
            self.problem(
                ERROR, f"le plugin OpenCode est incomplet ({missing} manque)", "ocmem init"
            )
        elif any(read_text(t) != read_text(s) for s, t in files):
            self.problem(
                WARNING,
                "le plugin installé diffère de celui de cette version d'ocmem",
                "ocmem init --mettre-a-jour (sauvegarde l'ancien)",
            )
        command_file = self.paths.plugin_command
        if target.exists() and not command_file.exists():
            self.problem(
                ERROR,
                "le plugin ne sait pas comment lancer ocmem (.ocmem/plugin.json manque)",
                "ocmem init",
            )
        elif command_file.exists():
            try:
                saved = json.loads(read_text(command_file))
                program = str(saved["command"][0])
            except (ValueError, KeyError, IndexError, TypeError):
                self.problem(
                    ERROR,
                    f"{self.paths.rel(command_file)} est illisible : le plugin ne sait pas lancer ocmem",
                    "ocmem init (le réécrit)",
                )
                return
            if not (shutil.which(program) or Path(program).exists()):
                self.problem(
                    ERROR,
                    f"le plugin lance {program}, qui n'existe plus (ocmem réinstallé ailleurs ?)",
                    "ocmem init",
                )
        if shutil.which("rg") is None:
            self.problem(
                WARNING,
                "ripgrep (rg) est absent : l'outil skill d'OpenCode en a besoin",
                "apt-get install ripgrep",
            )

    def plugin_loaded(self) -> None:
        """Did the last OpenCode that read this home start the plugin? OpenCode only logs it."""
        logs = opencode_logs(self.env)
        if not logs:
            return
        try:
            seen = json.loads(read_text(self.paths.plugin_seen))["ts"]
        except (ValueError, KeyError, TypeError, OcmemError):
            seen = None
        text = "\n".join(read_text(log) for log in logs)
        for problem in plugin_load_problems(text, self.paths.home, seen, self.ws.clock.utc()):
            self.problem(
                ERROR,
                problem,
                "lance `ocmem doctor` après avoir corrigé la cause indiquée ; `ocmem init` "
                "réinstalle le plugin et sa commande (le plugin n'importe aucun paquet : il se "
                "charge même hors ligne)",
            )

    def hardened(self) -> None:
        record_file = self.paths.hardened_file
        try:
            raw = read_bytes(record_file)
            if raw is None:
                return
            record = json.loads(raw)
        except (OSError, ValueError) as exc:
            self.problem(
                WARNING,
                f"mode durci : {record_file} illisible ({exc})",
                "lance ocmem doctor en root ou sous le propriétaire (sudo -u ocmem ocmem doctor)",
            )
            return
        owner = str(record.get("owner", ""))
        home = self.paths.home
        fix = (  # a run stopped half-way is found here too: finish it, or undo it
            f"sudo ocmem --home {home} harden --agent {record.get('agent')} --proprietaire {owner}"
            f" ; ou, pour tout remettre comme avant : sudo ocmem --home {home} harden --annuler"
        )
        if not Path(str(record.get("sudoers", ""))).exists():
            self.problem(ERROR, "mode durci : la règle sudo de la passerelle a disparu", fix)
        import pwd

        try:
            uid = pwd.getpwnam(owner).pw_uid
        except KeyError:
            self.problem(ERROR, f"mode durci : l'utilisateur {owner} n'existe plus", fix)
            return
        wrong = [
            self.paths.rel(p)
            for p in (
                self.paths.home,
                self.paths.agents_md,
                self.paths.memory_dir,
                self.paths.plugin_file,
            )
            if p.exists() and (p.lstat().st_uid != uid or p.lstat().st_mode & 0o022)
        ]
        if wrong:
            self.problem(
                ERROR,
                f"mode durci : {', '.join(wrong)} n'appartiennent plus à {owner} ou sont modifiables par d'autres",
                fix,
            )

    def quarantine(self) -> None:
        try:
            kept = [p for p in self.paths.quarantine_dir.rglob("*") if p.is_file()]
        except OSError:
            return
        if kept:
            self.problem(
                WARNING,
                f"{len(kept)} fichier(s) modifiés hors d'ocmem pendant une session ont été remis en "
                f"état ; ce que l'agent avait écrit est gardé dans {self.paths.quarantine_dir}",
                f"regarde-les, puis supprime le dossier : rm -r {self.paths.quarantine_dir}",
            )

    def opencode(self) -> None:
        seen_by_opencode = {resolve_home({k: v for k, v in self.env.items() if k != "OCMEM_HOME"})}
        if self.env.get("OPENCODE_CONFIG_DIR"):
            seen_by_opencode.add(Path(self.env["OPENCODE_CONFIG_DIR"]).expanduser())
        home = self.paths.home.resolve()
        if home not in {p.resolve() for p in seen_by_opencode}:
            self.problem(
                WARNING,
                f"{self.paths.home} n'est pas un dossier de configuration d'OpenCode : il n'y trouvera ni AGENTS.md, ni skills/, ni le plugin",
                f"lance OpenCode avec OPENCODE_CONFIG_DIR={self.paths.home}, ou utilise le dossier par défaut (sans OCMEM_HOME)",
            )

    def lock(self) -> None:
        try:
            with run_lock(self.paths, self.ws.clock, 0):
                pass
        except Busy:
            self.problem(
                WARNING,
                "une exécution d'ocmem est en cours (verrou tenu)",
                "attends-la ; un verrou flock disparaît avec son processus, il ne reste jamais bloqué",
            )

    def leftovers(self) -> None:
        for folder in (self.paths.memory_dir, self.paths.skills_dir, self.paths.home):
            for temp in (
                folder.rglob(f"*{TEMP_SUFFIX}")
                if folder != self.paths.home
                else folder.glob(f"*{TEMP_SUFFIX}")
            ):
                self.problem(
                    WARNING,
                    f"fichier temporaire laissé par une écriture interrompue : {self.paths.rel(temp)}",
                    "ocmem doctor --reparer le supprime (son contenu n'a jamais remplacé le fichier d'origine)",
                    _remove_temp(temp),
                )

    def sync_state(self) -> None:
        if not self.sync:
            return
        from ocmem.silverbullet.state import SyncState

        section = sync_section(self.settings)
        token_file = token_file_path(self.settings, section, self.env)
        if token_file.exists():
            mode = loose_mode(token_file)
            if mode is not None:
                self.problem(
                    ERROR,
                    f"le fichier de jeton {token_file} est lisible par d'autres (mode {mode:o})",
                    f"chmod 600 {token_file} (ou ocmem doctor --reparer)",
                    _chmod(token_file, 0o600),
                )
        elif not self.env.get(ENV_TOKEN):
            self.problem(
                WARNING,
                "aucun jeton SilverBullet (ni fichier, ni variable)",
                f"crée {token_file} (mode 600) si l'instance demande une authentification",
            )
        try:
            state = SyncState.load(self.paths, configured_url(self.settings, self.env))
        except OcmemError as exc:
            self.problem(ERROR, exc.message, exc.fix or "")
            return
        for remote, entry in sorted(state.pulled.items()):
            path = self.paths.home / entry.local
            digest = file_sha256(path)
            if digest is None:
                self.problem(
                    WARNING,
                    f"{entry.local} (tiré de {remote}) a disparu localement",
                    "ocmem pull le réinstalle",
                )
            elif digest != entry.sha256:
                self.problem(
                    WARNING,
                    f"{entry.local} a été modifié à la main depuis le pull (dérive par rapport à {remote})",
                    "ocmem pull réinstalle la version de SilverBullet (l'actuelle est sauvegardée) ; une modification durable se fait dans SilverBullet",
                )
            elif path.stat().st_mode & 0o222:
                self.problem(
                    WARNING,
                    f"{entry.local} est modifiable alors qu'il est tiré de SilverBullet",
                    "ocmem doctor --reparer le remet en lecture seule",
                    _chmod(path, 0o444),
                )
        for page, pushed in sorted(state.pushed.items()):
            if pushed.conflicts:
                copies = ", ".join(sorted(set(pushed.conflicts.values())))
                self.problem(
                    WARNING,
                    f"{len(pushed.conflicts)} bloc(s) de {page} sont dans une copie de conflit ({copies})",
                    "fusionne-les dans SilverBullet puis supprime la copie",
                )

    def setup(self) -> None:
        """The user's own set-up: identity, links, the plugin's first call, OpenCode, SilverBullet."""
        for found in (
            setupchecks.home_identity(self.paths, is_configured(self.settings, self.env)),
            setupchecks.links_below(self.paths),
            setupchecks.interrupted_operations(self.paths, self.ws.clock.utc()),
            setupchecks.plugin_config_call(self.settings, self.env),
            setupchecks.hidden_environment(self.settings, self.env),
            setupchecks.opencode_install(self.env, self.paths.home),
            setupchecks.offline_start(self.paths),
            setupchecks.scheduled_runs(self.settings, self.ws.clock.utc()),
            setupchecks.silverbullet(self.settings, self.env, self.transport, self.space),
            mcp_problems(self.settings, self.env),
            setupchecks.search_meaning(),
        ):
            self.found += list(found)

    def old_memory(self) -> None:
        from ocmem.setup import oldmemory

        scan = oldmemory.detect(self.paths, self.env, sync_mode=self.sync)
        for finding in scan.findings:
            fix = oldmemory.replace_command(self.paths, self.env)
            if finding.from_silverbullet:
                fix = f"{finding.silverbullet_fix()} ; `{fix}` importe d'abord ses faits"
            self.problem(
                WARNING,
                "deux systèmes de mémoire : OpenCode charge aussi "
                f"{finding.describe(self.paths, self.env)}",
                f"{fix} (sauvegarde, mise de côté, faits proposés à ta validation)",
            )


_LOG_LINE = re.compile(r"^timestamp=(\S+) level=(\S+) run=(\S+) message=(.*)$")
# What OpenCode or the plugin log when the plugin could not start.
_LOAD_FAILURES = (
    "failed to load plugin",
    "Failed to load plugin",
    "passerelle ocmem fermée",
    "ocmem plugin-config a échoué",
)
STARTUP_SECONDS = 60


def opencode_logs(env: Mapping[str, str], newest: int = 3) -> list[Path]:
    """OpenCode's newest log files (``$XDG_DATA_HOME/opencode/log``)."""
    data = env.get("XDG_DATA_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".local/share")
    folder = Path(data) / "opencode" / "log"
    try:
        return sorted(folder.glob("*.log"), key=lambda p: p.stat().st_mtime)[-newest:]
    except OSError:
        return []


def _when(stamp: str) -> datetime | None:
    try:
        found = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)


def plugin_load_problems(log: str, home: Path, seen: str | None, now: datetime) -> list[str]:
    """The last OpenCode run that loaded ``home`` as a config dir, when the plugin did not
    announce itself (``seen``: its last ``plugin-config``) within a minute of that start."""
    runs: dict[str, list[tuple[datetime, str]]] = {}
    for line in log.splitlines():
        match = _LOG_LINE.match(line)
        when = _when(match.group(1)) if match else None
        if match and when:
            runs.setdefault(match.group(3), []).append((when, match.group(4)))
    marker = f"path={home}/"
    used = [lines for lines in runs.values() if any(marker in m for _, m in lines)]
    if not used:
        return []
    last = max(used, key=lambda lines: lines[0][0])
    start = last[0][0]
    seen_at = _when(seen) if seen else None
    if (now - start).total_seconds() < STARTUP_SECONDS or (seen_at and seen_at >= start):
        return []
    causes = [m.strip('"') for _, m in last if any(f in m for f in _LOAD_FAILURES)]
    why = f" : {causes[-1][:300]}" if causes else " (aucune erreur dans son journal)"
    return [
        f"OpenCode a démarré le {start:%Y-%m-%d %H:%M} UTC avec {home} sans charger le plugin ocmem{why}"
    ]


def _create(path: Path, template: str) -> Repair:
    def repair(txn: Transaction) -> str:
        txn.create(path, template)
        return f"{path.name} recréé (vide)"

    return repair


def _chmod(path: Path, mode: int) -> Repair:
    def repair(txn: Transaction) -> str:
        txn.set_mode(path, mode)
        return f"{path} en mode {mode:o}"

    return repair


def _remove_temp(path: Path) -> Repair:
    def repair(txn: Transaction) -> str:
        txn.remove(path)
        return f"{path.name} supprimé (copie dans les sauvegardes)"

    return repair


def diagnose(
    workspace: Workspace,
    *,
    fix: bool = False,
    env: Mapping[str, str] | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Outcome:
    """Every problem with its fix; with ``fix``, the safe repairs first (after a backup)."""
    env = os.environ if env is None else env
    repaired: list[str] = []
    doctor = Doctor(workspace, env, transport)
    problems = doctor.run()
    if fix and any(p.repair for p in problems):
        with workspace.transaction("doctor --fix") as txn:
            for problem in problems:
                if problem.repair:
                    repaired.append(problem.repair(txn))
        doctor = Doctor(workspace, env, transport)
        problems = doctor.run()
    left = todo.remaining(workspace.settings, env, doctor.space)
    return _render(problems, repaired, todo.render(left) if left else [])
