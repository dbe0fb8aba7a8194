"""Commands on the memory files: notes, the journal, proposals."""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import TYPE_CHECKING

import click

from ocmem.cli.app import Context, cli, pass_context
from ocmem.cli.stdin import read_json
from ocmem.errors import Refused
from ocmem.outcome import Outcome

if TYPE_CHECKING:
    from ocmem.services.proposals import Proposals


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
