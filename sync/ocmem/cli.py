"""The ``ocmem`` command: parse arguments, call the library, map errors to exit codes.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 refused / needs a human, 75 busy.
Commands import what they need when they run, so local commands stay fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ocmem import __version__
from ocmem.errors import InputError, OcmemError, Refused

EXIT_USAGE = 2


class _Context:
    def __init__(self, home: Path | None, wait: float):
        self.home = home
        self.wait = wait

    def settings(self) -> Any:
        from ocmem.config import load_settings

        return load_settings(self.home)

    def memory(self) -> Any:
        from ocmem.engine import Memory

        return Memory(self.settings(), wait_seconds=self.wait)


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


def _read_json_stdin(what: str) -> Any:
    if sys.stdin.isatty():
        raise InputError(f"{what} attend un objet JSON sur l'entrée standard", fix="voir --help")
    raw = sys.stdin.read()
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"JSON invalide sur l'entrée standard : {exc}", fix="envoie un seul objet JSON valide"
        ) from exc


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
@pass_context
def init(obj: _Context, upgrade: bool, import_file: Path | None) -> None:
    """Crée ou complète l'arborescence (idempotent, sans jamais écraser)."""
    from ocmem.install import Installer

    _echo(Installer(obj.settings(), upgrade=upgrade, wait_seconds=obj.wait).run(import_file))


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
    data = given if given else _read_json_stdin("journal add")
    _echo(obj.memory().add_journal(data))


@journal_group.command(name="search")
@click.argument("query", required=False, default="")
@click.option("--tag", "tags", multiple=True, help="Tag exigé (répétable).")
@click.option("--last", type=int, help="Les N dernières entrées (5 au plus).")
@pass_context
def journal_search(obj: _Context, query: str, tags: tuple[str, ...], last: int | None) -> None:
    """Cherche dans le journal et ses archives : 5 entrées au plus, les plus récentes d'abord."""
    _echo(obj.memory().search_journal(query, tags, last))


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
        data = _read_json_stdin("propose")
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


def main(argv: list[str] | None = None) -> None:
    """Entry point: the one place where errors become messages and exit codes."""
    try:
        code = cli.main(args=argv, prog_name="ocmem", standalone_mode=False)
    except OcmemError as exc:
        click.echo(f"ocmem : {exc.render()}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("ocmem : interrompu", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
