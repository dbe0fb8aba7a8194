"""The memory operations the agent reaches, declared once: the plugin's memory tools and the
commands that do the same in a terminal, their arguments (types, limits, choices) and whether
they write memory.

From this declaration: the plugin's tool schemas and tool names (generated into
``plugin/ocmem/contract.ts``), the check of every tool call's arguments before it runs
(``check_args``, in ``ocmem.bridge.tools``), the options of ``ocmem journal add`` and
``ocmem propose`` (``ocmem.cli.memorycommands``), and the commands the agent's shell may not run
(``AGENT_REFUSED``, also generated into the plugin's guard). ``tests/test_operations.py`` holds
the command line and the plugin to it.
"""

# No `from __future__ import annotations`: NamedTuples (see ocmem.home.settings).

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ocmem.errors import InputError
from ocmem.formats.journal import RESULTS

STRING, INTEGER, BOOLEAN, STRINGS = "string", "integer", "boolean", "strings"
# The « recent » overview and a search answer: their sizes.
RECENT_MAX = 20
SEARCH_MAX = 5
ALTERNATIVES_MAX = 4  # other phrasings of one search (each costs a query of the index)


class Arg(NamedTuple):
    name: str  # as the tool's JSON, and the option (--name, underscores as dashes), take it
    kind: str  # STRING, INTEGER, BOOLEAN or STRINGS (a list of strings)
    description: str = ""
    required: bool = True  # else it may be null, or left out
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    option: str = ""  # the command's option when it differs from --name ("" : --name)
    words: bool = False  # a list whose command-line values may hold several, by spaces or commas
    aliases: tuple[str, ...] = ()  # older (English) spellings of the option, accepted, not shown

    @property
    def flag(self) -> str:
        return self.option or "--" + self.name.replace("_", "-")

    def schema(self) -> dict[str, Any]:
        """Its JSON Schema (the plugin's tool argument; null allowed when optional)."""
        base: dict[str, Any] = (
            {"type": "array", "items": {"type": "string"}}
            if self.kind == STRINGS
            else {"type": self.kind}
        )
        if self.choices:
            base["enum"] = list(self.choices)
        bounds = ("minItems", "maxItems") if self.kind == STRINGS else ("minimum", "maximum")
        if self.minimum is not None:
            base[bounds[0]] = self.minimum
        if self.maximum is not None:
            base[bounds[1]] = self.maximum
        if not self.required:
            base["type"] = [base["type"], "null"]
        if self.description:
            base["description"] = self.description
        return base


class Operation(NamedTuple):
    tool: str  # the plugin's tool
    description: str  # what the model reads
    args: tuple[Arg, ...]
    command: str  # the command that does the same in a terminal ("": none)
    writes: bool  # writes memory: the agent's shell may not run the command


NOTE = Operation(
    "memory_note",
    "Ajoute une note de travail à court terme (une ligne, 7 jours par défaut) dans "
    "memory/SHORT_TERM.md. Si c'est plein, ocmem montre les notes : supprime-en avec "
    "memory_forget avant de réessayer.",
    (
        Arg("text", STRING, "La note, une ligne"),
        Arg("days", INTEGER, "Durée de vie en jours (null : 7)", required=False, minimum=1),
    ),
    "note",
    writes=True,
)
FORGET = Operation(
    "memory_forget",
    "Supprime la note de travail n°N (numéros donnés par memory_note quand c'est plein).",
    (Arg("number", INTEGER, "Numéro de la note", minimum=1),),
    "note --retirer",
    writes=True,
)
SEARCH = Operation(
    "memory_search",
    f"Cherche dans le journal des épisodes passés, par les mots et par le sens : {SEARCH_MAX} "
    "entrées au plus, les plus pertinentes d'abord ; une correspondance faible est signalée comme "
    "telle. Dis-le de plusieurs façons en un seul appel : query avec les mots de la question, "
    f"alternatives avec {ALTERNATIVES_MAX} autres formulations au plus (les mots techniques "
    "qu'une entrée emploierait — produit, version, code d'erreur —, le symptôme, la même question "
    "en anglais). « rien de pertinent » veut dire qu'aucune entrée ne porte ces mots ni ce sens. "
    f"Avec recent: N ({RECENT_MAX} au plus), les titres seuls des N dernières entrées, pour "
    "survoler le travail récent.",
    (
        Arg("query", STRING, "La question, ou des mots-clés", required=False),
        Arg(
            "alternatives",
            STRINGS,
            f"Autres formulations de la même recherche ({ALTERNATIVES_MAX} au plus) : mots "
            "techniques, symptôme, anglais ; fusionnées en une seule liste",
            required=False,
            minimum=0,
            maximum=ALTERNATIVES_MAX,
        ),
        Arg("tags", STRINGS, "Tags exigés", required=False),
        Arg(
            "last",
            INTEGER,
            f"Les N dernières entrées ({SEARCH_MAX} au plus)",
            required=False,
            minimum=1,
        ),
        Arg(
            "recent",
            INTEGER,
            f"Titres seuls des N dernières entrées ({RECENT_MAX} au plus)",
            required=False,
            minimum=1,
            maximum=RECENT_MAX,
        ),
    ),
    "journal search",
    writes=False,
)
JOURNAL = Operation(
    "memory_journal",
    "Consigne l'épisode de la tâche dans memory/journal.md (skill retrospective ; une entrée "
    "par session, 10 lignes au plus).",
    (
        Arg("titre", STRING, "Titre court (80 caractères au plus, sans « · »)"),
        Arg(
            "tags",
            STRINGS,
            "Tags (en ligne de commande : séparés par des espaces ou des virgules)",
            words=True,
        ),
        Arg("demande", STRING, "Ce que l'utilisateur a demandé"),
        Arg("fait", STRING, "Ce qui a été fait"),
        Arg("piege", STRING, "Le piège rencontré (« aucun » s'il n'y en a pas)"),
        Arg("lecon", STRING, "La leçon à retenir"),
        Arg("resultat", STRING, "Issue de la tâche", choices=tuple(RESULTS.values())),
    ),
    "journal add",
    writes=True,
)
PROPOSE = Operation(
    "memory_propose",
    "Propose un fait ou un skill à l'utilisateur (memory/pending.md) : leçon vue dans 2 entrées "
    "du journal, ou « retiens ça » de l'utilisateur.",
    (
        Arg("type", STRING, "Fait ou skill", choices=("fait", "skill")),
        Arg("titre", STRING, "Titre de la proposition (une ligne)"),
        Arg("contenu", STRING, "Le fait (une ligne) ou le brouillon du skill"),
        Arg("sources", STRINGS, "Références « journal AAAA-MM-JJ HH:MM »", option="--source"),
        Arg("contradiction", STRING, "« aucune » ou ce que la proposition contredit"),
        Arg("remplace", STRING, "« rien » ou le fait/skill remplacé ou modifié"),
        Arg(
            "retiens_ca",
            BOOLEAN,
            "L'utilisateur a dit « retiens ça » dans cette session",
            required=False,
        ),
        Arg(
            "note_recurrente",
            BOOLEAN,
            "Fait tiré d'une note qu'ocmem a signalée comme récurrente (sources peut alors être "
            "vide)",
            required=False,
        ),
        Arg(
            "independant",
            STRINGS,
            "Éléments proches qu'elle ne touche pas, cités (quand ocmem demande de le dire)",
            required=False,
        ),
        Arg(
            "name",
            STRING,
            "Nom du skill proposé",
            required=False,
            option="--nom",
            aliases=("--name",),
        ),
        Arg("description", STRING, "Description du skill, 2 phrases au plus", required=False),
    ),
    "propose",
    writes=True,
)
ACCEPT = Operation(
    "memory_accept",
    "Promeut une proposition validée par l'utilisateur (« valide pending ») : OpenCode lui "
    "demande confirmation.",
    (Arg("id", STRING, "Identifiant, ex. P-0003"),),
    "pending accept",
    writes=True,
)
OPERATIONS = (NOTE, FORGET, SEARCH, JOURNAL, PROPOSE, ACCEPT)
BY_TOOL = {op.tool: op for op in OPERATIONS}

# The human's SilverBullet space, for the agent: the plugin's space tools, answered through the
# gate (policy: ocmem.bridge.spacetools; answers: ocmem.bridge.spaceanswers). No command does the
# same in a terminal (``command`` is empty): the human has SilverBullet itself.
_INBOX_RULE = (
    "le seul dossier de SilverBullet ouvert à l'agent ; ni la mémoire validée, ni les skills, ni "
    "AGENTS.md, ni les pages qu'ocmem pousse : un fait ou une leçon passe par memory_note, "
    "memory_journal ou memory_propose"
)
SPACE_READ = Operation(
    "space_read",
    "Lit une page de l'espace SilverBullet de l'utilisateur. Lire une page hors de la mémoire "
    "validée expose la session.",
    (Arg("page", STRING, "Nom de la page tel que SilverBullet l'affiche, ex. Projets/Infra"),),
    "",
    writes=False,
)
SPACE_LIST = Operation(
    "space_list",
    "Liste les pages de SilverBullet, toutes ou celles d'un dossier. Expose la session (les noms "
    "sont écrits par d'autres).",
    (Arg("prefix", STRING, "Dossier, ex. Agents/Inbox (null : toutes les pages)", required=False),),
    "",
    writes=False,
)
SPACE_SEARCH = Operation(
    "space_search",
    "Cherche des mots dans les pages de SilverBullet : les 10 pages qui en ont le plus, avec "
    "leurs lignes. Expose la session.",
    (Arg("query", STRING, "Mots à chercher"),),
    "",
    writes=False,
)
SPACE_WRITE = Operation(
    "space_write",
    f"Écrit une page sous Agents/Inbox/<id-du-dossier>/ ({_INBOX_RULE}). Le texte est rendu "
    "inerte (ni HTML ni Lua) ; une page existante n'est remplacée qu'avec replace: true.",
    (
        Arg("page", STRING, "Nom de la page, ex. Agents/Inbox/<id-du-dossier>/notes/idee"),
        Arg("content", STRING, "Le texte de la page (Markdown)"),
        Arg("replace", BOOLEAN, "Remplacer la page si elle existe (null : non)", required=False),
    ),
    "",
    writes=False,
)
SPACE_OPERATIONS = (SPACE_READ, SPACE_LIST, SPACE_SEARCH, SPACE_WRITE)
SPACE_BY_TOOL = {op.tool: op for op in SPACE_OPERATIONS}

# Commands the agent's shell may not run (the command line refuses them through
# ocmem.bridge.agentproc; the plugin's guard refuses them before the shell even runs): every
# memory write a tool makes, promotion, and what sets ocmem up or opens a door into it.
# `pending reject` stays open: the agent records the human's no during « valide pending ».
AGENT_REFUSED = (
    *dict.fromkeys(op.command.split(" --")[0] for op in OPERATIONS if op.writes),
    "pending annuler",
    "pending undo",  # its English name, still accepted (hidden)
    "retire",
    "init",
    "harden",
    "gate",
    "tool",
    "cron install",
    "cron remove",
    "doctor --reparer",
    "doctor --fix",  # its English spelling, still accepted (ocmem.cli.options)
    "desinstaller",
    "uninstall",  # its English name, still accepted (hidden)
)


def in_options(text: str, op: Operation) -> str:
    """A refusal written for the tool (its JSON fields: « ajoute "contradiction": "aucune" »,
    « cite-le dans sources ») in the terms of a person who gave the command's options
    (« ajoute --contradiction "aucune" », « cite-le avec --source »)."""
    for arg in sorted(op.args, key=lambda a: -len(a.name)):
        name, flag = re.escape(arg.name), arg.flag
        text = re.sub(rf'"{name}":\s*\[([^\]]*)\]', rf"{flag} \1", text)
        text = re.sub(rf'"{name}":\s*', f"{flag} ", text)
        text = re.sub(rf'"{name}"|« {name} »', flag, text)
        text = re.sub(rf"\bdans {name}\b", f"avec {flag}", text)
    return text


def _kind_of(value: object) -> str | None:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        return INTEGER
    if isinstance(value, str):
        return STRING
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return STRINGS
    return None


def check_args(op: Operation, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as the operation declares them (unknown keys refused, null as absent), or the
    InputError that names the argument and what it takes."""
    known = {arg.name: arg for arg in op.args}
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise InputError(
            f"{op.tool} : argument(s) inconnu(s) : {', '.join(unknown)}",
            fix=f"arguments possibles : {', '.join(known)}",
        )
    given: dict[str, Any] = {}
    for arg in op.args:
        value = args.get(arg.name)
        if value is None:
            if arg.required:
                raise InputError(
                    f"{op.tool} : « {arg.name} » manquant", fix=f"{arg.name} : {arg.description}"
                )
            continue
        if _kind_of(value) != arg.kind:
            expected = {
                STRING: "une chaîne",
                INTEGER: "un nombre entier",
                BOOLEAN: "true ou false",
                STRINGS: "une liste de chaînes",
            }[arg.kind]
            raise InputError(
                f"{op.tool} : « {arg.name} » doit être {expected} (reçu {value!r:.60})",
                fix=f"{arg.name} : {arg.description}",
            )
        if arg.choices and value not in arg.choices:
            raise InputError(
                f"{op.tool} : « {arg.name} » vaut {' ou '.join(arg.choices)} (reçu {value!r:.60})",
                fix=f"{arg.name} : {arg.description}",
            )
        low, high = arg.minimum, arg.maximum
        size = len(value) if arg.kind == STRINGS else value
        if (low is not None and size < low) or (high is not None and size > high):
            bounds = f"de {low} à {high}" if high is not None else f"au moins {low}"
            unit = " éléments" if arg.kind == STRINGS else ""
            raise InputError(
                f"{op.tool} : « {arg.name} » va {bounds}{unit} (reçu {size})",
                fix=f"{arg.name} : {arg.description}",
            )
        given[arg.name] = value
    return given
