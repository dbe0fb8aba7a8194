"""The ``ocmem`` command line (click): parse arguments, call the library, print its result.

Errors are domain exceptions; ``ocmem.entry.main`` turns them into messages and exit codes.
Commands import what they need when they run, so local commands stay fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ocmem import __version__
from ocmem.entry import open_memory, read_json_stdin
from ocmem.errors import Refused


class _Context:
    def __init__(self, home: Path | None, wait: float):
        self.home = home
        self.wait = wait

    def settings(self) -> Any:
        from ocmem.config import load_settings

        return load_settings(self.home)

    def memory(self) -> Any:
        return open_memory(self.home, self.wait)


pass_context = click.make_pass_decorator(_Context)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ocmem")
@click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="OCMEM_HOME",
    help="Dossier ocmem (défaut : $XDG_CONFIG_HOME/opencode, sinon ~/.config/opencode).",
)
@click.option(
    "--wait", type=float, default=0.0, show_default=True, help="Secondes d'attente du verrou."
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, wait: float) -> None:
    """Mémoire long terme d'OpenCode : notes, journal, propositions, skills."""
    ctx.obj = _Context(home, wait)


def _echo(result: Any) -> None:
    click.echo(result.render())


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
@pass_context
def init(obj: _Context, upgrade: bool, import_file: Path | None, show_section: bool) -> None:
    """Crée ou complète l'arborescence (idempotent, sans jamais écraser)."""
    from ocmem.install import Installer, shipped_section
    from ocmem.syncconfig import is_configured

    if show_section:
        click.echo(shipped_section())
        return
    settings = obj.settings()
    installer = Installer(
        settings, upgrade=upgrade, sync_mode=is_configured(settings), wait_seconds=obj.wait
    )
    _echo(installer.run(import_file))


@cli.command()
@pass_context
def status(obj: _Context) -> None:
    """Remplissage de chaque fichier, skills, propositions en attente."""
    _echo(obj.memory().status())


@cli.command()
@click.argument("text", required=False)
@click.option("--days", type=int, help="Durée de vie de la note en jours (défaut 7).")
@click.option("--list", "list_", is_flag=True, help="Affiche les notes en cours, numérotées.")
@click.option("--remove", type=int, metavar="N", help="Supprime la note n°N (voir --list).")
@pass_context
def note(
    obj: _Context, text: str | None, days: int | None, list_: bool, remove: int | None
) -> None:
    """Mémoire court terme (SHORT_TERM.md) : ajoute, liste ou supprime une note."""
    chosen = sum([text is not None, list_, remove is not None])
    if chosen != 1:
        raise click.UsageError("donne soit un TEXTE, soit --list, soit --remove N")
    memory = obj.memory()
    if list_:
        _echo(memory.list_notes())
    elif remove is not None:
        _echo(memory.remove_note(remove))
    else:
        _echo(memory.add_note(text or "", days))


@cli.group(name="journal")
def journal_group() -> None:
    """Journal des épisodes (ajout seul, recherche plafonnée à 5 entrées)."""


@journal_group.command(name="add")
@click.option("--titre")
@click.option("--tags", help="Tags séparés par des espaces ou des virgules.")
@click.option("--demande")
@click.option("--fait")
@click.option("--piege")
@click.option("--lecon")
@click.option("--resultat", type=click.Choice(["réussi", "partiel", "échec", "reussi", "echec"]))
@pass_context
def journal_add(obj: _Context, /, **fields: str | None) -> None:
    """Ajoute une entrée : options, ou objet JSON sur l'entrée standard

    {"titre", "tags": [...], "demande", "fait", "piege", "lecon", "resultat"}.
    """
    given = {k: v for k, v in fields.items() if v is not None}
    data = given if given else read_json_stdin("journal add")
    _echo(obj.memory().add_journal(data))


@journal_group.command(name="search")
@click.argument("words", nargs=-1)
@click.option("--tag", "tags", multiple=True, help="Tag exigé (répétable).")
@click.option("--last", type=int, help="Nombre d'entrées (5 au plus).")
@pass_context
def journal_search(
    obj: _Context, words: tuple[str, ...], tags: tuple[str, ...], last: int | None
) -> None:
    """Cherche dans le journal et ses archives : 5 entrées au plus, les plus pertinentes d'abord.

    Des mots ou une question, sans guillemets : ocmem journal search certificat nginx expiré
    """
    _echo(obj.memory().search_journal(" ".join(words), tags, last))


@journal_group.command(name="recent")
@click.option(
    "--last", type=click.IntRange(1, 20), default=20, show_default=True, help="Nombre d'entrées."
)
@pass_context
def journal_recent(obj: _Context, last: int) -> None:
    """Les dernières entrées, titres seuls (date, titre, tags), les plus récentes d'abord."""
    _echo(obj.memory().recent_journal(last))


@journal_group.command(name="archive")
@click.option(
    "--before",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="Archive les entrées antérieures à cette date (AAAA-MM-JJ).",
)
@click.option(
    "--older-than", type=int, metavar="JOURS", help="Archive les entrées de plus de JOURS jours."
)
@pass_context
def journal_archive(obj: _Context, before: Any, older_than: int | None) -> None:
    """Déplace les vieilles entrées dans journal-AAAA-MM.md (rien n'est perdu ni supprimé)."""
    from datetime import date, timedelta

    if (before is None) == (older_than is None):
        raise click.UsageError("donne --before AAAA-MM-JJ ou --older-than JOURS")
    cutoff = before.date() if before is not None else date.today() - timedelta(days=older_than or 0)
    _echo(obj.memory().archive_journal(cutoff))


@cli.command()
@click.option("--type", "kind", type=click.Choice(["fait", "skill"]))
@click.option("--titre")
@click.option("--contenu")
@click.option(
    "--source", "sources", multiple=True, help="« journal AAAA-MM-JJ HH:MM » (répétable)."
)
@click.option("--contradiction", help="« aucune » ou ce que la proposition contredit.")
@click.option("--remplace", help="« rien » ou le fait/skill remplacé ou modifié.")
@click.option(
    "--retiens-ca", is_flag=True, help="L'utilisateur a demandé explicitement de retenir."
)
@click.option("--name", help="Nom du skill proposé.")
@click.option("--description", help="Description du skill (2 phrases au plus).")
@pass_context
def propose(
    obj: _Context,
    /,
    kind: str | None,
    sources: tuple[str, ...],
    retiens_ca: bool,
    **rest: str | None,
) -> None:
    """Propose un fait ou un skill (options, ou objet JSON sur l'entrée standard)."""
    if kind is None:
        data = read_json_stdin("propose")
    else:
        data = {"type": kind, "sources": list(sources), "retiens_ca": retiens_ca}
        data.update({k: v for k, v in rest.items() if v is not None})
    _echo(obj.memory().propose(data))


@cli.group(name="pending")
def pending_group() -> None:
    """Propositions en attente de validation humaine."""


@pending_group.command(name="list")
@click.option(
    "--all", "show_all", is_flag=True, help="Inclut les propositions promues et refusées."
)
@pass_context
def pending_list(obj: _Context, show_all: bool) -> None:
    """Liste les propositions."""
    _echo(obj.memory().list_pending(show_all))


@pending_group.command(name="show")
@click.argument("pid")
@pass_context
def pending_show(obj: _Context, pid: str) -> None:
    """Affiche une proposition."""
    _echo(obj.memory().show_pending(pid))


@pending_group.command(name="duplicates")
@click.option(
    "--threshold", type=float, default=0.35, show_default=True, help="Similarité minimale (0 à 1)."
)
@pass_context
def pending_duplicates(obj: _Context, threshold: float) -> None:
    """Liste les propositions en attente qui semblent dire la même chose."""
    _echo(obj.memory().pending_duplicates(threshold))


@pending_group.command(name="merge")
@click.argument("keep")
@click.argument("other")
@pass_context
def pending_merge(obj: _Context, keep: str, other: str) -> None:
    """Fusionne OTHER dans KEEP (OTHER reste, marquée « fusionné »)."""
    _echo(obj.memory().merge_pending(keep, other))


@pending_group.command(name="accept")
@click.argument("pid")
@click.option("--yes", is_flag=True, help="Ne pas demander de confirmation.")
@pass_context
def pending_accept(obj: _Context, pid: str, yes: bool) -> None:
    """Promeut une proposition (fait → MEMORY.md, skill → skills/<nom>/SKILL.md)."""
    memory = obj.memory()
    if not yes:
        if not sys.stdin.isatty():
            raise Refused(
                "la promotion demande la confirmation d'un humain",
                fix=f"lance `ocmem pending accept {pid}` dans un terminal, ou ajoute --yes si tu es l'humain",
            )
        click.echo(memory.show_pending(pid).render())
        if not click.confirm("Promouvoir cette proposition ?", default=False):
            raise Refused("promotion annulée", fix="rien n'a été écrit")
    _echo(memory.accept(pid))


@pending_group.command(name="reject")
@click.argument("pid")
@click.option("--reason", required=True, help="Pourquoi (une ligne).")
@pass_context
def pending_reject(obj: _Context, pid: str, reason: str) -> None:
    """Refuse une proposition (elle reste, marquée « refusé »)."""
    _echo(obj.memory().reject(pid, reason))


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
@pass_context
def pull(obj: _Context, dry_run: bool, force_delete: bool, full: bool) -> None:
    """SilverBullet → local : AGENTS.md, MEMORY.md, skills/ (copie locale en lecture seule)."""
    from ocmem import sync

    report = sync.pull(
        obj.settings(), wait_seconds=obj.wait, dry_run=dry_run, force_delete=force_delete, full=full
    )
    _echo(report)
    if report.needs_human:
        sys.exit(3)


@cli.command()
@click.option("--dry-run", is_flag=True, help="Affiche ce qui serait envoyé, sans écrire.")
@pass_context
def push(obj: _Context, dry_run: bool) -> None:
    """Local → SilverBullet : journal.md et pending.md vers Agents/Inbox/, sans rien perdre."""
    from ocmem import sync

    report = sync.push(obj.settings(), wait_seconds=obj.wait, dry_run=dry_run)
    _echo(report)
    if report.needs_human:
        sys.exit(3)


@cli.command(name="sync")
@pass_context
def sync_command(obj: _Context) -> None:
    """pull puis push (pour cron)."""
    from ocmem import sync

    pulled = sync.pull(obj.settings(), wait_seconds=obj.wait)
    pushed = sync.push(obj.settings(), wait_seconds=obj.wait)
    _echo(pulled)
    _echo(pushed)
    if pulled.needs_human or pushed.needs_human:
        sys.exit(3)


@cli.command()
@click.argument("path", required=False)
@click.option(
    "--show", "rev", metavar="VERSION", help="Affiche PATH tel qu'il était dans cette version."
)
@pass_context
def history(obj: _Context, path: str | None, rev: str | None) -> None:
    """Versions des fichiers tirés de SilverBullet (historique git local)."""
    from ocmem.history import History

    log = History(obj.settings().paths)
    if rev:
        if not path:
            raise click.UsageError(
                "--show demande aussi le chemin du fichier (ex. memory/MEMORY.md)"
            )
        click.echo(log.show(rev, path), nl=False)
        return
    text = log.log(path)
    click.echo(text or "aucune version enregistrée (aucun pull n'a encore rien changé)")
    if text:
        click.echo(
            "\nPour annuler une promotion : `ocmem history FICHIER --show VERSION` affiche l'ancienne version ;"
            "\nrecopie-la dans la page SilverBullet correspondante, le prochain pull la réinstallera."
        )


@cli.command(name="context-size")
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def context_size(obj: _Context, as_json: bool) -> None:
    """Taille du contexte mémoire chargé à chaque session (caractères, tokens estimés)."""
    from ocmem.context import context_report

    report = context_report(obj.settings())
    click.echo(report.to_json() if as_json else report.render())


@cli.group()
def cron() -> None:
    """Synchronisation régulière (crontab ou timer systemd) : ocmem sync."""


@cron.command(name="print")
@click.option("--every", default=15, show_default=True, help="Minutes entre deux synchronisations.")
@click.option(
    "--systemd", is_flag=True, help="Affiche un timer systemd utilisateur au lieu d'une ligne cron."
)
@pass_context
def cron_print(obj: _Context, every: int, systemd: bool) -> None:
    """Affiche la ligne crontab (ou les unités systemd), sans rien installer."""
    from ocmem import schedule

    settings = obj.settings()
    click.echo(
        schedule.systemd_units(settings, every) if systemd else schedule.cron_line(settings, every)
    )
    for warning in schedule.warnings():
        click.echo(warning, err=True)


@cron.command(name="install")
@click.option("--every", default=15, show_default=True, help="Minutes entre deux synchronisations.")
@pass_context
def cron_install(obj: _Context, every: int) -> None:
    """Ajoute (ou met à jour) la ligne ocmem de la crontab ; idempotent."""
    from ocmem import schedule

    click.echo(schedule.install(obj.settings(), every))


@cron.command(name="remove")
def cron_remove() -> None:
    """Retire la ligne ocmem de la crontab."""
    from ocmem import schedule

    click.echo(schedule.remove())


@cli.command(name="plugin-config", hidden=True)
@pass_context
def plugin_config_command(obj: _Context) -> None:
    """Settings for the OpenCode plugin (JSON)."""
    from ocmem.pluginapi import plugin_config

    click.echo(json.dumps(plugin_config(obj.settings()), ensure_ascii=False))


@cli.command(name="prompt-context", hidden=True)
@click.option("--session", help="Root session id: says whether it already has its journal entry.")
@pass_context
def prompt_context_command(obj: _Context, session: str | None) -> None:
    """Memory blocks for the system prompt and start-of-session warnings (JSON)."""
    from ocmem.pluginapi import prompt_context

    click.echo(json.dumps(prompt_context(obj.settings(), session), ensure_ascii=False))


@cli.command(name="tool", hidden=True)
@click.argument("name")
@pass_context
def tool_command(obj: _Context, name: str) -> None:
    """Run a memory tool for the plugin: envelope JSON on stdin."""
    from ocmem.pluginapi import run_tool

    _echo(run_tool(obj.memory(), name, read_json_stdin(f"tool {name}")))


@cli.command()
@click.option(
    "--print",
    "print_",
    is_flag=True,
    required=True,
    help="Affiche les commandes (rien n'est planifié).",
)
@pass_context
def curate(obj: _Context, print_: bool) -> None:
    """Curation hebdomadaire et revue trimestrielle : préparées, jamais activées d'office."""
    from ocmem.curation import curation_plan

    if not print_:
        raise click.UsageError(
            "ocmem ne planifie rien lui-même : `ocmem curate --print` affiche les commandes à planifier"
        )
    click.echo(curation_plan(obj.settings()))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def review(obj: _Context, as_json: bool) -> None:
    """Revue : skills peu utilisés, contradictions possibles, faits à revalider (suggestions)."""
    from ocmem.review import review as run_review

    report = run_review(obj.settings())
    click.echo(report.to_json() if as_json else report.render())


@cli.command()
@click.option("--fix", is_flag=True, help="Applique les réparations sûres (avec sauvegarde).")
@pass_context
def doctor(obj: _Context, fix: bool) -> None:
    """Vérifie l'installation ; chaque problème avec la commande qui le corrige."""
    from ocmem.doctor import diagnose

    report = diagnose(obj.settings(), fix=fix, wait_seconds=obj.wait)
    _echo(report)
    if report.errors:
        sys.exit(1)


def run(args: list[str]) -> int:
    """Run the click command line; domain errors propagate to ``ocmem.entry.main``."""
    try:
        code = cli.main(args=args, prog_name="ocmem", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("ocmem : interrompu", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return code if isinstance(code, int) else 0
