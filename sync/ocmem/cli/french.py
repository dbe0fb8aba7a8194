"""click's own words in French, so that ``--help`` and usage errors do not mix two languages.

click marks its strings for gettext (``from gettext import gettext as _`` in each module) but
ships no catalogue; ``install`` answers those lookups from the table below, module by module,
for this process only. Strings not in the table stay as click wrote them. Metavars (``TEXT``,
``INTEGER``…) come from the parameter types' English names: ``french_metavars`` names them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

_SINGULAR: dict[str, str] = {
    "Usage:": "Usage :",
    # click adds the colon; French puts a space before it
    "Options": "Options ",
    "Commands": "Commandes ",
    "Positional arguments": "Arguments ",
    "Show this message and exit.": "Affiche cette aide.",
    "Show the version and exit.": "Affiche la version.",
    "Error": "Erreur",
    "Error: {message}": "Erreur : {message}",
    "Aborted!": "Interrompu.",
    "Missing command.": "commande manquante.",
    "No such command {name!r}.": "commande inconnue : {name!r}.",
    "No such option {name!r}.": "option inconnue : {name!r}.",
    "Missing argument": "argument manquant",
    "Missing option": "option manquante",
    "Missing parameter": "paramètre manquant",
    "Missing parameter: {param_name}": "paramètre manquant : {param_name}",
    "Missing {param_type}": "{param_type} manquant",
    "argument": "argument",
    "option": "option",
    "parameter": "paramètre",
    "Invalid value for {param_hint}: {message}": "valeur invalide pour {param_hint} : {message}",
    "Invalid value: {message}": "valeur invalide : {message}",
    "Option {name!r} does not take a value.": "l'option {name!r} ne prend pas de valeur.",
    "Argument {name!r} takes {nargs} values.": "l'argument {name!r} prend {nargs} valeurs.",
    "Try '{command} {option}' for help.": "Aide : « {command} {option} ».",
    "{value!r} is not a valid {number_type}.": "{value!r} n'est pas un nombre valide.",
    "{value} is not in the range {range}.": "{value} n'est pas dans l'intervalle {range}.",
    "{value!r} is not a valid boolean. Recognized values: {states}": (
        "{value!r} n'est pas un booléen. Valeurs reconnues : {states}"
    ),
    "{name} {filename!r} does not exist.": "{name} {filename!r} n'existe pas.",
    "{name} {filename!r} is a directory.": "{name} {filename!r} est un dossier.",
    "{name} {filename!r} is a file.": "{name} {filename!r} est un fichier.",
    "{name} {filename!r} is not readable.": "{name} {filename!r} n'est pas lisible.",
    "{name} {filename!r} is not writable.": "{name} {filename!r} n'est pas modifiable.",
    "file": "fichier",
    "directory": "dossier",
    "path": "chemin",
    "default: {default}": "défaut : {default}",
    "required": "obligatoire",
    "env var: {var}": "variable : {var}",
    "Repeat for confirmation": "Confirme",
    "Error: invalid input": "Erreur : réponse invalide",
    "Error: The two entered values do not match.": "Erreur : les deux valeurs diffèrent.",
    "%(prog)s, version %(version)s": "%(prog)s, version %(version)s",
}
_PLURAL: dict[tuple[str, str], tuple[str, str]] = {
    ("Got unexpected extra argument ({args})", "Got unexpected extra arguments ({args})"): (
        "argument en trop : {args}",
        "arguments en trop : {args}",
    ),
    ("Did you mean {possibility}?", "(Did you mean one of: {possibilities}?)"): (
        "Voulais-tu dire {possibility} ?",
        "(Voulais-tu dire : {possibilities} ?)",
    ),
    ("{value!r} is not {choice}.", "{value!r} is not one of {choices}."): (
        "{value!r} n'est pas {choice}.",
        "{value!r} n'est pas l'un de : {choices}.",
    ),
    (
        "{value!r} does not match the format {format}.",
        "{value!r} does not match the formats {formats}.",
    ): (
        "{value!r} n'a pas le format {format}.",
        "{value!r} n'a aucun des formats {formats}.",
    ),
    ("Option {name!r} requires an argument.", "Option {name!r} requires {nargs} arguments."): (
        "l'option {name!r} attend une valeur.",
        "l'option {name!r} attend {nargs} valeurs.",
    ),
}
_MODULES = (
    "click.core",
    "click.exceptions",
    "click.types",
    "click.decorators",
    "click.formatting",
    "click.parser",
    "click.termui",
)
_TYPE_METAVARS = {
    "text": "TEXTE",
    "integer": "N",
    "integer range": "N",
    "float": "NOMBRE",
    "float range": "NOMBRE",
    "path": "CHEMIN",
    "directory": "DOSSIER",
    "file": "FICHIER",
    "filename": "FICHIER",
}


def gettext(message: str) -> str:
    return _SINGULAR.get(message, message)


def ngettext(singular: str, plural: str, n: int) -> str:
    pair = _PLURAL.get((singular, plural))
    if pair is None:
        return singular if n == 1 else plural
    return pair[0] if n == 1 else pair[1]


def install() -> None:
    """Answer click's gettext lookups in French (this process only)."""
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is None:
            continue
        if hasattr(module, "_"):
            module._ = gettext  # type: ignore[attr-defined]
        if hasattr(module, "ngettext"):
            module.ngettext = ngettext  # type: ignore[attr-defined]


def _params(group: click.Group) -> Iterator[click.Parameter]:
    yield from group.params
    for command in group.commands.values():
        if isinstance(command, click.Group):
            yield from _params(command)
        else:
            yield from command.params


def french_metavars(group: click.Group, argument_names: dict[str, str]) -> None:
    """Give every option and argument of ``group`` a French metavar (unless it has one)."""
    for param in _params(group):
        if param.metavar is not None or isinstance(param.type, click.Choice):
            continue
        if isinstance(param, click.Argument):
            name = argument_names.get(param.name or "", (param.name or "").upper())
            name = name if param.required else f"[{name}]"
            param.metavar = name if param.nargs == 1 else f"{name}..."
        elif isinstance(param, click.Option) and not param.is_flag:
            param.metavar = _TYPE_METAVARS.get(param.type.name, param.type.name.upper())
