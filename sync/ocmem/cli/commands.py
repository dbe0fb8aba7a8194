"""The ``ocmem`` command line (click): parse arguments, call the library, return its outcome.

Every command returns an ``Outcome``; errors are domain exceptions. ``ocmem.cli.entry.main`` alone
prints them and turns them into exit codes. Commands import what they need when they run, so
local commands stay fast.
"""

from __future__ import annotations

import json
import sys
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ocmem import __version__
from ocmem.cli import french
from ocmem.cli.stdin import read_json
from ocmem.clock import Clock
from ocmem.errors import Refused
from ocmem.home.workspace import Workspace, open_workspace
from ocmem.outcome import Outcome

if TYPE_CHECKING:
    from ocmem.services.proposals import Proposals


class Context:
    def __init__(self, clock: Clock):
        self.clock = clock
        self.home: Path | None = None
        self.wait: float | None = None

    def workspace(self, *, creating: bool = False) -> Workspace:
        from ocmem.home.fsio import DEFAULT_WAIT_SECONDS

        return open_workspace(
            self.home,
            wait_seconds=DEFAULT_WAIT_SECONDS if self.wait is None else self.wait,
            clock=self.clock,
            notify=_notify,
            creating=creating,
        )

    def reader(self) -> tuple[Workspace, bool]:
        """The workspace, and whether the agent runs this reader itself: quarantined text is
        then masked in what it prints (ocmem.guards.exposure)."""
        from ocmem.plugin.agentproc import agent_reason

        workspace = self.workspace()
        return workspace, agent_reason(workspace.paths) is not None

    def human_workspace(self, what: str, *, creating: bool = False) -> Workspace:
        """The workspace, for a command the agent may not run itself (see ocmem.plugin.agentproc)."""
        from ocmem.plugin.agentproc import refuse_agent

        workspace = self.workspace(creating=creating)
        refuse_agent(workspace.paths, what)
        return workspace


def _notify(message: str) -> None:
    click.echo(f"ocmem : {message}", err=True)


pass_context = click.make_pass_decorator(Context)


def _text(lines: str) -> Outcome:
    return Outcome([lines.rstrip("\n")])


@click.group(
    context_settings={"help_option_names": ["-h", "--help"]},
    subcommand_metavar="COMMANDE [ARGUMENTS]...",
)
@click.version_option(__version__, prog_name="ocmem", help="Affiche la version.")
@click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="OCMEM_HOME",
    help="Dossier ocmem (défaut : $XDG_CONFIG_HOME/opencode, sinon ~/.config/opencode).",
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    metavar="SECONDES",
    help="Attente maximale du verrou si une autre exécution d'ocmem le tient (défaut : 10 ; "
    "0 : échouer aussitôt, code 75). Acceptée aussi après la commande.",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, wait: float | None) -> None:
    """Mémoire long terme d'OpenCode : notes, journal, propositions, skills."""
    obj = ctx.find_object(Context)  # made by ocmem.cli.entry, with the process's clock
    assert obj is not None, "ocmem.cli.entry.main runs the command line"
    obj.home, obj.wait = home, wait


@cli.command()
@click.option(
    "--upgrade",
    is_flag=True,
    help="Remplace le skill et le plugin livrés s'ils diffèrent (après sauvegarde).",
)
@click.option(
    "--import-short-term",
    "import_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Importe une ancienne mémoire court terme (une note par ligne) dans SHORT_TERM.md.",
)
@click.option(
    "--show-section", is_flag=True, help="Affiche la section AGENTS.md livrée, sans rien écrire."
)
@click.option(
    "--show-library",
    is_flag=True,
    help="Affiche la page SilverBullet de revue des propositions (à coller dans Library/ocmem).",
)
@click.option(
    "--home-id",
    metavar="NOM",
    help="Identifiant de ce dossier (nomme ses pages Agents/Inbox/NOM/ ; défaut : le nom de la machine).",
)
@click.option(
    "--replace-old",
    is_flag=True,
    help="Remplace sans demander un autre système de mémoire trouvé (skill, section d'AGENTS.md) : "
    "sauvegarde, mise de côté, faits proposés à ta validation.",
)
@pass_context
def init(
    obj: Context,
    upgrade: bool,
    import_file: Path | None,
    show_section: bool,
    show_library: bool,
    home_id: str | None,
    replace_old: bool,
) -> Outcome:
    """Crée ou complète l'arborescence (idempotent, sans jamais écraser)."""
    from ocmem.setup.install import Installer, shipped_section

    if show_section:
        return _text(shipped_section())
    if show_library:
        from ocmem.silverbullet.library import library_page

        return _text(library_page())
    return Installer(
        obj.human_workspace("init", creating=True),
        upgrade=upgrade,
        home_id=home_id,
        replace_old=replace_old,
        confirm=_ask if sys.stdin.isatty() else None,
    ).run(import_file)


def _ask(question: str) -> bool:
    """A yes/no question on the terminal (no answer: no)."""
    from ocmem.setup.oldmemory import is_yes

    click.echo(question, err=True)
    return is_yes(click.prompt("[o/N]", default="", show_default=False, err=True))


@cli.command()
@pass_context
def status(obj: Context) -> Outcome:
    """Remplissage de chaque fichier, skills, propositions en attente."""
    from ocmem.services.status import status as run_status

    return run_status(obj.workspace())


@cli.command()
@click.argument("text", required=False)
@click.option("--days", type=int, help="Durée de vie de la note en jours (défaut 7).")
@click.option("--list", "list_", is_flag=True, help="Affiche les notes en cours, numérotées.")
@click.option("--remove", type=int, metavar="N", help="Supprime la note n°N (voir --list).")
@click.option(
    "--trust",
    type=int,
    metavar="N",
    help="Lève la quarantaine de la note n°N, après l'avoir lue (humain seulement).",
)
@pass_context
def note(
    obj: Context,
    text: str | None,
    days: int | None,
    list_: bool,
    remove: int | None,
    trust: int | None,
) -> Outcome:
    """Mémoire court terme (SHORT_TERM.md) : ajoute, liste, supprime une note ou lève sa quarantaine."""
    from ocmem.services.memory import Memory

    if sum([text is not None, list_, remove is not None, trust is not None]) != 1:
        raise click.UsageError("donne soit un TEXTE, soit --list, soit --remove N, soit --trust N")
    if list_:
        workspace, agent = obj.reader()
        return Memory(workspace, agent=agent).list_notes()
    if trust is not None:
        return Memory(obj.human_workspace("note --trust")).trust_note(trust)
    memory = Memory(obj.human_workspace("note"))
    if remove is not None:
        return memory.remove_note(remove)
    return memory.add_note(text or "", days)


@cli.group(name="journal", subcommand_metavar="COMMANDE [ARGUMENTS]...")
def journal_group() -> None:
    """Journal des épisodes (ajout seul, recherche plafonnée à 5 entrées)."""


@journal_group.command(name="add")
@click.option("--titre", help="Titre court (80 caractères au plus, sans « · »).")
@click.option("--tags", help="Tags séparés par des espaces ou des virgules.")
@click.option("--demande", help="Ce que l'utilisateur a demandé.")
@click.option("--fait", help="Ce qui a été fait.")
@click.option("--piege", help="Le piège rencontré (« aucun » s'il n'y en a pas).")
@click.option("--lecon", help="La leçon à retenir.")
@click.option(
    "--resultat",
    type=click.Choice(["réussi", "partiel", "échec", "reussi", "echec"]),
    help="Issue de la tâche.",
)
@pass_context
def journal_add(obj: Context, /, **fields: str | None) -> Outcome:
    """Ajoute une entrée : options, ou objet JSON sur l'entrée standard

    {"titre", "tags": [...], "demande", "fait", "piege", "lecon", "resultat"}.
    """
    from ocmem.services.memory import Memory

    given = {k: v for k, v in fields.items() if v is not None}
    workspace = obj.human_workspace("journal add")
    data = given if given else read_json("journal add")
    return Memory(workspace).add_journal(data)


@journal_group.command(name="search")
@click.argument("words", nargs=-1)
@click.option("--tag", "tags", multiple=True, help="Tag exigé (répétable).")
@click.option("--last", type=int, help="Nombre d'entrées (5 au plus).")
@pass_context
def journal_search(
    obj: Context, words: tuple[str, ...], tags: tuple[str, ...], last: int | None
) -> Outcome:
    """Cherche dans le journal et ses archives : 5 entrées au plus, les plus pertinentes d'abord.

    Des mots ou une question, sans guillemets : ocmem journal search certificat nginx expiré
    """
    from ocmem.services.memory import Memory

    workspace, agent = obj.reader()
    return Memory(workspace, agent=agent).search_journal(" ".join(words), tags, last)


@journal_group.command(name="recent")
@click.option(
    "--last", type=click.IntRange(1, 20), default=20, show_default=True, help="Nombre d'entrées."
)
@pass_context
def journal_recent(obj: Context, last: int) -> Outcome:
    """Les dernières entrées, titres seuls (date, titre, tags), les plus récentes d'abord."""
    from ocmem.services.memory import Memory

    workspace, agent = obj.reader()
    return Memory(workspace, agent=agent).recent_journal(last)


@journal_group.command(name="archive")
@click.option(
    "--before",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    metavar="AAAA-MM-JJ",
    help="Archive les entrées antérieures à cette date (AAAA-MM-JJ).",
)
@click.option(
    "--older-than", type=int, metavar="JOURS", help="Archive les entrées de plus de JOURS jours."
)
@pass_context
def journal_archive(obj: Context, before: datetime | None, older_than: int | None) -> Outcome:
    """Déplace les vieilles entrées dans journal-AAAA-MM.md (rien n'est perdu ni supprimé)."""
    from datetime import timedelta

    from ocmem.services.memory import Memory

    if (before is None) == (older_than is None):
        raise click.UsageError("donne --before AAAA-MM-JJ ou --older-than JOURS")
    workspace = obj.workspace()
    cutoff: date = (
        before.date() if before is not None else workspace.today() - timedelta(days=older_than or 0)
    )
    return Memory(workspace).archive_journal(cutoff)


@cli.command()
@click.option("--type", "kind", type=click.Choice(["fait", "skill"]), help="Fait ou skill.")
@click.option("--titre", help="Titre de la proposition (une ligne).")
@click.option("--contenu", help="Le fait (une ligne) ou le brouillon du skill.")
@click.option(
    "--source", "sources", multiple=True, help="« journal AAAA-MM-JJ HH:MM » (répétable)."
)
@click.option("--contradiction", help="« aucune » ou ce que la proposition contredit.")
@click.option("--remplace", help="« rien » ou le fait/skill remplacé ou modifié.")
@click.option(
    "--retiens-ca", is_flag=True, help="L'utilisateur a demandé explicitement de retenir."
)
@click.option(
    "--note-recurrente",
    is_flag=True,
    help="Fait tiré d'une note signalée comme récurrente (écrite 3 jours différents).",
)
@click.option("--name", help="Nom du skill proposé.")
@click.option("--description", help="Description du skill (2 phrases au plus).")
@pass_context
def propose(
    obj: Context,
    /,
    kind: str | None,
    sources: tuple[str, ...],
    retiens_ca: bool,
    note_recurrente: bool,
    **rest: str | None,
) -> Outcome:
    """Propose un fait ou un skill (options, ou objet JSON sur l'entrée standard)."""
    from ocmem.services.proposals import Proposals

    workspace = obj.human_workspace("propose")
    if kind is None:
        data = read_json("propose")
    else:
        data = {
            "type": kind,
            "sources": list(sources),
            "retiens_ca": retiens_ca,
            "note_recurrente": note_recurrente,
        }
        data.update({k: v for k, v in rest.items() if v is not None})
    return Proposals(workspace).propose(data)


@cli.group(name="pending", subcommand_metavar="COMMANDE [ARGUMENTS]...")
def pending_group() -> None:
    """Propositions en attente de validation humaine."""


def _proposals(obj: Context) -> Proposals:
    from ocmem.services.proposals import Proposals

    workspace, agent = obj.reader()
    return Proposals(workspace, agent=agent)


@pending_group.command(name="list")
@click.option(
    "--all", "show_all", is_flag=True, help="Inclut les propositions promues et refusées."
)
@pass_context
def pending_list(obj: Context, show_all: bool) -> Outcome:
    """Liste les propositions."""
    return _proposals(obj).list_pending(show_all)


@pending_group.command(name="show")
@click.argument("pid")
@pass_context
def pending_show(obj: Context, pid: str) -> Outcome:
    """Affiche une proposition."""
    return _proposals(obj).show_pending(pid)


@pending_group.command(name="duplicates")
@click.option(
    "--threshold", type=float, default=0.35, show_default=True, help="Similarité minimale (0 à 1)."
)
@pass_context
def pending_duplicates(obj: Context, threshold: float) -> Outcome:
    """Liste les propositions en attente qui semblent dire la même chose."""
    return _proposals(obj).pending_duplicates(threshold)


@pending_group.command(name="merge")
@click.argument("keep")
@click.argument("other")
@pass_context
def pending_merge(obj: Context, keep: str, other: str) -> Outcome:
    """Fusionne AUTRE dans GARDÉE (AUTRE reste, marquée « fusionné »)."""
    return _proposals(obj).merge_pending(keep, other)


@pending_group.command(name="accept")
@click.argument("pid")
@click.option("--yes", is_flag=True, help="Ne pas demander de confirmation.")
@pass_context
def pending_accept(obj: Context, pid: str, yes: bool) -> Outcome:
    """Promeut une proposition (fait → MEMORY.md, skill → skills/<nom>/SKILL.md)."""
    from ocmem.services.proposals import Proposals

    proposals = Proposals(obj.human_workspace("pending accept"))
    if not yes:
        if not sys.stdin.isatty():
            raise Refused(
                "la promotion demande la confirmation d'un humain",
                fix=f"lance `ocmem pending accept {pid}` dans un terminal, ou ajoute --yes si tu es l'humain",
            )
        from ocmem.outcome import terminal_safe

        click.echo(terminal_safe(proposals.show_pending(pid).render()))
        answer = click.prompt(
            "Promouvoir cette proposition ? [o/N]", default="n", show_default=False
        )
        if answer.strip().lower() not in ("o", "oui", "y", "yes"):
            raise Refused("promotion annulée", fix="rien n'a été écrit")
    return proposals.accept(pid)


@pending_group.command(name="reject")
@click.argument("pid")
@click.option("--reason", required=True, help="Pourquoi (une ligne).")
@pass_context
def pending_reject(obj: Context, pid: str, reason: str) -> Outcome:
    """Refuse une proposition (elle reste, marquée « refusé »)."""
    # Open to the agent: « valide pending » ends with the human's no, which the agent records;
    # a refused proposal stays in pending.md, marked, where the human sees it.
    return _proposals(obj).reject(pid, reason)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Affiche le plan sans rien écrire.")
@click.option(
    "--force-delete",
    is_flag=True,
    help="Autorise des suppressions massives (listing vide, part > seuil).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Relit tous les fichiers, même inchangés d'après leurs métadonnées.",
)
@click.option(
    "--accept-active",
    is_flag=True,
    help="Installe aussi les pages qui contiennent du code actif pour SilverBullet (après vérification).",
)
@pass_context
def pull(
    obj: Context, dry_run: bool, force_delete: bool, full: bool, accept_active: bool
) -> Outcome:
    """SilverBullet → local : AGENTS.md, MEMORY.md, skills/ (copie locale en lecture seule)."""
    from ocmem.services import sync

    return sync.pull(
        obj.workspace(),
        dry_run=dry_run,
        force_delete=force_delete,
        full=full,
        accept_active=accept_active,
    )


@cli.command()
@click.option("--dry-run", is_flag=True, help="Affiche ce qui serait envoyé, sans écrire.")
@pass_context
def push(obj: Context, dry_run: bool) -> Outcome:
    """Local → SilverBullet : journal.md et pending.md vers Agents/Inbox/, sans rien perdre."""
    from ocmem.services import sync

    return sync.push(obj.workspace(), dry_run=dry_run)


@cli.command(name="sync")
@pass_context
def sync_command(obj: Context) -> Outcome:
    """pull puis push (pour cron)."""
    from ocmem.services import sync

    workspace = obj.workspace()
    return sync.pull(workspace).then(sync.push(workspace))


@cli.command()
@click.argument("path", required=False)
@click.option(
    "--show", "rev", metavar="VERSION", help="Affiche PATH tel qu'il était dans cette version."
)
@pass_context
def history(obj: Context, path: str | None, rev: str | None) -> Outcome:
    """Versions des fichiers tirés de SilverBullet (historique git local)."""
    from ocmem.silverbullet.history import History

    log = History(obj.workspace().paths)
    if rev:
        if not path:
            raise click.UsageError(
                "--show demande aussi le chemin du fichier (ex. memory/MEMORY.md)"
            )
        return _text(log.show(rev, path))
    text = log.log(path)
    if not text:
        return Outcome(["aucune version enregistrée (aucun pull n'a encore rien changé)"])
    return Outcome(
        [
            text,
            "",
            "Pour annuler une promotion : `ocmem history FICHIER --show VERSION` affiche l'ancienne version ;",
            "recopie-la dans la page SilverBullet correspondante, le prochain pull la réinstallera.",
        ]
    )


@cli.command(name="context-size")
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def context_size(obj: Context, as_json: bool) -> Outcome:
    """Taille du contexte mémoire chargé à chaque session (caractères, tokens estimés)."""
    from ocmem.services.context import context_report

    report = context_report(obj.workspace().settings)
    return _text(report.to_json() if as_json else report.render())


@cli.group(subcommand_metavar="COMMANDE [ARGUMENTS]...")
def cron() -> None:
    """Synchronisation régulière (crontab ou timer systemd) : ocmem sync."""


@cron.command(name="print")
@click.option("--every", default=15, show_default=True, help="Minutes entre deux synchronisations.")
@click.option(
    "--systemd", is_flag=True, help="Affiche un timer systemd utilisateur au lieu d'une ligne cron."
)
@pass_context
def cron_print(obj: Context, every: int, systemd: bool) -> Outcome:
    """Affiche la ligne crontab (ou les unités systemd), sans rien installer."""
    from ocmem.setup import schedule

    settings = obj.workspace().settings
    for warning in schedule.warnings():
        click.echo(warning, err=True)
    return _text(
        schedule.systemd_units(settings, every) if systemd else schedule.cron_line(settings, every)
    )


@cron.command(name="install")
@click.option("--every", default=15, show_default=True, help="Minutes entre deux synchronisations.")
@pass_context
def cron_install(obj: Context, every: int) -> Outcome:
    """Ajoute (ou met à jour) la ligne ocmem de la crontab ; idempotent."""
    from ocmem.setup import schedule

    return _text(schedule.install(obj.human_workspace("cron install").settings, every))


@cron.command(name="remove")
def cron_remove() -> Outcome:
    """Retire la ligne ocmem de la crontab."""
    from ocmem.setup import schedule

    return _text(schedule.remove())


@cli.command(name="plugin-config", hidden=True)
@pass_context
def plugin_config_command(obj: Context) -> Outcome:
    """Settings for the OpenCode plugin (JSON, see ocmem.plugin.contract)."""
    from ocmem.plugin.tools import plugin_config

    return _text(json.dumps(plugin_config(obj.workspace().settings), ensure_ascii=False))


@cli.command(name="prompt-context", hidden=True)
@click.option("--session", help="Root session id: says whether it already has its journal entry.")
@pass_context
def prompt_context_command(obj: Context, session: str | None) -> Outcome:
    """Memory blocks for the system prompt and start-of-session warnings (JSON)."""
    from ocmem.plugin.tools import prompt_context

    return _text(json.dumps(prompt_context(obj.workspace(), session), ensure_ascii=False))


@cli.command(name="tool", hidden=True)
@click.argument("name")
@pass_context
def tool_command(obj: Context, name: str) -> Outcome:
    """Run a memory tool for the plugin: envelope JSON on stdin."""
    from ocmem.plugin.tools import run_tool

    workspace = obj.human_workspace(f"tool {name}")
    return run_tool(workspace, name, read_json(f"tool {name}"))


@cli.command(name="gate", hidden=True)
@pass_context
def gate_command(obj: Context) -> Outcome:
    """The plugin's gate: JSON requests on stdin, one answer per line (see ocmem.plugin.gate)."""
    from ocmem.plugin.gate import serve

    return serve(obj.home, clock=obj.clock)


@cli.command()
@click.option(
    "--print",
    "print_",
    is_flag=True,
    required=True,
    help="Affiche les commandes (rien n'est planifié).",
)
@pass_context
def curate(obj: Context, print_: bool) -> Outcome:
    """Curation hebdomadaire et revue trimestrielle : préparées, jamais activées d'office."""
    from ocmem.setup.curation import curation_plan

    if not print_:
        raise click.UsageError(
            "ocmem ne planifie rien lui-même : `ocmem curate --print` affiche les commandes à planifier"
        )
    return _text(curation_plan(obj.workspace().settings))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def review(obj: Context, as_json: bool) -> Outcome:
    """Revue : skills peu utilisés, contradictions possibles, faits à revalider, notes récurrentes (suggestions)."""
    from ocmem.services.review import review as run_review

    report = run_review(obj.workspace())
    outcome = _text(report.to_json() if as_json else report.render())
    if report.damaged:
        outcome.ask_human()
    return outcome


@cli.command()
@click.option("--fix", is_flag=True, help="Applique les réparations sûres (avec sauvegarde).")
@pass_context
def doctor(obj: Context, fix: bool) -> Outcome:
    """Vérifie l'installation ; chaque problème avec la commande qui le corrige."""
    from ocmem.setup.doctor import diagnose

    return diagnose(obj.human_workspace("doctor --fix") if fix else obj.workspace(), fix=fix)


@cli.command()
@click.option("--agent", metavar="COMPTE", help="Le compte Unix sous lequel tourne OpenCode.")
@click.option(
    "--owner",
    metavar="COMPTE",
    default="ocmem",
    show_default=True,
    help="Le compte Unix qui possède la mémoire (à créer avant : useradd --system).",
)
@click.option("--undo", is_flag=True, help="Annule le mode durci (rend le dossier à l'agent).")
@pass_context
def harden(obj: Context, agent: str | None, owner: str, undo: bool) -> Outcome:
    """Mode durci (root) : la mémoire, les skills et la config d'OpenCode à un autre utilisateur."""
    from ocmem.setup.harden import harden as run_harden

    obj.human_workspace("harden")
    return run_harden(obj.home, agent, owner, obj.clock, undo=undo)


def _wait_after_the_command(
    ctx: click.Context, _param: click.Parameter, value: float | None
) -> None:
    if value is not None:
        ctx.find_object(Context).wait = value  # type: ignore[union-attr]


def _accept_wait_everywhere(group: click.Group) -> None:
    """``ocmem note --wait 5 …`` as well as ``ocmem --wait 5 note …``."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _accept_wait_everywhere(command)
        else:
            command.params.append(
                click.Option(
                    ["--wait"],
                    type=click.FloatRange(min=0),
                    metavar="SECONDES",
                    expose_value=False,
                    hidden=True,
                    callback=_wait_after_the_command,
                )
            )


_accept_wait_everywhere(cli)
french.install()
french.french_metavars(
    cli,
    {
        "text": "TEXTE",
        "words": "MOTS",
        "pid": "ID",
        "keep": "GARDÉE",
        "other": "AUTRE",
        "path": "CHEMIN",
        "name": "NOM",
    },
)
