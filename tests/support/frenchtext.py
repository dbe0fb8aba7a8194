"""What a user reads is in one language and one register (issue 36): no English option name
(those are hidden aliases, ocmem.cli.options) and no « vous » (ocmem says « tu »: CONTRIBUTING.md).

``english_names`` and ``register_slips`` are used by ``tests/test_french_texts.py`` on the docs,
every command's ``--help``, the error texts and init's and doctor's output, and by the
``run_cli`` fixture (tests/conftest.py) on the output of every command-line scenario the suite
runs.
"""

from __future__ import annotations

import re
from functools import cache

import click

# « vous » and the imperatives and verbs a text written in « vous » uses (a list, not a grammar:
# a word like « chez » or « assez » must never match).
_VOUS = re.compile(
    r"(?<!\w)(?<!rendez-)(?:vous|votre|vos|vôtres?|"
    r"lancez|relancez|retirez|collez|ajoutez|installez|vérifiez|tapez|choisissez|gardez|copiez|"
    r"supprimez|remplacez|ouvrez|utilisez|voyez|notez|pouvez|devez|voulez|avez|êtes|"
    r"mettez|prenez|créez|exécutez|modifiez|validez|refusez|consultez|désactivez|"
    r"activez|redémarrez|cliquez|écrivez|lisez|passez|suivez|quittez|attendez|donnez|"
    r"trouvez|cherchez|regardez|changez|définissez|configurez|recopiez|renseignez|préférez|laissez|sachez|oubliez|promouvez|relisez|reportez|reformulez|"
    r"recollez|répondez|réglez|fermez|effacez|citez|décidez|annulez|acceptez|venez|aviez|ayez|vouliez|indiquez|réinstallez|feriez)"
    r"(?!\w|-MOI)",
    re.IGNORECASE,
)

# English command names kept as hidden aliases.
_ENGLISH_COMMANDS = re.compile(r"\bocmem (?:[\w-]+ )*(?:uninstall|pending undo)\b")


@cache
def english_options() -> frozenset[str]:
    """Every English option name the command line still accepts, hidden (ocmem.cli.options)."""
    from ocmem.cli import docs
    from ocmem.cli.commands import cli
    from ocmem.cli.options import Option

    found: set[str] = set()
    for _, command in [("ocmem", cli), *docs.commands(cli, "ocmem", hidden=True)]:
        for param in command.params:
            if isinstance(param, Option):
                found.update(name for name in param.aliases if name.startswith("--"))
    return frozenset(found)


@cache
def _english_pattern() -> re.Pattern[str]:
    names = "|".join(re.escape(n) for n in sorted(english_options(), key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{names})(?![\w-])")


def english_names(text: str, *, given: str = "") -> list[str]:
    """The English option (and command) names in ``text``, except those in ``given`` (what the
    user typed, which an error may quote back)."""
    found = _english_pattern().findall(text) + _ENGLISH_COMMANDS.findall(text)
    return [name for name in found if name not in given]


def register_slips(text: str, *, given: str = "") -> list[str]:
    """The « vous » forms in ``text``, except words that are in ``given`` (text a test wrote
    into the home, which a command may show back)."""
    typed = given.lower()
    return [word for word in _VOUS.findall(text) if word.lower() not in typed]


def help_texts() -> dict[str, str]:
    """Every command's ``--help`` (hidden ones included: an agent or a person may ask)."""
    from ocmem.cli import docs
    from ocmem.cli.commands import cli

    texts: dict[str, str] = {}
    for path, command in [("ocmem", cli), *docs.commands(cli, "ocmem", hidden=True)]:
        if path in ("ocmem pending undo", "ocmem uninstall"):
            continue  # English names, hidden: their help is the French command's
        words = path.split()[1:]
        ctx = click.Context(cli, info_name="ocmem")
        for word in words:
            group = ctx.command
            assert isinstance(group, click.Group)
            ctx = click.Context(group.commands[word], info_name=word, parent=ctx)
        texts[path] = command.get_help(ctx)
    return texts
