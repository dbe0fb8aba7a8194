"""Commands that set the home up and look after it: init, status, context size, scheduling,
curation, review, doctor, the hardened mode, uninstalling."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ocmem.cli.app import Context, cli, pass_context, text_outcome
from ocmem.cli.options import option
from ocmem.outcome import Outcome


@cli.command()
@option(
    "--mettre-a-jour",
    "--upgrade",
    "upgrade",
    is_flag=True,
    help="Remplace le skill et le plugin livrés s'ils diffèrent (après sauvegarde).",
)
@option(
    "--importer-court-terme",
    "--import-short-term",
    "import_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Importe une ancienne mémoire court terme (une note par ligne) dans SHORT_TERM.md.",
)
@option(
    "--voir-section",
    "--show-section",
    "show_section",
    is_flag=True,
    help="Affiche la section AGENTS.md livrée, sans rien écrire.",
)
@option(
    "--voir-bibliotheque",
    "--show-library",
    "show_library",
    is_flag=True,
    help="Affiche la page SilverBullet de revue des propositions (à coller dans Library/ocmem).",
)
@option(
    "--id-dossier",
    "--home-id",
    "home_id",
    metavar="NOM",
    help="Identifiant de ce dossier (nomme ses pages Agents/Inbox/NOM/ ; défaut : le nom de la machine et 4 caractères propres à ce dossier, ex. vps-prod-3fa9).",
)
@option(
    "--remplacer-ancienne",
    "--replace-old",
    "replace_old",
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
        return text_outcome(shipped_section())
    if show_library:
        from ocmem.silverbullet.library import library_page

        return text_outcome(library_page())
    return Installer(
        obj.human_workspace("init", creating=True),
        upgrade=upgrade,
        home_id=home_id,
        replace_old=replace_old,
        confirm=_ask if sys.stdin.isatty() else None,
    ).run(import_file)


def _ask(question: str) -> bool:
    """A yes/no question on the terminal (no answer: no)."""
    from ocmem.setup.memorysignals import is_yes

    click.echo(question, err=True)
    return is_yes(click.prompt("[o/N]", default="", show_default=False, err=True))


@cli.command()
@pass_context
def status(obj: Context) -> Outcome:
    """Remplissage de chaque fichier, skills, propositions en attente."""
    from ocmem.services.status import status as run_status

    return run_status(obj.workspace())


@cli.command(name="context-size")
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def context_size(obj: Context, as_json: bool) -> Outcome:
    """Taille du contexte mémoire chargé à chaque session (caractères, tokens estimés)."""
    from ocmem.services.context import context_report

    report = context_report(obj.workspace().settings)
    return text_outcome(report.to_json() if as_json else report.render())


@cli.group(subcommand_metavar="COMMANDE [ARGUMENTS]...")
def cron() -> None:
    """Tâches planifiées (crontab ou timer systemd) : ocmem sync, curation, revue."""


JOB_CHOICE = click.Choice(["sync", "curation", "review"])
every_option = option(
    "--toutes-les",
    "--every",
    "every",
    default=15,
    show_default=True,
    metavar="MINUTES",
    help="Minutes entre deux synchronisations.",
)


@cron.command(name="print")
@every_option
@click.option(
    "--systemd", is_flag=True, help="Affiche un timer systemd utilisateur au lieu d'une ligne cron."
)
@pass_context
def cron_print(obj: Context, every: int, systemd: bool) -> Outcome:
    """Affiche la ligne crontab (ou les unités systemd) de la synchronisation, sans rien installer."""
    from ocmem.setup import schedule

    settings = obj.workspace().settings
    for warning in schedule.warnings(settings):
        click.echo(warning, err=True)
    return text_outcome(
        schedule.systemd_units(settings, every) if systemd else schedule.cron_line(settings, every)
    )


@cron.command(name="install")
@every_option
@option(
    "--tache",
    "--job",
    "jobs",
    type=JOB_CHOICE,
    multiple=True,
    help="Tâche à planifier, répétable (défaut : sync ; curation : lundi 7 h ; review : chaque "
    "trimestre). Les autres tâches de ce dossier restent en place.",
)
@click.option(
    "--opencode",
    metavar="CHEMIN",
    help="Le programme opencode de la curation (défaut : celui du PATH, en chemin absolu).",
)
@pass_context
def cron_install(obj: Context, every: int, jobs: tuple[str, ...], opencode: str | None) -> Outcome:
    """Ajoute (ou met à jour) les lignes de ce dossier dans la crontab ; idempotent."""
    from ocmem.setup import schedule

    workspace = obj.human_workspace("cron install")
    return text_outcome(schedule.install(workspace, jobs or ("sync",), every, opencode))


@cron.command(name="remove")
@option(
    "--tache",
    "--job",
    "jobs",
    type=JOB_CHOICE,
    multiple=True,
    help="Tâche à retirer, répétable (défaut : toutes celles de ce dossier).",
)
@pass_context
def cron_remove(obj: Context, jobs: tuple[str, ...]) -> Outcome:
    """Retire les lignes de ce dossier de la crontab (celles des autres dossiers restent)."""
    from ocmem.setup import schedule

    # creating: a deleted home's lines can still go (nothing is written in the home).
    workspace = obj.human_workspace("cron remove", creating=True)
    return text_outcome(schedule.remove(workspace.settings, jobs or schedule.JOBS))


@cli.command()
@option(
    "--afficher",
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
            "ocmem ne planifie rien lui-même : `ocmem curate --afficher` affiche les commandes à planifier"
        )
    return text_outcome(curation_plan(obj.workspace().settings))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def review(obj: Context, as_json: bool) -> Outcome:
    """Revue : skills peu utilisés, contradictions possibles, faits à revalider, notes récurrentes (suggestions)."""
    from ocmem.services.review import review as run_review

    report = run_review(obj.workspace())
    outcome = text_outcome(report.to_json() if as_json else report.render())
    if report.damaged:
        outcome.ask_human()
    return outcome


@cli.command()
@option(
    "--reparer",
    "--fix",
    "fix",
    is_flag=True,
    help="Applique les réparations sûres (avec sauvegarde).",
)
@pass_context
def doctor(obj: Context, fix: bool) -> Outcome:
    """Vérifie l'installation ; chaque problème avec la commande qui le corrige."""
    from ocmem.setup.doctor import diagnose

    return diagnose(obj.human_workspace("doctor --reparer") if fix else obj.workspace(), fix=fix)


@cli.command()
@click.option("--agent", metavar="COMPTE", help="Le compte Unix sous lequel tourne OpenCode.")
@option(
    "--proprietaire",
    "--owner",
    "owner",
    metavar="COMPTE",
    default="ocmem",
    show_default=True,
    help="Le compte Unix qui possède la mémoire (à créer avant : useradd --system).",
)
@option(
    "--annuler",
    "--undo",
    "undo",
    is_flag=True,
    help="Annule le mode durci (rend le dossier à l'agent).",
)
@pass_context
def harden(obj: Context, agent: str | None, owner: str, undo: bool) -> Outcome:
    """Mode durci (root) : la mémoire, les skills et la config d'OpenCode à un autre utilisateur."""
    from ocmem.setup.harden import harden as run_harden

    obj.human_workspace("harden")
    return run_harden(obj.home, agent, owner, obj.clock, undo=undo)


@cli.command(name="desinstaller")
@option("--oui", "--yes", "yes", is_flag=True, help="Ne pas demander de confirmation.")
@pass_context
def uninstall(obj: Context, yes: bool) -> Outcome:
    """Retire ce qu'ocmem a installé (plugin, cron, systemd, mode durci…) ; garde la mémoire."""
    from ocmem.errors import Refused
    from ocmem.outcome import terminal_safe
    from ocmem.setup import uninstall as run

    # creating: a home whose folders are gone may still have its cron lines (nothing is
    # written when there is nothing to do).
    workspace = obj.human_workspace("desinstaller", creating=True)
    found = run.plan(workspace)
    if found.empty():
        return Outcome(
            [f"Rien à désinstaller pour {workspace.paths.home} : ocmem n'y a plus rien installé."]
        )
    archive = run.archive_folder(workspace)  # the one shown is the one used
    shown = "\n".join(found.render(archive, done=False))
    if not yes:
        if not sys.stdin.isatty():
            raise Refused(
                "la désinstallation demande la confirmation d'un humain ; rien n'a été modifié",
                details=shown,
                fix="lance `ocmem desinstaller` dans un terminal, ou ajoute --oui si tu es l'humain",
            )
        click.echo(terminal_safe(shown))
        answer = click.prompt("Désinstaller ? [o/N]", default="n", show_default=False)
        if answer.strip().lower() not in ("o", "oui", "y", "yes"):
            raise Refused("désinstallation annulée", fix="rien n'a été modifié")
    return run.uninstall(workspace, found, archive)  # refused if the home changed meanwhile


# Its English name: accepted, not shown.
cli.add_command(
    click.Command(
        "uninstall",
        callback=uninstall.callback,
        params=list(uninstall.params),
        help=uninstall.help,
        hidden=True,
    )
)


@cli.command()
@click.option(
    "--opencode",
    "opencode",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    metavar="CHEMIN",
    help="L'OpenCode à utiliser (défaut : celui que trouve ton shell, comme ocmem doctor).",
)
@option(
    "--espace",
    "space",
    is_flag=True,
    help="Lit ton espace SilverBullet configuré, sans jamais l'écrire, et fait les tests sur "
    "une copie de ses pages.",
)
@option(
    "--garder",
    "keep",
    is_flag=True,
    help="Garde le bac à sable à la fin (son chemin est affiché), pour le regarder.",
)
@click.option("--json", "as_json", is_flag=True, help="Sortie JSON.")
@pass_context
def essai(obj: Context, opencode: Path | None, space: bool, keep: bool, as_json: bool) -> Outcome:
    """Lance les 13 tests de la spécification dans un bac à sable, sans rien toucher d'autre.

    Ton OpenCode avec le plugin d'ocmem, un modèle scripté et un SilverBullet de
    substitution, tous sur 127.0.0.1. Code de sortie : 0 tout a réussi, 1 un test a échoué,
    3 des tests n'ont pas pu être lancés (OpenCode absent ou en version 2).
    """
    import os
    import shutil

    from ocmem.trial.runner import Essai
    from ocmem.trial.userspace import read_space
    from ocmem.trial.verdicts import outcome

    def say(line: str) -> None:
        if sys.stderr.isatty() and not as_json:
            click.echo(line, err=True)

    given = opencode.absolute() if opencode is not None else None
    copy = read_space(obj.home, os.environ) if space else None
    run = Essai(given, keep, say, copy).run(os.environ, obj.home)
    width = min(shutil.get_terminal_size((110, 24)).columns, 140)
    return outcome(*run, as_json=as_json, width=width)
