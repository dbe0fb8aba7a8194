"""Commands on the SilverBullet space: pull, push, sync, and the history of pulled files."""

from __future__ import annotations

import click

from ocmem.cli.app import Context, cli, pass_context
from ocmem.cli.options import option
from ocmem.outcome import Outcome


@cli.command()
@option(
    "--simulation", "--dry-run", "dry_run", is_flag=True, help="Affiche le plan sans rien écrire."
)
@option(
    "--forcer-suppression",
    "--force-delete",
    "force_delete",
    is_flag=True,
    help="Autorise des suppressions massives (listing vide, part > seuil).",
)
@option(
    "--complet",
    "--full",
    "full",
    is_flag=True,
    help="Relit tous les fichiers, même inchangés d'après leurs métadonnées.",
)
@option(
    "--accepter-actif",
    "--accept-active",
    "accept_active",
    is_flag=True,
    help="Installe aussi les pages qui contiennent du code actif pour SilverBullet (après vérification).",
)
@option(
    "--remplacer-local",
    "--replace-local",
    "replace_local",
    is_flag=True,
    help="Installe la version de SilverBullet même là où la copie locale a des faits, skills ou "
    "lignes validés ici qu'elle n'a pas (copie locale gardée dans les sauvegardes).",
)
@pass_context
def pull(
    obj: Context,
    dry_run: bool,
    force_delete: bool,
    full: bool,
    accept_active: bool,
    replace_local: bool,
) -> Outcome:
    """SilverBullet → local : AGENTS.md, MEMORY.md, skills/ (copie locale en lecture seule)."""
    from ocmem.services import sync

    return sync.pull(
        obj.workspace(),
        dry_run=dry_run,
        force_delete=force_delete,
        full=full,
        accept_active=accept_active,
        replace_local=replace_local,
    )


@cli.command()
@option(
    "--simulation",
    "--dry-run",
    "dry_run",
    is_flag=True,
    help="Affiche ce qui serait envoyé, sans écrire.",
)
@pass_context
def push(obj: Context, dry_run: bool) -> Outcome:
    """Local → SilverBullet : journal.md et pending.md vers Agents/Inbox/journal.md et
    pending.md (ou Agents/Inbox/<id>/ pour un dossier à identifiant choisi), sans rien perdre."""
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
@option(
    "--voir",
    "--show",
    "rev",
    metavar="VERSION",
    help="Affiche PATH tel qu'il était dans cette version.",
)
@pass_context
def history(obj: Context, path: str | None, rev: str | None) -> Outcome:
    """Versions des fichiers tirés de SilverBullet (historique git local)."""
    from ocmem.silverbullet.history import history as history_of

    return history_of(obj.workspace().paths, path, rev)
