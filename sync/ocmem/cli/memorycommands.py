"""Commands on the memory files: notes, the journal, proposals."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import click

from ocmem.cli.app import Context, cli, pass_context
from ocmem.cli.options import option
from ocmem.cli.stdin import read_json
from ocmem.errors import InputError, OcmemError, Refused
from ocmem.formats import operations
from ocmem.outcome import Outcome
from ocmem.text.words import fold

if TYPE_CHECKING:
    from ocmem.services.proposals import Proposals


@cli.command()
@click.argument("text", required=False)
@option("--jours", "--days", "days", type=int, help="Durée de vie de la note en jours (défaut 7).")
@option("--liste", "--list", "list_", is_flag=True, help="Affiche les notes en cours, numérotées.")
@option(
    "--retirer",
    "--remove",
    "remove",
    type=int,
    metavar="N",
    help="Supprime la note n°N (voir --liste).",
)
@option(
    "--lever-quarantaine",
    "--trust",
    "trust",
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
        raise click.UsageError(
            "donne soit un TEXTE, soit --liste, soit --retirer N, soit --lever-quarantaine N"
        )
    if list_:
        workspace, agent = obj.reader()
        return Memory(workspace, agent=agent).list_notes()
    if trust is not None:
        return Memory(obj.human_workspace("note --lever-quarantaine")).trust_note(trust)
    memory = Memory(obj.human_workspace("note"))
    if remove is not None:
        return memory.remove_note(remove)
    return memory.add_note(text or "", days)


@cli.group(name="journal", subcommand_metavar="COMMANDE [ARGUMENTS]...")
def journal_group() -> None:
    """Journal des épisodes (ajout seul, recherche plafonnée à 5 entrées)."""


def options_of(
    op: operations.Operation,
) -> Callable[[Callable[..., Outcome]], Callable[..., Outcome]]:
    """The command's options, one per argument of the operation (``ocmem.formats.operations``):
    the same names, types and choices as the plugin's tool. A choice is also taken without its
    accents (« reussi »); a list is given by repeating its option (or one value for tags)."""

    def decorate(command: Callable[..., Outcome]) -> Callable[..., Outcome]:
        for arg in reversed(op.args):
            help_text = arg.description + ("." if arg.description else "")
            names = (arg.flag, *arg.aliases, arg.name)
            if arg.kind == operations.BOOLEAN:
                decorator = option(*names, is_flag=True, help=help_text)
            elif arg.kind == operations.STRINGS:
                decorator = option(*names, multiple=True, help=help_text)
            elif arg.choices:
                accepted = list(dict.fromkeys([*arg.choices, *(fold(c) for c in arg.choices)]))
                decorator = option(*names, type=click.Choice(accepted), help=help_text)
            else:
                kind = int if arg.kind == operations.INTEGER else str
                decorator = option(*names, type=kind, help=help_text)
            command = decorator(command)
        return command

    return decorate


def given_options(op: operations.Operation, options: dict[str, Any]) -> dict[str, Any]:
    """The options given on the command line, as the operation's JSON arguments."""
    given: dict[str, Any] = {}
    for arg in op.args:
        value = options.get(arg.name)
        if value in (None, (), False):
            continue
        if arg.words:
            value = [word for item in value for word in item.replace(",", " ").split()]
        given[arg.name] = list(value) if arg.kind == operations.STRINGS else value
    return given


def told_in_options(op: operations.Operation, run: Callable[[], Outcome]) -> Outcome:
    """Run a memory operation a person gave as options: its refusals, written for the agent's
    tool in its JSON fields, name the options instead (ocmem.formats.operations.in_options).
    The tool, and JSON on stdin, keep the fields."""
    try:
        return run()
    except OcmemError as error:
        error.message = operations.in_options(error.message, op)
        error.fix = error.fix and operations.in_options(error.fix, op)
        raise


@journal_group.command(name="add")
@options_of(operations.JOURNAL)
@pass_context
def journal_add(obj: Context, /, **options: Any) -> Outcome:
    """Ajoute une entrée : options, ou objet JSON sur l'entrée standard

    {"titre", "tags": [...], "demande", "fait", "piege", "lecon", "resultat"}.
    """
    from ocmem.services.memory import Memory

    given = given_options(operations.JOURNAL, options)
    workspace = obj.human_workspace("journal add")
    if not given:
        return Memory(workspace).add_journal(read_json("journal add"))
    return told_in_options(operations.JOURNAL, lambda: Memory(workspace).add_journal(given))


@journal_group.command(name="search")
@click.argument("words", nargs=-1)
@click.option("--tag", "tags", multiple=True, help="Tag exigé (répétable).")
@option(
    "--ou",
    "--or",
    "alternatives",
    multiple=True,
    metavar="TEXTE",
    help=f"Autre formulation de la recherche (répétable, {operations.ALTERNATIVES_MAX} au plus).",
)
@option(
    "--dernieres",
    "--last",
    "last",
    type=int,
    help=f"Nombre d'entrées ({operations.SEARCH_MAX} au plus).",
)
@pass_context
def journal_search(
    obj: Context,
    words: tuple[str, ...],
    tags: tuple[str, ...],
    alternatives: tuple[str, ...],
    last: int | None,
) -> Outcome:
    """Cherche dans le journal et ses archives, par les mots et par le sens : 5 entrées au plus,
    les plus pertinentes d'abord.

    Des mots ou une question, sans guillemets : ocmem journal search certificat nginx expiré
    --ou "let's encrypt renouvellement échoue" --ou "certificate expired"
    """
    from ocmem.cli.encoding import searching_memory

    workspace, agent = obj.reader()
    return searching_memory(workspace, agent).search_journal(
        " ".join(words), tags, last, alternatives=alternatives
    )


@journal_group.command(name="index")
@option("--fond", "--background", "background", is_flag=True, hidden=True)
@pass_context
def journal_index(obj: Context, background: bool) -> Outcome:
    """Encode les entrées du journal pour la recherche par le sens (celles qui ne le sont pas).

    Une recherche s'en charge d'elle-même, en arrière-plan : cette commande le fait tout de suite.
    """
    from ocmem.services.journalsearch import JournalSearch

    workspace, agent = obj.reader()
    if background:
        os.nice(10)  # started by a search, detached: the machine's other work goes first
    return JournalSearch(workspace, agent=agent).encode_journal()


@journal_group.command(name="recent")
@option(
    "--dernieres",
    "--last",
    "last",
    type=click.IntRange(1, operations.RECENT_MAX),
    default=operations.RECENT_MAX,
    show_default=True,
    help="Nombre d'entrées.",
)
@pass_context
def journal_recent(obj: Context, last: int) -> Outcome:
    """Les dernières entrées, titres seuls (date, titre, tags), les plus récentes d'abord."""
    from ocmem.services.journalsearch import JournalSearch

    workspace, agent = obj.reader()
    return JournalSearch(workspace, agent=agent).recent_journal(last)


@journal_group.command(name="archive")
@option(
    "--avant",
    "--before",
    "before",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    metavar="AAAA-MM-JJ",
    help="Archive les entrées antérieures à cette date (AAAA-MM-JJ).",
)
@option(
    "--plus-vieux-que",
    "--older-than",
    "older_than",
    type=int,
    metavar="JOURS",
    help="Archive les entrées de plus de JOURS jours.",
)
@pass_context
def journal_archive(obj: Context, before: datetime | None, older_than: int | None) -> Outcome:
    """Déplace les vieilles entrées dans journal-AAAA-MM.md (rien n'est perdu ni supprimé)."""
    from datetime import timedelta

    from ocmem.services.memory import ARCHIVE_EXAMPLE_DAYS, Memory

    if (before is None) == (older_than is None):
        raise click.UsageError("donne --avant AAAA-MM-JJ ou --plus-vieux-que JOURS")
    if older_than is not None and older_than < 1:
        raise InputError(
            f"--plus-vieux-que {older_than} : il faut au moins 1 jour (les entrées d'aujourd'hui "
            "restent au journal) ; rien n'a été modifié",
            fix=f"par ex. --plus-vieux-que {ARCHIVE_EXAMPLE_DAYS}",
        )
    workspace = obj.workspace()
    cutoff: date = (
        before.date() if before is not None else workspace.today() - timedelta(days=older_than or 0)
    )
    return Memory(workspace).archive_journal(cutoff)


@cli.command()
@options_of(operations.PROPOSE)
@pass_context
def propose(obj: Context, /, **options: Any) -> Outcome:
    """Propose un fait ou un skill (options, ou objet JSON sur l'entrée standard)."""
    from ocmem.services.proposals import Proposals

    workspace = obj.human_workspace("propose")
    given = given_options(operations.PROPOSE, options)
    if "type" not in given:
        return Proposals(workspace).propose(read_json("propose"))
    return told_in_options(operations.PROPOSE, lambda: Proposals(workspace).propose(given))


@cli.group(name="pending", subcommand_metavar="COMMANDE [ARGUMENTS]...")
def pending_group() -> None:
    """Propositions en attente de validation humaine."""


def _proposals(obj: Context) -> Proposals:
    from ocmem.services.proposals import Proposals

    workspace, agent = obj.reader()
    return Proposals(workspace, agent=agent)


@pending_group.command(name="list")
@option(
    "--toutes",
    "--all",
    "show_all",
    is_flag=True,
    help="Inclut les propositions promues et refusées.",
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
@option(
    "--seuil",
    "--threshold",
    "threshold",
    type=float,
    default=0.35,
    show_default=True,
    help="Similarité minimale (0 à 1).",
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
@option("--oui", "--yes", "yes", is_flag=True, help="Ne pas demander de confirmation.")
@pass_context
def pending_accept(obj: Context, pid: str, yes: bool) -> Outcome:
    """Promeut une proposition (fait → MEMORY.md, skill → skills/<nom>/SKILL.md)."""
    from ocmem.services.proposals import Proposals

    proposals = Proposals(obj.human_workspace("pending accept"))
    if not yes:
        if not sys.stdin.isatty():
            raise Refused(
                "la promotion demande la confirmation d'un humain",
                fix=f"lance `ocmem pending accept {pid}` dans un terminal, ou ajoute --oui si tu es l'humain",
            )
        from ocmem.outcome import terminal_safe

        click.echo(terminal_safe(proposals.show_pending(pid).render()))
        answer = click.prompt(
            "Promouvoir cette proposition ? [o/N]", default="n", show_default=False
        )
        if answer.strip().lower() not in ("o", "oui", "y", "yes"):
            raise Refused("promotion annulée", fix="rien n'a été écrit")
    return proposals.accept(pid)


@pending_group.command(name="annuler")
@click.argument("pid", required=False)
@pass_context
def pending_undo(obj: Context, pid: str | None) -> Outcome:
    """Annule une promotion (la dernière, ou ID) : fait ou skill retiré, proposition en attente."""
    from ocmem.services.unpromotion import undo_promotion

    return undo_promotion(obj.human_workspace("pending annuler"), pid)


# Its English name, as `accept` and `reject` have theirs: accepted, not shown.
pending_group.add_command(
    click.Command(
        "undo",
        callback=pending_undo.callback,
        params=list(pending_undo.params),
        help=pending_undo.help,
        hidden=True,
    )
)


@pending_group.command(name="reject")
@click.argument("pid")
@option("--raison", "--reason", "reason", required=True, help="Pourquoi (une ligne).")
@pass_context
def pending_reject(obj: Context, pid: str, reason: str) -> Outcome:
    """Refuse une proposition (elle reste, marquée « refusé »)."""
    # Open to the agent: « valide pending » ends with the human's no, which the agent records;
    # a refused proposal stays in pending.md, marked, where the human sees it.
    return _proposals(obj).reject(pid, reason)


# Why a fact or a skill is retired: the same option for both.
_REASON = option(
    "--raison",
    "--reason",
    "reason",
    required=True,
    help="Pourquoi (une ligne, gardée dans l'archive).",
)


@cli.group(name="retire", subcommand_metavar="COMMANDE [ARGUMENTS]...")
def retire_group() -> None:
    """Retire un fait ou un skill validé (gardé dans memory/ARCHIVE.md) ; l'humain seul."""


@retire_group.command(name="fact")
@click.argument("fact")
@_REASON
@pass_context
def retire_fact(obj: Context, fact: str, reason: str) -> Outcome:
    """Retire un fait de MEMORY.md (cité tel quel, ou assez pour le reconnaître)."""
    from ocmem.services.retirement import retire_fact as retire

    return retire(obj.human_workspace("retire"), fact, reason)


@retire_group.command(name="skill")
@click.argument("name")
@_REASON
@pass_context
def retire_skill(obj: Context, name: str, reason: str) -> Outcome:
    """Retire un skill de skills/ (son SKILL.md gardé dans l'archive)."""
    from ocmem.services.retirement import retire_skill as retire

    return retire(obj.human_workspace("retire"), name, reason)
